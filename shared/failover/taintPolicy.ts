import { createHash } from 'node:crypto';
import { matchesCondition, matchesConditions } from './conditions';
import { isFaultyTaint } from './evictionDecision';
import {
  AnyTaintPolicy,
  ClusterAffinity,
  ClusterFacts,
  ClusterTaint,
  Condition,
  isKarmadaPolicy,
  KarmadaTaintPolicy,
  MatchCondition,
  taintId,
  TaintPolicy,
  TaintPolicyShape,
  TaintToAdd,
} from './model';
import { matchesClusterAffinity } from './selectors';
import type { ShadowWindow, WouldTaint } from './shadow';

/**
 * "Taint cluster by conditions" for both shapes of ClusterTaintPolicy, with ownership (docs/architecture.md,
 * decision 3).
 *
 * - Windowed shape (`'seed'` in code): time windows (decision 2). A matching policy holds the taints it
 *   lists; it lets go once its remove window has passed, when it no longer lists a taint, or when it is deleted.
 * - Karmada's shape (v1.14+): no windows. In creationTimestamp order (then name), each policy that targets
 *   the cluster takes hold of its taints when all its addOnConditions match, then, when all its
 *   removeOnConditions match, drops every Karmada-shape hold on those taints (upstream removes them
 *   whoever added them). An empty list never acts. A policy that stops applying (deleted, no longer
 *   targeting, no longer listing) leaves its taints behind, as upstream does.
 *
 * A taint stays while anything holds it: a person (manual), a seed-shape policy, a Karmada-shape policy,
 * or a Karmada-shape policy that left it. So no policy removes a manual taint, and a Karmada-shape
 * removal does not override a seed-shape policy that still wants the taint.
 *
 * Shadow mode (`mode: 'shadow'`, shadow.ts): the policy keeps its windows but adds no taint and takes hold
 * of none; a Karmada-shape one removes none. The taints it would have added are returned in `wouldTaint`,
 * each once per match episode (the window remembers which were returned). Taints it held before it was put
 * in shadow mode follow the usual rules.
 *
 * The blast-radius guard (blastRadius.ts) is an input: `blocked` policies add no NoExecute or
 * PreferNoExecute taint on this cluster (another policy that wants the same taint may).
 *
 * Pure: the cluster's stored facts, the policies and the time in; the new taints, windows, changes and
 * the next deadline out. The result does not depend on the order of `policies`.
 */

/** Which rule of which shape acted. */
export type TaintRule =
  /** seed: the match lasted the taint's addOnMatchSeconds */
  | 'addOnMatchSeconds'
  /** seed: the mismatch lasted the taint's removeOnMismatchSeconds */
  | 'removeOnMismatchSeconds'
  /** seed: the policy was deleted (or is now of Karmada's shape) */
  | 'policyDeleted'
  /** seed: the policy no longer lists the taint */
  | 'taintNotListed'
  /** nobody holds the taint (nothing acted) */
  | 'noHolder'
  /** Karmada: all addOnConditions matched */
  | 'addOnConditions'
  /** Karmada: all removeOnConditions matched */
  | 'removeOnConditions';

export interface TaintChange {
  action: 'added' | 'removed';
  taint: { key: string; value?: string; effect: ClusterTaint['effect'] };
  /** The policy that acted ('' when none did). */
  policy: string;
  /** The shape of that policy. */
  shape: TaintPolicyShape;
  rule: TaintRule;
  reason: string;
  /** The conditions the rule looks at, as they were when the change was decided. */
  conditions: Condition[];
}

export interface TaintEvaluation {
  taints: ClusterTaint[];
  policyWindows: Record<string, ShadowWindow>;
  changes: TaintChange[];
  /** What shadow policies would have added, each once per match episode. */
  wouldTaint: WouldTaint[];
  /** The earliest future time at which this evaluation would give a different answer. */
  nextDeadline?: Date;
}

export function policyFingerprint(policy: Pick<TaintPolicy, 'targetCluster' | 'matchConditions'>): string {
  const canonical = JSON.stringify({ t: policy.targetCluster ?? null, m: policy.matchConditions });
  return createHash('sha256').update(canonical).digest('hex').slice(0, 16);
}

const time = (iso: string): number => new Date(iso).getTime();

