import { app, InvocationContext } from '@azure/functions';
import { taintEvaluationMessage } from '../shared/controllers/ports';
import { evaluateCluster, evaluateClusters, EVALUATION_LEAD_SECONDS, scheduleEvaluation } from '../shared/controllers/taintEvaluation';
import { awaitDeadline } from '../shared/queue/deadline';
import { handingOff } from '../shared/queue/handOff';
import { parseQueueMessage } from '../shared/queue/parseMessage';
import { QUEUES } from '../shared/queue/storageQueue';
import { invocationPlane } from '../shared/runtime';
import { tracedQueueHandler } from '../shared/telemetry/triggers';

/**
 * Re-evaluates a cluster's taints: immediately after a policy change or a relist (a message may name up to
 * 100 clusters), or at a window's deadline. A deadline's message becomes visible a little before it; the
 * rest is waited out here, so the taint lands within a few milliseconds of it. Idempotent: evaluation is a
 * function of stored state and time.
 */
export async function taintEvaluation(message: unknown, ctx: InvocationContext): Promise<void> {
  const parsed = parseQueueMessage(taintEvaluationMessage, message, ctx, 'taint evaluation');
  if (!parsed) return;
  const plane = invocationPlane(ctx);
  if ('clusters' in parsed) return evaluateClusters(plane, parsed.clusters);
  if (!(await awaitDeadline(plane.clock, parsed.dueAt, EVALUATION_LEAD_SECONDS, (due) => scheduleEvaluation(plane, parsed.cluster, due)))) return;
  await evaluateCluster(plane, parsed.cluster);
}

app.storageQueue('taintEvaluation', {
  queueName: QUEUES.taintEvaluations,
  connection: 'AzureWebJobsStorage',
  ...handingOff(tracedQueueHandler(QUEUES.taintEvaluations, taintEvaluation)),
});
