import { app } from '@azure/functions';
import { evictionQuerySchema } from '../shared/api/contract/queries';
import { listEvictions } from '../shared/controllers/fleet';
import { parseQuery } from '../shared/http/query';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

/** GET /api/evictions?cluster=&state=: the ledger. */
export const evictions = httpFunction(async (req) => {
  allowMethods(req, ['GET']);
  const query = parseQuery(req, evictionQuerySchema);
  return json(200, { items: await listEvictions(controlPlane(), query) });
});

app.http('evictions', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'evictions', handler: evictions });
