import { app, InvocationContext } from '@azure/functions';
import { planAndPaceHere } from '../shared/controllers/paceAndRun';
import { taintManagerMessage } from '../shared/controllers/ports';
import { handleTaintManagerMessage } from '../shared/controllers/taintManager';
import { evictionsOutput, handingOff } from '../shared/queue/handOff';
import { parseQueueMessage } from '../shared/queue/parseMessage';
import { QUEUES } from '../shared/queue/storageQueue';
import { invocationPlane } from '../shared/runtime';
import { tracedQueueHandler } from '../shared/telemetry/triggers';

/**
 * A cluster's faulty taints changed (or a binding landed on a faulty cluster): plan or abandon its evictions.
 * Rows just planned are paced at once (instead of at the timer's next tick), the first second of them run
 * here, and the rest of its messages go through the evictions output binding, which wakes the worker's
 * listener at once.
 */
export async function taintManager(message: unknown, ctx: InvocationContext): Promise<void> {
  const parsed = parseQueueMessage(taintManagerMessage, message, ctx, 'taint manager');
  if (!parsed) return;
  const plane = invocationPlane(ctx);
  // Rows are paced as they are stored, and the first of them run here (planAndPaceHere), clusters failing
  // together taking turns.
  await planAndPaceHere(plane, () => handleTaintManagerMessage(plane, parsed));
}

app.storageQueue('taintManager', {
  queueName: QUEUES.taintManager,
  connection: 'AzureWebJobsStorage',
  ...handingOff(tracedQueueHandler(QUEUES.taintManager, taintManager), [evictionsOutput]),
});
