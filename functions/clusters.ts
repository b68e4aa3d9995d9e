import { app } from '@azure/functions';
import { notFound } from '../shared/api/errors';
import { deleteCluster, getCluster, listClusters } from '../shared/controllers/clusters';
import { requireAdmin } from '../shared/http/auth';
import { routeParams } from '../shared/http/pathParams';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { handingOff } from '../shared/queue/handOff';
import { invocationPlane } from '../shared/runtime';

/** GET (and HEAD) /api/clusters, GET and DELETE /api/clusters/{name}. */
export const clusters = httpFunction(async (req, ctx) => {
  const { name } = routeParams(req);
  const plane = invocationPlane(ctx);
  if (!name) {
    allowMethods(req, ['GET', 'HEAD']);
    return json(200, { apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'ClusterList', items: await listClusters(plane) });
  }
  allowMethods(req, ['GET', 'HEAD', 'DELETE']);
  if (req.method.toUpperCase() === 'DELETE') {
    requireAdmin(req, plane.config.auth);
    if (!(await deleteCluster(plane, name))) throw notFound(`cluster "${name}" not found`);
    return json(200, { kind: 'Cluster', name, action: 'deleted' });
  }
  const cluster = await getCluster(plane, name);
  if (!cluster) throw notFound(`cluster "${name}" not found`);
  return json(200, cluster);
});

app.http('clusters', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'clusters/{name?}', ...handingOff(clusters) });
