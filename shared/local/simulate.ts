import { reportClusterStatus } from '../controllers/clusters';
import type { ControlPlane } from '../controllers/ports';
import { CLUSTER_STATUS_UNKNOWN_REASON } from '../failover/conditions';
import { errorFields, Logger } from '../telemetry/log';

/** How often each simulated reporter speaks: well inside the monitor's grace period (50 s by default). */
export const SIMULATED_REPORT_EVERY_MS = 10_000;

/**
 * `npm start -- --simulate`: stands in for the clusters' reporters on a local host, so a local fleet does not
 * go Unknown by itself. Each registered cluster gets a heartbeat that reports no condition: what was last
 * reported stands (a failure reported with `cluster-failover report` stays until reported otherwise), and a
 * report made meanwhile is never overwritten by a stale read. A cluster that has never reported Ready, or
 * that the monitor marked Unknown because nobody reported, reports Ready=True.
 */
export function startSimulatedReporters(plane: ControlPlane, log: Logger, everyMs = SIMULATED_REPORT_EVERY_MS): { stop(): Promise<void> } {
  let stopped = false;
  let round: Promise<void> = Promise.resolve();
  const once = async () => {
    try {
      const clusters = await plane.clusters.list();
      await Promise.all(
        clusters.map(async ({ value }) => {
          const ready = value.conditions.find((c) => c.type === 'Ready');
          const silent = !ready || (ready.status === 'Unknown' && ready.reason === CLUSTER_STATUS_UNKNOWN_REASON);
          const conditions = silent
            ? [{ type: 'Ready', status: 'True' as const, reason: 'SimulatedReporter', message: 'reported by npm start -- --simulate' }]
            : [];
          await reportClusterStatus(plane, value.name, { conditions }, undefined, { registerUnknown: false });
        }),
      );
    } catch (error) {
      log.warn('simulated reporters: a round failed; the next one tries again', errorFields(error));
    }
  };
  const timer = setInterval(() => {
    if (!stopped) round = round.then(once);
  }, everyMs);
  round = once();
  log.info('simulated reporters on: every registered cluster reports its last conditions', { everySeconds: everyMs / 1000 });
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await round;
    },
  };
}
