import { app } from '@azure/functions';
import { notFound } from '../shared/api/errors';
import { switchEvictions } from '../shared/controllers/fleet';
import { requireAdmin } from '../shared/http/auth';
import { routeParams } from '../shared/http/pathParams';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

/** POST /api/failover/pause | /api/failover/resume: stop and restart evictions without a restart. */
export const failoverSwitch = httpFunction(async (req) => {
  allowMethods(req, ['POST']);
  const action = routeParams(req).action;
  if (action !== 'pause' && action !== 'resume') throw notFound(`no failover action "${action}"; use pause or resume`);
  const plane = controlPlane();
  const actor = requireAdmin(req, plane.config.auth);
  return json(200, await switchEvictions(plane, action, actor));
});

app.http('failoverSwitch', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'failover/{action}', handler: failoverSwitch });
