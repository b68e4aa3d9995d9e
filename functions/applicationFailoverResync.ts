import { app, InvocationContext, Timer } from '@azure/functions';
import { applicationFailoverResync as resync } from '../shared/controllers/applicationFailover';
import { controlPlane } from '../shared/runtime';

/** At :05, :20, :35 and :50: the safety net for lost deadline messages, resumed evictions and expired eviction history. */
export async function applicationFailoverResync(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const evicted = await resync(controlPlane());
  if (evicted > 0) ctx.log(`application failover resync evicted ${evicted} placement(s)`);
}

app.timer('applicationFailoverResync', { schedule: '13,28,43,58 * * * * *', runOnStartup: false, useMonitor: false, handler: applicationFailoverResync });
