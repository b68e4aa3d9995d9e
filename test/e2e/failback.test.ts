import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStorage, TestStorage } from '../helpers/azurite';
import { applyObjects, binding, cluster, ledger, sleep } from '../helpers/fleet';
import { api, HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';
import { storageSnapshot } from '../helpers/storageSnapshot';

/**
 * Failback on a running local host over Azurite: a failure moves the bindings of an opted-in policy off
 * their home, a recovery starts the count, and each binding goes back once the home has been healthy for the
 * window. The figure: how long after the window's end (the home's healthySince + n) each failback started,
 * median and worst. Bad input (the annotation not a whole number of seconds) is a 400 naming the field, and
 * nothing is stored.
 */

const HOME = 'fb-home';
const ALT = 'fb-alt';
const WINDOW = 6;
const BINDINGS = 12;
const RUNS = 2;

let env: TestStorage;
let host: HostProcess;

beforeAll(async () => {
  env = await startTestStorage();
  host = await startHostProcess({
    AzureWebJobsStorage: env.azurite.connectionString,
    FAILOVER_ENABLED: 'true',
    RESOURCE_EVICTION_RATE: '20',
    CLUSTER_MONITOR_GRACE_PERIOD_SECONDS: '3600',
    CLUSTER_STARTUP_GRACE_PERIOD_SECONDS: '3600',
  });
  // The host's first writes (table layouts, the pacer row) land before any baseline is taken.
  await sleep(2500);
}, 60_000);
afterAll(async () => {
  await host?.stop();
  await env?.close();
});

const policy = (name: string, annotations: Record<string, string>, kind = 'PropagationPolicy') => ({
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind,
  metadata: { name, ...(kind === 'PropagationPolicy' ? { namespace: 'default' } : {}), annotations },
  spec: {
    resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment', labelSelector: { matchLabels: { app: 'fb' } } }],
    placement: { clusterAffinity: { clusterNames: [HOME, ALT] }, spreadConstraints: [{ spreadByField: 'cluster', maxGroups: 1, minGroups: 1 }] },
  },
});

const apply = (objects: unknown) =>
  fetch(`${host.url}/api/apply`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(objects) });

describe('failback bad input', () => {
  it.each([
    ['not a number', 'PropagationPolicy', 'soon', 'must be a whole number of seconds such as "600", got "soon"'],
    ['a unit', 'ClusterPropagationPolicy', '300s', 'must be a whole number of seconds such as "600", got "300s"'],
    ['negative', 'PropagationPolicy', '-1', 'must be a whole number of seconds such as "600", got "-1"'],
    ['over 30 days', 'ClusterPropagationPolicy', '2592001', 'must be at most 2592000 (30 days), got "2592001"'],
  ])('%s: 400 naming the annotation, nothing stored', async (_name, kind, value, message) => {
    const before = await storageSnapshot(env.storage);
    const res = await apply([policy('fb-bad', { 'failover.io/failback-after-seconds': value }, kind)]);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { errors: unknown[] }).errors).toEqual([
      { path: 'metadata.annotations["failover.io/failback-after-seconds"]', message, document: 0 },
    ]);
    expect(await storageSnapshot(env.storage)).toBe(before);
  });
});

interface FailedBack {
  time: string;
  name: string;
  details: { home: string; from: string[]; windowSeconds: number; healthySince: string; dueAt: string };
}

