import { app, InvocationContext, Timer } from '@azure/functions';
import { PlaneState } from '../shared/cache';
import { syncKarmada } from '../shared/controllers/karmadaSync';
import { controlPlane } from '../shared/runtime';
import { shutdownSignal, signalShutdown } from '../shared/shutdown';

/**
 * The timer fires every second; an invocation watches for about WATCH_MS (long: each end leaves a gap of
 * its margin without a watch; within the host's functionTimeout) and ends a margin before a tick,
 * so the next one starts at that tick and resumes from the stored cursor. Its end (cursors saved) must come
 * before the tick, or the timer skips it (a second more without a watch; evictions run beside the watch may
 * take that second by choice). A change in the margin is delivered when the next invocation resumes, so the margin is as short
 * as the ends have been: twice the last end's time past its deadline, within [MIN_END_MARGIN_MS,
 * MAX_END_MARGIN_MS], and FIRST_END_MARGIN_MS before any end was seen.
 */
const WATCH_MS = 55_000;
const MIN_END_MARGIN_MS = 250;
const MAX_END_MARGIN_MS = 2000;
const FIRST_END_MARGIN_MS = 1000;

/** The margin before the next tick after an end that took `lastEndMs` past its deadline (pure). */
export function endMarginMs(lastEndMs: number | undefined): number {
  if (lastEndMs === undefined) return FIRST_END_MARGIN_MS;
  return Math.min(MAX_END_MARGIN_MS, Math.max(MIN_END_MARGIN_MS, 2 * lastEndMs));
}

/** Seconds from `now` until `marginMs` before the first whole second at least `watchMs` away (pure). */
export function watchBudgetSeconds(now: number, marginMs = FIRST_END_MARGIN_MS, watchMs = WATCH_MS): number {
  const tick = Math.ceil((now + watchMs) / 1000) * 1000;
  return Math.max(0, tick - marginMs - now) / 1000;
}

/** Per process: how long the last invocation's end took past its watches' deadline (ms). */
const lastEnd = new PlaneState<number>('karmadaSyncLastEnd');

/**
 * Karmada mode only: list once (or resume from the stored resourceVersion), then watch Clusters,
 * ClusterTaintPolicies and bindings until the budget is spent. A timer is a singleton, so one instance
 * watches at a time; a change becomes the same queue message our own API would send.
 */
export async function karmadaSync(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const plane = controlPlane();
  if (!plane.karmada) return;
  // A degraded report is logged when the state changes (syncKarmada, the API's access tracking), not every run.
  const budget = watchBudgetSeconds(Date.now(), endMarginMs(lastEnd.get(plane)));
  const deadline = Date.now() + budget * 1000;
  const report = await syncKarmada(plane, budget, shutdownSignal);
  // The margin covers how long the watches take to end; evictions run beside them may end later by choice.
  if (budget > 0 && report.watchesEndedAt !== undefined) lastEnd.set(plane, Math.max(0, report.watchesEndedAt - deadline));
  const changed = Object.entries(report.kinds).filter(([, k]) => k.events > 0 || k.relisted);
  if (changed.length > 0) ctx.log(`karmada sync: ${changed.map(([kind, k]) => `${kind} ${k.relisted ? 'relisted, ' : ''}${k.events} event(s)`).join('; ')}`);
}

app.timer('karmadaSync', { schedule: '* * * * * *', runOnStartup: false, useMonitor: false, handler: karmadaSync });
app.hook.appTerminate(() => signalShutdown());
