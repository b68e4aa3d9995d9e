import { app } from '@azure/functions';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';

/** GET /api/healthz: the app is up and its functions are loaded. */
export const healthz = httpFunction((req) => {
  allowMethods(req, ['GET', 'HEAD']);
  return Promise.resolve(json(200, { status: 'ok' }));
});

app.http('healthz', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'healthz', handler: healthz });
