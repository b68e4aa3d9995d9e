import { app, HttpRequest } from '@azure/functions';
import { notFound } from '../shared/api/errors';
import { deleteBinding, displayName } from '../shared/controllers/bindings';
import { bindingResource } from '../shared/controllers/records';
import { BindingRef, bindingKey } from '../shared/failover/bindingModel';
import { requireAdmin } from '../shared/http/auth';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

async function serve(req: HttpRequest, ref: BindingRef | undefined, list: (key: string) => boolean, listKind: string) {
  const plane = controlPlane();
  if (!ref) {
    allowMethods(req, ['GET']);
    const items = (await plane.bindings.list()).filter((entry) => list(entry.id)).map((entry) => bindingResource(entry.value, entry.etag));
    return json(200, { apiVersion: 'work.karmada.io/v1alpha2', kind: listKind, items });
  }
  allowMethods(req, ['GET', 'DELETE']);
  if (req.method.toUpperCase() === 'DELETE') {
    requireAdmin(req, plane.config.auth);
    if (!(await deleteBinding(plane, ref))) throw notFound(`${ref.kind} "${displayName(ref)}" not found`);
    return json(200, { kind: ref.kind, name: displayName(ref), action: 'deleted' });
  }
  const entry = await plane.bindings.get(bindingKey(ref));
  if (!entry) throw notFound(`${ref.kind} "${displayName(ref)}" not found`);
  return json(200, bindingResource(entry.value, entry.etag));
}

/** GET /api/resourcebindings[/{namespace}[/{name}]], DELETE /api/resourcebindings/{namespace}/{name}. */
export const resourceBindings = httpFunction(async (req) => {
  const { namespace, name } = req.params;
  const ref = namespace && name ? ({ kind: 'ResourceBinding', namespace, name } as const) : undefined;
  const prefix = namespace ? `rb:${namespace}:` : 'rb:';
  return serve(req, ref, (key) => key.startsWith(prefix), 'ResourceBindingList');
});

/** GET /api/clusterresourcebindings[/{name}], DELETE /api/clusterresourcebindings/{name}. */
export const clusterResourceBindings = httpFunction(async (req) => {
  const ref = req.params.name ? ({ kind: 'ClusterResourceBinding', name: req.params.name } as const) : undefined;
  return serve(req, ref, (key) => key.startsWith('crb:'), 'ClusterResourceBindingList');
});

app.http('resourceBindings', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'resourcebindings/{namespace?}/{name?}', handler: resourceBindings });
app.http('clusterResourceBindings', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'clusterresourcebindings/{name?}', handler: clusterResourceBindings });
