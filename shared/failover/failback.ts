import { type BindingSpec, type EvictionHistoryEntry, FAILBACK_ANNOTATION, failbackWindowProblem } from '../api/resources';
import { activeBlocks, DEFAULT_BLOCK_SECONDS } from './applicationFailover';
import { isFaultyTaint } from './evictionDecision';
import type { Condition } from './model';
import type { CandidateCluster } from './precheck';
import { rejectionReason } from './scheduler';
import { matchesClusterAffinity } from './selectors';

/**
 * Failback, pure. A PropagationPolicy or ClusterPropagationPolicy annotated
 * `failover.io/failback-after-seconds: "<n>"` opts the bindings it governs in: when cluster failover took one
 * of them off a cluster (its home) and that cluster has since been Ready and free of
 * NoExecute/PreferNoExecute taints for n seconds without a break, the binding goes back there, through the
 * ledger at the global rate (reason `Failback`), the copy on the home made first and the copy that replaced
 * it removed gracefully. The count is persisted on the cluster (`healthySince`), so a restart changes no due
 * time, and a flap (Ready not True, or a faulty taint, even for a moment) starts it again.
 */

/** The ledger reason, graceful-eviction task reason and producer of a failback. */
export const FAILBACK_REASON = 'Failback';
/** A failback that went home is still shown (GET /api/failback, state `done`) this long. */
export const FAILBACK_DONE_RETENTION_MS = 3600_000;
export { FAILBACK_ANNOTATION, failbackWindowProblem, MAX_FAILBACK_SECONDS } from '../api/resources';

/**
 * An entry whose replacement is not known yet (Karmada's scheduler places the binding after our eviction
 * write) waits this long for the binding to be placed on another cluster, then is dropped.
 */
export const FAILBACK_UNPLACED_GRACE_MS = 600_000;

/** The window a policy's annotations ask for, in seconds; undefined when absent or not valid (a Karmada object is not validated by us). */
export function failbackWindow(annotations: Readonly<Record<string, string>> | undefined): number | undefined {
  const value = annotations?.[FAILBACK_ANNOTATION];
  if (value === undefined || failbackWindowProblem(value) !== undefined) return undefined;
  return Number(value);
}

// ---------------------------------------------------------------------------------------------
// Cluster health: the count

export interface HealthFacts {
  conditions: ReadonlyArray<Pick<Condition, 'type' | 'status'>>;
  taints: ReadonlyArray<{ effect: string }>;
}

/** Healthy for failback: Ready=True and no NoExecute or PreferNoExecute taint. */
export function isClusterHealthy(cluster: HealthFacts): boolean {
  const ready = cluster.conditions.find((c) => c.type === 'Ready');
  return ready?.status === 'True' && !cluster.taints.some((t) => t.effect === 'NoExecute' || t.effect === 'PreferNoExecute');
}

/**
 * The persisted start of the cluster's current healthy run after a write: kept while it stays healthy, set
 * to `now` when it becomes healthy (or when a healthy cluster has none recorded yet), gone when it is not
 * healthy. A flap between two writes is seen by the write that saw it: any write with Ready not True or a
 * faulty taint ends the run.
 */
export function nextHealthySince(previous: (HealthFacts & { healthySince?: string }) | undefined, next: HealthFacts, now: Date): string | undefined {
  if (!isClusterHealthy(next)) return undefined;
  if (previous && previous.healthySince && isClusterHealthy(previous)) return previous.healthySince;
  return now.toISOString();
}

// ---------------------------------------------------------------------------------------------
// The binding's failback entries

/**
 * What a binding keeps per home (the cluster cluster failover took it off), in the binding record (in
 * Karmada mode an annotation): the graceful-eviction task of that eviction is usually gone long before the
 * home recovers, so the home is recorded here.
 */
export interface FailbackEntry {
  home: string;
  /** The clusters the placement gained in the eviction's write (they replaced the home). */
  replacedBy?: string[];
  /**
   * The clusters still placed right after the eviction, while the replacement is not known yet (Karmada's
   * scheduler places after our write; or our scheduler found no fit in that write): the replacement is
   * then what the binding gained since.
   */
  kept?: string[];
  evictedAt: string;
  /** The window when it was recorded (the policy's current one decides), then the one it went home on. */
  windowSeconds?: number;
  /** When it went home (kept FAILBACK_DONE_RETENTION_MS for the API), where from, and the healthy run it went on. */
  doneAt?: string;
  from?: string[];
  healthySince?: string;
}

export type FailbackEntries = Record<string, FailbackEntry>;

/**
 * The entries after a cluster-failover eviction from `evicted`. If `evicted` was itself standing in for a
 * home (it is in an entry's replacement), that entry now points at what replaced it in turn: the home
 * stays the cluster the binding ran on before the failover began, and no entry is made for `evicted`.
 * Otherwise, for a binding that opted in, `evicted` becomes a home. `gained`: the clusters the same write
 * placed the binding on; undefined when the placement is made later (the replacement is then resolved
 * from `kept`).
 */
