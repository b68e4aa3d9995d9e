import type { AppliedObject } from '../api/decode';
import { applyBinding } from './bindings';
import { applyCluster } from './clusters';
import type { ControlPlane } from './ports';
import { applyPropagationPolicy } from './propagationPolicies';
import type { ApplyAction } from './state/derivation';
import { applyTaintPolicy } from './taintPolicies';
import { applyTemplate } from './templates';

export type { ApplyAction } from './state/derivation';

/** POST /api/apply: validated objects, applied in the order given; what happened to each. */
export async function applyObjects(plane: ControlPlane, objects: AppliedObject[]): Promise<Array<{ kind: string; name: string; action: ApplyAction }>> {
  const results = [];
  for (const item of objects)
    results.push({ kind: item.kind === 'ResourceTemplate' ? item.object.kind : item.kind, name: item.name, action: await applyOne(plane, item) });
  return results;
}

function applyOne(plane: ControlPlane, item: AppliedObject): Promise<ApplyAction> {
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
    case 'ResourceTemplate':
      return applyTemplate(plane, item.object);
  }
}