/** Conditions of the types a list of match conditions looks at, as present on the cluster. */
function conditionsOf(matches: readonly MatchCondition[], conditions: readonly Condition[]): Condition[] {
  const types = new Set(matches.map((m) => m.conditionType));
  return conditions.filter((c) => types.has(c.type));
}

/** Conditions of the types a policy looks at, as present on the cluster. */
function relevantConditions(policy: TaintPolicy, conditions: readonly Condition[]): Condition[] {
  return conditionsOf(policy.matchConditions, conditions);
}

/** Transition times of the present conditions that currently break the policy's match. */
function mismatchTimes(policy: TaintPolicy, conditions: readonly Condition[]): number[] {
  const out: number[] = [];
  for (const match of policy.matchConditions) {
    if (matchesCondition(match, conditions)) continue;
    const condition = conditions.find((c) => c.type === match.conditionType);
    if (condition) out.push(time(condition.lastTransitionTime));
  }
  return out;
}

/**
 * When did the current match (or mismatch) begin? Derived from the conditions' lastTransitionTime,
 * which is persisted, so a restart moves no deadline. `after` bounds the answer from below when the state
 * just flipped (the flip happened after the previous window began).
 */
function windowStart(policy: TaintPolicy, targeted: boolean, matched: boolean, conditions: readonly Condition[], now: number, after?: number): number {
  if (!targeted) return now;
  const inRange = (t: number) => Number.isFinite(t) && t <= now && (after === undefined || t > after);
  if (matched) {
    const times = relevantConditions(policy, conditions).map((c) => time(c.lastTransitionTime));
    if (times.length === 0) return now;
    const latest = Math.max(...times);
    return inRange(latest) ? latest : now;
  }
  const times = mismatchTimes(policy, conditions).filter(inRange);
  return times.length > 0 ? Math.min(...times) : now;
}

/** Karmada's conditionMatches: all must match (an absent condition matches neither In nor NotIn); an empty list never does. */
export function karmadaConditionsMatch(matches: readonly MatchCondition[], conditions: readonly Condition[]): boolean {
  return matches.length > 0 && matchesConditions(matches, conditions);
}

interface PolicyState {
  policy: TaintPolicy;
  window: ShadowWindow;
  sinceMs: number;
}

export interface EvaluationOptions {
  /** Enforcing policies the blast-radius guard holds back: they add no NoExecute/PreferNoExecute taint here. */
  blocked?: ReadonlySet<string>;
}

/** What decides a Karmada-shape shadow policy's match episode (its addOnConditions and targets). */
function karmadaFingerprint(policy: KarmadaTaintPolicy): string {
  const canonical = JSON.stringify({ k: policy.targetClusters ?? null, a: policy.addOnConditions });
  return createHash('sha256').update(canonical).digest('hex').slice(0, 16);
}

interface KarmadaVerdict {
  policy: KarmadaTaintPolicy;
  targeted: boolean;
  add: boolean;
  remove: boolean;
}

type Actor = Pick<TaintChange, 'policy' | 'shape' | 'rule' | 'reason' | 'conditions'>;

/** One taint (by key and effect) during an evaluation: who holds it, and who added or removed it. */
interface Entry {
  /** The stored taint, if the cluster had it before this evaluation. */
  before?: ClusterTaint;
  /** What to add, when the cluster did not have it. */
  fresh?: { key: string; value?: string; effect: ClusterTaint['effect'] };
  seed: Set<string>;
  karmada: Set<string>;
  leftBy?: string;
  manual: boolean;
  added?: Actor;
  removed?: Actor;
}

const held = (entry: Entry): boolean => entry.manual || entry.seed.size > 0 || entry.karmada.size > 0 || entry.leftBy !== undefined;

const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** Karmada sorts by creationTimestamp; policies created at the same time go by name (upstream leaves that order undefined). */
const byCreation = (a: KarmadaTaintPolicy, b: KarmadaTaintPolicy) => time(a.createdAt) - time(b.createdAt) || byName(a, b);

const withValue = (taint: { key: string; value?: string; effect: ClusterTaint['effect'] }) => ({
  key: taint.key,
  ...(taint.value !== undefined && taint.value !== '' ? { value: taint.value } : {}),
  effect: taint.effect,
});

