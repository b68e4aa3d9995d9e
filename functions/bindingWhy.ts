import { app, HttpRequest } from '@azure/functions';
import { notFound } from '../shared/api/errors';
import { explainBinding } from '../shared/controllers/why';
import { BindingRef, displayName } from '../shared/failover/bindingModel';
import { routeParams } from '../shared/http/pathParams';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

async function serve(req: HttpRequest, ref: BindingRef) {
  allowMethods(req, ['GET']);
  const answer = await explainBinding(controlPlane(), ref);
  if (!answer) throw notFound(`${ref.kind} "${displayName(ref)}" not found`);
  return json(200, answer);
}

/** GET /api/resourcebindings/{namespace}/{name}/why: placement, tasks, ledger rows, events, and why. */
export const resourceBindingWhy = httpFunction(async (req) => {
  const { namespace, name } = routeParams(req);
  return serve(req, { kind: 'ResourceBinding', namespace, name });
});

/** GET /api/clusterresourcebindings/{name}/why */
export const clusterResourceBindingWhy = httpFunction(async (req) => serve(req, { kind: 'ClusterResourceBinding', name: routeParams(req).name }));

app.http('resourceBindingWhy', {
  methods: [...ALL_METHODS],
  authLevel: 'anonymous',
  route: 'resourcebindings/{namespace}/{name}/why',
  handler: resourceBindingWhy,
});
app.http('clusterResourceBindingWhy', {
  methods: [...ALL_METHODS],
  authLevel: 'anonymous',
  route: 'clusterresourcebindings/{name}/why',
  handler: clusterResourceBindingWhy,
});
