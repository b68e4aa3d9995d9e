import type { BindingStatusAnswer } from '../api/contract/views';
import { ApiError } from '../api/errors';
import type { BindingStatusReport } from '../api/resources';
import { bindingKey, BindingRef } from '../failover/bindingModel';
import { confirmEvictionTask, reportWorkloadStatus } from './applicationFailover';
import { sweepBinding } from './gracefulEviction';
import type { ControlPlane } from './ports';
import { bindingResource } from './views';

/**
 * POST .../status: workload health per cluster (status.aggregatedStatus), then application failover (the
 * Unhealthy stretch, a due eviction) and the graceful-eviction sweep of that binding. Undefined: no binding.
 */
export async function reportBindingStatus(plane: ControlPlane, ref: BindingRef, report: BindingStatusReport): Promise<BindingStatusAnswer | undefined> {
  if (plane.karmada) {
    throw new ApiError(409, "Karmada mode: a binding's status.aggregatedStatus is written by Karmada's binding-status controller and read from there");
  }
  const key = bindingKey(ref);
  const outcome = await reportWorkloadStatus(plane, key, report);
  if (!outcome.found) return undefined;
  const cleared = await sweepBinding(plane, key);
  const entry = await plane.bindings.get(key);
  if (!entry) return undefined;
  return {
    ...bindingResource(entry.value, entry.etag),
    evictedClusters: outcome.evicted,
    clearedTasks: cleared.map((c) => ({ fromCluster: c.task.fromCluster, why: c.why })),
  };
}

/** DELETE .../evictiontasks/{cluster}: a person confirms the old copy is dealt with (the only way a purgeMode Never task ends). */
export async function confirmOldCopyRemoved(plane: ControlPlane, ref: BindingRef, cluster: string) {
  const outcome = await confirmEvictionTask(plane, bindingKey(ref), cluster);
  if (outcome !== 'confirmed') return { outcome } as const;
  const entry = await plane.bindings.get(bindingKey(ref));
  return entry ? ({ outcome, binding: bindingResource(entry.value, entry.etag) } as const) : ({ outcome: 'absent' } as const);
}
