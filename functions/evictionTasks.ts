import { app, HttpRequest } from '@azure/functions';
import { badRequest, notFound } from '../shared/api/errors';
import { clusterName } from '../shared/api/resources';
import { confirmOldCopyRemoved } from '../shared/controllers/bindingStatus';
import { BindingRef, displayName } from '../shared/failover/bindingModel';
import { requireAdmin } from '../shared/http/auth';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

async function serve(req: HttpRequest, ref: BindingRef) {
  allowMethods(req, ['DELETE']);
  const plane = controlPlane();
  requireAdmin(req, plane.config.auth);
  const cluster = clusterName.safeParse(req.params.cluster);
  if (!cluster.success) throw badRequest([{ path: 'cluster', message: cluster.error.issues[0].message }]);
  const confirmed = await confirmOldCopyRemoved(plane, ref, cluster.data);
  if (confirmed.outcome === 'absent') throw notFound(`${ref.kind} "${displayName(ref)}" not found`);
  if (confirmed.outcome === 'no-task') throw notFound(`${ref.kind} "${displayName(ref)}" has no graceful eviction task for cluster "${cluster.data}"`);
  return json(200, confirmed.binding);
}

/** DELETE /api/resourcebindings/{namespace}/{name}/evictiontasks/{cluster}: the old copy is dealt with. */
export const resourceBindingTask = httpFunction(async (req) => serve(req, { kind: 'ResourceBinding', namespace: req.params.namespace, name: req.params.name }));

/** DELETE /api/clusterresourcebindings/{name}/evictiontasks/{cluster} */
export const clusterResourceBindingTask = httpFunction(async (req) => serve(req, { kind: 'ClusterResourceBinding', name: req.params.name }));

app.http('resourceBindingTask', {
  methods: [...ALL_METHODS],
  authLevel: 'anonymous',
  route: 'resourcebindings/{namespace}/{name}/evictiontasks/{cluster}',
  handler: resourceBindingTask,
});
app.http('clusterResourceBindingTask', {
  methods: [...ALL_METHODS],
  authLevel: 'anonymous',
  route: 'clusterresourcebindings/{name}/evictiontasks/{cluster}',
  handler: clusterResourceBindingTask,
});
