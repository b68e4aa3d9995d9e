import { app, InvocationContext, Timer } from '@azure/functions';
import { scheduleAll } from '../shared/controllers/scheduler';
import { controlPlane } from '../shared/runtime';

/** At :15 and :45: places what a lost message or an earlier no-fit left behind. */
export async function schedulerResync(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const scheduled = await scheduleAll(controlPlane());
  if (scheduled > 0) ctx.log(`scheduler resync placed ${scheduled} binding(s)`);
}

app.timer('schedulerResync', { schedule: '18,48 * * * * *', runOnStartup: false, useMonitor: false, handler: schedulerResync });
