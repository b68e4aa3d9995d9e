/**
 * `npm run bench -- scale [clusters] [bindings]` (issues 5/5 and 5b): a fleet of realistic size on one
 * local host and one Azurite, every Table and Queue request counted at a proxy. The fleet is seeded straight
 * into storage in bulk (what the host would hold after applying it), then measured: idle requests and table
 * rows read per minute, the host's memory, planning against Azurite's own batch-insert ceiling measured in
 * the same run, the achieved eviction rate and storage requests per eviction when 10 clusters fail at once.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { odata, type TableClient, type TransactionAction } from '@azure/data-tables';
import { sleep } from '../shared/clock';
import { loadConfig } from '../shared/config';
import { placementsOf } from '../shared/controllers/state/bindingWrites';
import { recountFleet } from '../shared/controllers/state/reads';
import { createControlPlane } from '../shared/runtime';
import type { StorageClients } from '../shared/store/connection';
import { submit } from '../shared/store/ledger/transactions';
import type { BindingRecord, ClusterRecord } from '../shared/store/records';
import { newClusterRecord } from '../shared/store/records';
import { TableDocumentStore, TABLES } from '../shared/store/tableStorage';
import { silentLogger } from '../shared/telemetry/log';
import { startTestStorage } from '../test/helpers/azurite';
import { cluster } from '../test/helpers/fleet';
import { api, startHostProcess } from '../test/helpers/hostProcess';
import { countedStorage } from './countingProxy';

const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;

/** Resident memory of a process, from /proc (Linux), in MB. */
function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return round(kb / 1024);
}

/**
 * The host's resident memory sampled every 250 ms: `peak()` gives the highest since the previous call (or
 * the start), so each phase reports its own peak, not only what it holds as it ends.
 */
function rssSampler(pid: number) {
  let highest = 0;
  const sample = () => {
    try {
      highest = Math.max(highest, rssMb(pid));
    } catch {
      // the host has exited
    }
  };
  const timer = setInterval(sample, 250);
  return {
    peak(): number {
      sample();
      const peak = highest;
      highest = 0;
      return peak;
    },
    stop: () => clearInterval(timer),
  };
}

/** Rows a filter matches, reading only their keys. */
async function countRows(client: TableClient, filter: string): Promise<number> {
  let count = 0;
  for await (const page of client.listEntities({ queryOptions: { filter, select: ['RowKey'] } }).byPage({ maxPageSize: 1000 })) count += page.length;
  return count;
}

/**
 * What the host logged about the failing clusters since a point: rows planned (`evictions enqueued`, with its
 * count) and rows carried out (`evicted`, `eviction blocked`), with the time of the last such line. The bench
 * watches progress through the log so that it sends Azurite no query while the host is measured (Azurite
 * answers every query, and every page of one, by scanning the whole table).
 */
function loggedProgress(log: string, clusters: ReadonlySet<string>): { planned: number; plannedAt: number; ended: number } {
  let planned = 0;
  let plannedAt = 0;
  let ended = 0;
  for (const line of log.split('\n')) {
    if (!line.includes('"evictions enqueued"') && !line.includes('"evicted"') && !line.includes('"eviction blocked"')) continue;
    try {
      const entry = JSON.parse(line) as { msg?: string; time?: string; cluster?: string; count?: number };
      if (!entry.cluster || !clusters.has(entry.cluster)) continue;
      if (entry.msg === 'evictions enqueued') {
        planned += entry.count ?? 0;
        plannedAt = Math.max(plannedAt, Date.parse(entry.time ?? ''));
      } else if (entry.msg === 'evicted' || entry.msg === 'eviction blocked') ended++;
    } catch {
      // a line cut at the stretch's edge
    }
  }
  return { planned, plannedAt, ended };
}

