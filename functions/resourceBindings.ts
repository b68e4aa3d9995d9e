import { app } from '@azure/functions';
import { notFound } from '../shared/api/errors';
import { deleteBinding, getBinding, listBindings } from '../shared/controllers/bindings';
import { displayName } from '../shared/failover/bindingModel';
import { requireAdmin } from '../shared/http/auth';
import { routeParams } from '../shared/http/pathParams';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { handingOff } from '../shared/queue/handOff';
import { invocationPlane } from '../shared/runtime';

/** GET (and HEAD) /api/resourcebindings[/{namespace}[/{name}]], DELETE /api/resourcebindings/{namespace}/{name}. */
export const resourceBindings = httpFunction(async (req, ctx) => {
  const { namespace, name } = routeParams(req);
  const plane = invocationPlane(ctx);
  if (!namespace || !name) {
    allowMethods(req, ['GET', 'HEAD']);
    return json(200, { apiVersion: 'work.karmada.io/v1alpha2', kind: 'ResourceBindingList', items: await listBindings(plane, 'ResourceBinding', namespace) });
  }
  const ref = { kind: 'ResourceBinding', namespace, name } as const;
  allowMethods(req, ['GET', 'HEAD', 'DELETE']);
  if (req.method.toUpperCase() === 'DELETE') {
    requireAdmin(req, plane.config.auth);
    if (!(await deleteBinding(plane, ref))) throw notFound(`${ref.kind} "${displayName(ref)}" not found`);
    return json(200, { kind: ref.kind, name: displayName(ref), action: 'deleted' });
  }
  const binding = await getBinding(plane, ref);
  if (!binding) throw notFound(`${ref.kind} "${displayName(ref)}" not found`);
  return json(200, binding);
});

app.http('resourceBindings', {
  methods: [...ALL_METHODS],
  authLevel: 'anonymous',
  route: 'resourcebindings/{namespace?}/{name?}',
  ...handingOff(resourceBindings),
});
