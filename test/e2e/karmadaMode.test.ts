import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { api, HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';
import { FAST_PROBE_SETTINGS, KarmadaFleet, startKarmadaFleet } from '../helpers/karmadaFleet';
import type { KubeApiServer } from '../helpers/kubeApiServer';
import type { MemberEndpointServer } from '../helpers/memberEndpoints';
import { SEED_000_CTP } from '../helpers/seedYaml';

/**
 * Karmada mode end to end: the app runs as `npm start` runs it, with KARMADA_KUBECONFIG pointing at a
 * Kubernetes API test server that holds the example ClusterTaintPolicy (SEED_000_CTP) and bindings as
 * Karmada's detector would make them from an nginx Deployment and its policy, and authorizes the app with
 * exactly infra/karmada-rbac.yaml. Member clusters are TLS endpoints with their own CA. member1's /readyz
 * starts failing → Ready=False after the threshold → the taint after its window → evictions paced at the
 * configured rate, written to the bindings in Karmada → recovery abandons the rest.
 */

const run = promisify(execFile);
// Slow enough that the recovery (two probe thresholds and the removal window) lands while evictions still wait, on a busy machine too.
const RATE = 1;
const BINDINGS = 16;

let karmada: KarmadaFleet;
let server: KubeApiServer;
let host: HostProcess;
let members: MemberEndpointServer[];
let dir: string;
let adminKubeconfig: string;

/** A ResourceBinding as Karmada's detector and scheduler leave it for an nginx Deployment and its policy. */
const bindingObject = (i: number) => ({
  apiVersion: 'work.karmada.io/v1alpha2',
  kind: 'ResourceBinding',
  metadata: { name: `nginx-${i}-deployment`, namespace: 'default', generation: 1 },
  spec: {
    resource: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: `nginx-${i}` },
    replicas: 2,
    clusters: [{ name: 'member1', replicas: 2 }],
    placement: { clusterAffinity: { clusterNames: ['member1', 'member2', 'member3'] } },
    failover: { cluster: { purgeMode: 'Gracefully', tolerationSeconds: 1 } },
  },
  status: { schedulerObservedGeneration: 1 },
});

/** The example policy (not-ready taint while Ready is False or Unknown), with windows short enough for a test. */
const taintPolicy = () => {
  const policy = parse(SEED_000_CTP) as { spec: { taintsToAdd: Array<Record<string, unknown>> } };
  policy.spec.taintsToAdd[0].addOnMatchSeconds = 2;
  policy.spec.taintsToAdd[0].removeOnMismatchSeconds = 1;
  return policy as unknown as { apiVersion: string; kind: string; metadata: { name: string } };
};

const ready = (name: string) =>
  (server.get('clusters', name)?.status as { conditions?: Array<{ type: string; status: string; reason?: string }> } | undefined)?.conditions?.find(
    (c) => c.type === 'Ready',
  );
type WireTaint = { key: string; effect: string; timeAdded?: string };
/** The taints of `name` the app acts on (NoSchedule aside): spec.taints, and the PreferNoExecute ones Karmada's validation refuses there, held in an annotation. */
const taints = (name: string) => {
  const cluster = server.get('clusters', name);
  const held = (cluster?.metadata as { annotations?: Record<string, string> } | undefined)?.annotations?.['failover.io/taints'];
  return [...((cluster?.spec as { taints?: WireTaint[] }).taints ?? []), ...(held ? (JSON.parse(held) as WireTaint[]) : [])].filter(
    (t) => t.effect !== 'NoSchedule',
  );
};
const specTaints = (name: string) => (server.get('clusters', name)?.spec as { taints?: WireTaint[] }).taints ?? [];
const bindingSpec = (i: number) =>
  server.get('resourcebindings', `nginx-${i}-deployment`, 'default')?.spec as {
    clusters: Array<{ name: string }>;
    gracefulEvictionTasks?: Array<Record<string, unknown>>;
  };

