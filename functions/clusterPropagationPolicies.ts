import { app } from '@azure/functions';
import { notFound } from '../shared/api/errors';
import { deletePropagationPolicy, getPropagationPolicy, listPropagationPolicies } from '../shared/controllers/propagationPolicies';
import { policyDisplay } from '../shared/failover/propagation';
import { requireAdmin } from '../shared/http/auth';
import { routeParams } from '../shared/http/pathParams';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { handingOff } from '../shared/queue/handOff';
import { invocationPlane } from '../shared/runtime';

/** GET /api/clusterpropagationpolicies[/{name}], DELETE /api/clusterpropagationpolicies/{name}. */
export const clusterPropagationPolicies = httpFunction(async (req, ctx) => {
  const plane = invocationPlane(ctx);
  const name = routeParams(req).name;
  if (!name) {
    allowMethods(req, ['GET']);
    return json(200, {
      apiVersion: 'policy.karmada.io/v1alpha1',
      kind: 'ClusterPropagationPolicyList',
      items: await listPropagationPolicies(plane, 'ClusterPropagationPolicy'),
    });
  }
  const ref = { kind: 'ClusterPropagationPolicy', name } as const;
  allowMethods(req, ['GET', 'DELETE']);
  if (req.method.toUpperCase() === 'DELETE') {
    requireAdmin(req, plane.config.auth);
    if (!(await deletePropagationPolicy(plane, ref))) throw notFound(`${policyDisplay(ref)} not found`);
    return json(200, { kind: ref.kind, name, action: 'deleted' });
  }
  const policy = await getPropagationPolicy(plane, ref);
  if (!policy) throw notFound(`${policyDisplay(ref)} not found`);
  return json(200, policy);
});

app.http('clusterPropagationPolicies', {
  methods: [...ALL_METHODS],
  authLevel: 'anonymous',
  route: 'clusterpropagationpolicies/{name?}',
  ...handingOff(clusterPropagationPolicies),
});
