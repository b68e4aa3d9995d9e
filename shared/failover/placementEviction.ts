import type { BindingSpec, GracefulEvictionTask, PurgeMode } from '../api/resources';
import { MissedRule, preserveState, StatePreservationRule } from './statePreservation';

/**
 * Moving a cluster out of a binding's placement into a graceful-eviction task, pure. Every path that takes
 * a cluster away for a failure uses this one rule: the taint manager's eviction worker (for taints, drains
 * and failbacks) and application failover.
 *
 * An existing task for the same cluster is kept as it is, and no second one is added: the first eviction
 * stands, with its own reason, producer and creationTimestamp (so its grace period is not restarted). This
 * is what Karmada's `GracefulEvictCluster` does. The cluster still leaves the placement.
 *
 * With statePreservation rules (failover.cluster's for the taint manager, failover.application's for
 * application failover), the new task also records `preservedLabelState` (each rule's value from the status
 * last collected from the evicted cluster) and `clustersBeforeFailover` (the placement before the eviction),
 * as Karmada's `buildTaskOptions`. A rule that finds nothing is returned in `missedRules`, never dropped
 * silently; the eviction goes ahead all the same.
 */

export type EvictionTaskReason = 'TaintUntolerated' | 'ApplicationFailure' | 'Drain' | 'Failback';
/** `Failback`: the copy that stood in for a home, removed once the copy back on the home is healthy. */
export type EvictionTaskProducer = 'TaintManager' | 'ApplicationFailover' | 'ClusterDrain' | 'Failback';

export interface EvictionTaskOptions {
  reason: EvictionTaskReason;
  producer: EvictionTaskProducer;
  purgeMode: PurgeMode;
  /** Only with purge mode Gracefully: the old copy goes at the latest this long after the task is created. */
  gracePeriodSeconds?: number;
  message?: string;
  /** The failover behaviour's statePreservation rules, and the evicted cluster's `aggregatedStatus[].status`. */
  statePreservation?: { rules: readonly StatePreservationRule[]; status?: unknown };
}

export interface PlacementEviction {
  /** False when the cluster was not in the placement: nothing changes. */
  evicted: boolean;
  clusters: NonNullable<BindingSpec['clusters']>;
  gracefulEvictionTasks: GracefulEvictionTask[];
  /** The task this eviction added, or the existing one it kept. */
  task?: GracefulEvictionTask;
  keptExistingTask: boolean;
  /** statePreservation rules that found nothing in the evicted cluster's status (only when a task was added). */
  missedRules: MissedRule[];
}

export function evictFromPlacement(
  spec: Pick<BindingSpec, 'clusters' | 'gracefulEvictionTasks' | 'replicas'>,
  cluster: string,
  options: EvictionTaskOptions,
  now: Date,
): PlacementEviction {
  const clusters = spec.clusters ?? [];
  const tasks = spec.gracefulEvictionTasks ?? [];
  const target = clusters.find((c) => c.name === cluster);
  if (!target) return { evicted: false, clusters, gracefulEvictionTasks: tasks, keptExistingTask: false, missedRules: [] };
  const remaining = clusters.filter((c) => c.name !== cluster);
  const existing = tasks.find((t) => t.fromCluster === cluster);
  if (existing) return { evicted: true, clusters: remaining, gracefulEvictionTasks: tasks, task: existing, keptExistingTask: true, missedRules: [] };
  const rules = options.statePreservation?.rules ?? [];
  const preserved = rules.length > 0 ? preserveState(rules, options.statePreservation?.status) : undefined;
  // A target without its own count carries the binding's (Duplicated placements written by hand).
  const replicas = target.replicas ?? spec.replicas ?? 0;
  const task: GracefulEvictionTask = {
    fromCluster: cluster,
    purgeMode: options.purgeMode,
    ...(replicas > 0 ? { replicas } : {}),
    reason: options.reason,
    ...(options.message ? { message: options.message } : {}),
    producer: options.producer,
    ...(options.purgeMode === 'Gracefully' && options.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: options.gracePeriodSeconds } : {}),
    // purge mode Never: the old copy stays until a person confirms it is dealt with.
    ...(options.purgeMode === 'Never' ? { suppressDeletion: true } : {}),
    ...(preserved ? { preservedLabelState: preserved.preservedLabelState, clustersBeforeFailover: clusters.map((c) => c.name) } : {}),
    creationTimestamp: now.toISOString(),
  };
  return { evicted: true, clusters: remaining, gracefulEvictionTasks: [...tasks, task], task, keptExistingTask: false, missedRules: preserved?.missed ?? [] };
}
