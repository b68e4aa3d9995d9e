/**
 * `npm run demo`: the whole failover loop on a local host, live in the terminal.
 *
 * It starts a host with short windows and a raised rate, builds a fleet of 12 clusters and a few hundred
 * bindings with mixed policies, and plays the reporters (cluster health) and the deployer (workload health
 * of new placements). Then it fails three clusters, waits for the workloads to move and the old copies to
 * be cleared, fails five more to cross the unhealthy threshold (12 clusters is a large fleet, so the rate
 * drops to the secondary tier), holds that for a while so it can be watched, recovers everything, prints a
 * summary and exits 0 only if the fleet ends consistent. `npm run demo -- --keep` leaves the host (and its
 * console) running afterwards, with the simulated reporters, until Ctrl-C.
 */
import { sleep } from '../shared/clock';
import { api, HostProcess, startHostProcess } from '../test/helpers/hostProcess';

const RATE = 20;
const SECONDARY_RATE = 5;
const WINDOW_SECONDS = 2;
const CLUSTERS = Array.from({ length: 12 }, (_, i) => `member${i + 1}`);
/** How long the mass failure is held at the secondary rate before everything recovers (to watch it). */
const MASS_FAILURE_HOLD_MS = 15_000;
const KEEP = process.argv.includes('--keep');

const clock = (start: number) => `${((Date.now() - start) / 1000).toFixed(1).padStart(5)}s`;

interface Binding {
  metadata: { name: string; generation: number };
  spec: { clusters?: Array<{ name: string }>; gracefulEvictionTasks?: Array<{ fromCluster: string }> };
  status: { schedulerObservedGeneration?: number; aggregatedStatus?: Array<{ clusterName: string; health: string }> };
}

