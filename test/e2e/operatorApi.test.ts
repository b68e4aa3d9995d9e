import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterKey, signReport } from '../../shared/auth/signing';
import { startTestStorage, TestStorage } from '../helpers/azurite';
import { binding } from '../helpers/fleet';
import { HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';
import { storageSnapshot } from '../helpers/storageSnapshot';

/**
 * The operator API on a real host and a real Azurite: what-if (storage byte-for-byte unchanged, then the
 * real failure does what it said), drain and uncordon with the admin token, the queue summary, the fleet
 * history and the why view.
 */
const ADMIN = 'operator-admin-token-0123456789';
const ROOT = 'operator-signing-key-0123456789';
const admin = { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` };

let env: TestStorage;
let host: HostProcess;
let signedAt = Math.floor(Date.now() / 1000);

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = admin) {
  const res = await fetch(`${host.url}/api/${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  return { status: res.status, body: (await res.json()) as any };
}

async function report(cluster: string, status: 'True' | 'False') {
  const body = JSON.stringify({ conditions: [{ type: 'Ready', status }] });
  const ts = String(++signedAt);
  const res = await fetch(`${host.url}/api/clusters/${cluster}/status`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-failover-timestamp': ts, 'x-failover-signature': signReport(clusterKey(ROOT, cluster), ts, body) },
    body,
  });
  expect(res.status).toBe(200);
}

const member = (name: string) => ({ apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name } });
const policy = {
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind: 'ClusterTaintPolicy',
  metadata: { name: 'not-ready' },
  spec: {
    matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False', 'Unknown'] }],
    taintsToAdd: [{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', addOnMatchSeconds: 1, removeOnMismatchSeconds: 1 }],
  },
};

beforeAll(async () => {
  env = await startTestStorage();
  host = await startHostProcess({
    AzureWebJobsStorage: env.azurite.connectionString,
    AUTH_MODE: 'required',
    ADMIN_TOKEN: ADMIN,
    REPORTER_SIGNING_KEY: ROOT,
    FAILOVER_ENABLED: 'true',
    RESOURCE_EVICTION_RATE: '10',
    CLUSTER_MONITOR_GRACE_PERIOD_SECONDS: '3600',
    CLUSTER_STARTUP_GRACE_PERIOD_SECONDS: '3600',
  });
  const objects = [
    policy,
    ...['op1', 'op2', 'op3', 'op4'].map(member),
    binding('moves', ['op1'], { placement: { clusterAffinity: { clusterNames: ['op1', 'op2'] } } }),
    binding('stuck', ['op1'], { placement: { clusterAffinity: { clusterNames: ['op1'] } } }),
    binding('stays', ['op1'], { placement: { clusterTolerations: [{ key: 'cluster.karmada.io/not-ready', operator: 'Exists', effect: 'NoExecute' }] } }),
    binding('drained-a', ['op3'], { placement: { clusterAffinity: { clusterNames: ['op3', 'op4'] } } }),
    binding('drained-b', ['op3'], { placement: { clusterAffinity: { clusterNames: ['op3', 'op4'] } } }),
  ];
  expect((await call('POST', 'apply', objects)).status).toBe(200);
  for (const name of ['op1', 'op2', 'op3', 'op4']) await report(name, 'True');
}, 60_000);
afterAll(async () => {
  await host?.stop();
  await env?.close();
});

describe('operator API', () => {
  it('what-if writes nothing, and the real failure then evicts, blocks and places as it said', async () => {
    // Let the work the reports queued settle (the policy's evaluations) before the baseline.
    let before = '';
    await waitFor(
      async () => {
        const now = await storageSnapshot(env.storage);
        const settled = now === before;
        before = now;
        return settled ? true : undefined;
      },
      20_000,
      1000,
    );
    const answer = await call('POST', 'whatif', { failClusters: ['op1'] }, { 'content-type': 'application/json' });
    expect(answer.status).toBe(200);
    expect(await storageSnapshot(env.storage)).toBe(before);
    expect(answer.body.taints).toEqual([
      expect.objectContaining({ cluster: 'op1', key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', policy: 'not-ready' }),
    ]);
    expect(answer.body.evictions.map((e: any) => [e.binding.name, e.targets])).toEqual([['moves', [{ name: 'op2', replicas: 2 }]]]);
    expect(answer.body.blocked.map((e: any) => e.binding.name)).toEqual(['stuck']);
    expect(answer.body.tolerated.map((e: any) => e.binding.name)).toEqual(['stays']);

    await report('op1', 'False');
    const rows = await waitFor(
      async () => {
        const items = (await call('GET', 'evictions?cluster=op1')).body.items as any[];
        return items.some((r) => r.state === 'done') && items.some((r) => r.state === 'blocked') ? items : undefined;
      },
      20_000,
      200,
    );
    expect(rows.filter((r) => r.state === 'done').map((r) => r.binding.name)).toEqual(['moves']);
    expect(rows.filter((r) => r.state === 'blocked').map((r) => r.binding.name)).toEqual(['stuck']);
    const moved = await waitFor(
      async () => {
        const b = (await call('GET', 'resourcebindings/default/moves')).body;
        return b.status?.schedulerObservedGeneration === b.metadata.generation ? b : undefined;
      },
      10_000,
      200,
    );
    expect(moved.spec.clusters).toEqual([{ name: 'op2', replicas: 2 }]);

    // The why view says it in words, with the ledger row and the events.
    const why = await call('GET', 'resourcebindings/default/moves/why', undefined, {});
    expect(why.status).toBe(200);
    expect(why.body.explanation.join('\n')).toMatch(/left op1 at .* \(failover, Gracefully\): taint cluster.karmada.io\/not-ready:NoExecute is not tolerated/);
    expect(why.body.evictions).toEqual([expect.objectContaining({ cluster: 'op1', state: 'done' })]);
    expect(why.body.events.map((e: any) => e.reason)).toContain('Evicted');
    expect((await call('GET', 'resourcebindings/default/nope/why', undefined, {})).status).toBe(404);

    // The queue summary: op1 faulty, one done, one blocked with its reason.
    const summary = (await call('GET', 'evictions/summary', undefined, {})).body;
    expect(summary.clusters.find((c: any) => c.cluster === 'op1')).toMatchObject({ faulty: true, done: 1, blocked: 1, pending: 0 });
    expect(summary.clusters.find((c: any) => c.cluster === 'op1').blockedReasons[0].reason).toMatch(/Duplicated: 0 other cluster/);
    // The history counts the eviction in its 10 s bucket.
    const history = (await call('GET', 'fleet/history?minutes=5', undefined, {})).body;
    expect(history.points).toHaveLength(30);
    expect(history.points.reduce((sum: number, p: any) => sum + p.evictionsPerSecond * history.bucketSeconds, 0)).toBeGreaterThanOrEqual(1);
  });

  it('what-if names bad input', async () => {
    const bad = await call('POST', 'whatif', { failClusters: ['op1', 'Not_A_Name'], condition: { type: 'Ready', status: 'Maybe' } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: any) => e.path).sort()).toEqual(['condition.status', 'failClusters[1]']);
    const unknown = await call('POST', 'whatif', { failClusters: ['ghost'] });
    expect(unknown).toMatchObject({ status: 400, body: { errors: [{ path: 'failClusters[0]', message: 'no cluster named "ghost"' }] } });
  });

  it('drain needs the admin token, cordons and moves every binding; uncordon ends it; both are idempotent', async () => {
    expect((await call('POST', 'clusters/op3/drain', undefined, {})).status).toBe(401);
    expect((await call('GET', 'clusters/op3/drain')).status).toBe(405);
    expect((await call('POST', 'clusters/ghost/drain')).status).toBe(404);
    const drained = await call('POST', 'clusters/op3/drain');
    expect(drained).toMatchObject({ status: 200, body: { cluster: 'op3', cordoned: true, planned: 2 } });
    await waitFor(
      async () => {
        const items = (await call('GET', 'evictions?cluster=op3')).body.items as any[];
        return items.length === 2 && items.every((r) => r.state === 'done' && r.reason === 'Drain') ? true : undefined;
      },
      20_000,
      200,
    );
    const cluster = (await call('GET', 'clusters/op3')).body;
    expect(cluster.spec.taints).toEqual([expect.objectContaining({ key: 'cluster.karmada.io/unschedulable', effect: 'NoSchedule' })]);
    const summary = (await call('GET', 'evictions/summary', undefined, {})).body;
    expect(summary.clusters.find((c: any) => c.cluster === 'op3')).toMatchObject({ draining: true, faulty: false, done: 2 });
    expect((await call('POST', 'clusters/op3/drain')).body).toMatchObject({ cordoned: false, planned: 0 });

    expect((await call('POST', 'clusters/op3/uncordon')).body).toEqual({ cluster: 'op3', uncordoned: true, abandoned: 0, abandonedAtSlot: 0 });
    expect((await call('GET', 'clusters/op3')).body.spec.taints).toEqual([]);
    expect((await call('POST', 'clusters/op3/uncordon')).body).toEqual({ cluster: 'op3', uncordoned: false, abandoned: 0, abandonedAtSlot: 0 });
    const reasons = ((await call('GET', 'events?kind=Cluster&name=op3')).body.items as any[]).map((e) => e.reason);
    expect(reasons).toEqual(expect.arrayContaining(['Cordoned', 'DrainStarted', 'Uncordoned']));
  });
});
