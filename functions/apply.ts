import { app } from '@azure/functions';
import { AppliedObject, decodeApplyDocuments } from '../shared/api/decode';
import { applyBinding } from '../shared/controllers/bindings';
import { ApplyAction, applyCluster } from '../shared/controllers/clusters';
import type { ControlPlane } from '../shared/controllers/deps';
import { applyPropagationPolicy } from '../shared/controllers/propagationPolicies';
import { applyTaintPolicy } from '../shared/controllers/policies';
import { requireAdmin } from '../shared/http/auth';
import { ALL_METHODS, allowMethods, httpFunction, json, readDocuments } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

async function applyOne(plane: ControlPlane, item: AppliedObject): Promise<ApplyAction> {
  switch (item.kind) {
    case 'Cluster':
      return applyCluster(plane, item.object);
    case 'ClusterTaintPolicy':
      return applyTaintPolicy(plane, item.object);
    case 'PropagationPolicy':
    case 'ClusterPropagationPolicy':
      return applyPropagationPolicy(plane, item.object);
    case 'ResourceBinding':
    case 'ClusterResourceBinding':
      return applyBinding(plane, item.object);
  }
}

/** POST /api/apply: one or more Karmada-shaped objects, YAML or JSON; all validated before any is stored. */
export const applyObjects = httpFunction(async (req) => {
  allowMethods(req, ['POST']);
  const plane = controlPlane();
  requireAdmin(req, plane.config.auth);
  const objects = decodeApplyDocuments(await readDocuments(req, plane.config.maxRequestBodyBytes));
  const results = [];
  for (const item of objects) {
    const action = await applyOne(plane, item);
    results.push({ kind: item.kind, name: item.name, action });
  }
  return json(200, { results });
});

app.http('apply', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'apply', handler: applyObjects });
