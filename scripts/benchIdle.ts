/**
 * `npm run bench -- idle [clusters] [bindings]`: what a steady fleet costs in storage when nothing fails. A
 * fleet seeded in bulk (seedFleet), one local host, every Table and Queue request counted at a proxy. Each
 * cluster reports an unchanged Ready=True every REPORT_EVERY_MS through the HTTP API (signed when
 * BENCH_AUTH=required), and one minute is measured: all requests, the requests the reports cost (entity reads
 * and writes of the clusters table), the rest (timers and queue polling: the idle cost proper), table rows
 * read, and heartbeat writes per report. Writes bench-idle.json.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { clusterKey, signReport } from '../shared/auth/signing';
import { sleep } from '../shared/clock';
import { startHostProcess } from '../test/helpers/hostProcess';
import { seedFleet } from './benchScale';
import { countedStorage } from './countingProxy';
import { keepAlivePost } from './loadClient';

const ROOT = join(__dirname, '..');
const REPORT_EVERY_MS = 10_000;
const SIGNING_KEY = 'bench-idle-signing-key-0123456789';
const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;

/** Counts of the proxy breakdown whose kind matches `test`. */
const sum = (breakdown: Record<string, number>, test: (kind: string) => boolean) =>
  Object.entries(breakdown).reduce((n, [kind, count]) => n + (test(kind) ? count : 0), 0);
/** A request about one cluster row: what a report costs (the monitor lists the table instead). */
const clusterEntity = (kind: string) => / clusters \(entity\)/.test(kind);
const clusterWrite = (kind: string) => clusterEntity(kind) && !kind.startsWith('GET');

export async function idleRun(clusters: number, bindings: number, options: { seconds?: number; signed?: boolean; reporters?: boolean } = {}) {
  const seconds = options.seconds ?? 60;
  const signed = options.signed ?? process.env.BENCH_AUTH === 'required';
  const reporters = options.reporters ?? true;
  const { env, tableProxy, queueProxy, connection } = await countedStorage();
  let stopReporting = false;
  try {
    const { names, seedSeconds } = await seedFleet(env.storage, clusters, bindings, new Date());
    const host = await startHostProcess({
      AzureWebJobsStorage: connection,
      FAILOVER_ENABLED: 'true',
      ...(signed ? { AUTH_MODE: 'required', REPORTER_SIGNING_KEY: SIGNING_KEY } : { AUTH_MODE: 'none' }),
      // Without reporters the seeded clusters would turn Unknown mid-minute; with them, the default grace.
      ...(reporters ? {} : { CLUSTER_MONITOR_GRACE_PERIOD_SECONDS: '86400', CLUSTER_STARTUP_GRACE_PERIOD_SECONDS: '86400' }),
    });
    const { post, close: closeClient } = keepAlivePost(host.url, 16);
    try {
      const keys = names.map((n) => clusterKey(SIGNING_KEY, n));
      const statuses: Record<string, number> = {};
      let reports = 0;
      // Each cluster reports every REPORT_EVERY_MS, the fleet spread evenly over the period.
      const reporter = async (c: number) => {
        await sleep((c * REPORT_EVERY_MS) / names.length);
        let next = performance.now();
        while (!stopReporting) {
          const body = JSON.stringify({ conditions: [{ type: 'Ready', status: 'True', reason: 'ClusterReady' }], observedAt: new Date().toISOString() });
          const ts = String(Math.floor(Date.now() / 1000));
          const headers: Record<string, string> = { 'content-type': 'application/json' };
          if (signed) Object.assign(headers, { 'x-failover-timestamp': ts, 'x-failover-signature': signReport(keys[c], ts, body) });
          const status = await post(`/api/clusters/${names[c]}/status`, headers, body).catch(() => 0);
          statuses[status] = (statuses[status] ?? 0) + 1;
          reports++;
          next += REPORT_EVERY_MS;
          await sleep(Math.max(0, next - performance.now()));
        }
      };
      const reporting = reporters ? Promise.all(names.map((_, c) => reporter(c))) : Promise.resolve([]);
      // Past the timers' first runs and each cluster's first report (a host reads a cluster once).
      await sleep(reporters ? 2 * REPORT_EVERY_MS : 5000);
      tableProxy.reset();
      queueProxy.reset();
      const reportsBefore = reports;
      const started = performance.now();
      await sleep(seconds * 1000);
      const minutes = (performance.now() - started) / 60_000;
      const breakdown = { ...tableProxy.breakdown(), ...queueProxy.breakdown() };
      const total = tableProxy.count() + queueProxy.count();
      const reportRequests = sum(breakdown, clusterEntity);
      const reportsSent = reports - reportsBefore;
      stopReporting = true;
      await reporting;
      return {
        clusters,
        bindings,
        seedSeconds,
        signed,
        reportEverySeconds: reporters ? REPORT_EVERY_MS / 1000 : null,
        requestsPerMinute: Math.round(total / minutes),
        idleRequestsPerMinute: Math.round((total - reportRequests) / minutes),
        reportRequestsPerMinute: Math.round(reportRequests / minutes),
        tableRowsReadPerMinute: Math.round(tableProxy.rowsRead() / minutes),
        reportsPerMinute: Math.round(reportsSent / minutes),
        heartbeatWritesPerReport: reportsSent ? round(sum(breakdown, clusterWrite) / reportsSent, 3) : null,
        statuses,
        breakdown: Object.fromEntries(Object.entries(breakdown).map(([kind, n]) => [kind, round(n / minutes)])),
      };
    } finally {
      stopReporting = true;
      closeClient();
      await host.stop();
    }
  } finally {
    await tableProxy.close();
    await queueProxy.close();
    await env.close();
  }
}

/** The sizes given (`clusters bindings`), else 100/10,000 and 1,000/10,000 (and 1,000/100,000 with BENCH_IDLE_FULL). */
export async function idleBench(argv: string[]) {
  const sizes: Array<[number, number]> = argv[0]
    ? [[Number(argv[0]), Number(argv[1] ?? 100_000)]]
    : [[100, 10_000], [1000, 10_000], ...(process.env.BENCH_IDLE_FULL ? [[1000, 100_000] as [number, number]] : [])];
  const runs = [];
  for (const [clusters, bindings] of sizes) {
    const run = await idleRun(clusters, bindings, { reporters: process.env.BENCH_IDLE_REPORTERS !== '0' });
    if (process.env.BENCH_VERBOSE) console.error(JSON.stringify(run));
    runs.push(run);
  }
  writeFileSync(join(ROOT, 'bench-idle.json'), JSON.stringify(runs, null, 2) + '\n');
  console.log('clusters | bindings | idle req/min (no reports) | report req/min | all req/min | table rows read/min | reports/min | heartbeat writes/report');
  for (const r of runs) {
    console.log(
      `${r.clusters} | ${r.bindings} | ${r.idleRequestsPerMinute} | ${r.reportRequestsPerMinute} | ${r.requestsPerMinute} | ${r.tableRowsReadPerMinute} | ${r.reportsPerMinute} | ${r.heartbeatWritesPerReport}`,
    );
  }
  return runs;
}
