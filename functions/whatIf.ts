import { app } from '@azure/functions';
import { decodeSingle } from '../shared/api/decode';
import { whatIfRequestSchema } from '../shared/api/resources';
import { whatIfFailure } from '../shared/controllers/whatIf';
import { ALL_METHODS, allowMethods, httpFunction, json, readDocuments } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

/**
 * POST /api/whatif: what a failure of the given clusters would do, from the same decisions, writing
 * nothing. Read-only, so it needs no admin token (like every other read).
 */
export const whatIf = httpFunction(async (req) => {
  allowMethods(req, ['POST']);
  const plane = controlPlane();
  const request = decodeSingle(await readDocuments(req, plane.config.maxRequestBodyBytes), whatIfRequestSchema);
  return json(200, await whatIfFailure(plane, request));
});

app.http('whatIf', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'whatif', handler: whatIf });
