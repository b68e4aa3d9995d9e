import { app, InvocationContext } from '@azure/functions';
import { z } from 'zod';
import { awaitDeadline } from '../shared/queue/deadline';
import { EVALUATION_LEAD_SECONDS, evaluateCluster, scheduleEvaluation } from '../shared/controllers/taintController';
import { parseQueueMessage } from '../shared/queue/parseMessage';
import { QUEUES } from '../shared/queue/storageQueue';
import { controlPlane } from '../shared/runtime';
import { tracedQueueHandler } from '../shared/telemetry/triggers';

const evaluationMessage = z.object({
  cluster: z.string().min(1).max(63),
  reason: z.enum(['deadline', 'policy-changed', 'resync']),
  dueAt: z.iso.datetime({ offset: true }).optional(),
});

/**
 * Re-evaluates one cluster's taints: immediately after a policy change, or at a window's deadline. The
 * message becomes visible a little before the deadline; the rest is waited out here, so the taint lands
 * within a few milliseconds of it. Idempotent: evaluation is a function of stored state and time.
 */
export async function taintEvaluation(message: unknown, ctx: InvocationContext): Promise<void> {
  const parsed = parseQueueMessage(evaluationMessage, message, ctx, 'taint evaluation');
  if (!parsed) return;
  const plane = controlPlane();
  if (!(await awaitDeadline(plane.clock, parsed.dueAt, EVALUATION_LEAD_SECONDS, (due) => scheduleEvaluation(plane, parsed.cluster, due)))) return;
  await evaluateCluster(plane, parsed.cluster);
}

app.storageQueue('taintEvaluation', { queueName: QUEUES.taintEvaluations, connection: 'AzureWebJobsStorage', handler: tracedQueueHandler(QUEUES.taintEvaluations, taintEvaluation) });
