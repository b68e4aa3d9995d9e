import type { Placement } from '../api/resources';
import { CandidateCluster, evictingClusters, softTaintReason, unschedulableReason } from './precheck';
import { matchesClusterAffinity } from './selectors';

/**
 * Placement decisions (pure, deterministic): which clusters a binding runs on and with how many replicas.
 * Duplicated keeps the clusters still placed and replaces only lost ones, within the spread constraint;
 * Divided splits the replicas over the available clusters by static weight, or evenly. A binding with no
 * fit keeps what it has; the scheduler never empties a placement by itself.
 *
 * PreferNoSchedule (a soft NoSchedule): a cluster not yet placed with an untolerated PreferNoSchedule taint
 * ("soft") is used only when the other clusters cannot satisfy the placement, and then only as many soft
 * clusters (by the spread rule below) as it takes to reach the placement's minimum: max(1, minGroups) clusters. So a
 * Duplicated binding never fills maxGroups (nor "every matching cluster") with soft clusters, and a Divided
 * binding divides over the clean clusters (and those already placed) alone while at least the minimum of
 * them has a weight; only then do soft clusters join, and the replicas are divided over all the chosen
 * clusters by weight. A cluster already placed is never moved off for such a taint (it evicts nothing).
 *
 * Spread: when there are more clusters a binding could be added to than it takes (a spread constraint's
 * maxGroups, or only the soft clusters it needs), it takes those with the fewest placements (bindings placed
 * there now), ties by name. There is no capacity model; without this rule every workload leaving a failed
 * cluster went to the first candidate by name, and piling them onto one cluster is how a second failure
 * starts. The caller counts the placements made earlier in the same pass, so a batch spreads among itself.
 */

export interface SchedulableCluster extends CandidateCluster {
  deleting?: boolean;
}

export interface TargetCluster {
  name: string;
  replicas: number;
}

export interface ScheduleInput {
  replicas: number;
  placement: Placement | undefined;
  /** spec.clusters now (after any eviction). */
  current: ReadonlyArray<{ name: string; replicas?: number }>;
  clusters: readonly SchedulableCluster[];
  /** Clusters this binding may not use yet (activeEvictionHistory within its block). */
  blocked?: readonly string[];
  /**
   * spec.gracefulEvictionTasks: a cluster with a task is not chosen again until its task is dropped
   * (Karmada's ClusterEviction filter). A cluster still placed is kept, as for taints.
   */
  gracefulEvictionTasks?: ReadonlyArray<{ fromCluster: string }>;
  /** Bindings placed on each cluster now (absent: none anywhere, so name order decides). */
  placementCounts?: ReadonlyMap<string, number>;
}

export type ScheduleResult =
  { ok: true; clusters: TargetCluster[] } | { ok: false; clusters: TargetCluster[]; reason: 'NoClusterFit'; message: string; rejected: Record<string, string> };

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Names by fewest placements, ties by name (pure). */
export function byFewestPlacements(names: readonly string[], counts: ReadonlyMap<string, number> | undefined): string[] {
  return [...names].sort((a, b) => (counts?.get(a) ?? 0) - (counts?.get(b) ?? 0) || byName(a, b));
}

/** Takes `count` of `names` (in name order): all of them, or those with the fewest placements. */
type Pick = (names: readonly string[], count: number) => string[];

const fewest =
  (counts: ReadonlyMap<string, number> | undefined): Pick =>
  (names, count) => {
    if (count <= 0) return [];
    if (count >= names.length) return [...names];
    const taken = new Set(byFewestPlacements(names, counts).slice(0, count));
    return names.filter((name) => taken.has(name));
  };

/**
 * Why a cluster may not take this binding, or undefined when it may. A cluster the binding is already
 * placed on is not rejected for its taints (Karmada's TaintToleration filter does the same): taking a
 * workload off a faulty cluster is the taint manager's paced eviction, with a graceful-eviction task, never
 * a side effect of placing the binding again (a Divided re-division would otherwise drop a second failed
 * cluster at once, outside the rate and without a task). A cluster not placed is rejected while it has a
 * graceful-eviction task (Karmada's ClusterEviction filter) and for taints (precheck's unschedulableReason:
 * untolerated, PreferNoExecute, or NoExecute tolerated only for a time). An untolerated PreferNoSchedule
 * taint is no rejection: schedule() uses such a cluster last (softTaintReason).
 */
export function rejectionReason(
  cluster: SchedulableCluster,
  placement: Placement | undefined,
  blocked: readonly string[],
  placed = false,
  evicting: readonly string[] = [],
): string | undefined {
  if (!matchesClusterAffinity(placement?.clusterAffinity, cluster)) return 'does not match the cluster affinity';
  if (cluster.deleting) return 'is being deleted';
  if (blocked.includes(cluster.name)) return 'is blocked by the eviction history';
  if (placed) return undefined;
  if (evicting.includes(cluster.name)) return 'is in the process of eviction (it has a graceful-eviction task)';
  return unschedulableReason(cluster, placement?.clusterTolerations ?? []);
}

export function schedule(input: ScheduleInput): ScheduleResult {
  return scheduleWith(input, fewest(input.placementCounts));
}

/**
 * The clusters whose placement counts can change what schedule() decides for this input: those it would
 * take some but not all of (empty when it takes every candidate, or needs none). A caller reads only these.
 */
