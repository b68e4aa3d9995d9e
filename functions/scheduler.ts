import { app, InvocationContext } from '@azure/functions';
import { bindingsOf, schedulerMessage } from '../shared/controllers/ports';
import { scheduleBindings } from '../shared/controllers/scheduler';
import { parseQueueMessage } from '../shared/queue/parseMessage';
import { QUEUES } from '../shared/queue/storageQueue';
import { controlPlane } from '../shared/runtime';
import { tracedQueueHandler } from '../shared/telemetry/triggers';

/** Bindings to place: new without clusters, or ones that lost a cluster to eviction. */
export async function scheduler(message: unknown, ctx: InvocationContext): Promise<void> {
  const parsed = parseQueueMessage(schedulerMessage, message, ctx, 'scheduler');
  if (!parsed) return;
  await scheduleBindings(controlPlane(), bindingsOf(parsed));
}

app.storageQueue('scheduler', { queueName: QUEUES.scheduler, connection: 'AzureWebJobsStorage', handler: tracedQueueHandler(QUEUES.scheduler, scheduler) });