export function evaluateTaintPolicies(cluster: ClusterFacts, policies: readonly AnyTaintPolicy[], now: Date, options: EvaluationOptions = {}): TaintEvaluation {
  const nowMs = now.getTime();
  const blocked = options.blocked ?? new Set<string>();
  const shadow = (policy: AnyTaintPolicy) => policy.mode === 'shadow';
  const seedPolicies = policies.filter((p): p is TaintPolicy => !isKarmadaPolicy(p)).sort(byName);
  const karmadaPolicies = policies.filter(isKarmadaPolicy).sort(byCreation);
  const states = new Map<string, PolicyState>();
  const policyWindows: Record<string, ShadowWindow> = {};

  // Seed shape: the persisted windows.
  for (const policy of seedPolicies) {
    const targeted = matchesClusterAffinity(policy.targetCluster, cluster);
    const matched = targeted && matchesConditions(policy.matchConditions, cluster.conditions);
    const fingerprint = policyFingerprint(policy);
    const previous = cluster.policyWindows[policy.name];
    let sinceMs: number;
    if (!previous || previous.fingerprint !== fingerprint) {
      sinceMs = windowStart(policy, targeted, matched, cluster.conditions, nowMs);
    } else if (previous.matched === matched) {
      sinceMs = time(previous.since);
    } else {
      sinceMs = windowStart(policy, targeted, matched, cluster.conditions, nowMs, time(previous.since));
    }
    const window: ShadowWindow = { matched, since: new Date(sinceMs).toISOString(), fingerprint };
    // A shadow policy's findings are recorded once per episode: the same window carries the record.
    const carried = previous as ShadowWindow | undefined;
    if (shadow(policy) && carried?.shadowed && carried.fingerprint === fingerprint && carried.matched === matched && carried.since === window.since) {
      window.shadowed = carried.shadowed;
    }
    policyWindows[policy.name] = window;
    states.set(policy.name, { policy, window, sinceMs });
  }

  // Karmada shape: what each policy's conditions say now.
  const verdicts: KarmadaVerdict[] = karmadaPolicies.map((policy) => {
    const targeted = matchesClusterAffinity(policy.targetClusters, cluster);
    return {
      policy,
      targeted,
      add: targeted && karmadaConditionsMatch(policy.addOnConditions, cluster.conditions),
      remove: targeted && karmadaConditionsMatch(policy.removeOnConditions, cluster.conditions),
    };
  });
  const verdictOf = new Map(verdicts.map((v) => [v.policy.name, v]));

  const deadlines: number[] = [];
  const changes: TaintChange[] = [];
  const seedActor = (name: string, rule: TaintRule, reason: string): Actor => {
    const state = states.get(name);
    return { policy: name, shape: 'seed', rule, reason, conditions: state ? relevantConditions(state.policy, cluster.conditions) : [] };
  };
  const karmadaActor = (policy: KarmadaTaintPolicy, rule: 'addOnConditions' | 'removeOnConditions'): Actor => ({
    policy: policy.name,
    shape: 'karmada',
    rule,
    reason: `${rule} matched`,
    conditions: conditionsOf(rule === 'addOnConditions' ? policy.addOnConditions : policy.removeOnConditions, cluster.conditions),
  });
  const listed = (state: PolicyState, id: string): TaintToAdd | undefined => state.policy.taintsToAdd.find((t) => taintId(t) === id);

  const entries = new Map<string, Entry>();
  const entry = (id: string): Entry => {
    let found = entries.get(id);
    if (!found) entries.set(id, (found = { seed: new Set(), karmada: new Set(), manual: false }));
    return found;
  };

  // 1. The taints the cluster has: which holds still stand.
  for (const taint of cluster.taints) {
    const id = taintId(taint);
    const current = entry(id);
    current.before = taint;
    current.manual = taint.manual;
    current.leftBy = taint.leftBy;
    const karmadaHeld = new Set(taint.karmadaOwners ?? []);
    const lapsed: string[] = [];
    for (const owner of taint.owners) {
      if (karmadaHeld.has(owner)) {
        // A Karmada-shape hold stands while its policy exists, targets the cluster and lists the taint.
        const verdict = verdictOf.get(owner);
        if (verdict?.targeted && verdict.policy.taints.some((t) => taintId(t) === id)) current.karmada.add(owner);
        else lapsed.push(owner);
        continue;
      }
      const state = states.get(owner);
      const wanted = state ? listed(state, id) : undefined;
      if (!state || !wanted) {
        const reason = state ? 'the policy no longer lists this taint' : verdictOf.has(owner) ? "the policy now has Karmada's shape" : 'the policy was deleted';
        current.removed = seedActor(owner, state ? 'taintNotListed' : 'policyDeleted', reason);
        continue;
      }
      if (state.window.matched) {
        current.seed.add(owner);
        continue;
      }
      const removeAt = state.sinceMs + wanted.removeOnMismatchSeconds * 1000;
      if (nowMs >= removeAt) {
        current.removed = seedActor(owner, 'removeOnMismatchSeconds', `the policy's conditions did not match for ${wanted.removeOnMismatchSeconds}s`);
      } else {
        current.seed.add(owner);
        deadlines.push(removeAt);
      }
    }
    if (current.karmada.size === 0 && lapsed.length > 0) current.leftBy = lapsed.sort()[0];
  }

  // 2. Karmada-shape policies in creationTimestamp order: add, then remove (shadow policies do neither).
  for (const verdict of verdicts) {
    if (shadow(verdict.policy)) continue;
    if (verdict.add) {
      for (const taint of verdict.policy.taints) {
        const current = entry(taintId(taint));
        if (!current.before && !held(current)) {
          // Held back by the blast-radius guard: neither added nor held.
          if (isFaultyTaint(taint) && blocked.has(verdict.policy.name)) continue;
          current.fresh = withValue(taint);
          current.added = karmadaActor(verdict.policy, 'addOnConditions');
        }
        current.karmada.add(verdict.policy.name);
        current.leftBy = undefined;
      }
    }
    if (verdict.remove) {
      for (const taint of verdict.policy.taints) {
        const current = entries.get(taintId(taint));
        if (!current || (current.karmada.size === 0 && current.leftBy === undefined)) continue;
        current.karmada.clear();
        current.leftBy = undefined;
        current.removed = karmadaActor(verdict.policy, 'removeOnConditions');
      }
    }
  }

  // 3. Seed-shape policies that match, per taint they list: they want that taint.
  const wanting = new Map<string, PolicyState[]>();
  for (const state of states.values()) {
    if (!state.window.matched || shadow(state.policy)) continue;
    for (const taint of state.policy.taintsToAdd) {
      const id = taintId(taint);
      wanting.set(id, [...(wanting.get(id) ?? []), state]);
    }
  }
  for (const [id, wanters] of wanting) {
    const current = entries.get(id);
    // A taint the cluster has (or that a Karmada-shape policy holds) is held by every matching policy that
    // lists it, whoever added it: never remove a taint another matching policy still wants.
    if (current && (current.before || held(current))) {
      for (const state of wanters) current.seed.add(state.policy.name);
      continue;
    }
    // Absent: the first policy due adds it (with its value); one the blast-radius guard holds back does not.
    const due = wanters
      .map((state) => ({ state, taint: listed(state, id)!, at: state.sinceMs + listed(state, id)!.addOnMatchSeconds * 1000 }))
      .filter((d) => !(isFaultyTaint(d.taint) && blocked.has(d.state.policy.name)))
      .sort((a, b) => a.at - b.at || byName(a.state.policy, b.state.policy));
    const first = due[0];
    if (!first) continue;
    if (nowMs < first.at) {
      deadlines.push(first.at);
      continue;
    }
    const added = entry(id);
    added.fresh = withValue(first.taint);
    added.added = seedActor(first.state.policy.name, 'addOnMatchSeconds', `the policy's conditions matched for ${first.taint.addOnMatchSeconds}s`);
    for (const state of wanters) added.seed.add(state.policy.name);
  }

  // 3b. Shadow policies: what they would have added, once per match episode.
  const wouldTaint: WouldTaint[] = [];
  const present = (id: string) => {
    const current = entries.get(id);
    return current !== undefined && (current.before !== undefined || current.added !== undefined);
  };
  const findings = (
    window: ShadowWindow,
    policy: string,
    taints: ReadonlyArray<{ key: string; value?: string; effect: ClusterTaint['effect']; at: number }>,
  ) => {
    const recorded = new Set(window.shadowed ?? []);
    for (const taint of taints) {
      const id = taintId(taint);
      if (nowMs < taint.at) {
        deadlines.push(taint.at);
        continue;
      }
      if (recorded.has(id)) continue;
      recorded.add(id);
      wouldTaint.push({ policy, taint: withValue(taint), at: new Date(taint.at).toISOString(), episode: window.since, present: present(id) });
    }
    if (recorded.size > 0) window.shadowed = [...recorded].sort();
  };
  for (const state of states.values()) {
    if (!shadow(state.policy) || !state.window.matched) continue;
    findings(
      state.window,
      state.policy.name,
      state.policy.taintsToAdd.map((t) => ({ ...t, at: state.sinceMs + t.addOnMatchSeconds * 1000 })),
    );
  }
  // A Karmada-shape shadow policy has no windows of its own: its episode is kept as one (on the clusters it
  // targets), from the first evaluation that saw its addOnConditions match.
  for (const verdict of verdicts) {
    if (!shadow(verdict.policy) || !verdict.targeted) continue;
    const fingerprint = karmadaFingerprint(verdict.policy);
    const previous = cluster.policyWindows[verdict.policy.name] as ShadowWindow | undefined;
    const same = previous !== undefined && previous.fingerprint === fingerprint && previous.matched === verdict.add;
    const window: ShadowWindow = { matched: verdict.add, since: same ? previous.since : now.toISOString(), fingerprint };
    if (same && previous.shadowed) window.shadowed = previous.shadowed;
    policyWindows[verdict.policy.name] = window;
    if (verdict.add)
      findings(
        window,
        verdict.policy.name,
        verdict.policy.taints.map((t) => ({ ...t, at: time(window.since) })),
      );
  }

  // 4. What stays, what goes, what is new.
  const taints: ClusterTaint[] = [];
  for (const current of entries.values()) {
    const owners = [...new Set([...current.seed, ...current.karmada])].sort();
    const holders = (taint: ClusterTaint): ClusterTaint => {
      const out: ClusterTaint = { ...taint, owners };
      if (current.karmada.size > 0) out.karmadaOwners = [...current.karmada].sort();
      else delete out.karmadaOwners;
      if (current.leftBy !== undefined && current.karmada.size === 0) out.leftBy = current.leftBy;
      else delete out.leftBy;
      return out;
    };
    if (current.before) {
      if (held(current)) {
        taints.push(holders(current.before));
        continue;
      }
      const by = current.removed ?? {
        policy: current.before.owners[0] ?? '',
        shape: 'seed' as const,
        rule: 'noHolder' as const,
        reason: 'no policy holds this taint',
        conditions: [],
      };
      changes.push({ action: 'removed', taint: publicTaint(current.before), ...by });
      continue;
    }
    if (!held(current) || !current.fresh || !current.added) continue;
    const added = holders({ ...current.fresh, timeAdded: now.toISOString(), owners: [], manual: false });
    taints.push(added);
    changes.push({ action: 'added', taint: publicTaint(added), ...current.added });
  }

  const future = deadlines.filter((d) => d > nowMs);
  return {
    taints,
    policyWindows,
    changes,
    wouldTaint,
    ...(future.length > 0 ? { nextDeadline: new Date(Math.min(...future)) } : {}),
  };
}

