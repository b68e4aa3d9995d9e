import { app, InvocationContext, Timer } from '@azure/functions';
import { syncKarmada } from '../shared/controllers/karmadaSync';
import { controlPlane } from '../shared/runtime';
import { shutdownSignal, signalShutdown } from '../shared/shutdown';

/** The timer's period: it fires at every multiple of it. */
const PERIOD_MS = 10_000;
/**
 * Each invocation watches until this long before the next tick: its end (cursors saved, evictions it ran
 * beside the watch) must come before the tick, or the timer skips that occurrence and nobody watches for a
 * whole period. A change in the gap is delivered when the next invocation resumes from the cursor.
 */
const END_BEFORE_TICK_MS = 1000;

/** Seconds from `now` until END_BEFORE_TICK_MS before the next tick (pure). */
export function watchBudgetSeconds(now: number, periodMs = PERIOD_MS, marginMs = END_BEFORE_TICK_MS): number {
  const nextTick = (Math.floor(now / periodMs) + 1) * periodMs;
  return Math.max(0, nextTick - marginMs - now) / 1000;
}

/**
 * Every 10 s, Karmada mode only: list once (or resume from the stored resourceVersion), then watch
 * Clusters, ClusterTaintPolicies and bindings until the budget is spent. A timer is a singleton, so one
 * instance watches at a time; a change becomes the same queue message our own API would send.
 */
export async function karmadaSync(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const plane = controlPlane();
  if (!plane.karmada) return;
  // A degraded report is logged when the state changes (syncKarmada, the API's access tracking), not every 10 s.
  const report = await syncKarmada(plane, watchBudgetSeconds(Date.now()), shutdownSignal);
  const changed = Object.entries(report.kinds).filter(([, k]) => k.events > 0 || k.relisted);
  if (changed.length > 0) ctx.log(`karmada sync: ${changed.map(([kind, k]) => `${kind} ${k.relisted ? 'relisted, ' : ''}${k.events} event(s)`).join('; ')}`);
}

app.timer('karmadaSync', { schedule: `*/${PERIOD_MS / 1000} * * * * *`, runOnStartup: false, useMonitor: false, handler: karmadaSync });
app.hook.appTerminate(() => signalShutdown());
