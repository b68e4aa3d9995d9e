import { decodeApplyDocuments } from '../shared/api/decode';
import { loadConfig } from '../shared/config';
import { applyObjects } from '../shared/controllers/apply';
import { createControlPlane } from '../shared/runtime';
import { silentLogger } from '../shared/telemetry/log';
import { startTestStorage } from '../test/helpers/azurite';
import { cluster } from '../test/helpers/fleet';

/**
 * `npm run bench -- policies [namespaces] [deployments per namespace] [checkpoints…]`: what one
 * PropagationPolicy apply costs as policies accumulate (real Azurite, in process). `namespaces` × `per
 * namespace` Deployments are stored first, unclaimed; then one PropagationPolicy per namespace is applied,
 * one per request, each claiming its namespace's Deployments and deriving their bindings. The mean apply
 * time of the ten policies that end at each checkpoint (default 10, 100 and 1,000) shows whether the cost
 * follows what a policy selects or the whole store; last, one request with the policies of the namespaces
 * left (re-derivation batched per request).
 */
export async function policyBench(namespaces = 1000, perNamespace = 10, checkpoints = [10, 100, 1000]) {
  const env = await startTestStorage();
  try {
    const plane = createControlPlane(env.storage, loadConfig({}), { log: silentLogger });
    await applyObjects(plane, decodeApplyDocuments(['m1', 'm2', 'm3'].map((name) => cluster(name, false))));
    const ns = (i: number) => `ns-${String(i).padStart(5, '0')}`;
    const deployment = (namespace: string, k: number) => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: `web-${k}`, namespace },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: `web-${k}` } },
        template: { metadata: { labels: { app: `web-${k}` } }, spec: { containers: [{ name: 'web', image: 'nginx' }] } },
      },
    });
    const templates = Array.from({ length: namespaces * perNamespace }, (_, i) => deployment(ns(Math.floor(i / perNamespace)), i % perNamespace));
    const seedStarted = performance.now();
    for (let i = 0; i < templates.length; i += 500) await applyObjects(plane, decodeApplyDocuments(templates.slice(i, i + 500)));
    const seedSeconds = Math.round((performance.now() - seedStarted) / 100) / 10;
    const policy = (namespace: string) => ({
      apiVersion: 'policy.karmada.io/v1alpha1',
      kind: 'PropagationPolicy',
      metadata: { name: 'web', namespace },
      spec: {
        resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment' }],
        placement: { clusterAffinity: { clusterNames: ['m1', 'm2', 'm3'] }, replicaScheduling: { replicaSchedulingType: 'Duplicated' } },
      },
    });
    const last = Math.min(namespaces, Math.max(...checkpoints));
    const perPolicyMs: number[] = [];
    for (let i = 0; i < last; i++) {
      const started = performance.now();
      await applyObjects(plane, decodeApplyDocuments([policy(ns(i))]));
      perPolicyMs.push(performance.now() - started);
    }
    const steps = checkpoints
      .filter((c) => c <= last)
      .map((c) => {
        const window = perPolicyMs.slice(Math.max(0, c - 10), c);
        return { policies: c, meanApplyMs: Math.round(window.reduce((a, b) => a + b, 0) / window.length) };
      });
    // BENCH_NO_BATCH=1 leaves the batch out (a store whose every apply derives everything would take hours).
    const rest = process.env.BENCH_NO_BATCH ? [] : Array.from({ length: namespaces - last }, (_, k) => policy(ns(last + k)));
    let batch: { policies: number; seconds: number; perPolicyMs: number } | undefined;
    if (rest.length > 0) {
      const started = performance.now();
      await applyObjects(plane, decodeApplyDocuments(rest));
      const ms = performance.now() - started;
      batch = { policies: rest.length, seconds: Math.round(ms / 100) / 10, perPolicyMs: Math.round(ms / rest.length) };
    }
    const bindings = (await plane.bindings.list()).length;
    return { namespaces, perNamespace, templates: templates.length, seedSeconds, steps, batch, bindings };
  } finally {
    await env.close();
  }
}
