import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStorage, TestStorage } from '../helpers/azurite';
import { applyObjects, cluster, sleep } from '../helpers/fleet';
import { api, HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';

/** A one-cluster workload (spread maxGroups 1) that may run on any of `candidates`. */
const workload = (name: string, on: string, candidates: string[], application: Record<string, unknown>) => ({
  apiVersion: 'work.karmada.io/v1alpha2',
  kind: 'ResourceBinding',
  metadata: { name, namespace: 'apps' },
  spec: {
    resource: { apiVersion: 'apps/v1', kind: 'Deployment', name, namespace: 'apps' },
    replicas: 1,
    clusters: [{ name: on, replicas: 1 }],
    placement: { clusterAffinity: { clusterNames: candidates }, spreadConstraints: [{ spreadByField: 'cluster', maxGroups: 1, minGroups: 1 }] },
    failover: { application },
  },
});

const report = (url: string, name: string, statuses: Array<{ clusterName: string; health: string }>) =>
  api(url, 'POST', `resourcebindings/apps/${name}/status`, { aggregatedStatus: statuses });
const getBinding = async (url: string, name: string) => (await api(url, 'GET', `resourcebindings/apps/${name}`)).body;
const placedOn = (binding: { spec: { clusters?: Array<{ name: string }> } }) => (binding.spec.clusters ?? []).map((c) => c.name);
const eventsOf = async (url: string, name: string) =>
  (
    (await api(url, 'GET', `events?kind=ResourceBinding&name=apps/${name}`)).body.items as Array<{
      reason: string;
      message: string;
      time: string;
      details?: Record<string, unknown>;
    }>
  ).sort((a, b) => a.time.localeCompare(b.time));

describe('application failover on one host', () => {
  let host: HostProcess;
  beforeAll(async () => {
    host = await startHostProcess({ FAILOVER_ENABLED: 'true' });
    await applyObjects(
      host.url,
      ['p1', 'p2', 'f1', 'f2', 'n1', 'n2', 's1', 's2', 'q1', 'q2'].map((name) => cluster(name)),
    );
  }, 30_000);
  afterAll(async () => host?.stop());

  it("tells the seed's preemption story: moved after the toleration, the old cluster blocked, then allowed again", async () => {
    await applyObjects(host.url, [
      workload('preempted', 'p1', ['p1', 'p2'], { decisionConditions: { tolerationSeconds: 2 }, purgeMode: 'Immediately', blockPredecessorSeconds: 8 }),
    ]);
    expect((await report(host.url, 'preempted', [{ clusterName: 'p1', health: 'Healthy' }])).body.status.aggregatedStatus).toEqual([
      expect.objectContaining({ clusterName: 'p1', health: 'Healthy', settled: true, creationTimestamp: expect.any(String) }),
    ]);
    const unhealthy = await report(host.url, 'preempted', [{ clusterName: 'p1', health: 'Unhealthy' }]);
    const since = Date.parse(unhealthy.body.status.aggregatedStatus[0].unhealthySince);

    const moved = await waitFor(
      async () => {
        const b = await getBinding(host.url, 'preempted');
        // Immediately: the old copy's task is cleared right after the new placement is made.
        return placedOn(b).includes('p2') && b.spec.gracefulEvictionTasks.length === 0 ? b : undefined;
      },
      8000,
      50,
    );
    expect(placedOn(moved)).toEqual(['p2']);
    expect(moved.spec.activeEvictionHistory).toEqual([{ clusterName: 'p1', creationTimestamp: expect.any(String) }]);
    const evictedAt = Date.parse(moved.spec.activeEvictionHistory[0].creationTimestamp);
    expect(evictedAt - since).toBeGreaterThanOrEqual(2000);
    expect(evictedAt - since).toBeLessThan(3500);
    const events = await eventsOf(host.url, 'preempted');
    expect(events.find((e) => e.reason === 'OldCopyRemoved')?.details).toMatchObject({ cluster: 'p1', purgeMode: 'Directly' });
    const why = events.find((e) => e.reason === 'ApplicationFailover')!;
    expect(why.message).toMatch(
      /^left p1: Unhealthy for [\d.]+s since .* \(tolerationSeconds 2\); the old copy is removed at once; p1 may be chosen again from /,
    );
    expect(why.details).toMatchObject({ cluster: 'p1', blockedUntil: new Date(evictedAt + 8000).toISOString() });

    // p2 fails too while p1 is still blocked: nowhere to go, so it stays, and says why.
    await report(host.url, 'preempted', [{ clusterName: 'p2', health: 'Healthy' }]);
    await report(host.url, 'preempted', [{ clusterName: 'p2', health: 'Unhealthy' }]);
    const held = await waitFor(
      async () => {
        const b = await getBinding(host.url, 'preempted');
        return b.status.aggregatedStatus.find((i: { clusterName: string }) => i.clusterName === 'p2')?.failoverHeld ? b : undefined;
      },
      6000,
      100,
    );
    expect(placedOn(held)).toEqual(['p2']);
    expect(held.status.aggregatedStatus.find((i: { clusterName: string }) => i.clusterName === 'p2').failoverHeld).toMatch(
      /^nowhere to go: .*\(blocked by the eviction history: p1\)$/,
    );

    // When p1's block ends the held failover goes, back to p1; p1 leaves the history, p2 enters it.
    const back = await waitFor(
      async () => {
        const b = await getBinding(host.url, 'preempted');
        return placedOn(b).includes('p1') ? b : undefined;
      },
      12_000,
      100,
    );
    expect(Date.now()).toBeGreaterThanOrEqual(evictedAt + 8000);
    expect(placedOn(back)).toEqual(['p1']);
    expect(back.spec.activeEvictionHistory.map((h: { clusterName: string }) => h.clusterName)).toEqual(['p2']);
    const reasons = (await eventsOf(host.url, 'preempted')).map((e) => e.reason);
    expect(reasons.filter((r) => ['WorkloadUnhealthy', 'ApplicationFailover', 'ApplicationFailoverHeld', 'Scheduled'].includes(r))).toEqual([
      'WorkloadUnhealthy',
      'ApplicationFailover',
      'Scheduled',
      'WorkloadUnhealthy',
      'ApplicationFailoverHeld',
      'ApplicationFailover',
      'Scheduled',
    ]);
  }, 40_000);

  it('moves nothing for a flap shorter than the toleration', async () => {
    await applyObjects(host.url, [workload('flapping', 'f1', ['f1', 'f2'], { decisionConditions: { tolerationSeconds: 3 } })]);
    for (let i = 0; i < 2; i++) {
      await report(host.url, 'flapping', [{ clusterName: 'f1', health: 'Unhealthy' }]);
      await sleep(1500);
      await report(host.url, 'flapping', [{ clusterName: 'f1', health: 'Healthy' }]);
    }
    await sleep(3500);
    const binding = await getBinding(host.url, 'flapping');
    expect(placedOn(binding)).toEqual(['f1']);
    expect(binding.spec.activeEvictionHistory).toBeUndefined();
    expect((await eventsOf(host.url, 'flapping')).map((e) => e.reason).filter((r) => r.startsWith('Workload') || r.startsWith('Application'))).toEqual([
      'WorkloadUnhealthy',
      'WorkloadRecovered',
      'WorkloadUnhealthy',
      'WorkloadRecovered',
    ]);
  }, 20_000);

  it('purgeMode Never keeps the old copy until an administrator confirms its task', async () => {
    await applyObjects(host.url, [workload('kept', 'n1', ['n1', 'n2'], { decisionConditions: { tolerationSeconds: 0 }, purgeMode: 'Never' })]);
    const evicted = await report(host.url, 'kept', [{ clusterName: 'n1', health: 'Unhealthy' }]);
    expect(evicted.body.evictedClusters).toEqual(['n1']);
    expect(evicted.body.spec.gracefulEvictionTasks).toEqual([
      expect.objectContaining({ fromCluster: 'n1', purgeMode: 'Never', suppressDeletion: true, reason: 'ApplicationFailure' }),
    ]);
    const placed = await waitFor(
      async () => {
        const b = await getBinding(host.url, 'kept');
        return placedOn(b).includes('n2') ? b : undefined;
      },
      8000,
      100,
    );
    expect(placedOn(placed)).toEqual(['n2']);
    // The new copy is Healthy: a Gracefully task would go now; this one stays.
    const healthy = await report(host.url, 'kept', [{ clusterName: 'n2', health: 'Healthy' }]);
    expect(healthy.body.clearedTasks).toEqual([]);
    expect(healthy.body.spec.gracefulEvictionTasks).toHaveLength(1);
    const confirmed = await api(host.url, 'DELETE', 'resourcebindings/apps/kept/evictiontasks/n1');
    expect(confirmed.status).toBe(200);
    expect(confirmed.body.spec.gracefulEvictionTasks).toEqual([]);
    expect((await api(host.url, 'DELETE', 'resourcebindings/apps/kept/evictiontasks/n1')).status).toBe(404);
    expect((await api(host.url, 'DELETE', 'resourcebindings/apps/kept/evictiontasks/Not_A_Name')).body.errors).toEqual([
      expect.objectContaining({ path: 'cluster' }),
    ]);
    expect((await eventsOf(host.url, 'kept')).map((e) => e.reason)).toContain('OldCopyRemoved');
  }, 20_000);

  it('does not fail over a workload that never settled when healthyState: Healthy is set', async () => {
    await applyObjects(host.url, [
      workload('unsettled', 's1', ['s1', 's2'], { decisionConditions: { tolerationSeconds: 1 }, preConditions: { healthyState: 'Healthy' } }),
    ]);
    await report(host.url, 'unsettled', [{ clusterName: 's1', health: 'Unhealthy' }]);
    const held = await waitFor(
      async () => {
        const b = await getBinding(host.url, 'unsettled');
        return b.status.aggregatedStatus[0].failoverHeld ? b : undefined;
      },
      6000,
      100,
    );
    expect(placedOn(held)).toEqual(['s1']);
    expect(held.status.aggregatedStatus[0]).toMatchObject({ settled: false, failoverHeld: expect.stringContaining('never became Healthy') });
    await sleep(1000);
    expect(placedOn(await getBinding(host.url, 'unsettled'))).toEqual(['s1']);
  }, 15_000);

  it("takes failover.application from the seed's PropagationPolicy, and follows the policy when it changes", async () => {
    const seedPolicy = `apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-propagation
  namespace: apps
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: nginx
    - apiVersion: apps/v1
      kind: StatefulSet
      name: mysql
  failover:
    application:
      preConditions:
        delaySeconds: 5000
      decisionConditions:
        tolerationSeconds: 200
        healthyState:
        - Unhealthy
  placement:
    clusterAffinity:
      clusterNames:
        - g1
        - g2
`;
    expect((await api(host.url, 'POST', 'apply', seedPolicy, 'application/yaml')).body.results).toEqual([
      { kind: 'PropagationPolicy', name: 'apps/nginx-propagation', action: 'created' },
    ]);
    const nginx = {
      apiVersion: 'work.karmada.io/v1alpha2',
      kind: 'ResourceBinding',
      metadata: { name: 'nginx', namespace: 'apps' },
      spec: { resource: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'nginx', namespace: 'apps' }, replicas: 1, clusters: [{ name: 'g1', replicas: 1 }] },
    };
    await applyObjects(host.url, [cluster('g1'), cluster('g2'), nginx]);
    const inherited = await getBinding(host.url, 'nginx');
    expect(inherited.spec.failover.application).toMatchObject({ preConditions: { delaySeconds: 5000 }, decisionConditions: { tolerationSeconds: 200 } });
    expect(inherited.spec.placement).toEqual({ clusterAffinity: { clusterNames: ['g1', 'g2'] } });
    expect(inherited.status.propagationPolicy).toEqual({
      kind: 'PropagationPolicy',
      namespace: 'apps',
      name: 'nginx-propagation',
      fields: ['placement', 'failover'],
    });
    expect((await api(host.url, 'GET', 'propagationpolicies/apps/nginx-propagation')).body.spec.failover.application.blockPredecessorSeconds).toBe(600);

    // The policy changes: its bindings follow, and the new toleration (0) applies at the next report.
    const immediate = seedPolicy.replace('delaySeconds: 5000', 'delaySeconds: 0').replace('tolerationSeconds: 200', 'tolerationSeconds: 0');
    expect((await api(host.url, 'POST', 'apply', immediate, 'application/yaml')).body.results[0].action).toBe('configured');
    expect((await getBinding(host.url, 'nginx')).spec.failover.application.decisionConditions.tolerationSeconds).toBe(0);
    expect((await report(host.url, 'nginx', [{ clusterName: 'g1', health: 'Unhealthy' }])).body.evictedClusters).toEqual(['g1']);
    expect((await eventsOf(host.url, 'nginx')).map((e) => e.reason)).toContain('PolicyApplied');

    // Deleted: the binding keeps only what it set itself.
    expect((await api(host.url, 'DELETE', 'propagationpolicies/apps/nginx-propagation')).status).toBe(200);
    const orphan = await getBinding(host.url, 'nginx');
    expect(orphan.spec.failover).toBeUndefined();
    expect(orphan.status.propagationPolicy).toBeUndefined();
  }, 20_000);

  it('holds a due failover while evictions are paused and lets it go on resume', async () => {
    await applyObjects(host.url, [workload('paused', 'q1', ['q1', 'q2'], { decisionConditions: { tolerationSeconds: 0 } })]);
    expect((await api(host.url, 'POST', 'failover/pause')).status).toBe(200);
    try {
      const held = await report(host.url, 'paused', [{ clusterName: 'q1', health: 'Unhealthy' }]);
      expect(held.body.evictedClusters).toEqual([]);
      expect(held.body.status.aggregatedStatus[0].failoverHeld).toMatch(/^evictions are paused/);
    } finally {
      expect((await api(host.url, 'POST', 'failover/resume')).status).toBe(200);
    }
    const moved = await getBinding(host.url, 'paused');
    expect(moved.spec.activeEvictionHistory.map((h: { clusterName: string }) => h.clusterName)).toEqual(['q1']);
  }, 15_000);
});

