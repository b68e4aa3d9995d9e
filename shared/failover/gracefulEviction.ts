import type { GracefulEvictionTask } from '../api/resources';

/**
 * Graceful-eviction assessment (docs/architecture.md, decision 9), pure: which tasks of a binding may go.
 * A task goes when its cluster is placed again, when its purge mode is Directly (the old copy goes at
 * once), when an enabled plugin passes, or when its own grace period (or the optional global timeout)
 * has passed. A task with suppressDeletion stays until a person clears it.
 */

export type EvictionPlugin = 'ResourceHealth';
export const EVICTION_PLUGINS: readonly EvictionPlugin[] = ['ResourceHealth'];

export interface BindingHealthView {
  generation: number;
  schedulerObservedGeneration?: number;
  clusters: readonly string[];
  aggregatedStatus: ReadonlyArray<{ clusterName: string; health?: 'Healthy' | 'Unhealthy' | 'Unknown' }>;
}

export interface Assessment {
  keep: GracefulEvictionTask[];
  drop: Array<{ task: GracefulEvictionTask; why: string }>;
  /** When a kept task's grace period (or the global timeout) ends. */
  nextCheckAt?: Date;
}

/**
 * ResourceHealth: scheduled for the current generation, at least one target, and every target Healthy.
 * An empty placement is never healthy: counting it as healthy would drop the task and delete the only copy
 * when no replacement fits (what Karmada does, karmada-io/karmada#7455).
 */
export function resourceHealthPasses(binding: BindingHealthView): boolean {
  if (binding.schedulerObservedGeneration !== binding.generation) return false;
  if (binding.clusters.length === 0) return false;
  return binding.clusters.every((name) => binding.aggregatedStatus.find((s) => s.clusterName === name)?.health === 'Healthy');
}

/**
 * Tasks whose cluster is placed again go: the copy there is the placement again, not an old copy to keep
 * (and Karmada's scheduler keeps a cluster with a task out of the placement, its ClusterEviction filter).
 */
export function dropPlacedAgain(tasks: readonly GracefulEvictionTask[], clusters: readonly string[]): Pick<Assessment, 'keep' | 'drop'> {
  const keep: GracefulEvictionTask[] = [];
  const drop: Assessment['drop'] = [];
  for (const task of tasks) {
    if (clusters.includes(task.fromCluster)) drop.push({ task, why: `${task.fromCluster} is placed again` });
    else keep.push(task);
  }
  return { keep, drop };
}

export function assessTasks(
  tasks: readonly GracefulEvictionTask[],
  binding: BindingHealthView,
  now: Date,
  options: { plugins?: readonly EvictionPlugin[]; globalTimeoutSeconds?: number } = {},
): Assessment {
  const plugins = options.plugins ?? EVICTION_PLUGINS;
  const keep: GracefulEvictionTask[] = [];
  const drop: Assessment['drop'] = [];
  const deadlines: number[] = [];
  const healthy = plugins.includes('ResourceHealth') && resourceHealthPasses(binding);
  const placedAgain = dropPlacedAgain(tasks, binding.clusters);
  drop.push(...placedAgain.drop);
  for (const task of placedAgain.keep) {
    if (task.suppressDeletion) {
      keep.push(task);
      continue;
    }
    if (task.purgeMode === 'Directly') {
      drop.push({ task, why: 'purge mode Directly: the old copy is removed at once' });
      continue;
    }
    if (healthy) {
      drop.push({ task, why: 'ResourceHealth: every target cluster is Healthy' });
      continue;
    }
    const created = task.creationTimestamp ? Date.parse(task.creationTimestamp) : now.getTime();
    const limits = [task.gracePeriodSeconds, options.globalTimeoutSeconds].filter((s): s is number => s !== undefined);
    const expiresAt = limits.length > 0 ? created + Math.min(...limits) * 1000 : undefined;
    if (expiresAt !== undefined && now.getTime() >= expiresAt) {
      drop.push({ task, why: `its grace period of ${Math.min(...limits)}s has passed` });
      continue;
    }
    if (expiresAt !== undefined) deadlines.push(expiresAt);
    keep.push(task);
  }
  return { keep, drop, ...(deadlines.length > 0 ? { nextCheckAt: new Date(Math.min(...deadlines)) } : {}) };
}
