import { app } from '@azure/functions';
import { eventQuerySchema } from '../shared/api/contract/queries';
import { parseQuery } from '../shared/http/query';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

/** GET /api/events?kind=&name=&since=&limit=: recorded decisions, newest last. */
export const events = httpFunction(async (req) => {
  allowMethods(req, ['GET']);
  const plane = controlPlane();
  const query = parseQuery(req, eventQuerySchema);
  const items = await plane.events.list({ ...query, limit: query.limit ?? plane.config.eventListLimit });
  return json(200, { items });
});

app.http('events', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'events', handler: events });
