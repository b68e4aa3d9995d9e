import { app, InvocationContext } from '@azure/functions';
import { paceAfterPlanning } from '../shared/controllers/pacer';
import { taintManagerMessage } from '../shared/controllers/ports';
import { handleTaintManagerMessage, type PlanOutcome } from '../shared/controllers/taintManager';
import { evictionsOutput, handingOff } from '../shared/queue/handOff';
import { parseQueueMessage } from '../shared/queue/parseMessage';
import { QUEUES } from '../shared/queue/storageQueue';
import { controlPlane } from '../shared/runtime';
import { tracedQueueHandler } from '../shared/telemetry/triggers';

/**
 * A cluster's faulty taints changed (or a binding landed on a faulty cluster): plan or abandon its evictions.
 * Rows just planned are paced at once: a pacer pass right here (the pass the timer runs, ETag-guarded on the
 * pacer's row, so two passes never hand out the same slot) instead of waiting up to a second for its tick, and
 * its messages go through the evictions output binding, which wakes the worker's listener at once.
 */
export async function taintManager(message: unknown, ctx: InvocationContext): Promise<void> {
  const parsed = parseQueueMessage(taintManagerMessage, message, ctx, 'taint manager');
  if (!parsed) return;
  const plane = controlPlane();
  // Rows planned now, or, for a new taint, just before by another pass (the Karmada watch plans a failure
  // inline): pace them. A binding's change on a cluster already planned waits for the tick as before.
  const fresh = (outcome: PlanOutcome) => outcome.planned > 0 || (parsed.reason === 'taints-changed' && outcome.faulty && outcome.alreadyDecided > 0);
  await handleTaintManagerMessage(plane, parsed, (outcome) => (fresh(outcome) ? paceAfterPlanning(plane) : Promise.resolve()));
}

app.storageQueue('taintManager', {
  queueName: QUEUES.taintManager,
  connection: 'AzureWebJobsStorage',
  ...handingOff(tracedQueueHandler(QUEUES.taintManager, taintManager), [evictionsOutput]),
});
