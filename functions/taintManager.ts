import { app, InvocationContext } from '@azure/functions';
import { taintManagerMessage } from '../shared/controllers/ports';
import { handleTaintManagerMessage } from '../shared/controllers/taintManager';
import { parseQueueMessage } from '../shared/queue/parseMessage';
import { QUEUES } from '../shared/queue/storageQueue';
import { controlPlane } from '../shared/runtime';
import { tracedQueueHandler } from '../shared/telemetry/triggers';

/** A cluster's faulty taints changed (or a binding landed on a faulty cluster): plan or abandon its evictions. */
export async function taintManager(message: unknown, ctx: InvocationContext): Promise<void> {
  const parsed = parseQueueMessage(taintManagerMessage, message, ctx, 'taint manager');
  if (!parsed) return;
  await handleTaintManagerMessage(controlPlane(), parsed);
}

app.storageQueue('taintManager', {
  queueName: QUEUES.taintManager,
  connection: 'AzureWebJobsStorage',
  handler: tracedQueueHandler(QUEUES.taintManager, taintManager),
});