beforeAll(async () => {
  karmada = await startKarmadaFleet({ prefix: 'karmada-mode-', clusterLabels: { 'failover.io/test': 'true' } });
  ({ server, members, dir, adminKubeconfig } = karmada);
  server.upsert(taintPolicy());
  for (let i = 0; i < BINDINGS; i++) server.upsert(bindingObject(i));
  host = await startHostProcess({
    KARMADA_KUBECONFIG: karmada.appKubeconfig(),
    FAILOVER_ENABLED: 'true',
    RESOURCE_EVICTION_RATE: String(RATE),
    ...FAST_PROBE_SETTINGS,
  });
}, 60_000);

afterAll(async () => {
  await host?.stop();
  await karmada?.close();
});

describe('Karmada mode', () => {
  it('probes the members and writes Ready=True to each Cluster status in Karmada', async () => {
    await waitFor(async () => (members.every((m) => ready(m.cluster)?.status === 'True') ? true : undefined), 20_000, 100);
    expect(ready('member1')).toMatchObject({ status: 'True', reason: 'ClusterReady' });
    // Healthy once the first sync has reached the API server (the sync timer runs every 10 s).
    const health = await waitFor(
      async () => {
        const answer = await api(host.url, 'GET', 'healthz');
        return answer.status === 200 ? answer : undefined;
      },
      15_000,
      200,
    );
    expect(health.body).toMatchObject({ status: 'ok', mode: 'karmada' });
    // Standalone objects are refused: Karmada owns them.
    const applied = await api(host.url, 'POST', 'apply', { apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name: 'x' } });
    expect(applied.status).toBe(409);
    expect(applied.body.error ?? applied.body.message).toMatch(/managed in Karmada/);
  }, 30_000);

  it('fails over member1: Ready=False after the threshold, the taint after its window, evictions paced and written to the bindings; recovery abandons the rest', async () => {
    // The first eviction's patch loses a race (409): it is re-read and decided again, not lost.
    const conflict = server.inject({ method: 'PATCH', pathIncludes: '/resourcebindings/', status: 409, times: 1 });
    const failedAt = Date.now();
    members[0].health = 'down';
    await waitFor(async () => (ready('member1')?.status === 'False' ? true : undefined), 15_000, 50);
    const notReadyAfter = (Date.now() - failedAt) / 1000;
    expect(ready('member1')).toMatchObject({ status: 'False', reason: 'ClusterNotReachable' });
    expect(notReadyAfter).toBeGreaterThanOrEqual(2);
    await waitFor(async () => (taints('member1').some((t) => t.key === 'cluster.karmada.io/not-ready') ? true : undefined), 15_000, 50);
    const taint = taints('member1').find((t) => t.key === 'cluster.karmada.io/not-ready')!;
    expect(taint).toMatchObject({ effect: 'PreferNoExecute' });
    expect(taint.timeAdded).toBeDefined();
    // Not in spec.taints, which Karmada's Cluster validation keeps to NoSchedule and NoExecute.
    expect(specTaints('member1').some((t) => t.effect === 'PreferNoExecute')).toBe(false);
    const annotations = server.get('clusters', 'member1')?.metadata as { annotations?: Record<string, string> };
    expect(JSON.parse(annotations.annotations?.['failover.io/taint-owners'] ?? '{}')).toMatchObject({
      'cluster.karmada.io/not-ready:PreferNoExecute': { owners: ['detect-cluster-not-ready'] },
    });

    // Evictions land in Karmada's bindings one by one.
    const seen = new Map<number, number>();
    await waitFor(
      async () => {
        for (let i = 0; i < BINDINGS; i++) {
          if (!seen.has(i) && bindingSpec(i).gracefulEvictionTasks?.some((t) => t.fromCluster === 'member1')) seen.set(i, Date.now());
        }
        return seen.size >= 5 ? true : undefined;
      },
      20_000,
      20,
    );
    expect(conflict.hits).toBe(1);
    const evicted = [...seen.keys()][0];
    expect(bindingSpec(evicted).clusters.map((c) => c.name)).not.toContain('member1');
    expect(bindingSpec(evicted).gracefulEvictionTasks?.[0]).toMatchObject({
      fromCluster: 'member1',
      reason: 'TaintUntolerated',
      producer: 'TaintManager',
      purgeMode: 'Gracefully',
    });

    // Recovery: Ready=True after the threshold, the taint goes after its window, the rest is abandoned.
    members[0].health = 'ok';
    const rows = await waitFor(
      async () => {
        const ledger = (await api(host.url, 'GET', 'evictions?cluster=member1')).body.items as Array<{ state: string; executedAt?: string; message?: string }>;
        return ledger.length === BINDINGS && ledger.every((r) => r.state === 'done' || r.state === 'abandoned') ? ledger : undefined;
      },
      30_000,
      100,
    );
    const done = rows.filter((r) => r.state === 'done');
    expect(done.length).toBeGreaterThanOrEqual(5);
    expect(done.length).toBeLessThan(BINDINGS);
    // Paced: the evictions took about (n - 1) / rate (the global pacer's slots), not a burst.
    const times = done.map((r) => Date.parse(r.executedAt!)).sort((a, b) => a - b);
    const achieved = (times.length - 1) / ((times[times.length - 1] - times[0]) / 1000);
    expect(achieved).toBeLessThanOrEqual(RATE * 1.15);
    expect(taints('member1').some((t) => t.key === 'cluster.karmada.io/not-ready')).toBe(false);
    // Exactly the done ones were written to Karmada; the abandoned ones still run on member1.
    const moved = Array.from({ length: BINDINGS }, (_, i) => i).filter((i) => !bindingSpec(i).clusters.some((c) => c.name === 'member1'));
    expect(moved.length).toBe(done.length);
    for (const i of moved) expect(bindingSpec(i).gracefulEvictionTasks?.filter((t) => t.fromCluster === 'member1')).toHaveLength(1);
  }, 90_000);

  it('clears the graceful-eviction task in Karmada once Karmada has placed the workload and it is healthy there', async () => {
    const moved = Array.from({ length: BINDINGS }, (_, i) => i).find((i) => bindingSpec(i).gracefulEvictionTasks?.length)!;
    const current = server.get('resourcebindings', `nginx-${moved}-deployment`, 'default')!;
    const generation = (current.metadata as { generation: number }).generation;
    // What Karmada's scheduler and binding-status controller write: the new placement, then its health.
    server.upsert({
      ...current,
      spec: { ...(current.spec as object), clusters: [{ name: 'member2', replicas: 2 }] },
      status: { schedulerObservedGeneration: generation + 1, aggregatedStatus: [{ clusterName: 'member2', applied: true, health: 'Healthy' }] },
    });
    await waitFor(async () => (bindingSpec(moved).gracefulEvictionTasks?.length ? undefined : true), 25_000, 100);
    expect(bindingSpec(moved).clusters).toEqual([{ name: 'member2', replicas: 2 }]);
  }, 40_000);

  it("moves a workload that stays unhealthy (application failover from Karmada's aggregatedStatus)", async () => {
    const name = 'web-app-failover';
    server.upsert({
      apiVersion: 'work.karmada.io/v1alpha2',
      kind: 'ResourceBinding',
      metadata: { name, namespace: 'default', generation: 1 },
      spec: {
        resource: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'web' },
        replicas: 1,
        clusters: [{ name: 'member2', replicas: 1 }],
        placement: { clusterAffinity: { clusterNames: ['member2', 'member3'] } },
        failover: { application: { decisionConditions: { tolerationSeconds: 2 }, purgeMode: 'Gracefully', gracePeriodSeconds: 600 } },
      },
      status: { schedulerObservedGeneration: 1, aggregatedStatus: [{ clusterName: 'member2', applied: true, health: 'Healthy' }] },
    });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const healthy = server.get('resourcebindings', name, 'default')!;
    server.upsert({
      ...healthy,
      status: { schedulerObservedGeneration: 1, aggregatedStatus: [{ clusterName: 'member2', applied: true, health: 'Unhealthy' }] },
    });
    const spec = await waitFor(
      async () => {
        const s = server.get('resourcebindings', name, 'default')?.spec as {
          clusters: Array<{ name: string }>;
          gracefulEvictionTasks?: Array<Record<string, unknown>>;
        };
        return s.gracefulEvictionTasks?.length ? s : undefined;
      },
      30_000,
      100,
    ).catch((error: unknown) => {
      console.log(
        host
          .output()
          .split('\n')
          .filter((l) => /web-app|applicationFailover|error|warn/i.test(l))
          .slice(-40)
          .join('\n'),
      );
      console.log(JSON.stringify(server.get('resourcebindings', name, 'default'), null, 1));
      throw error;
    });
    expect(spec.clusters.map((c) => c.name)).not.toContain('member2');
    expect(spec.gracefulEvictionTasks?.[0]).toMatchObject({ fromCluster: 'member2', reason: 'ApplicationFailure' });
  }, 45_000);

  it('says why in Kubernetes Events: kubectl describe cluster member1 shows the taint and its reason', async () => {
    const { stdout } = await run('/usr/bin/kubectl', ['--kubeconfig', adminKubeconfig, 'describe', 'clusters', 'member1'], {
      env: { ...process.env, HOME: dir },
    });
    expect(stdout, stdout).toMatch(/TaintAdded/);
    expect(stdout).toMatch(/cluster\.karmada\.io\/not-ready/);
    expect(stdout).toMatch(/ConditionChanged/);
  }, 30_000);

  it('relists when its watch has expired (410), and resumes from the stored resourceVersion after a restart without re-evaluating every cluster', async () => {
    server.resetRequests();
    server.compact();
    const compactedAt = Number(server.currentResourceVersion());
    // Compaction leaves open watches running (as etcd's does); the watch is ended, as at its request timeout.
    server.endWatches();
    // Without a relist the watch would ask for the expired resourceVersion again and again.
    await waitFor(
      async () =>
        server.requests.some((r) => r.verb === 'watch' && r.resource === 'clusters' && Number(r.query.resourceVersion) >= compactedAt) ? true : undefined,
      25_000,
      100,
    );

    // A restart: the next sync watches from the stored cursor; no cluster listing, no fan-out.
    await host.stop();
    server.resetRequests();
    host = await startHostProcess({
      KARMADA_KUBECONFIG: karmada.appKubeconfig(),
      FAILOVER_ENABLED: 'true',
      RESOURCE_EVICTION_RATE: String(RATE),
      CLUSTER_STATUS_UPDATE_FREQUENCY_SECONDS: '1',
      CLUSTER_FAILURE_THRESHOLD_SECONDS: '2',
    });
    await waitFor(async () => (server.requests.some((r) => r.verb === 'watch' && r.resource === 'clusters') ? true : undefined), 25_000, 100);
    const firstWatch = server.requests.find((r) => r.verb === 'watch' && r.resource === 'clusters')!;
    expect(Number(firstWatch.query.resourceVersion)).toBeGreaterThanOrEqual(compactedAt);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    // A relist would queue an evaluation of every cluster (three taintEvaluation invocations): none ran.
    const evaluations = host
      .output()
      .split('\n')
      .filter((line) => line.includes('"message":"invocation"') && line.includes('"function":"taintEvaluation"'));
    expect(evaluations).toEqual([]);
  }, 90_000);

  it('fails safe when the Karmada API server refuses it (403): degraded, naming the verb and resource', async () => {
    const forbidden = server.inject({ pathIncludes: '/clusters', status: 403, times: Infinity });
    try {
      const degraded = await waitFor(
        async () => {
          const health = await api(host.url, 'GET', 'healthz');
          return health.status === 503 ? health.body : undefined;
        },
        25_000,
        200,
      );
      expect(degraded).toMatchObject({ status: 'degraded', mode: 'karmada' });
      expect(degraded.reason).toMatch(/(list|watch) clusters\.cluster\.karmada\.io: 403 Forbidden/);
      const fleet = await api(host.url, 'GET', 'fleet');
      expect(fleet.status).toBe(503);
      expect(fleet.body.error ?? fleet.body.message).toMatch(/clusters\.cluster\.karmada\.io: 403/);
    } finally {
      server.clearFaults();
    }
    expect(forbidden.hits).toBeGreaterThan(0);
  }, 60_000);
});
