import { createHash } from 'node:crypto';
import { recount, Reservation, reserve, setHeld } from '../../failover/blastRadius';
import { isFaultyTaint } from '../../failover/evictionDecision';
import type { AnyTaintPolicy, ClusterFacts, ClusterTaint } from '../../failover/model';
import { blastRadiusExceeded, emptyPolicyState, policyConditions, type PolicyState } from '../../failover/policyStatus';
import { wouldEvict, type WouldTaint } from '../../failover/shadow';
import { evaluateTaintPolicies, type TaintEvaluation } from '../../failover/taintPolicy';
import { keep, mutate, write } from '../../store/optimistic';
import { ConcurrencyError, type EventRecord, type Versioned } from '../../store/ports';
import type { ClusterRecord } from '../../store/records';
import type { ControlPlane } from '../ports';
import { listClusterPlacements } from './bindingWrites';
import { requestEvaluations } from './evaluationRequests';
import type { EventReason } from './events';
import { fleetCounts } from './reads';

/**
 * The I/O around two rules of the taint policies, both run on every cluster write (clusterWrites.ts):
 * - the blast-radius guard (failover/blastRadius.ts): before an enforcing policy adds a NoExecute or
 *   PreferNoExecute taint, it takes a place in its share of the fleet, in its policy-state document (ETag);
 *   after the write, the places of taints it let go are given back;
 * - shadow mode (failover/shadow.ts): what a shadow policy would have done is recorded as events and
 *   metrics, with the bindings the taint manager would have evicted, from the placement index.
 */

type Type = EventRecord['type'];

/** An event of this module; an `id` makes it idempotent (hashed: taint keys hold characters a row key may not). */
function event(
  kind: string,
  name: string,
  now: Date,
  type: Type,
  reason: EventReason,
  message: string,
  details: Record<string, unknown>,
  id?: string,
): EventRecord {
  return {
    ...(id ? { id: createHash('sha256').update(id).digest('hex').slice(0, 32) } : {}),
    time: now.toISOString(),
    kind,
    name,
    type,
    reason,
    message,
    details,
  };
}

const taintText = (taint: WouldTaint['taint']) => `${taint.key}${taint.value ? `=${taint.value}` : ''}:${taint.effect}`;

/** The policy's state with BlastRadiusExceeded brought up to date (the guard changed). */
function withGuardCondition(state: PolicyState, total: number, maxShare: number, now: Date): PolicyState {
  return { ...state, conditions: policyConditions(state.conditions, [blastRadiusExceeded(state, total, maxShare)], now) };
}

/**
 * The taint policies evaluated on a cluster about to be written, with the blast-radius guard: each
 * enforcing policy that would add a NoExecute/PreferNoExecute taint first takes a place in its share; a
 * policy refused one is held back and the cluster evaluated again (another policy may add the taint).
 * Idempotent, as the cluster write it serves may be retried: a place already taken is kept.
 */
export async function evaluateWithGuard(
  plane: ControlPlane,
  facts: ClusterFacts,
  policies: readonly AnyTaintPolicy[],
  now: Date,
): Promise<TaintEvaluation & { reserved: string[] }> {
  const blocked = new Set<string>();
  const reserved: string[] = [];
  for (;;) {
    const evaluation = evaluateTaintPolicies(facts, policies, now, { blocked });
    const adding = [
      ...new Set(evaluation.changes.filter((c) => c.action === 'added' && c.policy !== '' && isFaultyTaint(c.taint)).map((c) => c.policy)),
    ].filter((policy) => !reserved.includes(policy));
    let refused = false;
    for (const policy of adding) {
      if (await takePlace(plane, policy, facts.name, now)) reserved.push(policy);
      else {
        blocked.add(policy);
        refused = true;
      }
    }
    if (!refused) return { ...evaluation, reserved };
  }
}

/** One place in the policy's share for `cluster`; false (recorded once per cluster) when the share is full. */
async function takePlace(plane: ControlPlane, policy: string, cluster: string, now: Date): Promise<boolean> {
  const { total } = await fleetCounts(plane);
  const maxShare = plane.config.maxFleetShareTaintedByPolicy;
  const { result } = await mutate<PolicyState, Reservation<PolicyState>>(plane.policyStates, policy, (current) => {
    const reservation = reserve(current?.value ?? emptyPolicyState(), cluster, total, maxShare, now);
    return reservation.changed ? write(withGuardCondition(reservation.guard, total, maxShare, now), reservation) : keep(reservation);
  });
  if (result.allowed || !result.newlyRefused) return result.allowed;
  plane.metrics.policies.recordBlastRadiusExceeded(policy);
  const why =
    `the policy would hold NoExecute/PreferNoExecute taints on ${result.held + 1} of ${total} clusters, more than ` +
    `MAX_FLEET_SHARE_TAINTED_BY_POLICY=${maxShare} allows (${result.limit})`;
  const details = { cluster, held: result.held, limit: result.limit, total, maxShare };
  await plane.events.append([
    event(
      'ClusterTaintPolicy',
      policy,
      now,
      'Warning',
      'PolicyBlastRadiusExceeded',
      `did not taint cluster ${cluster}: ${why}; taints already written stay; acknowledge with POST /api/clustertaintpolicies/${policy}/acknowledge`,
      details,
    ),
    event('Cluster', cluster, now, 'Warning', 'PolicyBlastRadiusExceeded', `ClusterTaintPolicy ${policy} did not taint this cluster: ${why}`, {
      ...details,
      policy,
    }),
  ]);
  plane.log.warn('blast radius exceeded: taint not written', { policy, cluster, held: result.held, limit: result.limit, total });
  return false;
}

