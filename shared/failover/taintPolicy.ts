import { createHash } from 'node:crypto';
import { matchesCondition, matchesConditions } from './conditions';
import { ClusterFacts, ClusterTaint, Condition, PolicyWindow, TaintPolicy, TaintToAdd, taintId } from './model';
import { matchesClusterAffinity } from './selectors';

/**
 * "Taint cluster by conditions" (seed 000) with time windows and ownership (design decisions 2 and 3).
 * Pure: the cluster's stored facts, the policies and the time in; the new taints, windows, changes and
 * the next deadline out. The result does not depend on the order of `policies`.
 */

export interface TaintChange {
  action: 'added' | 'removed';
  taint: { key: string; value?: string; effect: ClusterTaint['effect'] };
  policy: string;
  reason: string;
  /** The conditions the policy looks at, as they were when the change was decided. */
  conditions: Condition[];
}

export interface TaintEvaluation {
  taints: ClusterTaint[];
  policyWindows: Record<string, PolicyWindow>;
  changes: TaintChange[];
  /** The earliest future time at which this evaluation would give a different answer. */
  nextDeadline?: Date;
}

export function policyFingerprint(policy: Pick<TaintPolicy, 'targetCluster' | 'matchConditions'>): string {
  const canonical = JSON.stringify({ t: policy.targetCluster ?? null, m: policy.matchConditions });
  return createHash('sha256').update(canonical).digest('hex').slice(0, 16);
}

const time = (iso: string): number => new Date(iso).getTime();

/** Conditions of the types a policy looks at, as present on the cluster. */
function relevantConditions(policy: TaintPolicy, conditions: readonly Condition[]): Condition[] {
  const types = new Set(policy.matchConditions.map((m) => m.conditionType));
  return conditions.filter((c) => types.has(c.type));
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

interface PolicyState {
  policy: TaintPolicy;
  window: PolicyWindow;
  sinceMs: number;
}

export function evaluateTaintPolicies(cluster: ClusterFacts, policies: readonly TaintPolicy[], now: Date): TaintEvaluation {
  const nowMs = now.getTime();
  const sorted = [...policies].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const states = new Map<string, PolicyState>();
  const policyWindows: Record<string, PolicyWindow> = {};

  for (const policy of sorted) {
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
    const window: PolicyWindow = { matched, since: new Date(sinceMs).toISOString(), fingerprint };
    policyWindows[policy.name] = window;
    states.set(policy.name, { policy, window, sinceMs });
  }

  const deadlines: number[] = [];
  const changes: TaintChange[] = [];
  const snapshot = (policyName: string): Condition[] => {
    const state = states.get(policyName);
    return state ? relevantConditions(state.policy, cluster.conditions) : [];
  };
  const listed = (state: PolicyState, id: string): TaintToAdd | undefined => state.policy.taintsToAdd.find((t) => taintId(t) === id);

  // Policies that currently match, per taint they list: they want that taint.
  const wanting = new Map<string, PolicyState[]>();
  for (const state of states.values()) {
    if (!state.window.matched) continue;
    for (const taint of state.policy.taintsToAdd) {
      const id = taintId(taint);
      wanting.set(id, [...(wanting.get(id) ?? []), state]);
    }
  }

  const taints: ClusterTaint[] = [];
  const present = new Set<string>();
  for (const taint of cluster.taints) {
    const id = taintId(taint);
    const owners = new Set<string>();
    let releasedBy: { policy: string; reason: string } | undefined;
    for (const owner of taint.owners) {
      const state = states.get(owner);
      const wanted = state ? listed(state, id) : undefined;
      if (!state || !wanted) {
        releasedBy = { policy: owner, reason: state ? 'the policy no longer lists this taint' : 'the policy was deleted' };
        continue;
      }
      if (state.window.matched) {
        owners.add(owner);
        continue;
      }
      const removeAt = state.sinceMs + wanted.removeOnMismatchSeconds * 1000;
      if (nowMs >= removeAt) {
        releasedBy = { policy: owner, reason: `the policy's conditions did not match for ${wanted.removeOnMismatchSeconds}s` };
      } else {
        owners.add(owner);
        deadlines.push(removeAt);
      }
    }
    // A matching policy that lists this taint holds it too, whoever added it (decision 3: never remove a
    // taint another matching policy still wants).
    for (const state of wanting.get(id) ?? []) owners.add(state.policy.name);

    if (owners.size === 0 && !taint.manual) {
      const by = releasedBy ?? { policy: taint.owners[0] ?? '', reason: 'no policy holds this taint' };
      changes.push({ action: 'removed', taint: publicTaint(taint), policy: by.policy, reason: by.reason, conditions: snapshot(by.policy) });
      continue;
    }
    present.add(id);
    taints.push({ ...taint, owners: [...owners].sort() });
  }

  for (const [id, states_] of wanting) {
    if (present.has(id)) continue;
    const due = states_
      .map((state) => ({ state, taint: listed(state, id)!, at: state.sinceMs + listed(state, id)!.addOnMatchSeconds * 1000 }))
      .sort((a, b) => a.at - b.at || (a.state.policy.name < b.state.policy.name ? -1 : 1));
    const first = due[0];
    if (nowMs < first.at) {
      deadlines.push(first.at);
      continue;
    }
    const added: ClusterTaint = {
      key: first.taint.key,
      ...(first.taint.value !== undefined && first.taint.value !== '' ? { value: first.taint.value } : {}),
      effect: first.taint.effect,
      timeAdded: now.toISOString(),
      owners: states_.map((s) => s.policy.name).sort(),
      manual: false,
    };
    taints.push(added);
    changes.push({
      action: 'added',
      taint: publicTaint(added),
      policy: first.state.policy.name,
      reason: `the policy's conditions matched for ${first.taint.addOnMatchSeconds}s`,
      conditions: snapshot(first.state.policy.name),
    });
  }

  const future = deadlines.filter((d) => d > nowMs);
  return {
    taints,
    policyWindows,
    changes,
    ...(future.length > 0 ? { nextDeadline: new Date(Math.min(...future)) } : {}),
  };
}

export function publicTaint(taint: Pick<ClusterTaint, 'key' | 'value' | 'effect'>): TaintChange['taint'] {
  return { key: taint.key, ...(taint.value !== undefined ? { value: taint.value } : {}), effect: taint.effect };
}