describe('failback end to end', () => {
  it(`a failure, a recovery, then failback once the window passes (${RUNS} runs of ${BINDINGS} bindings)`, async () => {
    await applyObjects(host.url, [cluster(HOME), cluster(ALT)]);
    for (const name of [HOME, ALT]) {
      const res = await api(host.url, 'POST', `clusters/${name}/status`, { conditions: [{ type: 'Ready', status: 'True' }] });
      expect(res.status).toBe(200);
    }
    const names = Array.from({ length: BINDINGS }, (_, i) => `fb-${i}`);
    await applyObjects(host.url, [
      policy('fb', { 'failover.io/failback-after-seconds': String(WINDOW) }),
      ...names.map((name) => {
        const b = binding(name, [HOME]);
        return { ...b, metadata: { ...b.metadata, labels: { app: 'fb' } } };
      }),
    ]);
    const placements = async () =>
      Promise.all(
        names.map(async (name) => (await api(host.url, 'GET', `resourcebindings/default/${name}`)).body.spec.clusters.map((c: { name: string }) => c.name)),
      );

    const lateness: number[] = [];
    /** Per run, the first failback (its slot is the due time itself; the others wait for their place at the rate). */
    const firsts: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      // The failure: a NoExecute taint on the home; every binding moves to the other cluster.
      await applyObjects(host.url, [cluster(HOME, true)]);
      await waitFor(async () => ((await placements()).every((p) => p.join() === ALT) ? true : undefined), 20_000, 200).catch(async (error) => {
        console.log(JSON.stringify(await placements()), JSON.stringify(await ledger(host.url)));
        console.log(
          host
            .output()
            .split('\n')
            .filter((l) => l.includes('"warn"') || l.includes('"error"'))
            .slice(0, 30)
            .join('\n'),
        );
        throw error;
      });
      const waiting = (await api(host.url, 'GET', 'failback')).body.bindings as Array<{ state: string; home: string; replacedBy: string[] }>;
      expect(waiting.filter((b) => b.state !== 'done')).toEqual(
        Array(BINDINGS).fill(expect.objectContaining({ state: 'waiting-for-home', home: HOME, replacedBy: [ALT] })),
      );

      // The recovery: the taint goes (Ready stayed True); the count starts.
      const recoveredAt = Date.now();
      await applyObjects(host.url, [cluster(HOME)]);
      const counting = await waitFor(
        async () => {
          const items = ((await api(host.url, 'GET', 'failback')).body.bindings as Array<{ state: string; dueAt?: string }>).filter((b) => b.state !== 'done');
          return items.length === BINDINGS && items.every((b) => b.state === 'counting') ? items : undefined;
        },
        5_000,
        100,
      );
      expect(Date.parse(counting[0].dueAt!) - recoveredAt).toBeGreaterThan((WINDOW - 1) * 1000);
      // Nothing goes before the window ends.
      await sleep(Math.max(0, Date.parse(counting[0].dueAt!) - Date.now() - 500));
      expect((await placements()).every((p) => p.join() === ALT)).toBe(true);

      await waitFor(async () => ((await placements()).every((p) => p.join() === HOME) ? true : undefined), 20_000, 200);
      const events = (await api(host.url, 'GET', `events?kind=ResourceBinding&limit=1000`)).body.items as Array<FailedBack & { reason: string }>;
      const back = events.filter((e) => e.reason === 'FailedBack').slice(-BINDINGS);
      expect(back).toHaveLength(BINDINGS);
      type Row = { binding: { name: string }; reason: string; executedAt: string; dueAt: string };
      const rowOf = (rows: Row[], event: FailedBack & { reason: string }) =>
        rows.find((r) => `default/${r.binding.name}` === event.name && r.reason === 'Failback' && r.dueAt === event.details.dueAt);
      // The worker appends an eviction's events, then commits its row: the last rows may land a moment after
      // the bindings are home.
      const rows = await waitFor(
        async () => {
          const done = (await api(host.url, 'GET', `evictions?cluster=${ALT}&state=done`)).body.items as Row[];
          return back.every((event) => rowOf(done, event)) ? done : undefined;
        },
        5_000,
        100,
      ).catch(async () => (await api(host.url, 'GET', `evictions?cluster=${ALT}&state=done`)).body.items as Row[]);
      for (const event of back) {
        expect(event.details).toMatchObject({ home: HOME, from: [ALT], windowSeconds: WINDOW });
        // Due exactly a window after the home's healthy run began.
        expect(Date.parse(event.details.dueAt)).toBe(Date.parse(event.details.healthySince) + WINDOW * 1000);
        const row = rowOf(rows, event)!;
        expect(row).toBeDefined();
        lateness.push(Date.parse(row.executedAt) - Date.parse(event.details.dueAt));
      }
      firsts.push(Math.min(...lateness.slice(-BINDINGS)));
      // The copy left on the other cluster goes once the copy at home is healthy (until then the other
      // cluster is "in the process of eviction" and takes nothing new).
      for (const name of names) {
        const b = (await api(host.url, 'GET', `resourcebindings/default/${name}`)).body;
        expect(b.spec.gracefulEvictionTasks).toEqual([
          expect.objectContaining({ fromCluster: ALT, reason: 'Failback', producer: 'Failback', purgeMode: 'Gracefully' }),
        ]);
        const report = await api(host.url, 'POST', `resourcebindings/default/${name}/status`, { aggregatedStatus: [{ clusterName: HOME, health: 'Healthy' }] });
        expect(report.body.clearedTasks).toEqual([{ fromCluster: ALT, why: 'ResourceHealth: every target cluster is Healthy' }]);
      }
      const done = (await api(host.url, 'GET', 'failback')).body.bindings as Array<{ state: string }>;
      expect(done.map((b) => b.state)).toEqual(Array<string>(BINDINGS).fill('done'));
      const why = (await api(host.url, 'GET', 'resourcebindings/default/fb-1/why')).body;
      expect(why.explanation.join('\n')).toContain(`went back from ${ALT}`);
    }

    const sorted = [...lateness].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)];
    const worst = sorted[sorted.length - 1];
    console.log(
      `failback start beyond the window (healthySince + ${WINDOW}s), ${lateness.length} failbacks (${BINDINGS} at once, 20/s): median ${median} ms, worst ${worst} ms; the first of each run ${firsts.join(', ')} ms`,
    );
    expect(sorted[0]).toBeGreaterThanOrEqual(0);
    expect(worst).toBeLessThanOrEqual(1000);
  }, 120_000);
});
