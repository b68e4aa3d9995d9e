import { app, InvocationContext, Timer } from '@azure/functions';
import { resyncAllClusters } from '../shared/controllers/taintEvaluation';
import { controlPlane } from '../shared/runtime';

/** Every minute: the safety net behind deadline messages; re-evaluates every cluster's taints. */
export async function taintResync(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const { clusters, changes } = await resyncAllClusters(controlPlane());
  if (changes > 0) ctx.log(`resync of ${clusters} cluster(s) changed ${changes} taint(s)`);
}

app.timer('taintResync', { schedule: '3 * * * * *', runOnStartup: false, useMonitor: true, handler: taintResync });
