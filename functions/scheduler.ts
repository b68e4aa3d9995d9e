import { app, InvocationContext } from '@azure/functions';
import { schedulerMessage } from '../shared/controllers/ports';
import { scheduleBinding } from '../shared/controllers/scheduler';
import { parseQueueMessage } from '../shared/queue/parseMessage';
import { QUEUES } from '../shared/queue/storageQueue';
import { controlPlane } from '../shared/runtime';
import { tracedQueueHandler } from '../shared/telemetry/triggers';

/** A binding to place: new without clusters, or one that lost a cluster to eviction. */
export async function scheduler(message: unknown, ctx: InvocationContext): Promise<void> {
  const parsed = parseQueueMessage(schedulerMessage, message, ctx, 'scheduler');
  if (!parsed) return;
  await scheduleBinding(controlPlane(), parsed.binding);
}

app.storageQueue('scheduler', { queueName: QUEUES.scheduler, connection: 'AzureWebJobsStorage', handler: tracedQueueHandler(QUEUES.scheduler, scheduler) });
