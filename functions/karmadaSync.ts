import { app, InvocationContext, Timer } from '@azure/functions';
import { PlaneState } from '../shared/cache';
import { syncKarmada } from '../shared/controllers/karmadaSync';
import { controlPlane } from '../shared/runtime';
import { shutdownSignal, signalShutdown } from '../shared/shutdown';

/** The timer's period: it fires at every multiple of it. */
const PERIOD_MS = 10_000;

/**
 * Each invocation watches until a margin before the next tick: its end (cursors saved, evictions it ran
 * beside the watch) must come before the tick, or the timer skips that occurrence and nobody watches for a
 * whole period. A change in the margin is delivered when the next invocation resumes from the cursor, so
 * the margin is as short as the ends have been: twice the last end's time past its deadline, within
 * [MIN_END_MARGIN_MS, MAX_END_MARGIN_MS], and FIRST_END_MARGIN_MS before any end was seen.
 */
const MIN_END_MARGIN_MS = 250;
const MAX_END_MARGIN_MS = 2000;
const FIRST_END_MARGIN_MS = 1000;

/** The margin before the next tick after an end that took `lastEndMs` past its deadline (pure). */
export function endMarginMs(lastEndMs: number | undefined): number {
  if (lastEndMs === undefined) return FIRST_END_MARGIN_MS;
  return Math.min(MAX_END_MARGIN_MS, Math.max(MIN_END_MARGIN_MS, 2 * lastEndMs));
}

/** Seconds from `now` until `marginMs` before the next tick (pure). */
export function watchBudgetSeconds(now: number, marginMs = FIRST_END_MARGIN_MS, periodMs = PERIOD_MS): number {
  const nextTick = (Math.floor(now / periodMs) + 1) * periodMs;
  return Math.max(0, nextTick - marginMs - now) / 1000;
}

/** Per process: how long the last invocation's end took past its watches' deadline (ms). */
const lastEnd = new PlaneState<number>('karmadaSyncLastEnd');

/**
 * Every 10 s, Karmada mode only: list once (or resume from the stored resourceVersion), then watch
 * Clusters, ClusterTaintPolicies and bindings until the budget is spent. A timer is a singleton, so one
 * instance watches at a time; a change becomes the same queue message our own API would send.
 */
export async function karmadaSync(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const plane = controlPlane();
  if (!plane.karmada) return;
  // A degraded report is logged when the state changes (syncKarmada, the API's access tracking), not every 10 s.
  const budget = watchBudgetSeconds(Date.now(), endMarginMs(lastEnd.get(plane)));
  const deadline = Date.now() + budget * 1000;
  const report = await syncKarmada(plane, budget, shutdownSignal);
  if (budget > 0) lastEnd.set(plane, Math.max(0, Date.now() - deadline));
  const changed = Object.entries(report.kinds).filter(([, k]) => k.events > 0 || k.relisted);
  if (changed.length > 0) ctx.log(`karmada sync: ${changed.map(([kind, k]) => `${kind} ${k.relisted ? 'relisted, ' : ''}${k.events} event(s)`).join('; ')}`);
}

app.timer('karmadaSync', { schedule: `*/${PERIOD_MS / 1000} * * * * *`, runOnStartup: false, useMonitor: false, handler: karmadaSync });
app.hook.appTerminate(() => signalShutdown());
