import { app, InvocationContext, Timer } from '@azure/functions';
import { syncKarmada } from '../shared/controllers/karmadaSync';
import { controlPlane } from '../shared/runtime';
import { shutdownSignal, signalShutdown } from '../shared/shutdown';

/** How long one invocation watches: most of the 10 s period, so the next one picks up where it stopped. */
export const WATCH_BUDGET_SECONDS = 9;

/**
 * Every 10 s, Karmada mode only: list once (or resume from the stored resourceVersion), then watch
 * Clusters, ClusterTaintPolicies and bindings until the budget is spent. A timer is a singleton, so one
 * instance watches at a time; a change becomes the same queue message our own API would send.
 */
export async function karmadaSync(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const plane = controlPlane();
  if (!plane.karmada) return;
  // A degraded report is logged when the state changes (syncKarmada, the API's access tracking), not every 10 s.
  const report = await syncKarmada(plane, WATCH_BUDGET_SECONDS, shutdownSignal);
  const changed = Object.entries(report.kinds).filter(([, k]) => k.events > 0 || k.relisted);
  if (changed.length > 0) ctx.log(`karmada sync: ${changed.map(([kind, k]) => `${kind} ${k.relisted ? 'relisted, ' : ''}${k.events} event(s)`).join('; ')}`);
}

app.timer('karmadaSync', { schedule: '*/10 * * * * *', runOnStartup: false, useMonitor: false, handler: karmadaSync });
app.hook.appTerminate(() => signalShutdown());
