import { app, InvocationContext } from '@azure/functions';
import { notFound } from '../shared/api/errors';
import { applyChunks as applyOperationChunks, getApplyOperation } from '../shared/controllers/applyOperations';
import { applyChunkMessage } from '../shared/controllers/ports';
import { routeParams } from '../shared/http/pathParams';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { QUEUES } from '../shared/queue/names';
import { parseQueueMessage } from '../shared/queue/parseMessage';
import { controlPlane, invocationPlane } from '../shared/runtime';
import { tracedQueueHandler } from '../shared/telemetry/triggers';

/** GET /api/apply/operations/{name}: a background apply's progress, and its results once finished. */
export const applyOperation = httpFunction(async (req) => {
  allowMethods(req, ['GET']);
  const { name } = routeParams(req);
  // A read, open as every read is: what the operation applied, by kind and name.
  const operation = await getApplyOperation(controlPlane(), name);
  if (!operation) throw notFound(`apply operation "${name}" not found`);
  return json(200, operation);
});

/** The next chunks of a background apply. */
export async function applyChunks(message: unknown, ctx: InvocationContext): Promise<void> {
  const parsed = parseQueueMessage(applyChunkMessage, message, ctx, 'apply chunk');
  if (!parsed) return;
  await applyOperationChunks(invocationPlane(ctx), parsed);
}

app.http('applyOperation', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'apply/operations/{name}', handler: applyOperation });
app.storageQueue('applyChunks', {
  queueName: QUEUES.applyChunks,
  connection: 'AzureWebJobsStorage',
  handler: tracedQueueHandler(QUEUES.applyChunks, applyChunks),
});
