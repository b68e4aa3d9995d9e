import { app } from '@azure/functions';
import { decodeApplyDocuments } from '../shared/api/decode';
import { applyObjects as apply } from '../shared/controllers/apply';
import { appliesInBackground, startApplyOperation } from '../shared/controllers/applyOperations';
import { requireAdmin } from '../shared/http/auth';
import { ALL_METHODS, allowMethods, httpFunction, json, readDocuments } from '../shared/http/respond';
import { handingOff } from '../shared/queue/handOff';
import { invocationPlane } from '../shared/runtime';

/**
 * POST /api/apply: one or more Karmada-shaped objects, YAML or JSON; all validated before any is stored. A
 * large request (or one that prefers it) is applied in the background: 202 and the operation to poll.
 */
export const applyObjects = httpFunction(async (req, ctx) => {
  allowMethods(req, ['POST']);
  const plane = invocationPlane(ctx);
  requireAdmin(req, plane.config.auth);
  const objects = decodeApplyDocuments(await readDocuments(req, plane.config.maxRequestBodyBytes));
  // RFC 7240: the caller may ask for the background whatever the request's size.
  const preferAsync = /(^|[,;\s])respond-async([,;\s]|$)/i.test(req.headers.get('prefer') ?? '');
  if (appliesInBackground(plane, objects, preferAsync)) {
    const operation = await startApplyOperation(plane, objects);
    return json(202, operation, { location: `/api/apply/operations/${operation.id}`, ...(preferAsync ? { 'preference-applied': 'respond-async' } : {}) });
  }
  return json(200, { results: await apply(plane, objects) });
});

app.http('apply', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'apply', ...handingOff(applyObjects) });
