import { app } from '@azure/functions';
import { z } from 'zod';
import { badRequest, toFieldErrors } from '../shared/api/errors';
import { fleetHistory as history } from '../shared/controllers/fleet';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

const historyQuery = z.strictObject({ minutes: z.coerce.number().int().min(1).max(1440).optional() });

/** GET /api/fleet/history?minutes=60: evictions per second and the eviction tier, in 10 s buckets. */
export const fleetHistory = httpFunction(async (req) => {
  allowMethods(req, ['GET']);
  const parsed = historyQuery.safeParse(Object.fromEntries(req.query.entries()));
  if (!parsed.success) throw badRequest(toFieldErrors(parsed.error).map((e) => ({ ...e, path: `query.${e.path}` })));
  return json(200, await history(controlPlane(), parsed.data.minutes ?? 60));
});

app.http('fleetHistory', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'fleet/history', handler: fleetHistory });
