import { app } from '@azure/functions';
import { openApiDocument } from '../shared/api/openapi';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';

/** GET /api/openapi.json: the OpenAPI 3.1 document of this API (shared/api/openapi.ts); anonymous, like healthz. */
export const openapi = httpFunction((req) => {
  allowMethods(req, ['GET', 'HEAD']);
  return Promise.resolve(json(200, openApiDocument(), { 'cache-control': 'no-cache' }));
});

app.http('openapi', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'openapi.json', handler: openapi });