describe('application failover across a restart', () => {
  let env: TestStorage;
  beforeAll(async () => {
    env = await startTestStorage();
  });
  afterAll(async () => env.close());

  it('keeps the original deadline when the host is killed mid-window', async () => {
    const first = await startHostProcess({ AzureWebJobsStorage: env.azurite.connectionString, FAILOVER_ENABLED: 'true' });
    await applyObjects(first.url, [cluster('r1'), cluster('r2'), workload('restarted', 'r1', ['r1', 'r2'], { decisionConditions: { tolerationSeconds: 5 } })]);
    const since = Date.parse(
      (await report(first.url, 'restarted', [{ clusterName: 'r1', health: 'Unhealthy' }])).body.status.aggregatedStatus[0].unhealthySince,
    );
    await sleep(1000);
    expect(await first.stop('SIGKILL')).toBe(null);
    const second = await startHostProcess({ AzureWebJobsStorage: env.azurite.connectionString, FAILOVER_ENABLED: 'true' });
    // When the second host serves, relative to the start of the window (one machine, one clock).
    const ready = Date.now() - since;
    try {
      const moved = await waitFor(
        async () => {
          const b = await getBinding(second.url, 'restarted');
          return b.spec.activeEvictionHistory ? b : undefined;
        },
        10_000,
        50,
      );
      const after = Date.parse(moved.spec.activeEvictionHistory[0].creationTimestamp) - since;
      expect(after).toBeGreaterThanOrEqual(5000);
      // At the deadline, or as soon as the second host polls when it started after it (a loaded machine)...
      expect(after).toBeLessThan(Math.max(6000, ready + 1500));
      // ...never a window restarted by the second host (it would end 5 s after that host started).
      expect(after).toBeLessThan(ready + 5000);
    } finally {
      await second.stop();
    }
  }, 40_000);
});
