import { app } from '@azure/functions';
import { notFound } from '../shared/api/errors';
import { acknowledgeTaintPolicy, deleteTaintPolicy, getTaintPolicy, listTaintPolicies } from '../shared/controllers/taintPolicies';
import { requireAdmin } from '../shared/http/auth';
import { routeParams } from '../shared/http/pathParams';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

/** GET /api/clustertaintpolicies, GET and DELETE /api/clustertaintpolicies/{name}. */
export const clusterTaintPolicies = httpFunction(async (req) => {
  const plane = controlPlane();
  const name = routeParams(req).name;
  if (!name) {
    allowMethods(req, ['GET']);
    return json(200, { apiVersion: 'policy.karmada.io/v1alpha1', kind: 'ClusterTaintPolicyList', items: await listTaintPolicies(plane) });
  }
  allowMethods(req, ['GET', 'DELETE']);
  if (req.method.toUpperCase() === 'DELETE') {
    requireAdmin(req, plane.config.auth);
    if (!(await deleteTaintPolicy(plane, name))) throw notFound(`ClusterTaintPolicy "${name}" not found`);
    return json(200, { kind: 'ClusterTaintPolicy', name, action: 'deleted' });
  }
  const policy = await getTaintPolicy(plane, name);
  if (!policy) throw notFound(`ClusterTaintPolicy "${name}" not found`);
  return json(200, policy);
});

/** POST /api/clustertaintpolicies/{name}/acknowledge: accept the policy's exceeded blast radius (admin token; idempotent). */
export const clusterTaintPolicyAcknowledge = httpFunction(async (req) => {
  allowMethods(req, ['POST']);
  const plane = controlPlane();
  requireAdmin(req, plane.config.auth);
  const { name } = routeParams(req);
  const answer = await acknowledgeTaintPolicy(plane, name);
  if (!answer) throw notFound(`ClusterTaintPolicy "${name}" not found`);
  return json(200, answer);
});

app.http('clusterTaintPolicies', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'clustertaintpolicies/{name?}', handler: clusterTaintPolicies });
app.http('clusterTaintPolicyAcknowledge', {
  methods: [...ALL_METHODS],
  authLevel: 'anonymous',
  route: 'clustertaintpolicies/{name}/acknowledge',
  handler: clusterTaintPolicyAcknowledge,
});
