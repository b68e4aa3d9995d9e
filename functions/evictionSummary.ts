import { app } from '@azure/functions';
import { evictionQueueSummary } from '../shared/controllers/fleet';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

/** GET /api/evictions/summary: the eviction queue per faulty or drained cluster, with ETAs. */
export const evictionSummary = httpFunction(async (req) => {
  allowMethods(req, ['GET']);
  return json(200, await evictionQueueSummary(controlPlane()));
});

app.http('evictionSummary', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'evictions/summary', handler: evictionSummary });
