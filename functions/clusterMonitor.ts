import { app, InvocationContext, Timer } from '@azure/functions';
import { monitorClusterHeartbeats } from '../shared/controllers/clusters';
import { handingOff } from '../shared/queue/handOff';
import { invocationPlane } from '../shared/runtime';

/** Every 5 s (Karmada's default --cluster-monitor-period): Ready=Unknown for clusters silent beyond their grace period. */
export async function clusterMonitor(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const marked = await monitorClusterHeartbeats(invocationPlane(ctx));
  if (marked.length > 0) ctx.log(`marked ${marked.length} cluster(s) Unknown: ${marked.join(', ')}`);
}

app.timer('clusterMonitor', { schedule: '*/5 * * * * *', runOnStartup: false, useMonitor: false, ...handingOff(clusterMonitor) });
