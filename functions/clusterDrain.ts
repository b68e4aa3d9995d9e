import { app } from '@azure/functions';
import { drainCluster, uncordonCluster } from '../shared/controllers/drain';
import { requireAdmin } from '../shared/http/auth';
import { routeParams } from '../shared/http/pathParams';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { handingOff } from '../shared/queue/handOff';
import { invocationPlane } from '../shared/runtime';

/** POST /api/clusters/{name}/drain: cordon the cluster and move every binding off it at the global rate. */
export const clusterDrain = httpFunction(async (req, ctx) => {
  allowMethods(req, ['POST']);
  const plane = invocationPlane(ctx);
  const actor = requireAdmin(req, plane.config.auth);
  return json(200, await drainCluster(plane, routeParams(req).name, actor));
});

/** POST /api/clusters/{name}/uncordon: remove the drain's cordon and abandon its waiting evictions. */
export const clusterUncordon = httpFunction(async (req, ctx) => {
  allowMethods(req, ['POST']);
  const plane = invocationPlane(ctx);
  const actor = requireAdmin(req, plane.config.auth);
  return json(200, await uncordonCluster(plane, routeParams(req).name, actor));
});

app.http('clusterDrain', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'clusters/{name}/drain', ...handingOff(clusterDrain) });
app.http('clusterUncordon', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'clusters/{name}/uncordon', ...handingOff(clusterUncordon) });
