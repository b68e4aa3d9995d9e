import { app, HttpRequest } from '@azure/functions';
import { decodeSingle } from '../shared/api/decode';
import { notFound } from '../shared/api/errors';
import { bindingStatusReportSchema } from '../shared/api/resources';
import { reportBindingStatus } from '../shared/controllers/bindingStatus';
import { BindingRef, displayName } from '../shared/failover/bindingModel';
import { requireAdmin } from '../shared/http/auth';
import { routeParams } from '../shared/http/pathParams';
import { ALL_METHODS, allowMethods, httpFunction, json, readDocuments } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

async function serve(req: HttpRequest, ref: BindingRef) {
  allowMethods(req, ['POST']);
  const plane = controlPlane();
  requireAdmin(req, plane.config.auth);
  const report = decodeSingle(await readDocuments(req, plane.config.maxRequestBodyBytes), bindingStatusReportSchema);
  const outcome = await reportBindingStatus(plane, ref, report);
  if (!outcome) throw notFound(`${ref.kind} "${displayName(ref)}" not found`);
  return json(200, outcome);
}

/** POST /api/resourcebindings/{namespace}/{name}/status: workload health per cluster. */
export const resourceBindingStatus = httpFunction(async (req) => {
  const { namespace, name } = routeParams(req);
  return serve(req, { kind: 'ResourceBinding', namespace, name });
});

/** POST /api/clusterresourcebindings/{name}/status */
export const clusterResourceBindingStatus = httpFunction(async (req) => serve(req, { kind: 'ClusterResourceBinding', name: routeParams(req).name }));

app.http('resourceBindingStatus', {
  methods: [...ALL_METHODS],
  authLevel: 'anonymous',
  route: 'resourcebindings/{namespace}/{name}/status',
  handler: resourceBindingStatus,
});
app.http('clusterResourceBindingStatus', {
  methods: [...ALL_METHODS],
  authLevel: 'anonymous',
  route: 'clusterresourcebindings/{name}/status',
  handler: clusterResourceBindingStatus,
});
