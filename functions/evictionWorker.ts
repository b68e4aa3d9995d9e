import { app, InvocationContext } from '@azure/functions';
import { executeEviction } from '../shared/controllers/evictionWorker';
import { EvictionMessage, evictionMessage } from '../shared/controllers/ports';
import { parseQueueMessage } from '../shared/queue/parseMessage';
import { QUEUES } from '../shared/queue/storageQueue';
import { controlPlane } from '../shared/runtime';
import { tracedQueueHandler } from '../shared/telemetry/triggers';

/** One paced eviction; idempotent under at-least-once delivery (see shared/controllers/evictionWorker.ts). */
export async function evictionWorker(message: unknown, ctx: InvocationContext): Promise<void> {
  const parsed = parseQueueMessage(evictionMessage, message, ctx, 'eviction');
  if (!parsed) return;
  // The row the message carries was validated for the fields the worker reads; the rest passes through.
  await executeEviction(controlPlane(), parsed as EvictionMessage);
}

app.storageQueue('evictionWorker', {
  queueName: QUEUES.evictions,
  connection: 'AzureWebJobsStorage',
  handler: tracedQueueHandler(QUEUES.evictions, evictionWorker),
});
