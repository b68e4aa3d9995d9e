import { app } from '@azure/functions';
import { listFailback } from '../shared/controllers/failback';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

/** GET /api/failback: every binding with a home to go back to (or that went back within the hour), and where it stands. */
export const failback = httpFunction(async (req) => {
  allowMethods(req, ['GET']);
  return json(200, await listFailback(controlPlane()));
});

app.http('failback', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'failback', handler: failback });