async function main(): Promise<void> {
  const started = Date.now();
  const host: HostProcess = await startHostProcess({
    FAILOVER_ENABLED: 'true',
    RESOURCE_EVICTION_RATE: String(RATE),
    SECONDARY_RESOURCE_EVICTION_RATE: String(SECONDARY_RATE),
    CLUSTER_MONITOR_GRACE_PERIOD_SECONDS: '600',
    // The demo fails 8 of 12 clusters through one policy to show the fleet-health tiers; the blast-radius
    // guard (default 0.5) would stop that policy at 6.
    MAX_FLEET_SHARE_TAINTED_BY_POLICY: '1',
  });
  const down = new Set<string>();
  let stop = false;
  const loops: Array<Promise<void>> = [];
  try {
    console.log(`host ${host.url} (rate ${RATE}/s, secondary ${SECONDARY_RATE}/s, windows ${WINDOW_SECONDS}s); watch it at ${host.url}/api/console/`);
    const apply = async (objects: unknown[]) => {
      for (let i = 0; i < objects.length; i += 100) {
        const res = await api(host.url, 'POST', 'apply', objects.slice(i, i + 100));
        if (res.status !== 200) throw new Error(`apply failed: ${JSON.stringify(res.body)}`);
      }
    };
    await apply(CLUSTERS.map((name, i) => ({ apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name, labels: { zone: `z${i % 3}` } } })));
    await apply([
      {
        apiVersion: 'policy.karmada.io/v1alpha1',
        kind: 'ClusterTaintPolicy',
        metadata: { name: 'not-ready' },
        spec: {
          matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False', 'Unknown'] }],
          taintsToAdd: [
            { key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', addOnMatchSeconds: WINDOW_SECONDS, removeOnMismatchSeconds: WINDOW_SECONDS },
          ],
        },
      },
    ]);

    // Reporters: every cluster reports its health every second.
    loops.push(
      (async () => {
        while (!stop) {
          await Promise.all(
            CLUSTERS.map((name) =>
              api(host.url, 'POST', `clusters/${name}/status`, { conditions: [{ type: 'Ready', status: down.has(name) ? 'False' : 'True' }] }),
            ),
          );
          await sleep(1000);
        }
      })(),
    );

    // Workloads: 160 Duplicated on two clusters, 60 Divided by weight, 30 that tolerate the failure,
    // 10 that can only run on member1 (no target when it fails: they stay).
    const resource = (name: string) => ({ apiVersion: 'apps/v1', kind: 'Deployment', name });
    const bindings = [
      ...Array.from({ length: 160 }, (_, i) => ({
        name: `web-${i}`,
        spec: { replicas: 2, placement: { spreadConstraints: [{ minGroups: 2, maxGroups: 2 }] } },
      })),
      ...Array.from({ length: 60 }, (_, i) => ({
        name: `batch-${i}`,
        spec: {
          replicas: 6,
          placement: {
            clusterAffinity: { clusterNames: CLUSTERS.slice(0, 6) },
            replicaScheduling: {
              replicaSchedulingType: 'Divided',
              replicaDivisionPreference: 'Weighted',
              weightPreference: {
                staticWeightList: [
                  { targetCluster: { clusterNames: ['member1', 'member2'] }, weight: 2 },
                  { targetCluster: { clusterNames: CLUSTERS.slice(2, 6) }, weight: 1 },
                ],
              },
            },
          },
        },
      })),
      ...Array.from({ length: 30 }, (_, i) => ({
        name: `db-${i}`,
        spec: {
          replicas: 1,
          placement: {
            spreadConstraints: [{ maxGroups: 1 }],
            clusterTolerations: [{ key: 'cluster.karmada.io/not-ready', operator: 'Exists', effect: 'NoExecute' }],
          },
        },
      })),
      ...Array.from({ length: 10 }, (_, i) => ({ name: `pinned-${i}`, spec: { replicas: 1, placement: { clusterAffinity: { clusterNames: ['member1'] } } } })),
    ];
    await apply(
      bindings.map((b) => ({
        apiVersion: 'work.karmada.io/v1alpha2',
        kind: 'ResourceBinding',
        metadata: { name: b.name, namespace: 'demo' },
        spec: { resource: resource(b.name), ...b.spec },
      })),
    );

    const list = async (): Promise<Binding[]> => (await api(host.url, 'GET', 'resourcebindings/demo')).body.items;
    // The deployer: a new placement becomes Healthy about a second after it is scheduled (not on a down cluster).
    loops.push(
      (async () => {
        while (!stop) {
          for (const b of await list()) {
            if (b.status.schedulerObservedGeneration !== b.metadata.generation) continue;
            const targets = (b.spec.clusters ?? []).map((c) => c.name);
            const health = targets.map((name) => ({ clusterName: name, applied: true, health: down.has(name) ? 'Unhealthy' : 'Healthy' }));
            const known = b.status.aggregatedStatus ?? [];
            if (JSON.stringify(known.map((k) => [k.clusterName, k.health])) !== JSON.stringify(health.map((h) => [h.clusterName, h.health]))) {
              await api(host.url, 'POST', `resourcebindings/demo/${b.metadata.name}/status`, { aggregatedStatus: health });
            }
          }
          await sleep(1000);
        }
      })(),
    );

    const snapshot = async () => {
      const [fleet, items, evictions] = await Promise.all([api(host.url, 'GET', 'fleet'), list(), api(host.url, 'GET', 'evictions')]);
      const rows = evictions.body.items as Array<{ state: string; executedAt: string | null; scheduledFor: string | null }>;
      const count = (state: string) => rows.filter((r) => r.state === state).length;
      const tasks = items.reduce((n, b) => n + (b.spec.gracefulEvictionTasks ?? []).length, 0);
      const onDown = items.filter((b) => (b.spec.clusters ?? []).some((c) => down.has(c.name))).length;
      return {
        fleet: fleet.body,
        items,
        rows,
        tasks,
        onDown,
        line: `faulty ${fleet.body.faulty}/${fleet.body.total} tier ${fleet.body.tier} ${fleet.body.rate}/s | ledger pending ${count('pending')} scheduled ${count('scheduled')} done ${count('done')} blocked ${count('blocked')} abandoned ${count('abandoned')} | old copies waiting ${tasks} | bindings on down clusters ${onDown}`,
      };
    };
    const watch = async (label: string, until: (s: Awaited<ReturnType<typeof snapshot>>) => boolean, limitSeconds: number) => {
      const from = Date.now();
      for (;;) {
        const s = await snapshot();
        console.log(`${clock(started)} [${label}] ${s.line}`);
        if (until(s)) return s;
        if (Date.now() - from > limitSeconds * 1000) {
          throw new Error(`${label}: not settled within ${limitSeconds}s`);
        }
        await sleep(1000);
      }
    };

    await watch(
      'placing',
      (s) =>
        s.items.length === bindings.length &&
        s.items.every((b) => b.status.schedulerObservedGeneration === b.metadata.generation && (b.status.aggregatedStatus ?? []).length > 0),
      60,
    );

    // Three clusters fail.
    const failedAt = Date.now();
    for (const name of ['member1', 'member2', 'member3']) down.add(name);
    console.log(`${clock(started)} member1, member2 and member3 report Ready=False`);
    const moved = await watch(
      'failover',
      (s) =>
        s.fleet.faulty === 3 &&
        s.fleet.pending === 0 &&
        s.fleet.scheduled === 0 &&
        s.rows.length > 0 &&
        s.items.every((b) => (b.spec.gracefulEvictionTasks ?? []).every((t) => t.fromCluster === 'member1' && b.metadata.name.startsWith('pinned'))),
      90,
    );
    const evicted = moved.rows.filter((r) => r.state === 'done');
    const lastEviction = Math.max(...evicted.map((r) => Date.parse(r.executedAt!)));
    const healedAt = Date.now();
    const ideal = WINDOW_SECONDS + evicted.length / RATE;
    console.log(
      `${clock(started)} ${evicted.length} workloads moved; last eviction ${((lastEviction - failedAt) / 1000).toFixed(1)}s after the failure, all healthy elsewhere by ${((healedAt - failedAt) / 1000).toFixed(1)}s (ideal: ${WINDOW_SECONDS}s window + ${evicted.length}/${RATE}/s = ${ideal.toFixed(1)}s)`,
    );

    // Five more: 8 of 12 is above 55 % in a large fleet: the secondary rate.
    for (const name of ['member4', 'member5', 'member6', 'member7', 'member8']) down.add(name);
    console.log(`${clock(started)} member4..member8 fail too: 8 of 12`);
    // The tier shows in the send slots the pacer hands out once the fleet is unhealthy (whether each
    // eviction then runs or is blocked for want of a target cluster, it used its slot).
    const massAt = Date.now();
    const slotsAfter = (s: Awaited<ReturnType<typeof snapshot>>) =>
      s.rows
        .map((r) => (r.scheduledFor ? Date.parse(r.scheduledFor) : 0))
        .filter((t) => t > massAt + 4000)
        .sort((a, b) => a - b);
    const slow = await watch('mass failure', (s) => s.fleet.tier === 'secondary' && slotsAfter(s).length >= 15, 60);
    const slots = slotsAfter(slow);
    const slowRate = (slots.length - 1) / ((slots[slots.length - 1] - slots[0]) / 1000);
    console.log(`${clock(started)} tier ${slow.fleet.tier}: ${slots.length} send slots at ${slowRate.toFixed(1)}/s (secondary rate ${SECONDARY_RATE}/s)`);
    console.log(`${clock(started)} holding the mass failure for ${MASS_FAILURE_HOLD_MS / 1000}s (the console's fleet page shows the tier)`);
    await sleep(MASS_FAILURE_HOLD_MS);

    // Everything recovers: waiting evictions are abandoned.
    down.clear();
    console.log(`${clock(started)} every cluster reports Ready=True`);
    const settled = await watch('recovery', (s) => s.fleet.faulty === 0 && s.fleet.pending === 0 && s.fleet.scheduled === 0 && s.tasks === 0, 60);

    // Consistency: nothing waiting, every binding placed on clusters that exist, no task left behind.
    const problems: string[] = [];
    for (const b of settled.items) {
      if ((b.spec.clusters ?? []).length === 0) problems.push(`${b.metadata.name} has no placement`);
      if ((b.spec.gracefulEvictionTasks ?? []).length > 0) problems.push(`${b.metadata.name} still has tasks`);
    }
    const counts = (state: string) => settled.rows.filter((r) => r.state === state).length;
    console.log('\nsummary');
    console.log(
      `  bindings ${settled.items.length}, evicted ${counts('done')}, abandoned on recovery ${counts('abandoned')} (including those blocked for want of a target)`,
    );
    console.log(`  failure → all moved workloads healthy elsewhere: ${((healedAt - failedAt) / 1000).toFixed(1)}s (ideal ${ideal.toFixed(1)}s)`);
    console.log(`  mass failure: tier secondary at ${slowRate.toFixed(1)}/s`);
    console.log(`  consistent: ${problems.length === 0 ? 'yes' : `no\n    ${problems.slice(0, 10).join('\n    ')}`}`);
    console.log(`  took ${((Date.now() - started) / 1000).toFixed(0)}s`);
    process.exitCode = problems.length === 0 ? 0 : 1;
    if (KEEP) {
      console.log(`\nthe host keeps running: ${host.url}/api/console/ (Ctrl-C stops it)`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      });
    }
  } finally {
    stop = true;
    // The simulated reporters and deployer finish their round before the host goes.
    await Promise.allSettled(loops);
    await host.stop();
  }
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
