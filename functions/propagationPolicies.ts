import { app, HttpRequest } from '@azure/functions';
import { notFound } from '../shared/api/errors';
import { deletePropagationPolicy } from '../shared/controllers/propagationPolicies';
import { propagationPolicyResource } from '../shared/controllers/records';
import { PolicyRef, policyDisplay, policyKey } from '../shared/failover/propagation';
import { requireAdmin } from '../shared/http/auth';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

async function serve(req: HttpRequest, ref: PolicyRef | undefined, prefix: string, listKind: string) {
  const plane = controlPlane();
  if (!ref) {
    allowMethods(req, ['GET']);
    const items = (await plane.propagationPolicies.list()).filter((entry) => entry.id.startsWith(prefix)).map((entry) => propagationPolicyResource(entry.value, entry.etag));
    return json(200, { apiVersion: 'policy.karmada.io/v1alpha1', kind: listKind, items });
  }
  allowMethods(req, ['GET', 'DELETE']);
  if (req.method.toUpperCase() === 'DELETE') {
    requireAdmin(req, plane.config.auth);
    if (!(await deletePropagationPolicy(plane, ref))) throw notFound(`${policyDisplay(ref)} not found`);
    return json(200, { kind: ref.kind, name: ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name, action: 'deleted' });
  }
  const entry = await plane.propagationPolicies.get(policyKey(ref));
  if (!entry) throw notFound(`${policyDisplay(ref)} not found`);
  return json(200, propagationPolicyResource(entry.value, entry.etag));
}

/** GET /api/propagationpolicies[/{namespace}[/{name}]], DELETE /api/propagationpolicies/{namespace}/{name}. */
export const propagationPolicies = httpFunction(async (req) => {
  const { namespace, name } = req.params;
  const ref = namespace && name ? ({ kind: 'PropagationPolicy', namespace, name } as const) : undefined;
  return serve(req, ref, namespace ? `pp:${namespace}:` : 'pp:', 'PropagationPolicyList');
});

/** GET /api/clusterpropagationpolicies[/{name}], DELETE /api/clusterpropagationpolicies/{name}. */
export const clusterPropagationPolicies = httpFunction(async (req) => {
  const ref = req.params.name ? ({ kind: 'ClusterPropagationPolicy', name: req.params.name } as const) : undefined;
  return serve(req, ref, 'cpp:', 'ClusterPropagationPolicyList');
});

app.http('propagationPolicies', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'propagationpolicies/{namespace?}/{name?}', handler: propagationPolicies });
app.http('clusterPropagationPolicies', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'clusterpropagationpolicies/{name?}', handler: clusterPropagationPolicies });
