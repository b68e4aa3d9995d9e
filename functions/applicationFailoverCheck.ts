import { app, InvocationContext } from '@azure/functions';
import { CHECK_LEAD_SECONDS, checkApplicationFailover, scheduleApplicationCheck } from '../shared/controllers/applicationFailover';
import { applicationFailoverMessage } from '../shared/controllers/ports';
import { awaitDeadline } from '../shared/queue/deadline';
import { parseQueueMessage } from '../shared/queue/parseMessage';
import { QUEUES } from '../shared/queue/storageQueue';
import { controlPlane } from '../shared/runtime';
import { tracedQueueHandler } from '../shared/telemetry/triggers';

/**
 * An application failover deadline: the message becomes visible shortly before it and the rest is waited
 * out here, so the eviction lands within milliseconds of the toleration. Idempotent: the check works from
 * the stored binding and the time.
 */
export async function applicationFailoverCheck(message: unknown, ctx: InvocationContext): Promise<void> {
  const parsed = parseQueueMessage(applicationFailoverMessage, message, ctx, 'application failover check');
  if (!parsed) return;
  const plane = controlPlane();
  if (!(await awaitDeadline(plane.clock, parsed.dueAt, CHECK_LEAD_SECONDS, (due) => scheduleApplicationCheck(plane, parsed.binding, due)))) return;
  await checkApplicationFailover(plane, parsed.binding);
}

app.storageQueue('applicationFailoverCheck', {
  queueName: QUEUES.applicationFailover,
  connection: 'AzureWebJobsStorage',
  handler: tracedQueueHandler(QUEUES.applicationFailover, applicationFailoverCheck),
});
