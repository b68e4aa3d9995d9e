import { app, InvocationContext } from '@azure/functions';
import { z } from 'zod';
import { executeEvictionBatch } from '../shared/controllers/evictionWorker';
import { EvictionBatch, evictionBatchMessage, evictionMessage } from '../shared/controllers/ports';
import { parseQueueMessage } from '../shared/queue/parseMessage';
import { QUEUES } from '../shared/queue/storageQueue';
import { controlPlane } from '../shared/runtime';
import { tracedQueueHandler } from '../shared/telemetry/triggers';

/** A message sent before evictions were batched: one eviction of its own. */
const eitherMessage = z.union([evictionBatchMessage, evictionMessage.transform((single) => ({ evictions: [single] }))]);

/** Paced evictions, each at its slot; idempotent under at-least-once delivery (see shared/controllers/evictionWorker.ts). */
export async function evictionWorker(message: unknown, ctx: InvocationContext): Promise<void> {
  const parsed = parseQueueMessage(eitherMessage, message, ctx, 'eviction');
  if (!parsed) return;
  // The rows the message carries were validated for the fields the worker reads; the rest passes through.
  await executeEvictionBatch(controlPlane(), parsed as EvictionBatch);
}

app.storageQueue('evictionWorker', {
  queueName: QUEUES.evictions,
  connection: 'AzureWebJobsStorage',
  handler: tracedQueueHandler(QUEUES.evictions, evictionWorker),
});