export function recordFailoverEviction(
  entries: FailbackEntries | undefined,
  /** `windowSeconds`: the window of the binding's policy, when it opted in (else no new entry). */
  eviction: { evicted: string; kept: readonly string[]; gained?: readonly string[]; windowSeconds?: number; now: Date },
): FailbackEntries | undefined {
  const next: FailbackEntries = {};
  let transferred = false;
  for (const [home, entry] of Object.entries(entries ?? {})) {
    if (home === eviction.evicted) continue; // evicted from its home again: a new entry below
    if (entry.doneAt || !(entry.replacedBy ?? []).includes(eviction.evicted)) {
      next[home] = entry;
      continue;
    }
    transferred = true;
    const rest = (entry.replacedBy ?? []).filter((c) => c !== eviction.evicted);
    if (eviction.gained !== undefined) {
      const replacedBy = unique([...rest, ...eviction.gained]);
      // Nothing stands in for the home any more (the clusters it kept took the replicas): no failback.
      if (replacedBy.length > 0) next[home] = { ...entry, replacedBy };
    } else if (rest.length > 0) next[home] = { ...entry, replacedBy: rest };
    else {
      const { replacedBy: _unknown, ...open } = entry;
      next[home] = { ...open, kept: [...eviction.kept] };
    }
  }
  // A placement that gained no cluster (a Divided binding whose other clusters took the replicas) has
  // nothing standing in for the home to leave again: no failback.
  if (!transferred && eviction.windowSeconds !== undefined && (eviction.gained === undefined || eviction.gained.length > 0)) {
    next[eviction.evicted] = {
      home: eviction.evicted,
      ...(eviction.gained !== undefined ? { replacedBy: [...eviction.gained] } : { kept: [...eviction.kept] }),
      evictedAt: eviction.now.toISOString(),
      windowSeconds: eviction.windowSeconds,
    };
  }
  return Object.keys(next).length > 0 ? next : undefined;
}

const unique = (names: readonly string[]) => [...new Set(names)].sort();

/**
 * The clusters now standing in for the entry's home: those of `replacedBy` still placed; while it is not
 * known, what the binding is placed on beyond what it kept (and beyond the other entries' homes).
 */
export function replacementOf(entry: FailbackEntry, placedOn: readonly string[], otherHomes: readonly string[] = []): string[] {
  if (entry.replacedBy !== undefined) return entry.replacedBy.filter((c) => placedOn.includes(c)).sort();
  const kept = entry.kept ?? [];
  return placedOn.filter((c) => c !== entry.home && !kept.includes(c) && !otherHomes.includes(c)).sort();
}

// ---------------------------------------------------------------------------------------------
// The decision

export type WaitCode = 'home-not-ready' | 'home-tainted' | 'not-admitted' | 'not-placed';

export type FailbackVerdict =
  /** Goes home at `due` (healthySince + window; may be in the future: the count is running). */
  | { due: Date; healthySince: string; replacement: string[]; why: string }
  /** Stays for now; decided again when the home's health changes. */
  | { wait: string; code: WaitCode }
  /** Never for this entry: it is removed. */
  | { drop: string };

export interface HomeFacts extends CandidateCluster {
  conditions: ReadonlyArray<Pick<Condition, 'type' | 'status'>>;
  healthySince?: string;
}

export interface FailbackInput {
  entry: FailbackEntry;
  /** The window the binding's policy asks for now (undefined: the annotation is gone). */
  windowSeconds: number | undefined;
  /** The home cluster as stored now (undefined: deleted). */
  home: HomeFacts | undefined;
  binding: Pick<BindingSpec, 'placement' | 'clusters' | 'gracefulEvictionTasks' | 'activeEvictionHistory'> & {
    /** failover.cluster / failover.application purge modes, as written (a Karmada object may carry any). */
    failover?: { cluster?: { purgeMode?: string }; application?: { purgeMode?: string; blockPredecessorSeconds?: number } };
  };
  /** Homes of the binding's other entries (never counted as a replacement). */
  otherHomes?: readonly string[];
  now: Date;
}

/** Whether the binding's purge modes forbid an automatic move: `Never` (a person decides about old copies). */
export const purgeNever = (failover: FailbackInput['binding']['failover']) =>
  failover?.cluster?.purgeMode === 'Never' || failover?.application?.purgeMode === 'Never';

/**
 * Whether and when one binding goes home. Drops an entry the binding no longer needs (the policy's
 * annotation is gone, purge mode Never, it runs on its home again, what replaced the home is gone, the home
 * was deleted or the placement's affinity no longer takes it); waits while the home is not healthy or the
 * placement does not admit it now (a NoSchedule taint, the eviction history, the spread); otherwise it is
 * due `windowSeconds` after the home's healthy run began.
 */
