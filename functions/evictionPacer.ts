import { app, InvocationContext, Timer } from '@azure/functions';
import { runPacer } from '../shared/controllers/pacer';
import { evictionsOutput, handingOff } from '../shared/queue/handOff';
import { invocationPlane } from '../shared/runtime';

/**
 * Every second: hands out send slots at the fleet-health rate and queues the due evictions. Its messages
 * without a delay go through the evictions output binding, which wakes the worker's listener at once.
 */
export async function evictionPacer(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const outcome = await runPacer(invocationPlane(ctx));
  if (outcome.scheduled > 0) ctx.log(`scheduled ${outcome.scheduled} eviction(s) at ${outcome.rate}/s (${outcome.tier})`);
}

app.timer('evictionPacer', { schedule: '* * * * * *', runOnStartup: false, useMonitor: false, ...handingOff(evictionPacer, [evictionsOutput]) });
