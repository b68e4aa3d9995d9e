import { app } from '@azure/functions';
import { notFound } from '../shared/api/errors';
import { deleteBinding, getBinding, listBindings } from '../shared/controllers/bindings';
import { requireAdmin } from '../shared/http/auth';
import { routeParams } from '../shared/http/pathParams';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { handingOff } from '../shared/queue/handOff';
import { invocationPlane } from '../shared/runtime';

/** GET /api/clusterresourcebindings[/{name}], DELETE /api/clusterresourcebindings/{name}. */
export const clusterResourceBindings = httpFunction(async (req, ctx) => {
  const plane = invocationPlane(ctx);
  const name = routeParams(req).name;
  if (!name) {
    allowMethods(req, ['GET']);
    return json(200, {
      apiVersion: 'work.karmada.io/v1alpha2',
      kind: 'ClusterResourceBindingList',
      items: await listBindings(plane, 'ClusterResourceBinding'),
    });
  }
  const ref = { kind: 'ClusterResourceBinding', name } as const;
  allowMethods(req, ['GET', 'DELETE']);
  if (req.method.toUpperCase() === 'DELETE') {
    requireAdmin(req, plane.config.auth);
    if (!(await deleteBinding(plane, ref))) throw notFound(`ClusterResourceBinding "${name}" not found`);
    return json(200, { kind: ref.kind, name, action: 'deleted' });
  }
  const binding = await getBinding(plane, ref);
  if (!binding) throw notFound(`ClusterResourceBinding "${name}" not found`);
  return json(200, binding);
});

app.http('clusterResourceBindings', {
  methods: [...ALL_METHODS],
  authLevel: 'anonymous',
  route: 'clusterresourcebindings/{name?}',
  ...handingOff(clusterResourceBindings),
});
