import { app, InvocationContext, Timer } from '@azure/functions';
import { resyncTaintManager } from '../shared/controllers/taintManager';
import { controlPlane } from '../shared/runtime';

/** Every 30 s: the taint manager's resync (missed triggers, lost messages, blocked rows, gauges). */
export async function taintManagerResync(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const outcome = await resyncTaintManager(controlPlane());
  if (outcome.planned + outcome.abandoned + outcome.retried > 0) ctx.log(`taint manager resync: ${JSON.stringify(outcome)}`);
}

app.timer('taintManagerResync', { schedule: '8,38 * * * * *', runOnStartup: false, useMonitor: false, handler: taintManagerResync });
