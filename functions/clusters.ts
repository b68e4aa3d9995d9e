import { app } from '@azure/functions';
import { notFound } from '../shared/api/errors';
import { deleteCluster } from '../shared/controllers/clusters';
import { clusterResource } from '../shared/controllers/records';
import { requireAdmin } from '../shared/http/auth';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

/** GET /api/clusters, GET and DELETE /api/clusters/{name}. */
export const clusters = httpFunction(async (req) => {
  const plane = controlPlane();
  const name = req.params.name;
  if (!name) {
    allowMethods(req, ['GET']);
    const items = (await plane.clusters.list()).map((entry) => clusterResource(entry.value, entry.etag));
    items.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    return json(200, { apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'ClusterList', items });
  }
  allowMethods(req, ['GET', 'DELETE']);
  if (req.method.toUpperCase() === 'DELETE') {
    requireAdmin(req, plane.config.auth);
    if (!(await deleteCluster(plane, name))) throw notFound(`cluster "${name}" not found`);
    return json(200, { kind: 'Cluster', name, action: 'deleted' });
  }
  const entry = await plane.clusters.get(name);
  if (!entry) throw notFound(`cluster "${name}" not found`);
  return json(200, clusterResource(entry.value, entry.etag));
});

app.http('clusters', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'clusters/{name?}', handler: clusters });