/** The enforcing or shadow policies that hold a NoExecute/PreferNoExecute taint in `taints`. */
function faultyHolders(taints: readonly ClusterTaint[]): Set<string> {
  return new Set(taints.filter(isFaultyTaint).flatMap((t) => t.owners));
}

export interface PolicyEffects {
  cluster: string;
  before: readonly ClusterTaint[];
  after: readonly ClusterTaint[];
  /** Policies that took a place for this cluster during the evaluation. */
  reserved: readonly string[];
  wouldTaint: readonly WouldTaint[];
}

/**
 * After a cluster write: the guard's places follow the policies' holds (a place taken and not used, or a
 * taint let go, is given back; a taint taken hold of without writing it counts), and shadow findings are
 * recorded. Costs nothing when no policy's hold on a faulty taint changed and nothing was found.
 */
export async function recordPolicyEffects(plane: ControlPlane, effects: PolicyEffects, now: Date): Promise<void> {
  const before = faultyHolders(effects.before);
  const after = faultyHolders(effects.after);
  const changed = [...new Set([...before, ...after, ...effects.reserved])].filter((policy) =>
    effects.reserved.includes(policy) ? !after.has(policy) : before.has(policy) !== after.has(policy),
  );
  for (const policy of changed.sort()) await noteHold(plane, policy, effects.cluster, after.has(policy), now);
  if (effects.wouldTaint.length > 0) await recordShadowFindings(plane, effects.cluster, effects.wouldTaint, now);
}

/** Sets whether `policy` holds a faulty taint on `cluster` in its guard; a freed place re-evaluates the clusters it refused. */
export async function noteHold(plane: ControlPlane, policy: string, cluster: string, holds: boolean, now: Date): Promise<void> {
  const { total } = await fleetCounts(plane);
  const maxShare = plane.config.maxFleetShareTaintedByPolicy;
  const { result } = await mutate<PolicyState, { expired: boolean; refused: string[] }>(plane.policyStates, policy, (current) => {
    if (!current && !holds) return keep({ expired: false, refused: [] });
    const state = current?.value ?? emptyPolicyState();
    if ((state.held[cluster] !== undefined) === holds) return keep({ expired: false, refused: [] });
    const next = setHeld(state, cluster, holds, total, maxShare, now);
    return write(withGuardCondition(next.guard, total, maxShare, now), { expired: next.expired, refused: holds ? [] : (next.guard.exceeded?.refused ?? []) });
  });
  if (result.expired) await recordAcknowledgementExpired(plane, policy, total, maxShare, now);
  // A place came free: the clusters the guard refused may now be tainted (within the share).
  await requestEvaluations(plane, result.refused, 'policy-changed');
}

export async function recordAcknowledgementExpired(plane: ControlPlane, policy: string, total: number, maxShare: number, now: Date): Promise<void> {
  await plane.events.append([
    event(
      'ClusterTaintPolicy',
      policy,
      now,
      'Normal',
      'BlastRadiusAcknowledgementExpired',
      `the acknowledgement expired: the policy holds NoExecute/PreferNoExecute taints on fewer clusters than MAX_FLEET_SHARE_TAINTED_BY_POLICY=${maxShare} of ${total} allows; crossing it again needs a new acknowledgement`,
      { total, maxShare },
    ),
  ]);
}

/** An admin acknowledged the policy's exceeded blast radius. */
export function acknowledgedEvent(policy: string, refused: readonly string[], now: Date): EventRecord {
  return event(
    'ClusterTaintPolicy',
    policy,
    now,
    'Normal',
    'BlastRadiusAcknowledged',
    `blast radius acknowledged: the policy may hold NoExecute/PreferNoExecute taints beyond MAX_FLEET_SHARE_TAINTED_BY_POLICY until it holds them on fewer clusters than the share allows` +
      (refused.length > 0 ? `; re-evaluating ${refused.join(', ')}` : ''),
    { refused },
  );
}

/**
 * A shadow policy's findings on one cluster, once per match episode (the cluster write that recorded them
 * in the window is done): WouldTaint on the policy and the cluster, and per binding the taint manager
 * would have evicted for a NoExecute/PreferNoExecute taint, WouldEvict on the policy.
 */
