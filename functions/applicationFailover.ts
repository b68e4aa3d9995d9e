import { tracedQueueHandler } from '../shared/telemetry/triggers';
import { app, InvocationContext, Timer } from '@azure/functions';
import { z } from 'zod';
import { sleep } from '../shared/clock';
import { applicationFailoverResync, checkApplicationFailover, CHECK_LEAD_SECONDS, scheduleApplicationCheck } from '../shared/controllers/applicationFailover';
import { parseQueueMessage } from '../shared/queue/parseMessage';
import { QUEUES } from '../shared/queue/storageQueue';
import { controlPlane } from '../shared/runtime';

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
  if (parsed.dueAt) {
    const dueAt = new Date(parsed.dueAt);
    const wait = dueAt.getTime() - plane.clock.now().getTime();
    // Storage queues delay at most 7 days: a later deadline is re-queued on the way.
    if (wait > (CHECK_LEAD_SECONDS + 3) * 1000) return scheduleApplicationCheck(plane, parsed.binding, dueAt);
    if (wait > 0) await sleep(wait);
  }
  await checkApplicationFailover(plane, parsed.binding);
}

/** Every 15 s: the safety net for lost deadline messages, resumed evictions and expired eviction history. */
export async function applicationFailoverSweep(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const evicted = await applicationFailoverResync(controlPlane());
  if (evicted > 0) ctx.log(`application failover resync evicted ${evicted} placement(s)`);
}

app.storageQueue('applicationFailoverCheck', { queueName: QUEUES.applicationFailover, connection: 'AzureWebJobsStorage', handler: tracedQueueHandler(QUEUES.applicationFailover, applicationFailoverCheck) });
app.timer('applicationFailoverResync', { schedule: '5,20,35,50 * * * * *', runOnStartup: false, useMonitor: false, handler: applicationFailoverSweep });
