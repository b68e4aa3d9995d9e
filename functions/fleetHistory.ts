import { app } from '@azure/functions';
import { fleetHistoryQuerySchema } from '../shared/api/contract/queries';
import { fleetHistory as history } from '../shared/controllers/fleet';
import { parseQuery } from '../shared/http/query';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

/** GET /api/fleet/history?minutes=60: evictions per second and the eviction tier, in 10 s buckets. */
export const fleetHistory = httpFunction(async (req) => {
  allowMethods(req, ['GET']);
  const query = parseQuery(req, fleetHistoryQuerySchema);
  return json(200, await history(controlPlane(), query.minutes ?? 60));
});

app.http('fleetHistory', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'fleet/history', handler: fleetHistory });