/** When each cluster's whole plan was stored: the planner's `evictions enqueued` log line (its last, if several). */
function plannedTimes(log: string): Map<string, number> {
  const at = new Map<string, number>();
  for (const line of log.split('\n')) {
    if (!line.includes('"evictions enqueued"')) continue;
    try {
      const entry = JSON.parse(line) as { time: string; cluster: string };
      at.set(entry.cluster, Math.max(at.get(entry.cluster) ?? -Infinity, Date.parse(entry.time)));
    } catch {
      // a line cut at the stretch's edge
    }
  }
  return at;
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux): its busy time. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  // utime and stime are fields 14 and 15 of stat (11 and 12 after the command), in clock ticks (100 a second).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * Function invocations in a stretch of the host's log (the local host logs one `invocation` line per
 * invocation, at debug level for an idle timer tick): how many, and their summed duration, which bounds
 * from above the execution time Flex Consumption bills (it bills the time at least one runs).
 */
function invocationStats(log: string): { invocations: number; busySeconds: number } {
  let invocations = 0;
  let busyMs = 0;
  for (const line of log.split('\n')) {
    if (!line.includes('"invocation"')) continue;
    try {
      const entry = JSON.parse(line) as { msg?: string; durationMs?: number };
      invocations++;
      busyMs += entry.durationMs ?? 0;
    } catch {
      // a line cut at the stretch's edge
    }
  }
  return { invocations, busySeconds: round(busyMs / 1000, 2) };
}

export function clusterRecord(name: string, now: Date): ClusterRecord {
  const record = newClusterRecord(name, now, 'apply');
  record.conditions = [{ type: 'Ready', status: 'True', reason: 'ClusterReady', lastTransitionTime: now.toISOString() }];
  record.lastReportAt = now.toISOString();
  // Healthy since its first report, as the host keeps it (failback's count).
  record.healthySince = now.toISOString();
  return record;
}

export function bindingRecord(i: number, home: string, other: string, now: Date): BindingRecord {
  return {
    kind: 'ResourceBinding',
    namespace: 'default',
    name: `app-${i}`,
    uid: randomUUID(),
    createdAt: now.toISOString(),
    generation: 1,
    rev: 1,
    labels: {},
    annotations: {},
    spec: {
      resource: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: `app-${i}` },
      replicas: 1,
      clusters: [{ name: home, replicas: 1 }],
      placement: { clusterAffinity: { clusterNames: [home, other] } },
      failover: { cluster: { purgeMode: 'Gracefully', tolerationSeconds: 0 } },
    },
    status: { schedulerObservedGeneration: 1 },
  };
}

/**
 * Azurite's own ceiling: full 100-entity transactions, 8 at a time (as the ledger writes), spread over
 * `partitions` partitions (planning writes one partition per failing cluster; Azurite serves one
 * partition's transactions one after another, so the ceiling depends on the count).
 */
async function batchInsertCeiling(storage: Awaited<ReturnType<typeof startTestStorage>>['storage'], entities: number, partitions: number): Promise<number> {
  const client = storage.table(TABLES.ledger);
  const actions = Array.from({ length: entities }, (_, i): TransactionAction => [
    'upsert',
    { partitionKey: `bench-ceiling-${partitions}-${i % partitions}`, rowKey: `r${String(i).padStart(7, '0')}`, payload: 'x'.repeat(200) },
    'Replace',
  ]);
  const started = performance.now();
  await submit(client, actions);
  return Math.round(entities / ((performance.now() - started) / 1000));
}

/**
 * The planner's own working time: per failing cluster, from its decision (a row's `decidedAt` is the clock
 * read when the cluster's planning began, before the cluster and its placements are read) to the host's
 * `evictions enqueued` line for it (logged once its rows and due entries are written); the union of those
 * spans, so clusters planned at once count once and the queue hops before each are left out. (A row's entity
 * Timestamp would not do: the pacer updates rows within seconds.)
 */
