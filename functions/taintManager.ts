import { app, InvocationContext, Timer } from '@azure/functions';
import { z } from 'zod';
import { manageCluster, resyncTaintManager, retryBlocked } from '../shared/controllers/taintManager';
import { parseQueueMessage } from '../shared/queue/parseMessage';
import { QUEUES } from '../shared/queue/storageQueue';
import { controlPlane } from '../shared/runtime';
import { tracedQueueHandler } from '../shared/telemetry/triggers';

const managerMessage = z.object({ cluster: z.string().min(1).max(63), reason: z.enum(['taints-changed', 'binding-changed', 'resync']) });

/** A cluster's faulty taints changed (or a binding landed on a faulty cluster): plan or abandon its evictions. */
export async function taintManager(message: unknown, ctx: InvocationContext): Promise<void> {
  const parsed = parseQueueMessage(managerMessage, message, ctx, 'taint manager');
  if (!parsed) return;
  const plane = controlPlane();
  await manageCluster(plane, parsed.cluster);
  // The fleet changed: evictions blocked for want of a target get another chance.
  if (parsed.reason === 'taints-changed') await retryBlocked(plane);
}

/** Every 30 s: the taint manager's resync (missed triggers, lost messages, blocked rows, gauges). */
export async function taintManagerResync(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const outcome = await resyncTaintManager(controlPlane());
  if (outcome.planned + outcome.abandoned + outcome.resent + outcome.retried > 0) ctx.log(`taint manager resync: ${JSON.stringify(outcome)}`);
}

app.storageQueue('taintManager', { queueName: QUEUES.taintManager, connection: 'AzureWebJobsStorage', handler: tracedQueueHandler(QUEUES.taintManager, taintManager) });
app.timer('taintManagerResync', { schedule: '*/30 * * * * *', runOnStartup: false, useMonitor: false, handler: taintManagerResync });