async function recordShadowFindings(plane: ControlPlane, cluster: string, findings: readonly WouldTaint[], now: Date): Promise<void> {
  const rows = findings.some((f) => isFaultyTaint(f.taint)) ? await listClusterPlacements(plane, cluster) : { placements: [], evictions: [] };
  const decided = new Map(rows.evictions.map((row) => [row.record.bindingKey, row.record.state]));
  const events: EventRecord[] = [];
  for (const finding of findings) {
    const evictions = wouldEvict(finding.taint, finding.at, rows.placements, now, decided);
    const taint = taintText(finding.taint);
    const episode = `${finding.policy}|${cluster}|${finding.taint.key}:${finding.taint.effect}|${finding.episode}`;
    const details = { cluster, taint: finding.taint, when: finding.at, episode: finding.episode, present: finding.present, evictions: evictions.length };
    const message =
      `would have ${finding.present ? 'taken hold of' : 'added'} taint ${taint} on cluster ${cluster} at ${finding.at} (shadow mode)` +
      (isFaultyTaint(finding.taint) ? `; ${evictions.length} binding(s) would have been evicted` : '');
    events.push(
      event('ClusterTaintPolicy', finding.policy, now, 'Normal', 'WouldTaint', message, details, `would-taint|${episode}`),
      event(
        'Cluster',
        cluster,
        now,
        'Normal',
        'WouldTaint',
        `ClusterTaintPolicy ${finding.policy} ${message}`,
        { ...details, policy: finding.policy },
        `would-taint|${episode}`,
      ),
      ...evictions.map((e) =>
        event(
          'ClusterTaintPolicy',
          finding.policy,
          now,
          'Normal',
          'WouldEvict',
          `would have evicted ${e.bindingKey} from cluster ${cluster}, due ${e.dueAt}: ${e.why} (shadow mode)`,
          { cluster, binding: e.binding, bindingKey: e.bindingKey, when: e.dueAt, why: e.why, taint: finding.taint, episode: finding.episode },
          `would-evict|${episode}|${e.bindingKey}`,
        ),
      ),
    );
    plane.metrics.policies.recordWouldTaint(finding.policy, finding.taint.effect);
    plane.metrics.policies.recordWouldEvict(finding.policy, evictions.length);
    plane.log.info('shadow policy finding', { policy: finding.policy, cluster, taint, evictions: evictions.length });
  }
  await plane.events.append(events);
}

/**
 * The minute resync's check of the guard: each policy's places recounted from a listing of the clusters
 * (made at `listedAt`), keeping places taken since. Corrects a place a crash left taken or given back;
 * writes only the policies whose count is wrong. The state of a policy that no longer exists goes.
 */
export async function recountHolds(
  plane: ControlPlane,
  clusters: ReadonlyArray<{ value: ClusterRecord }>,
  listedAt: Date,
  policies: readonly string[],
): Promise<number> {
  const holding = new Map<string, string[]>();
  for (const { value } of clusters) for (const policy of faultyHolders(value.taints)) holding.set(policy, [...(holding.get(policy) ?? []), value.name]);
  const existing = new Set(policies);
  const all = await plane.policyStates.list();
  for (const orphan of all.filter((s) => !existing.has(s.id))) {
    await plane.policyStates.delete(orphan.id, orphan.etag).catch((error: unknown) => {
      if (!(error instanceof ConcurrencyError)) throw error;
    });
  }
  const states = all.filter((s) => existing.has(s.id));
  const names = new Set([...[...holding.keys()].filter((p) => existing.has(p)), ...states.map((s) => s.id)]);
  if (names.size === 0) return 0;
  const listed = new Map<string, Versioned<PolicyState>>(states.map((s) => [s.id, s]));
  const { total } = await fleetCounts(plane);
  const maxShare = plane.config.maxFleetShareTaintedByPolicy;
  const now = plane.clock.now();
  let corrected = 0;
  for (const policy of [...names].sort()) {
    const { result } = await mutate<PolicyState, { changed: boolean; expired: boolean }>(
      plane.policyStates,
      policy,
      (current) => {
        if (!current && !holding.has(policy)) return keep({ changed: false, expired: false });
        const state = current?.value ?? emptyPolicyState();
        const next = recount(state, holding.get(policy) ?? [], listedAt, total, maxShare);
        const same = JSON.stringify(Object.keys(next.guard.held).sort()) === JSON.stringify(Object.keys(state.held).sort());
        if (current && same && !next.expired) return keep({ changed: false, expired: false });
        return write(withGuardCondition(next.guard, total, maxShare, now), { changed: !same, expired: next.expired });
      },
      listed.get(policy),
    );
    if (result.changed) {
      corrected++;
      plane.log.warn('blast-radius places corrected by the recount', { policy, holding: holding.get(policy)?.length ?? 0 });
    }
    if (result.expired) await recordAcknowledgementExpired(plane, policy, total, maxShare, now);
  }
  return corrected;
}