async function plannerBusySeconds(ledger: TableClient, hostLog: string): Promise<{ seconds: number; perClusterMs: number[] }> {
  const decided = new Map<string, number>();
  const rows = ledger.listEntities<{ decision?: string }>({
    queryOptions: { filter: odata`RowKey ge 'e:' and RowKey lt 'e;'`, select: ['PartitionKey', 'decision'] },
  });
  for await (const row of rows) {
    const cluster = String(row.partitionKey).split('|')[0];
    const at = Date.parse((JSON.parse(row.decision ?? '{}') as { decidedAt?: string }).decidedAt ?? '');
    if (Number.isFinite(at)) decided.set(cluster, Math.min(decided.get(cluster) ?? Infinity, at));
  }
  const enqueued = plannedTimes(hostLog);
  const spans = [...decided]
    .filter(([cluster]) => enqueued.has(cluster))
    .map(([cluster, from]) => [from, enqueued.get(cluster)!] as const)
    .sort((a, b) => a[0] - b[0]);
  let busyMs = 0;
  let reached = -Infinity;
  for (const [from, to] of spans) {
    busyMs += Math.max(0, to - Math.max(from, reached));
    reached = Math.max(reached, to);
  }
  return { seconds: Math.max(0.001, busyMs / 1000), perClusterMs: spans.map(([from, to]) => to - from).sort((a, b) => a - b) };
}

/**
 * Seeds `clusters` healthy clusters and `bindings` bindings (each on one cluster, with a second candidate
 * half the fleet away) straight into storage in bulk: what a host would hold after applying them.
 */
export async function seedFleet(
  storage: StorageClients,
  clusters: number,
  bindings: number,
  now: Date,
  /** The first `clusters` clusters hold `bindings` of the bindings (the ones a run fails); the rest spread over the others. */
  hot?: { clusters: number; bindings: number },
) {
  const plane = createControlPlane(storage, loadConfig({}), { log: silentLogger });
  const names = Array.from({ length: clusters }, (_, c) => `c${c}`);
  const seedStarted = performance.now();
  await (plane.clusters as TableDocumentStore<ClusterRecord>).upsertMany(names.map((name) => ({ id: name, value: clusterRecord(name, now) })));
  // Each binding's second candidate is half the fleet away, so the failing clusters (the first few) are never each other's target.
  const homeOf = (i: number) => (!hot ? i % clusters : i < hot.bindings ? i % hot.clusters : hot.clusters + ((i - hot.bindings) % (clusters - hot.clusters)));
  const records = Array.from({ length: bindings }, (_, i) => bindingRecord(i, names[homeOf(i)], names[(homeOf(i) + Math.floor(clusters / 2)) % clusters], now));
  await (plane.bindings as TableDocumentStore<BindingRecord>).upsertMany(records.map((r) => ({ id: `rb:default:${r.name}`, value: r })));
  await plane.ledger.upsertPlacements(records.flatMap(placementsOf));
  await recountFleet(plane);
  return { plane, names, records, seedSeconds: round((performance.now() - seedStarted) / 1000) };
}

/**
 * `failing` clusters fail at once. They hold `failingBindings` of the bindings (10 % by default: 10,000 of
 * 100,000), so planning and pacing are measured on a failure of that size.
 */
