import { app, InvocationContext, Timer } from '@azure/functions';
import { repairInFlight } from '../shared/controllers/evictionWorker';
import { controlPlane } from '../shared/runtime';

/**
 * Every 5 s: scheduled evictions whose slot passed 10 s ago without a worker (a lost message, a killed
 * host) are finished if their effect is already in the binding, abandoned if the cluster recovered, or put
 * back in line for a new paced slot. Idle, it costs one read of the pacer row.
 */
export async function evictionRepair(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const outcomes = await repairInFlight(controlPlane());
  if (Object.keys(outcomes).length > 0) ctx.log(`eviction repair: ${JSON.stringify(outcomes)}`);
}

app.timer('evictionRepair', { schedule: '2-59/5 * * * * *', runOnStartup: false, useMonitor: false, handler: evictionRepair });
