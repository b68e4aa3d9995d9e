import { app } from '@azure/functions';
import { decodeApplyDocuments } from '../shared/api/decode';
import { applyObjects as apply } from '../shared/controllers/apply';
import { requireAdmin } from '../shared/http/auth';
import { ALL_METHODS, allowMethods, httpFunction, json, readDocuments } from '../shared/http/respond';
import { handingOff } from '../shared/queue/handOff';
import { invocationPlane } from '../shared/runtime';

/** POST /api/apply: one or more Karmada-shaped objects, YAML or JSON; all validated before any is stored. */
export const applyObjects = httpFunction(async (req, ctx) => {
  allowMethods(req, ['POST']);
  const plane = invocationPlane(ctx);
  requireAdmin(req, plane.config.auth);
  const objects = decodeApplyDocuments(await readDocuments(req, plane.config.maxRequestBodyBytes));
  return json(200, { results: await apply(plane, objects) });
});

app.http('apply', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'apply', ...handingOff(applyObjects) });