export async function scaleRun(clusters: number, bindings: number, failing = 10, rate = 50, evictionSeconds = 60, failingBindings = Math.round(bindings / 10)) {
  const { env, tableProxy, queueProxy, connection } = await countedStorage();
  const now = new Date();
  try {
    const { plane, names, records, seedSeconds } = await seedFleet(env.storage, clusters, bindings, now, { clusters: failing, bindings: failingBindings });
    const ceiling = await batchInsertCeiling(env.storage, 10_000, failing);
    const onePartitionCeiling = await batchInsertCeiling(env.storage, 5_000, 1);

    // The seeded clusters do not report: long grace periods keep the heartbeat monitor from marking them all
    // Unknown in the middle of the idle minute (a steady fleet would be reporting instead).
    const host = await startHostProcess({
      AzureWebJobsStorage: connection,
      FAILOVER_ENABLED: 'true',
      RESOURCE_EVICTION_RATE: String(rate),
      CLUSTER_MONITOR_GRACE_PERIOD_SECONDS: '86400',
      CLUSTER_STARTUP_GRACE_PERIOD_SECONDS: '86400',
      // Every invocation's log line (idle ticks log at debug), for the executions and their duration.
      LOG_LEVEL: 'debug',
    });
    const memory = rssSampler(host.child.pid!);
    try {
      // Idle: a minute with nothing failing, after the timers' first runs (each lists every binding once at
      // a process's start, then once an hour): warm-up ends when 5 s pass with fewer rows read than a few
      // listings of the clusters (the steady background).
      const warmUpStarted = performance.now();
      for (;;) {
        tableProxy.reset();
        await sleep(5000);
        // At least 35 s: every timer has had its first run (the slowest resync runs twice a minute).
        const warm = performance.now() - warmUpStarted > 35_000 && tableProxy.rowsRead() < 3 * clusters + 1000;
        if (warm || performance.now() - warmUpStarted > 300_000) break;
      }
      const warmUpSeconds = round((performance.now() - warmUpStarted) / 1000);
      tableProxy.reset();
      queueProxy.reset();
      memory.peak();
      const idleStarted = performance.now();
      const idleCpuStarted = cpuSeconds(host.child.pid!);
      const idleLogFrom = host.output().length;
      await sleep(60_000);
      const idleMinutes = (performance.now() - idleStarted) / 60_000;
      const idleCpu = cpuSeconds(host.child.pid!) - idleCpuStarted;
      const idleInvocations = invocationStats(host.output().slice(idleLogFrom));
      const idle = {
        requestsPerMinute: Math.round((tableProxy.count() + queueProxy.count()) / idleMinutes),
        tableRowsReadPerMinute: Math.round(tableProxy.rowsRead() / idleMinutes),
        hostMemoryMb: rssMb(host.child.pid!),
        hostPeakMemoryMb: memory.peak(),
        hostCpuSecondsPerMinute: round(idleCpu / idleMinutes, 2),
        warmUpSeconds,
        invocationsPerMinute: Math.round(idleInvocations.invocations / idleMinutes),
        invocationSecondsPerMinute: round(idleInvocations.busySeconds / idleMinutes, 2),
        breakdown: process.env.BENCH_VERBOSE ? { ...tableProxy.breakdown(), ...queueProxy.breakdown() } : undefined,
      };

      // Fail `failing` clusters at once; planning = time until every binding on them has a ledger row.
      const failed = names.slice(0, failing);
      const expected = records.filter((r) => failed.includes(r.spec.clusters![0].name)).length;
      tableProxy.reset();
      queueProxy.reset();
      const failedAt = performance.now();
      const failedAtMs = Date.now();
      const planningLogFrom = host.output().length;
      const res = await api(
        host.url,
        'POST',
        'apply',
        failed.map((name) => cluster(name, true)),
      );
      if (res.status !== 200) throw new Error(`apply failed: ${res.status} ${JSON.stringify(res.body)}`);
      // Watched through the host's log (the planner logs `evictions enqueued` once a cluster's rows and due
      // entries are stored), then checked once against the rows themselves, after the clock stopped.
      const ledgerTable = env.storage.table(TABLES.ledger);
      const failedSet = new Set(failed);
      let progress = loggedProgress('', failedSet);
      for (;;) {
        progress = loggedProgress(host.output().slice(planningLogFrom), failedSet);
        if (progress.planned >= expected || performance.now() - failedAt > 300_000) break;
        await sleep(100);
      }
      const planningSeconds = Math.max(0.001, ((progress.plannedAt || Date.now()) - failedAtMs) / 1000);
      const planned = await countRows(ledgerTable, odata`RowKey ge 'e:' and RowKey lt 'e;'`);
      if (planned < expected) throw new Error(`planning: ${planned} ledger rows of ${expected} after ${round(planningSeconds)} s`);
      // The planner's own pace, from the rows themselves: from the earliest decision (a row's decidedAt is the
      // clock read when its cluster's planning began, before the cluster and its placements are read) to the
      // last row stored (its entity Timestamp, Azurite's clock on the same machine). End to end adds the two
      // queue hops before it (taint evaluation, taint manager: up to maxPollingInterval each when idle).
      const planningPeakMemoryMb = memory.peak();
      const planner = await plannerBusySeconds(ledgerTable, host.output().slice(planningLogFrom));
      const plannerSeconds = planner.seconds;
      const planningBusyMs = process.env.BENCH_VERBOSE ? { ...tableProxy.busyMs(), ...queueProxy.busyMs() } : undefined;
      const planningBreakdown = process.env.BENCH_VERBOSE ? { ...tableProxy.breakdown(), ...queueProxy.breakdown() } : undefined;

      // The evictions, until the last is done (or `evictionSeconds` pass); requests counted over the same span.
      tableProxy.reset();
      queueProxy.reset();
      const windowStarted = performance.now();
      const windowCpuStarted = cpuSeconds(host.child.pid!);
      const windowLogFrom = host.output().length;
      while (performance.now() - windowStarted < evictionSeconds * 1000) {
        if (loggedProgress(host.output().slice(planningLogFrom), failedSet).ended >= expected) break;
        await sleep(500);
      }
      const windowSeconds = (performance.now() - windowStarted) / 1000;
      const done = (await Promise.all(failed.map((name) => plane.ledger.listEvictions(name, ['done'])))).flat();
      const requests = tableProxy.count() + queueProxy.count();
      const windowCpu = cpuSeconds(host.child.pid!) - windowCpuStarted;
      const windowInvocations = invocationStats(host.output().slice(windowLogFrom));
      const times = done
        .map((row) => Date.parse(row.record.executedAt ?? ''))
        .filter((t) => !Number.isNaN(t))
        .sort((a, b) => a - b);
      const evicted = times.length;
      const achievedRate = evicted > 1 ? (evicted - 1) / ((times[evicted - 1] - times[0]) / 1000) : 0;
      // Where the time goes: the rate of the slots the pacer handed out (scheduledFor) and how late the worker acted.
      const slots = done
        .map((row) => Date.parse(row.record.scheduledFor ?? ''))
        .filter((t) => !Number.isNaN(t))
        .sort((a, b) => a - b);
      const slotRate = slots.length > 1 ? (slots.length - 1) / ((slots[slots.length - 1] - slots[0]) / 1000) : 0;
      const lags = done
        .map((row) => Date.parse(row.record.executedAt ?? '') - Date.parse(row.record.scheduledFor ?? ''))
        .filter((t) => !Number.isNaN(t))
        .sort((a, b) => a - b);
      const lagAt = (q: number) => (lags.length ? lags[Math.min(lags.length - 1, Math.floor(q * lags.length))] : null);
      // Steady state: the middle 80 % of the evictions (the first wait for the first rows to be planned).
      const [from, to] = [Math.floor(evicted * 0.1), Math.floor(evicted * 0.9)];
      const steadyRate = to - from > 1 ? (to - from) / ((times[to] - times[from]) / 1000) : 0;
      const idlePerSecond = idle.requestsPerMinute / 60;
      // What users feel: from the request that failed the clusters to each one's first eviction executed.
      const firstByCluster = failed
        .map((name) => Math.min(...done.filter((row) => row.record.cluster === name).map((row) => Date.parse(row.record.executedAt ?? '') || Infinity)))
        .filter(Number.isFinite)
        .map((t) => (t - failedAtMs) / 1000)
        .sort((a, b) => a - b);
      // Where that time goes, per failed cluster (medians over them): its planning began (the earliest row's
      // decidedAt), its first slot was handed out for, and its whole plan was stored (the planner's log line).
      const allRows = (await Promise.all(failed.map((name) => plane.ledger.listEvictions(name)))).flat();
      const enqueuedAt = plannedTimes(host.output().slice(planningLogFrom));
      const stage = (pick: (rows: typeof allRows, cluster: string) => number) => {
        const times = failed
          .map((name) =>
            pick(
              allRows.filter((row) => row.record.cluster === name),
              name,
            ),
          )
          .filter(Number.isFinite)
          .map((t) => (t - failedAtMs) / 1000)
          .sort((a, b) => a - b);
        return times.length ? round(times[Math.floor((times.length - 1) / 2)], 2) : null;
      };
      const earliest = (rows: typeof allRows, field: 'decidedAt' | 'scheduledFor') =>
        Math.min(...rows.map((row) => Date.parse(row.record[field] ?? '') || Infinity));
      const firstEviction = {
        seconds: firstByCluster.length ? round(firstByCluster[0], 2) : null,
        perClusterMedianSeconds: firstByCluster.length ? round(firstByCluster[Math.floor((firstByCluster.length - 1) / 2)], 2) : null,
        perClusterSeconds: firstByCluster.map((t) => round(t, 2)),
        medianStagesSeconds: {
          planningBegan: stage((rows) => earliest(rows, 'decidedAt')),
          firstSlot: stage((rows) => earliest(rows, 'scheduledFor')),
          wholePlanStored: stage((_, name) => enqueuedAt.get(name) ?? Infinity),
        },
      };
      return {
        clusters,
        bindings,
        seedSeconds,
        idle,
        planning: {
          failing,
          expected,
          planned,
          seconds: round(planningSeconds, 2),
          perSecond: Math.round(planned / planningSeconds),
          azuriteBatchInsertPerSecond: ceiling,
          azuriteOnePartitionPerSecond: onePartitionCeiling,
          ratio: round(planned / planningSeconds / ceiling, 2),
          plannerSeconds: round(plannerSeconds, 2),
          plannerMsPerCluster: planner.perClusterMs,
          plannerPerSecond: Math.round(planned / plannerSeconds),
          plannerRatio: round(planned / plannerSeconds / ceiling, 2),
          busyMs: planningBusyMs,
          hostPeakMemoryMb: planningPeakMemoryMb,
          breakdown: planningBreakdown,
        },
        firstEviction,
        evictions: {
          configured: rate,
          evicted,
          seconds: round(windowSeconds),
          achieved: round(achievedRate, 2),
          ratio: round(achievedRate / rate, 3),
          slotRate: round(slotRate, 2),
          lagMs: { p50: lagAt(0.5), p90: lagAt(0.9), max: lagAt(1) },
          steadyAchieved: round(steadyRate, 2),
          steadyRatio: round(steadyRate / rate, 3),
          requestsPerEviction: evicted ? round(requests / evicted) : null,
          marginalRequestsPerEviction: evicted ? round((requests - idlePerSecond * windowSeconds) / evicted) : null,
          hostMemoryMb: rssMb(host.child.pid!),
          hostPeakMemoryMb: memory.peak(),
          hostCpuMsPerEviction: evicted ? Math.round((windowCpu * 1000) / evicted) : null,
          invocationsPerEviction: evicted ? round(windowInvocations.invocations / evicted, 2) : null,
          invocationMsPerEviction: evicted ? Math.round((windowInvocations.busySeconds * 1000) / evicted) : null,
          breakdown: process.env.BENCH_VERBOSE ? { ...tableProxy.breakdown(), ...queueProxy.breakdown() } : undefined,
          busyMs: process.env.BENCH_VERBOSE ? { ...tableProxy.busyMs(), ...queueProxy.busyMs() } : undefined,
        },
      };
    } finally {
      // The host's log lines (at debug), for reading a run's timeline afterwards.
      if (process.env.BENCH_HOST_LOG) writeFileSync(process.env.BENCH_HOST_LOG, host.output());
      memory.stop();
      await host.stop();
    }
  } finally {
    await tableProxy.close();
    await queueProxy.close();
    await env.close();
  }
}

if (require.main === module) {
  scaleRun(
    Number(process.argv[2] ?? 1000),
    Number(process.argv[3] ?? 100_000),
    Number(process.argv[4] ?? 10),
    50,
    Number(process.env.BENCH_EVICTION_SECONDS ?? 60),
  ).then(
    (result) => console.log(JSON.stringify(result, null, 2)),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
