import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';
import { FAST_PROBE_SETTINGS, KarmadaFleet, startKarmadaFleet } from '../helpers/karmadaFleet';
import { crdResources, type KubeApiServer } from '../helpers/kubeApiServer';
import type { MemberEndpointServer } from '../helpers/memberEndpoints';

/**
 * Karmada mode with what Karmada's strict schemas cannot hold, end to end against the Kubernetes API test
 * server serving our CRDs (infra/clustertaintpolicy-crd.yaml, infra/taintpolicystatus-crd.yaml) and
 * authorizing the app with exactly infra/karmada-rbac.yaml: a windowed ClusterTaintPolicy of our kind
 * taints after its window; policy status is on our objects, where `kubectl wait` reads it (Karmada's
 * ClusterTaintPolicy has no status subresource); a PropagationPolicy's failover.io/cluster-* annotations
 * reach the eviction; a PropagationPolicy Karmada's webhook would refuse is left out with its reason.
 */

const KUBECTL = '/usr/bin/kubectl';
const WINDOW_SECONDS = 3;
const OURS = 'windowed-not-ready';
const THEIRS = 'karmada-not-ready';
const NOT_READY = 'cluster.karmada.io/not-ready';
const BINDING = 'web-deployment';

let karmada: KarmadaFleet;
let server: KubeApiServer;
let host: HostProcess;
let members: MemberEndpointServer[];

type Condition = { type: string; status: string; reason?: string; message?: string; lastTransitionTime: string };
type Taint = { key: string; effect: string; timeAdded?: string };

function kubectl(args: string[], timeoutMs = 60_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      KUBECTL,
      ['--kubeconfig', karmada.adminKubeconfig, ...args],
      { env: { ...process.env, HOME: karmada.dir }, timeout: timeoutMs },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

const conditionsOn = (plural: string, name: string) => (server.get(plural, name)?.status as { conditions?: Condition[] } | undefined)?.conditions ?? [];
const taints = (cluster: string) => (server.get('clusters', cluster)?.spec as { taints?: Taint[] }).taints ?? [];
const ready = (cluster: string) =>
  ((server.get('clusters', cluster)?.status as { conditions?: Condition[] } | undefined)?.conditions ?? []).find((c) => c.type === 'Ready');
const bindingSpec = () =>
  server.get('resourcebindings', BINDING, 'default')?.spec as { clusters: Array<{ name: string }>; gracefulEvictionTasks?: Array<Record<string, unknown>> };

beforeAll(async () => {
  karmada = await startKarmadaFleet({ prefix: 'karmada-own-kinds-' });
  ({ server, members } = karmada);
  for (const file of ['clustertaintpolicy-crd.yaml', 'taintpolicystatus-crd.yaml'])
    for (const resource of crdResources(readFileSync(join(__dirname, '..', '..', 'infra', file), 'utf8'))) server.addResource(resource);

  // Ours: the windowed shape with its windows, which Karmada's kind refuses.
  server.upsert({
    apiVersion: 'failover.io/v1alpha1',
    kind: 'ClusterTaintPolicy',
    metadata: { name: OURS },
    spec: {
      targetCluster: { clusterNames: ['member1', 'member2', 'member3'] },
      matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False', 'Unknown'] }],
      taintsToAdd: [{ key: NOT_READY, effect: 'NoExecute', addOnMatchSeconds: WINDOW_SECONDS, removeOnMismatchSeconds: 1 }],
    },
  });
  // Karmada's: its own shape and semantics (at once), a NoSchedule taint that evicts nothing.
  server.upsert({
    apiVersion: 'policy.karmada.io/v1alpha1',
    kind: 'ClusterTaintPolicy',
    metadata: { name: THEIRS },
    spec: {
      addOnConditions: [{ conditionType: 'Ready', operator: 'NotIn', statusValues: ['True'] }],
      removeOnConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['True'] }],
      taints: [{ key: 'example.io/karmada-shape', effect: 'NoSchedule' }],
    },
  });
  // A policy with the settings Karmada's failover.cluster cannot hold, as annotations.
  server.upsert({
    apiVersion: 'policy.karmada.io/v1alpha1',
    kind: 'PropagationPolicy',
    metadata: {
      name: 'web',
      namespace: 'default',
      annotations: { 'failover.io/cluster-grace-period-seconds': '120', 'failover.io/cluster-toleration-seconds': '42' },
    },
    spec: {
      resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'web' }],
      placement: { clusterAffinity: { clusterNames: ['member1', 'member2', 'member3'] } },
      failover: { cluster: { purgeMode: 'Gracefully' } },
    },
  });
  // What Karmada's webhook refuses (application failover without propagateDeps): stored here all the same.
  server.upsert({
    apiVersion: 'policy.karmada.io/v1alpha1',
    kind: 'PropagationPolicy',
    metadata: { name: 'no-deps', namespace: 'default' },
    spec: {
      resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'api' }],
      failover: { application: { decisionConditions: { tolerationSeconds: 300 }, purgeMode: 'Gracefully', gracePeriodSeconds: 600 } },
    },
  });
  // The binding as Karmada's detector makes it from `web`: its policy named, spec.failover copied (annotations are not).
  server.upsert({
    apiVersion: 'work.karmada.io/v1alpha2',
    kind: 'ResourceBinding',
    metadata: {
      name: BINDING,
      namespace: 'default',
      generation: 1,
      annotations: { 'propagationpolicy.karmada.io/namespace': 'default', 'propagationpolicy.karmada.io/name': 'web' },
    },
    spec: {
      resource: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'web' },
      replicas: 1,
      clusters: [{ name: 'member1', replicas: 1 }],
      placement: { clusterAffinity: { clusterNames: ['member1', 'member2', 'member3'] } },
      failover: { cluster: { purgeMode: 'Gracefully' } },
    },
    status: { schedulerObservedGeneration: 1 },
  });
  host = await startHostProcess({ KARMADA_KUBECONFIG: karmada.appKubeconfig(), FAILOVER_ENABLED: 'true', RESOURCE_EVICTION_RATE: '2', ...FAST_PROBE_SETTINGS });
}, 60_000);

