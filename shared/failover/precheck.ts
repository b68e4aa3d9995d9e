import type { Placement, Toleration } from '../api/resources';
import { tolerates } from './evictionDecision';
import type { ClusterTaint } from './model';
import { AffinityTarget, matchesClusterAffinity } from './selectors';

export interface CandidateCluster extends AffinityTarget {
  taints: Array<Pick<ClusterTaint, 'key' | 'value' | 'effect'>>;
}

/** What placement needs of a cluster: its name, labels, location and taints (without owners or times). */
export const candidateCluster = (c: AffinityTarget & { taints: readonly CandidateCluster['taints'][number][] }): CandidateCluster => ({
  name: c.name,
  labels: c.labels,
  provider: c.provider,
  region: c.region,
  zone: c.zone,
  taints: c.taints.map((t) => ({ key: t.key, value: t.value, effect: t.effect })),
});

/**
 * docs/architecture.md, decision 1: a new placement never lands on a cluster with an untolerated NoSchedule
 * or NoExecute taint, nor on one with any PreferNoExecute taint, nor on one with a NoExecute taint the
 * binding tolerates only for a time (its toleration has tolerationSeconds: the taint manager would evict it
 * again, so a binding just evicted from such a cluster would be placed straight back on it). As for eviction,
 * the first toleration that tolerates a taint is the one used. Returns why not, or undefined when it may.
 * PreferNoSchedule taints are not a reason here: see softTaintReason.
 */
export function unschedulableReason(cluster: CandidateCluster, tolerations: readonly Toleration[]): string | undefined {
  for (const taint of cluster.taints) {
    if (taint.effect === 'PreferNoSchedule') continue;
    if (taint.effect === 'PreferNoExecute') return `has taint ${taint.key}:PreferNoExecute`;
    const used = tolerations.find((t) => tolerates(t, taint));
    if (!used) return `has untolerated taint ${taint.key}:${taint.effect}`;
    if (taint.effect === 'NoExecute' && used.tolerationSeconds !== undefined) {
      return `has taint ${taint.key}:NoExecute, tolerated only for ${used.tolerationSeconds}s`;
    }
  }
  return undefined;
}

/**
 * PreferNoSchedule (Kubernetes' soft NoSchedule): a cluster with an untolerated PreferNoSchedule taint is
 * used only when the clusters without one cannot satisfy the placement (see the scheduler). A toleration
 * with effect PreferNoSchedule or no effect tolerates it (Kubernetes and Karmada semantics). Returns the
 * first such taint, or undefined when the cluster has none.
 */
export function softTaintReason(cluster: CandidateCluster, tolerations: readonly Toleration[]): string | undefined {
  const taint = cluster.taints.find((t) => t.effect === 'PreferNoSchedule' && !tolerations.some((toleration) => tolerates(toleration, t)));
  return taint ? `has untolerated taint ${taint.key}:PreferNoSchedule` : undefined;
}

/** Clusters with a graceful-eviction task (Karmada's ClusterEviction filter: "in the process of eviction"). */
export const evictingClusters = (tasks: ReadonlyArray<{ fromCluster: string }> | undefined): string[] => (tasks ?? []).map((t) => t.fromCluster);

export interface PreCheckInput {
  placement: Placement | undefined;
  /** Clusters the binding is on now (spec.clusters), including the one being evicted from. */
  placedOn: readonly string[];
  evictFrom: string;
  clusters: readonly CandidateCluster[];
  /**
   * The binding's spec.gracefulEvictionTasks: a cluster with a task is not a place to go until its task is
   * dropped (the scheduler will not choose it), unless the binding is still placed on it.
   */
  gracefulEvictionTasks?: ReadonlyArray<{ fromCluster: string; creationTimestamp?: string }>;
}

export type PreCheckResult = { ok: true; candidates: string[] } | { ok: false; reason: string };

/**
 * Evict only when the workload has somewhere to go (docs/architecture.md, decision 5).
 * Duplicated: the clusters other than the faulty one that match the affinity and would take the workload
 * must number at least the spread constraint's minGroups (1 without one). Divided: at least one such
 * cluster, inside the current placement or outside it: a failed cluster's replicas may move onto a cluster
 * still placed, so a Divided workload is never blocked while a cluster it runs on can take its replicas.
 * A cluster with an untolerated PreferNoSchedule taint counts: the scheduler uses it when nothing else fits.
 */
export function preScheduleCheck(input: PreCheckInput): PreCheckResult {
  const tolerations = input.placement?.clusterTolerations ?? [];
  const affinity = input.placement?.clusterAffinity;
  const evicting = evictingClusters(input.gracefulEvictionTasks);
  const usable = input.clusters.filter(
    (c) =>
      c.name !== input.evictFrom &&
      matchesClusterAffinity(affinity, c) &&
      unschedulableReason(c, tolerations) === undefined &&
      (!evicting.includes(c.name) || input.placedOn.includes(c.name)),
  );
  // A cluster with an untolerated PreferNoSchedule taint is still somewhere to go (last in the list).
  usable.sort((a, b) => Number(softTaintReason(a, tolerations) !== undefined) - Number(softTaintReason(b, tolerations) !== undefined));
  const type = input.placement?.replicaScheduling?.replicaSchedulingType ?? 'Duplicated';
  if (type === 'Divided') {
    return usable.length > 0
      ? { ok: true, candidates: usable.map((c) => c.name) }
      : { ok: false, reason: `Divided: no other cluster matches the affinity and accepts the workload${whyNot(input, usable)}` };
  }
  const minGroups = Math.max(1, ...(input.placement?.spreadConstraints ?? []).map((s) => s.minGroups ?? 0));
  return usable.length >= minGroups
    ? { ok: true, candidates: usable.map((c) => c.name) }
    : {
        ok: false,
        reason: `Duplicated: ${usable.length} other cluster(s) match the affinity and accept the workload; ${minGroups} needed${whyNot(input, usable)}`,
      };
}

/** Clusters named in a blocked reason at most. */
const WHY_NOT_LIMIT = 5;

/**
 * Why each other cluster of the affinity is not somewhere to go (pure): a blocked eviction says what to fix,
 * not only how many clusters it lacks. Clusters outside the affinity are counted, not named.
 */
function whyNot(input: PreCheckInput, usable: readonly CandidateCluster[]): string {
  const tolerations = input.placement?.clusterTolerations ?? [];
  const others = input.clusters.filter((c) => c.name !== input.evictFrom && !usable.includes(c));
  const outside = others.filter((c) => !matchesClusterAffinity(input.placement?.clusterAffinity, c));
  const reasons = others
    .filter((c) => !outside.includes(c))
    .map((c) => {
      const taint = unschedulableReason(c, tolerations);
      if (taint) return `${c.name} ${taint}`;
      const since = input.gracefulEvictionTasks?.find((t) => t.fromCluster === c.name)?.creationTimestamp;
      return `${c.name} still holds the old copy of an earlier eviction (its graceful-eviction task${since ? ` since ${since}` : ''} stays until the new copy is Healthy or its grace period ends; DELETE .../evictiontasks/${c.name} confirms it by hand)`;
    });
  const named = reasons.slice(0, WHY_NOT_LIMIT);
  const more = reasons.length > named.length ? `; ${reasons.length - named.length} more` : '';
  const beyond = outside.length > 0 ? `${named.length > 0 ? '; ' : ''}${outside.length} cluster(s) outside the affinity` : '';
  return named.length > 0 || beyond ? ` (${named.join('; ')}${more}${beyond})` : '';
}
