import { app } from '@azure/functions';
import { z } from 'zod';
import { badRequest, toFieldErrors } from '../shared/api/errors';
import { clusterName } from '../shared/api/resources';
import { listEvictions } from '../shared/controllers/fleet';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

const STATES = ['pending', 'scheduled', 'done', 'abandoned', 'blocked', 'failed'] as const;
const evictionQuery = z.strictObject({ cluster: clusterName.optional(), state: z.enum(STATES).optional() });

/** GET /api/evictions?cluster=&state=: the ledger. */
export const evictions = httpFunction(async (req) => {
  allowMethods(req, ['GET']);
  const parsed = evictionQuery.safeParse(Object.fromEntries(req.query.entries()));
  if (!parsed.success) throw badRequest(toFieldErrors(parsed.error).map((e) => ({ ...e, path: `query.${e.path}` })));
  return json(200, { items: await listEvictions(controlPlane(), parsed.data) });
});

app.http('evictions', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'evictions', handler: evictions });