/** The clusters a policy targets (undefined: every cluster). */
export const policyTarget = (policy: AnyTaintPolicy): ClusterAffinity | undefined => (isKarmadaPolicy(policy) ? policy.targetClusters : policy.targetCluster);

/**
 * Whether a change of a policy (its versions before and after; undefined where it did not exist) may change
 * what `cluster` holds: a version targets it, or it holds a taint a version adds (one left from a target it
 * no longer has). A policy contributes nothing to any other cluster, so nothing there changes.
 */
export function affectedByPolicyChange(cluster: ClusterFacts, versions: ReadonlyArray<AnyTaintPolicy | undefined>): boolean {
  const policies = versions.filter((policy): policy is AnyTaintPolicy => policy !== undefined);
  if (policies.some((policy) => matchesClusterAffinity(policyTarget(policy), cluster))) return true;
  const adds = policies.flatMap((policy) => (isKarmadaPolicy(policy) ? policy.taints : policy.taintsToAdd));
  return cluster.taints.some((taint) => adds.some((add) => add.key === taint.key && add.effect === taint.effect));
}

export function publicTaint(taint: Pick<ClusterTaint, 'key' | 'value' | 'effect'>): TaintChange['taint'] {
  return { key: taint.key, ...(taint.value !== undefined ? { value: taint.value } : {}), effect: taint.effect };
}
