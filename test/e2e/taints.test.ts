import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';

/**
 * End to end through HTTP on a running local host (the same entry point as `npm start`, with embedded
 * Azurite): policies with short windows, health reports, and the taints that follow.
 */
let host: HostProcess;
beforeAll(async () => {
  host = await startHostProcess({ CLUSTER_MONITOR_GRACE_PERIOD_SECONDS: '2', CLUSTER_STARTUP_GRACE_PERIOD_SECONDS: '3' });
}, 30_000);
afterAll(async () => {
  const code = await host?.stop('SIGTERM');
  expect(code).toBe(0);
  expect(host.output()).toContain('"host stopped"');
});

const policy = (name: string, cluster: string, statuses: string[], key: string, seconds: number) => ({
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind: 'ClusterTaintPolicy',
  metadata: { name },
  spec: {
    targetCluster: { clusterNames: [cluster] },
    matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: statuses }],
    taintsToAdd: [{ key, effect: 'NoExecute', addOnMatchSeconds: seconds, removeOnMismatchSeconds: seconds }],
  },
});

const report = (cluster: string, status: string) =>
  api(host.url, 'POST', `clusters/${cluster}/status`, { conditions: [{ type: 'Ready', status, reason: `Test${status}` }] });
const taintsOf = async (cluster: string) => (await api(host.url, 'GET', `clusters/${cluster}`)).body.spec.taints as Array<{ key: string; timeAdded: string }>;
const readyTransition = (body: any) => Date.parse(body.status.conditions.find((c: any) => c.type === 'Ready').lastTransitionTime);

describe('ClusterTaintPolicy windows on a running host', () => {
  it('adds the taint 2 s after Ready=False (not before, within 3.5 s) and removes it 2 s after Ready=True', async () => {
    expect((await api(host.url, 'POST', 'apply', policy('e2e-window', 'e2e-a', ['False'], 'e2e/not-ready', 2))).status).toBe(200);
    const down = await report('e2e-a', 'False');
    expect(down.status).toBe(200);
    const downAt = readyTransition(down.body);
    const taint = await waitFor(async () => (await taintsOf('e2e-a'))[0], 5000);
    const seenAt = Date.now();
    const addedAfter = Date.parse(taint.timeAdded) - downAt;
    expect(addedAfter).toBeGreaterThanOrEqual(2000);
    expect(addedAfter).toBeLessThanOrEqual(3500);
    expect(seenAt - downAt).toBeLessThanOrEqual(3500);

    const up = await report('e2e-a', 'True');
    const upAt = readyTransition(up.body);
    expect(await taintsOf('e2e-a')).toHaveLength(1);
    await waitFor(async () => ((await taintsOf('e2e-a')).length === 0 ? true : undefined), 5000);
    // The events are recorded right after the cluster's write: wait for them, not only for the taint to go.
    const events = await waitFor(async () => {
      const items = (await api(host.url, 'GET', 'events?kind=Cluster&name=e2e-a')).body.items as Array<{ reason: string; time: string; details?: any }>;
      return items.some((e) => e.reason === 'TaintRemoved') ? items : undefined;
    }, 5000);
    const removed = events.find((e) => e.reason === 'TaintRemoved')!;
    const removedAfter = Date.parse(removed.time) - upAt;
    expect(removedAfter).toBeGreaterThanOrEqual(2000);
    expect(removedAfter).toBeLessThanOrEqual(3500);
    const added = events.find((e) => e.reason === 'TaintAdded')!;
    expect(added.details).toMatchObject({
      policy: 'e2e-window',
      taint: { key: 'e2e/not-ready', effect: 'NoExecute' },
      conditions: [{ type: 'Ready', status: 'False' }],
    });
  });

  it('never taints on a 1 s flap', async () => {
    await api(host.url, 'POST', 'apply', policy('e2e-flap', 'e2e-b', ['False'], 'e2e/flap', 2));
    await report('e2e-b', 'False');
    await new Promise((r) => setTimeout(r, 1000));
    await report('e2e-b', 'True');
    await new Promise((r) => setTimeout(r, 2500));
    expect(await taintsOf('e2e-b')).toEqual([]);
    const events = (await api(host.url, 'GET', 'events?kind=Cluster&name=e2e-b')).body.items as Array<{ reason: string }>;
    expect(events.map((e) => e.reason)).not.toContain('TaintAdded');
  });

  it('turns a cluster that stops reporting Unknown after the grace period, and the Unknown policy taints it', async () => {
    await api(host.url, 'POST', 'apply', policy('e2e-unreachable', 'e2e-c', ['Unknown'], 'cluster.karmada.io/unreachable', 1));
    const lastReport = Date.now();
    await report('e2e-c', 'True');
    const unknown = await waitFor(
      async () => {
        const cluster = (await api(host.url, 'GET', 'clusters/e2e-c')).body;
        const ready = cluster.status.conditions.find((c: any) => c.type === 'Ready');
        return ready.status === 'Unknown' ? ready : undefined;
      },
      12_000,
      100,
    );
    expect(unknown.reason).toBe('ClusterStatusUnknown');
    // Grace period 2 s, monitor every 5 s: Unknown no earlier than 2 s after the last report.
    expect(Date.parse(unknown.lastTransitionTime) - lastReport).toBeGreaterThanOrEqual(2000);
    const taint = await waitFor(async () => (await taintsOf('e2e-c'))[0], 4000);
    expect(taint.key).toBe('cluster.karmada.io/unreachable');
    expect(Date.parse(taint.timeAdded) - Date.parse(unknown.lastTransitionTime)).toBeGreaterThanOrEqual(1000);
  });

  it('answers unknown objects with 404, wrong methods with 405 and bad input with 400, all as JSON', async () => {
    expect(await api(host.url, 'GET', 'clusters/nope')).toMatchObject({ status: 404, body: { error: 'cluster "nope" not found' } });
    expect(await api(host.url, 'DELETE', 'clustertaintpolicies/nope')).toMatchObject({ status: 404 });
    expect(await api(host.url, 'PUT', 'clusters')).toMatchObject({ status: 405 });
    expect(await api(host.url, 'GET', 'apply')).toMatchObject({ status: 405 });
    const bad = await api(host.url, 'POST', 'clusters/e2e-a/status', { conditions: [{ type: 'Ready', status: 'maybe' }] });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([{ path: 'conditions[0].status', message: 'must be one of "True", "False", "Unknown"' }]);
  });
});
