import { app, InvocationContext, Timer } from '@azure/functions';
import { z } from 'zod';
import type { EvictionMessage } from '../shared/controllers/deps';
import { executeEviction } from '../shared/controllers/evictionWorker';
import { parseBindingKey } from '../shared/failover/bindingModel';
import { runPacer } from '../shared/controllers/pacer';
import { parseQueueMessage } from '../shared/queue/parseMessage';
import { QUEUES } from '../shared/queue/storageQueue';
import { controlPlane } from '../shared/runtime';
import { tracedQueueHandler } from '../shared/telemetry/triggers';

/** Every second: hands out send slots at the fleet-health rate and queues the due evictions. */
export async function evictionPacer(_timer: Timer, _ctx: InvocationContext): Promise<void> {
  await runPacer(controlPlane());
}

const evictionMessage = z.object({
  cluster: z.string().min(1).max(63),
  bindingKey: z.string().min(1).max(400),
  etag: z.string().min(1),
  slot: z.iso.datetime({ offset: true }),
  // The scheduled row; writes made from it are conditional on `etag`.
  record: z
    .looseObject({
      cluster: z.string(),
      bindingKey: z.string(),
      kind: z.enum(['ResourceBinding', 'ClusterResourceBinding']),
      name: z.string(),
      state: z.enum(['pending', 'scheduled', 'done', 'abandoned', 'blocked', 'failed']),
      purgeMode: z.enum(['Directly', 'Gracefully']),
      dueAt: z.string(),
      decidedAt: z.string(),
      attempts: z.number(),
    })
    .optional(),
});

/** One paced eviction; idempotent under at-least-once delivery (see shared/controllers/evictionWorker.ts). */
export async function evictionWorker(message: unknown, ctx: InvocationContext): Promise<void> {
  const parsed = parseQueueMessage(evictionMessage, message, ctx, 'eviction');
  if (!parsed) return;
  const plane = controlPlane();
  try {
    await executeEviction(plane, parsed as EvictionMessage);
  } catch (error) {
    // Counted (the `eviction failures` alert watches it) and rethrown: the queue retries, then poisons.
    plane.metrics.recordProcessed(parseBindingKey(parsed.bindingKey).kind, 'error');
    throw error;
  }
}

app.timer('evictionPacer', { schedule: '* * * * * *', runOnStartup: false, useMonitor: false, handler: evictionPacer });
app.storageQueue('evictionWorker', { queueName: QUEUES.evictions, connection: 'AzureWebJobsStorage', handler: tracedQueueHandler(QUEUES.evictions, evictionWorker) });
