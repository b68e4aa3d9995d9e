import { app, InvocationContext, Timer } from '@azure/functions';
import { z } from 'zod';
import { scheduleAll, scheduleBinding } from '../shared/controllers/scheduler';
import { parseQueueMessage } from '../shared/queue/parseMessage';
import { QUEUES } from '../shared/queue/storageQueue';
import { controlPlane } from '../shared/runtime';
import { tracedQueueHandler } from '../shared/telemetry/triggers';

const schedulerMessage = z.object({ binding: z.string().min(1).max(400) });

/** A binding to place: new without clusters, or one that lost a cluster to eviction. */
export async function scheduler(message: unknown, ctx: InvocationContext): Promise<void> {
  const parsed = parseQueueMessage(schedulerMessage, message, ctx, 'scheduler');
  if (!parsed) return;
  await scheduleBinding(controlPlane(), parsed.binding);
}

/** Every 30 s: places what a lost message or an earlier no-fit left behind. */
export async function schedulerResync(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const scheduled = await scheduleAll(controlPlane());
  if (scheduled > 0) ctx.log(`scheduler resync placed ${scheduled} binding(s)`);
}

app.storageQueue('scheduler', { queueName: QUEUES.scheduler, connection: 'AzureWebJobsStorage', handler: tracedQueueHandler(QUEUES.scheduler, scheduler) });
app.timer('schedulerResync', { schedule: '15,45 * * * * *', runOnStartup: false, useMonitor: false, handler: schedulerResync });
