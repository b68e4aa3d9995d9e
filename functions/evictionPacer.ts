import { app, InvocationContext, Timer } from '@azure/functions';
import { runPacer } from '../shared/controllers/pacer';
import { controlPlane } from '../shared/runtime';

/** Every second: hands out send slots at the fleet-health rate and queues the due evictions. */
export async function evictionPacer(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const outcome = await runPacer(controlPlane());
  if (outcome.scheduled > 0) ctx.log(`scheduled ${outcome.scheduled} eviction(s) at ${outcome.rate}/s (${outcome.tier})`);
}

app.timer('evictionPacer', { schedule: '* * * * * *', runOnStartup: false, useMonitor: false, handler: evictionPacer });
