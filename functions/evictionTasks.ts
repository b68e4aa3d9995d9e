import { app, HttpRequest } from '@azure/functions';
import { notFound } from '../shared/api/errors';
import { confirmOldCopyRemoved } from '../shared/controllers/bindingStatus';
import { BindingRef, displayName } from '../shared/failover/bindingModel';
import { requireAdmin } from '../shared/http/auth';
import { routeParams } from '../shared/http/pathParams';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

async function serve(req: HttpRequest, ref: (params: Record<string, string>) => BindingRef) {
  allowMethods(req, ['DELETE']);
  const plane = controlPlane();
  requireAdmin(req, plane.config.auth);
  const params = routeParams(req);
  const binding = ref(params);
  const confirmed = await confirmOldCopyRemoved(plane, binding, params.cluster);
  if (confirmed.outcome === 'absent') throw notFound(`${binding.kind} "${displayName(binding)}" not found`);
  if (confirmed.outcome === 'no-task')
    throw notFound(`${binding.kind} "${displayName(binding)}" has no graceful eviction task for cluster "${params.cluster}"`);
  return json(200, confirmed.binding);
}

/** DELETE /api/resourcebindings/{namespace}/{name}/evictiontasks/{cluster}: the old copy is dealt with. */
export const resourceBindingTask = httpFunction(async (req) => serve(req, ({ namespace, name }) => ({ kind: 'ResourceBinding', namespace, name })));

/** DELETE /api/clusterresourcebindings/{name}/evictiontasks/{cluster} */
export const clusterResourceBindingTask = httpFunction(async (req) => serve(req, ({ name }) => ({ kind: 'ClusterResourceBinding', name })));

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