export function spreadCandidates(input: Omit<ScheduleInput, 'placementCounts'>): string[] {
  const compared = new Set<string>();
  scheduleWith(input, (names, count) => {
    if (count > 0 && count < names.length) for (const name of names) compared.add(name);
    return fewest(undefined)(names, count);
  });
  return [...compared].sort(byName);
}

function scheduleWith(input: ScheduleInput, pick: Pick): ScheduleResult {
  const blocked = input.blocked ?? [];
  const evicting = evictingClusters(input.gracefulEvictionTasks);
  const rejected: Record<string, string> = {};
  const feasible: string[] = [];
  /** Feasible, but with an untolerated PreferNoSchedule taint and not placed: used only when needed. */
  const soft: string[] = [];
  for (const cluster of [...input.clusters].sort((a, b) => byName(a.name, b.name))) {
    const placed = input.current.some((c) => c.name === cluster.name);
    const why = rejectionReason(cluster, input.placement, blocked, placed, evicting);
    if (why) rejected[cluster.name] = why;
    else if (!placed && softTaintReason(cluster, input.placement?.clusterTolerations ?? [])) soft.push(cluster.name);
    else feasible.push(cluster.name);
  }
  const kept = input.current.map((c) => ({ name: c.name, replicas: c.replicas ?? input.replicas }));
  const noFit = (message: string): ScheduleResult => ({ ok: false, clusters: kept, reason: 'NoClusterFit', message, rejected });
  const spread = (input.placement?.spreadConstraints ?? []).find((s) => (s.spreadByField ?? 'cluster') === 'cluster' && !s.spreadByLabel);
  const type = input.placement?.replicaScheduling?.replicaSchedulingType ?? 'Duplicated';

  if (type === 'Duplicated') {
    const keptNames = kept.map((c) => c.name);
    const extra = feasible.filter((name) => !keptNames.includes(name));
    const want = spread?.maxGroups || spread?.minGroups ? Math.max(spread.maxGroups ?? 0, spread.minGroups ?? 0) : keptNames.length + extra.length;
    const chosen = [...keptNames, ...pick(extra, want - keptNames.length)];
    const minimum = Math.max(1, spread?.minGroups ?? 0);
    if (chosen.length < minimum) chosen.push(...pick(soft, minimum - chosen.length));
    if (chosen.length < minimum) return noFit(`Duplicated needs ${minimum} cluster(s); ${chosen.length} available. ${describe(rejected)}`);
    return { ok: true, clusters: chosen.map((name) => ({ name, replicas: input.replicas })) };
  }

  // Divided: re-divide over the available clusters, preferring those already placed when capped (then
  // those with the fewest placements).
  const keptFeasible = feasible.filter((n) => kept.some((c) => c.name === n));
  const others = feasible.filter((n) => !kept.some((c) => c.name === n));
  let pool = [...keptFeasible, ...(spread?.maxGroups ? pick(others, spread.maxGroups - keptFeasible.length) : others)];
  if (spread?.maxGroups) pool = pool.slice(0, spread.maxGroups);
  const weightRules = input.placement?.replicaScheduling?.weightPreference?.staticWeightList;
  const weigh = (names: readonly string[]) =>
    names
      .map((name) => {
        const cluster = input.clusters.find((c) => c.name === name)!;
        const weight = weightRules ? (weightRules.find((rule) => matchesClusterAffinity(rule.targetCluster, cluster))?.weight ?? 0) : 1;
        return { name, weight };
      })
      .filter((w) => w.weight > 0);
  let weighted = weigh(pool);
  // Soft clusters only for what the others cannot take: up to the minimum, within maxGroups.
  const minimum = Math.max(1, spread?.minGroups ?? 0);
  const room = (spread?.maxGroups ? spread.maxGroups : Infinity) - weighted.length;
  if (weighted.length < minimum && room > 0) {
    const usable = weigh(soft).map((w) => w.name);
    weighted = [...weighted, ...weigh(pick(usable, Math.min(minimum - weighted.length, room)))];
  }
  weighted.sort((a, b) => byName(a.name, b.name));
  if (weighted.length < minimum) {
    return noFit(`Divided: no available cluster${weightRules ? ' with a weight' : ''}. ${describe(rejected)}`);
  }
  return { ok: true, clusters: divide(input.replicas, weighted) };
}

/** Largest-remainder division; ties go to the larger weight, then to the name first in order. */
export function divide(replicas: number, weights: ReadonlyArray<{ name: string; weight: number }>): TargetCluster[] {
  const total = weights.reduce((sum, w) => sum + w.weight, 0);
  const shares = weights.map((w) => ({ name: w.name, weight: w.weight, exact: (replicas * w.weight) / total }));
  const result = shares.map((s) => ({ name: s.name, replicas: Math.floor(s.exact) }));
  let left = replicas - result.reduce((sum, r) => sum + r.replicas, 0);
  const order = shares
    .map((s, i) => ({ i, fraction: s.exact - Math.floor(s.exact), weight: s.weight, name: s.name }))
    .sort((a, b) => b.fraction - a.fraction || b.weight - a.weight || byName(a.name, b.name));
  for (const { i } of order) {
    if (left <= 0) break;
    result[i].replicas += 1;
    left -= 1;
  }
  return result.filter((r) => r.replicas > 0 || replicas === 0);
}

function describe(rejected: Record<string, string>): string {
  const entries = Object.entries(rejected);
  return entries.length === 0 ? 'No cluster was rejected.' : `Rejected: ${entries.map(([name, why]) => `${name} ${why}`).join('; ')}.`;
}
