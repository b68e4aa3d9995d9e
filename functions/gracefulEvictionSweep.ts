import { app, InvocationContext, Timer } from '@azure/functions';
import { sweepAllBindings } from '../shared/controllers/gracefulEviction';
import { controlPlane } from '../shared/runtime';

/** Every 10 s: the graceful-eviction sweep over every binding with tasks (grace periods, Directly, health). */
export async function gracefulEvictionSweep(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const dropped = await sweepAllBindings(controlPlane());
  if (dropped > 0) ctx.log(`graceful eviction sweep cleared ${dropped} task(s)`);
}

app.timer('gracefulEvictionSweep', { schedule: '1-59/10 * * * * *', runOnStartup: false, useMonitor: false, handler: gracefulEvictionSweep });