afterAll(async () => {
  await host?.stop();
  await karmada?.close();
});

describe('Karmada mode: our own kinds and annotations', () => {
  it('reads both kinds of ClusterTaintPolicy, ours as failover.io.<name> with its windows', async () => {
    const ours = await waitFor(
      async () => {
        const answer = await api(host.url, 'GET', `clustertaintpolicies/failover.io.${OURS}`);
        return answer.status === 200 ? answer.body : undefined;
      },
      20_000,
      200,
    );
    expect(ours.spec.taintsToAdd).toEqual([{ key: NOT_READY, effect: 'NoExecute', addOnMatchSeconds: WINDOW_SECONDS, removeOnMismatchSeconds: 1 }]);
    expect(ours.status.shape).toBe('seed');
    const theirs = await api(host.url, 'GET', `clustertaintpolicies/${THEIRS}`);
    expect(theirs.body.status.shape).toBe('karmada');
  }, 30_000);

  it('writes policy status where kubectl wait reads it: on our policy, and on a TaintPolicyStatus for Karmada’s; never a status patch on Karmada’s kind', async () => {
    await waitFor(
      async () => (conditionsOn('clustertaintpolicies.failover.io', OURS).length && conditionsOn('taintpolicystatuses', THEIRS).length ? true : undefined),
      30_000,
      200,
    );
    expect(conditionsOn('clustertaintpolicies.failover.io', OURS).find((c) => c.type === 'EvictionInProgress')).toMatchObject({
      status: 'False',
      reason: 'NoTaintsHeld',
    });
    const companion = server.get('taintpolicystatuses', THEIRS)!;
    expect(companion.metadata.ownerReferences).toEqual([
      expect.objectContaining({
        apiVersion: 'policy.karmada.io/v1alpha1',
        kind: 'ClusterTaintPolicy',
        name: THEIRS,
        uid: server.get('clustertaintpolicies', THEIRS)!.metadata.uid,
      }),
    ]);
    expect(conditionsOn('taintpolicystatuses', THEIRS).find((c) => c.type === 'BlastRadiusExceeded')).toMatchObject({ status: 'False', reason: 'WithinShare' });

    const onOurs = await kubectl(['wait', '--for=condition=EvictionInProgress=false', `clustertaintpolicies.failover.io/${OURS}`, '--timeout=10s']);
    expect(onOurs, onOurs.stderr).toMatchObject({ code: 0 });
    expect(onOurs.stdout).toContain(`clustertaintpolicy.failover.io/${OURS} condition met`);
    const onTheirs = await kubectl(['wait', '--for=condition=EvictionInProgress=false', `taintpolicystatus/${THEIRS}`, '--timeout=10s']);
    expect(onTheirs, onTheirs.stderr).toMatchObject({ code: 0 });
    expect(onTheirs.stdout).toContain(`taintpolicystatus.failover.io/${THEIRS} condition met`);
    const listed = await kubectl(['get', 'taintpolicystatuses']);
    expect(listed.stdout).toMatch(new RegExp(`${THEIRS}\\s+${THEIRS}\\s+False\\s+False`));

    // Karmada's ClusterTaintPolicy has no status subresource: the app never asks for one.
    expect(server.requests.filter((r) => r.path.includes('/policy.karmada.io/') && r.subresource === 'status')).toEqual([]);
    expect(server.requests.filter((r) => r.path.includes('/failover.io/') && r.status >= 400)).toEqual([]);
  }, 60_000);

  it('takes the failover.io/cluster-* annotations into the policy, and leaves out a policy Karmada’s webhook would refuse, with Karmada’s reason', async () => {
    const web = await api(host.url, 'GET', 'propagationpolicies/default/web');
    expect(web.status).toBe(200);
    expect(web.body.spec.failover.cluster).toEqual({ purgeMode: 'Gracefully', tolerationSeconds: 42, gracePeriodSeconds: 120 });
    const noDeps = await api(host.url, 'GET', 'propagationpolicies/default/no-deps');
    expect(noDeps.status).toBe(404);
    // The host's log reaches this process through a pipe: wait for the line rather than read it once.
    const refusal = await waitFor(
      async () =>
        host
          .output()
          .split('\n')
          .find((line) => line.includes('Karmada object left out') && line.includes('default/no-deps')),
      10_000,
      50,
    );
    expect(refusal).toContain('spec.propagateDeps: application failover is set, propagateDeps must be true');
  }, 30_000);

  it('fails over member1: our policy taints after its window, and the eviction carries the annotation’s grace period', async () => {
    members[0].health = 'down';
    await waitFor(async () => (ready('member1')?.status === 'False' ? true : undefined), 20_000, 50);
    const notReadySince = Date.parse(ready('member1')!.lastTransitionTime);
    // Karmada's shape acts at once; ours waits for its window.
    await waitFor(async () => (taints('member1').some((t) => t.key === NOT_READY) ? true : undefined), 20_000, 50);
    const taint = taints('member1').find((t) => t.key === NOT_READY)!;
    expect(taint.effect).toBe('NoExecute');
    expect(Date.parse(taint.timeAdded!) - notReadySince).toBeGreaterThanOrEqual(WINDOW_SECONDS * 1000 - 1000);
    expect(taints('member1').some((t) => t.key === 'example.io/karmada-shape' && t.effect === 'NoSchedule')).toBe(true);
    const owners = JSON.parse((server.get('clusters', 'member1')!.metadata.annotations as Record<string, string>)['failover.io/taint-owners']);
    expect(owners[`${NOT_READY}:NoExecute`].owners).toEqual([`failover.io.${OURS}`]);

    const spec = await waitFor(async () => (bindingSpec().gracefulEvictionTasks?.length ? bindingSpec() : undefined), 20_000, 100);
    expect(spec.clusters.map((c) => c.name)).not.toContain('member1');
    expect(spec.gracefulEvictionTasks?.[0]).toMatchObject({
      fromCluster: 'member1',
      purgeMode: 'Gracefully',
      gracePeriodSeconds: 120,
      reason: 'TaintUntolerated',
    });

    // The conditions on our policy say where the failover stands, for kubectl wait.
    const done = await kubectl(['wait', '--for=condition=EvictionInProgress=false', `clustertaintpolicies.failover.io/${OURS}`, '--timeout=30s']);
    expect(done, done.stderr).toMatchObject({ code: 0 });
    await waitFor(
      async () =>
        conditionsOn('clustertaintpolicies.failover.io', OURS).find((c) => c.type === 'EvictionInProgress')?.reason === 'NoPendingEvictions' ? true : undefined,
      20_000,
      200,
    );
    // Every write to our kinds and every Event about our policy was taken.
    const warnings = host
      .output()
      .split('\n')
      .filter((line) => /status not written|Event not posted|does not serve our kind/.test(line));
    expect(warnings).toEqual([]);
  }, 90_000);
});
