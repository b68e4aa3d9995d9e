import { app } from '@azure/functions';
import { decodeApplyDocuments } from '../shared/api/decode';
import { applyBinding } from '../shared/controllers/bindings';
import { applyCluster } from '../shared/controllers/clusters';
import { applyTaintPolicy } from '../shared/controllers/policies';
import { requireAdmin } from '../shared/http/auth';
import { ALL_METHODS, allowMethods, httpFunction, json, readDocuments } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

/** POST /api/apply: one or more Karmada-shaped objects, YAML or JSON; all validated before any is stored. */
export const applyObjects = httpFunction(async (req) => {
  allowMethods(req, ['POST']);
  const plane = controlPlane();
  requireAdmin(req, plane.config.auth);
  const objects = decodeApplyDocuments(await readDocuments(req, plane.config.maxRequestBodyBytes));
  const results = [];
  for (const item of objects) {
    const action =
      item.kind === 'Cluster'
        ? await applyCluster(plane, item.object)
        : item.kind === 'ClusterTaintPolicy'
          ? await applyTaintPolicy(plane, item.object)
          : await applyBinding(plane, item.object);
    results.push({ kind: item.kind, name: item.name, action });
  }
  return json(200, { results });
});

app.http('apply', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'apply', handler: applyObjects });