export function decideFailback(input: FailbackInput): FailbackVerdict {
  const { entry, home, binding, now } = input;
  const placedOn = (binding.clusters ?? []).map((c) => c.name);
  if (input.windowSeconds === undefined) return { drop: `the policy no longer asks for failback (annotation ${FAILBACK_ANNOTATION} removed)` };
  if (purgeNever(binding.failover)) return { drop: 'purgeMode Never: a person decides where this workload runs; it is never moved back automatically' };
  if (placedOn.includes(entry.home)) return { drop: `it runs on its home ${entry.home} again` };
  const replacement = replacementOf(entry, placedOn, input.otherHomes);
  if (replacement.length === 0) {
    if (entry.replacedBy !== undefined) return { drop: `it no longer runs on ${entry.replacedBy.join(', ')}, which replaced its home ${entry.home}` };
    if (now.getTime() - Date.parse(entry.evictedAt) > FAILBACK_UNPLACED_GRACE_MS)
      return { drop: `no other cluster took the place of its home ${entry.home} within ${FAILBACK_UNPLACED_GRACE_MS / 1000}s of the eviction` };
    return { wait: `it is not placed on another cluster yet (evicted from ${entry.home} at ${entry.evictedAt})`, code: 'not-placed' };
  }
  if (!home) return { drop: `its home cluster ${entry.home} was deleted` };
  if (!matchesClusterAffinity(binding.placement?.clusterAffinity, home))
    return { drop: `its placement no longer admits its home ${entry.home}: it does not match the cluster affinity` };
  const weights = binding.placement?.replicaScheduling?.weightPreference?.staticWeightList;
  if (binding.placement?.replicaScheduling?.replicaSchedulingType === 'Divided' && weights) {
    const weight = weights.find((rule) => matchesClusterAffinity(rule.targetCluster, home))?.weight ?? 0;
    if (weight <= 0) return { drop: `its placement no longer admits its home ${entry.home}: it has no weight in the static weight list` };
  }
  const ready = home.conditions.find((c) => c.type === 'Ready');
  if (ready?.status !== 'True')
    return { wait: `its home ${entry.home} is not Ready (${ready ? `Ready=${ready.status}` : 'no Ready condition reported'})`, code: 'home-not-ready' };
  const faulty = home.taints.filter((t) => isFaultyTaint(t));
  if (faulty.length > 0) return { wait: `its home ${entry.home} has taint ${faulty.map((t) => `${t.key}:${t.effect}`).join(', ')}`, code: 'home-tainted' };
  if (!home.healthySince) return { wait: `the healthy run of its home ${entry.home} is not recorded yet`, code: 'home-not-ready' };
  // The scheduler's own filter (affinity, taints, eviction history); the home's own old task does not count.
  const blocked = activeBlocks(
    binding.activeEvictionHistory ?? ([] as EvictionHistoryEntry[]),
    binding.failover?.application?.blockPredecessorSeconds ?? DEFAULT_BLOCK_SECONDS,
    now,
  ).blocked;
  const evicting = (binding.gracefulEvictionTasks ?? []).map((t) => t.fromCluster).filter((c) => c !== entry.home);
  const rejected = rejectionReason(home, binding.placement, blocked, false, evicting);
  if (rejected) return { wait: `its placement does not admit its home now: ${entry.home} ${rejected}`, code: 'not-admitted' };
  const count = placedOn.length - replacement.length + 1;
  for (const spread of binding.placement?.spreadConstraints ?? []) {
    if ((spread.spreadByField ?? 'cluster') !== 'cluster' || spread.spreadByLabel) continue;
    if (spread.minGroups && count < spread.minGroups)
      return { wait: `going home would leave ${count} cluster(s), below the spread constraint's minGroups ${spread.minGroups}`, code: 'not-admitted' };
  }
  const due = new Date(Date.parse(home.healthySince) + input.windowSeconds * 1000);
  return {
    due,
    healthySince: home.healthySince,
    replacement,
    why: `back to ${entry.home} from ${replacement.join(', ')}: ${entry.home} Ready and free of NoExecute/PreferNoExecute taints since ${home.healthySince}, failback after ${input.windowSeconds}s`,
  };
}

/**
 * The placement after going home: the replacement clusters leave and the home comes back with their
 * replicas (Divided: their sum, so the total stays; Duplicated: each copy is the whole workload).
 */
export function failbackClusters(
  spec: Pick<BindingSpec, 'clusters' | 'replicas' | 'placement'>,
  home: string,
  replacement: readonly string[],
): NonNullable<BindingSpec['clusters']> {
  const clusters = spec.clusters ?? [];
  const leaving = clusters.filter((c) => replacement.includes(c.name));
  const counts = leaving.map((c) => c.replicas ?? spec.replicas ?? 0);
  const divided = spec.placement?.replicaScheduling?.replicaSchedulingType === 'Divided';
  const replicas = divided ? counts.reduce((a, b) => a + b, 0) : Math.max(spec.replicas ?? 0, ...counts);
  return [...clusters.filter((c) => !replacement.includes(c.name)), { name: home, replicas }];
}
