import { app } from '@azure/functions';
import { z } from 'zod';
import { badRequest, toFieldErrors } from '../shared/api/errors';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

const eventQuery = z.strictObject({
  kind: z
    .string()
    .max(64)
    .regex(/^[A-Za-z]+$/, 'must be a kind such as Cluster')
    .optional(),
  name: z.string().max(253).optional(),
  since: z.iso
    .datetime({ offset: true, message: 'must be an RFC 3339 time' })
    .transform((s) => new Date(s).toISOString())
    .optional(),
  limit: z.coerce.number().int().min(1).max(10000).optional(),
});

/** GET /api/events?kind=&name=&since=&limit=: recorded decisions, newest last. */
export const events = httpFunction(async (req) => {
  allowMethods(req, ['GET']);
  const plane = controlPlane();
  const parsed = eventQuery.safeParse(Object.fromEntries(req.query.entries()));
  if (!parsed.success) throw badRequest(toFieldErrors(parsed.error).map((e) => ({ ...e, path: `query.${e.path}` })));
  const items = await plane.events.list({ ...parsed.data, limit: parsed.data.limit ?? plane.config.eventListLimit });
  return json(200, { items });
});

app.http('events', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'events', handler: events });
