import { app } from '@azure/functions';
import { notFound } from '../shared/api/errors';
import { deletePropagationPolicy, getPropagationPolicy, listPropagationPolicies } from '../shared/controllers/propagationPolicies';
import { policyDisplay } from '../shared/failover/propagation';
import { requireAdmin } from '../shared/http/auth';
import { routeParams } from '../shared/http/pathParams';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { handingOff } from '../shared/queue/handOff';
import { invocationPlane } from '../shared/runtime';

/** GET /api/propagationpolicies[/{namespace}[/{name}]], DELETE /api/propagationpolicies/{namespace}/{name}. */
export const propagationPolicies = httpFunction(async (req, ctx) => {
  const plane = invocationPlane(ctx);
  const { namespace, name } = routeParams(req);
  if (!namespace || !name) {
    allowMethods(req, ['GET']);
    return json(200, {
      apiVersion: 'policy.karmada.io/v1alpha1',
      kind: 'PropagationPolicyList',
      items: await listPropagationPolicies(plane, 'PropagationPolicy', namespace),
    });
  }
  const ref = { kind: 'PropagationPolicy', namespace, name } as const;
  allowMethods(req, ['GET', 'DELETE']);
  if (req.method.toUpperCase() === 'DELETE') {
    requireAdmin(req, plane.config.auth);
    if (!(await deletePropagationPolicy(plane, ref))) throw notFound(`${policyDisplay(ref)} not found`);
    return json(200, { kind: ref.kind, name: `${namespace}/${name}`, action: 'deleted' });
  }
  const policy = await getPropagationPolicy(plane, ref);
  if (!policy) throw notFound(`${policyDisplay(ref)} not found`);
  return json(200, policy);
});

app.http('propagationPolicies', {
  methods: [...ALL_METHODS],
  authLevel: 'anonymous',
  route: 'propagationpolicies/{namespace?}/{name?}',
  ...handingOff(propagationPolicies),
});
