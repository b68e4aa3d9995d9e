/**
 * `npm run bench -- apply [clusters] [bindings] [per request]`: bindings applied through the real HTTP API
 * (POST /api/apply, `per request` documents each, two requests in flight) to one local host on one Azurite,
 * every Table and Queue request counted at a proxy. The fleet's clusters are seeded straight into storage as
 * the scale bench does; the bindings are new, each on one cluster with a second candidate half the fleet
 * away. Per step (10,000 bindings, or 1,000 for runs under 20,000): bindings per second and storage requests
 * per binding (the host's idle background included).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { binding } from '../test/helpers/fleet';
import { api, startHostProcess } from '../test/helpers/hostProcess';
import { seedFleet } from './benchScale';
import { countedStorage } from './countingProxy';

const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;
/** Requests in flight at once: the host works on one while the next is on its way. */
const IN_FLIGHT = 2;

export interface ApplyStep {
  /** Bindings applied when the step ended. */
  applied: number;
  bindingsPerSecond: number;
  requestsPerBinding: number;
}

export async function applyRun(clusters = 1000, bindings = 20_000, perRequest = 500) {
  const { env, tableProxy, queueProxy, connection } = await countedStorage();
  try {
    const { names, seedSeconds } = await seedFleet(env.storage, clusters, 0, new Date());
    // The seeded clusters do not report: long grace periods keep the heartbeat monitor from marking them Unknown.
    const host = await startHostProcess({
      AzureWebJobsStorage: connection,
      FAILOVER_ENABLED: 'true',
      CLUSTER_MONITOR_GRACE_PERIOD_SECONDS: '86400',
      CLUSTER_STARTUP_GRACE_PERIOD_SECONDS: '86400',
    });
    try {
      const step = bindings >= 20_000 ? 10_000 : 1000;
      const document = (i: number) =>
        binding(`app-${i}`, [names[i % clusters]], {
          replicas: 1,
          placement: { clusterAffinity: { clusterNames: [names[i % clusters], names[(i + Math.floor(clusters / 2)) % clusters]] } },
          failover: { cluster: { purgeMode: 'Gracefully', tolerationSeconds: 0 } },
        });
      const requests = Array.from({ length: Math.ceil(bindings / perRequest) }, (_, r) => ({
        from: r * perRequest,
        to: Math.min(bindings, (r + 1) * perRequest),
      }));
      const steps: ApplyStep[] = [];
      let applied = 0;
      let next = 0;
      let stepStarted = performance.now();
      tableProxy.reset();
      queueProxy.reset();
      const started = performance.now();
      const sender = async () => {
        while (next < requests.length) {
          const { from, to } = requests[next++];
          const res = await api(
            host.url,
            'POST',
            'apply',
            Array.from({ length: to - from }, (_, k) => document(from + k)),
          );
          if (res.status !== 200) throw new Error(`apply failed: ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
          applied += to - from;
          // A step ends at the first answer past its boundary (requests in flight may straddle it).
          if (applied >= (steps.length + 1) * step || applied === bindings) {
            const seconds = (performance.now() - stepStarted) / 1000;
            const inStep = applied - (steps.at(-1)?.applied ?? 0);
            steps.push({
              applied,
              bindingsPerSecond: Math.round(inStep / seconds),
              requestsPerBinding: round((tableProxy.count() + queueProxy.count()) / inStep, 2),
            });
            tableProxy.reset();
            queueProxy.reset();
            stepStarted = performance.now();
          }
        }
      };
      await Promise.all(Array.from({ length: IN_FLIGHT }, sender));
      const seconds = (performance.now() - started) / 1000;
      return {
        clusters,
        bindings,
        perRequest,
        inFlight: IN_FLIGHT,
        seedSeconds,
        seconds: round(seconds),
        bindingsPerSecond: Math.round(bindings / seconds),
        steps,
      };
    } finally {
      await host.stop();
    }
  } finally {
    await tableProxy.close();
    await queueProxy.close();
    await env.close();
  }
}

/** The bench's `apply` part: runs `applyRun` with [clusters, bindings, per request], prints the table, writes bench-apply.json. */
export async function applyBench(root: string, [clusters = 1000, bindings = 20_000, perRequest = 500]: number[] = []): Promise<void> {
  const run = await applyRun(clusters, bindings, perRequest);
  writeFileSync(join(root, 'bench-apply.json'), JSON.stringify(run, null, 2) + '\n');
  console.log(
    `apply: ${run.bindings} bindings on ${run.clusters} clusters, ${run.perRequest} per request, ${run.inFlight} in flight: ${run.bindingsPerSecond}/s overall`,
  );
  console.log('applied | bindings/s | storage requests/binding');
  for (const step of run.steps) console.log(`${step.applied} | ${step.bindingsPerSecond} | ${step.requestsPerBinding}`);
}
