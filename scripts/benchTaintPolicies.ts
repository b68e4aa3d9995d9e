import { decodeApplyDocuments } from '../shared/api/decode';
import { loadConfig } from '../shared/config';
import { applyObjects } from '../shared/controllers/apply';
import { deleteTaintPolicy } from '../shared/controllers/taintPolicies';
import { createControlPlane } from '../shared/runtime';
import { silentLogger } from '../shared/telemetry/log';
import { startTestStorage } from '../test/helpers/azurite';
import { cluster } from '../test/helpers/fleet';

/**
 * `npm run bench -- taintpolicies [clusters]`: what one ClusterTaintPolicy apply and delete cost on a fleet
 * of `clusters` (real Azurite): a policy targeting one cluster, one targeting a tenth of the fleet, and one
 * targeting every cluster. Each re-evaluates only what it may affect, so the time follows the clusters a
 * policy selects, not the fleet.
 */
export async function taintPolicyBench(clusters: number) {
  const env = await startTestStorage();
  try {
    const plane = createControlPlane(env.storage, loadConfig({}), { log: silentLogger });
    const names = Array.from({ length: clusters }, (_, i) => `m${String(i).padStart(5, '0')}`);
    for (let i = 0; i < names.length; i += 500) {
      await applyObjects(plane, decodeApplyDocuments(names.slice(i, i + 500).map((name, k) => cluster(name, false, { tenth: String((i + k) % 10) }))));
    }
    const policy = (name: string, targetCluster?: Record<string, unknown>) => ({
      apiVersion: 'policy.karmada.io/v1alpha1',
      kind: 'ClusterTaintPolicy',
      metadata: { name },
      spec: {
        ...(targetCluster ? { targetCluster } : {}),
        matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False'] }],
        taintsToAdd: [{ key: `bench/${name}`, effect: 'NoExecute', addOnMatchSeconds: 30 }],
      },
    });
    const cases: Array<[string, Record<string, unknown> | undefined, number]> = [
      ['one', { clusterNames: [names[0]] }, 1],
      ['tenth', { labelSelector: { matchLabels: { tenth: '3' } } }, Math.ceil(clusters / 10)],
      ['all', undefined, clusters],
    ];
    const runs = [];
    for (const [name, target, targeted] of cases) {
      const timed = async (work: () => Promise<unknown>) => {
        const started = performance.now();
        await work();
        return Math.round(performance.now() - started);
      };
      const applyMs = await timed(() => applyObjects(plane, decodeApplyDocuments([policy(name, target)])));
      const deleteMs = await timed(() => deleteTaintPolicy(plane, name));
      runs.push({ policy: name, targeted, applyMs, deleteMs });
    }
    return { clusters, runs };
  } finally {
    await env.close();
  }
}
