import { app, InvocationContext, Timer } from '@azure/functions';
import { z } from 'zod';
import { awaitDeadline } from '../shared/queue/deadline';
import { applicationFailoverResync, checkApplicationFailover, CHECK_LEAD_SECONDS, scheduleApplicationCheck } from '../shared/controllers/applicationFailover';
import { parseQueueMessage } from '../shared/queue/parseMessage';
import { QUEUES } from '../shared/queue/storageQueue';
import { controlPlane } from '../shared/runtime';
import { tracedQueueHandler } from '../shared/telemetry/triggers';

const checkMessage = z.object({ binding: z.string().min(1).max(400), dueAt: z.iso.datetime({ offset: true }).optional() });

/**
 * An application failover deadline: the message becomes visible shortly before it and the rest is waited
 * out here, so the eviction lands within milliseconds of the toleration. Idempotent: the check works from
 * the stored binding and the time.
 */
export async function applicationFailoverCheck(message: unknown, ctx: InvocationContext): Promise<void> {
  const parsed = parseQueueMessage(checkMessage, message, ctx, 'application failover check');
  if (!parsed) return;
  const plane = controlPlane();
  if (!(await awaitDeadline(plane.clock, parsed.dueAt, CHECK_LEAD_SECONDS, (due) => scheduleApplicationCheck(plane, parsed.binding, due)))) return;
  await checkApplicationFailover(plane, parsed.binding);
}

/** Every 15 s: the safety net for lost deadline messages, resumed evictions and expired eviction history. */
export async function applicationFailoverSweep(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const evicted = await applicationFailoverResync(controlPlane());
  if (evicted > 0) ctx.log(`application failover resync evicted ${evicted} placement(s)`);
}

app.storageQueue('applicationFailoverCheck', { queueName: QUEUES.applicationFailover, connection: 'AzureWebJobsStorage', handler: tracedQueueHandler(QUEUES.applicationFailover, applicationFailoverCheck) });
app.timer('applicationFailoverResync', { schedule: '5,20,35,50 * * * * *', runOnStartup: false, useMonitor: false, handler: applicationFailoverSweep });
