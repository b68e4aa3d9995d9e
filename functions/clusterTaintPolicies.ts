import { app } from '@azure/functions';
import { notFound } from '../shared/api/errors';
import { deleteTaintPolicy } from '../shared/controllers/policies';
import { policyResource } from '../shared/controllers/records';
import { requireAdmin } from '../shared/http/auth';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

/** GET /api/clustertaintpolicies, GET and DELETE /api/clustertaintpolicies/{name}. */
export const clusterTaintPolicies = httpFunction(async (req) => {
  const plane = controlPlane();
  const name = req.params.name;
  if (!name) {
    allowMethods(req, ['GET']);
    const items = (await plane.policies.list()).map((entry) => policyResource(entry.value, entry.etag));
    items.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    return json(200, { apiVersion: 'policy.karmada.io/v1alpha1', kind: 'ClusterTaintPolicyList', items });
  }
  allowMethods(req, ['GET', 'DELETE']);
  if (req.method.toUpperCase() === 'DELETE') {
    requireAdmin(req, plane.config.auth);
    if (!(await deleteTaintPolicy(plane, name))) throw notFound(`ClusterTaintPolicy "${name}" not found`);
    return json(200, { kind: 'ClusterTaintPolicy', name, action: 'deleted' });
  }
  const entry = await plane.policies.get(name);
  if (!entry) throw notFound(`ClusterTaintPolicy "${name}" not found`);
  return json(200, policyResource(entry.value, entry.etag));
});

app.http('clusterTaintPolicies', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'clustertaintpolicies/{name?}', handler: clusterTaintPolicies });
