import { randomUUID } from 'node:crypto';
import type { AcknowledgeAnswer, TaintPolicyListItem, TaintPolicyView } from '../api/contract/views';
import { type ClusterTaintPolicyInput, type TaintPolicyShape, taintPolicyShape } from '../api/resources';
import { mapConcurrent } from '../concurrency';
import { acknowledge, blastRadiusLimit, settle } from '../failover/blastRadius';
import { DRAIN_REASON } from '../failover/drain';
import type { Condition } from '../failover/model';
import {
  blastRadiusExceeded,
  conditionsChanged,
  emptyPolicyState,
  type EvictionCounts,
  evictionInProgress,
  policyConditions,
  type PolicyState,
} from '../failover/policyStatus';
import { policyMode } from '../failover/shadow';
import { keep, mutate, write } from '../store/optimistic';
import type { Versioned } from '../store/ports';
import type { PolicyRecord } from '../store/records';
import type { ControlPlane } from './ports';
import { appliedPolicy, ApplyAction } from './state/derivation';
import { requestEvaluations } from './state/evaluationRequests';
import { policyEvent } from './state/events';
import { listPolicyStatusTargets, publishPolicyStatuses } from './state/karmadaPolicyStatuses';
import { acknowledgedEvent, recordAcknowledgementExpired } from './state/policyGuard';
import { fleetCounts, forgetTaintPolicies } from './state/reads';
import { fanOutEvaluations } from './taintEvaluation';
import { policyResource } from './views';

/** How many of a policy's latest taint actions GET /api/clustertaintpolicies/{name} shows. */
export const RECENT_ACTIONS = 20;

const shapeText = (shape: TaintPolicyShape) =>
  shape === 'karmada'
    ? 'Karmada shape: adds at once when all addOnConditions match, removes when all removeOnConditions match; its taints stay when it is deleted'
    : 'windowed shape: adds after addOnMatchSeconds of match, removes after removeOnMismatchSeconds of mismatch; its taints are released when it is deleted';

/** Apply a ClusterTaintPolicy (either shape), then queue a re-evaluation of the clusters it affects when it changed. */
export async function applyTaintPolicy(plane: ControlPlane, input: ClusterTaintPolicyInput): Promise<ApplyAction> {
  const name = input.metadata.name;
  // The versions before and after the write that landed: what the re-evaluation below follows.
  let before: PolicyRecord | undefined;
  let after: PolicyRecord | undefined;
  const { result } = await mutate<PolicyRecord, ApplyAction>(plane.policies, name, (current) => {
    before = current?.value;
    const mutation = appliedPolicy(
      current?.value,
      () => ({ name, uid: randomUUID(), createdAt: plane.clock.now().toISOString(), generation: 1, labels: {}, annotations: {}, spec: input.spec }),
      input,
    );
    after = mutation.kind === 'write' ? mutation.value : current?.value;
    return mutation;
  });
  if (result !== 'unchanged') {
    await plane.events.append([
      policyEvent(
        'ClusterTaintPolicy',
        name,
        plane.clock.now(),
        result === 'created' ? 'Created' : 'Configured',
        `policy ${result} (${shapeText(taintPolicyShape(input.spec))})`,
      ),
    ]);
    forgetTaintPolicies(plane);
    // The clusters it targeted before or targets now (or that hold a taint it adds) are evaluated again.
    await fanOutEvaluations(plane, { versions: [before, after] });
  }
  return result;
}

/**
 * Delete a policy. A seed-shape policy's taints that only it held are released at the next evaluation
 * (queued now); a Karmada-shape policy's taints stay, as upstream ("never automatically removed").
 */
export async function deleteTaintPolicy(plane: ControlPlane, name: string): Promise<boolean> {
  const existing = await plane.policies.get(name);
  const deleted = await plane.policies.delete(name);
  if (deleted) {
    const karmada = existing !== undefined && taintPolicyShape(existing.value.spec) === 'karmada';
    const message = karmada
      ? 'policy deleted; its taints stay on the clusters (Karmada shape)'
      : 'policy deleted; taints only it held are released (windowed shape)';
    await plane.events.append([policyEvent('ClusterTaintPolicy', name, plane.clock.now(), 'Deleted', message)]);
    // Its guard and conditions go with it (the status round would drop them within seconds anyway).
    await plane.policyStates.delete(name);
    forgetTaintPolicies(plane);
    await fanOutEvaluations(plane, { versions: [existing?.value] });
  }
  return deleted;
}

/** Every ClusterTaintPolicy as the API shows it, by name, with its shape. */
export async function listTaintPolicies(plane: ControlPlane): Promise<TaintPolicyListItem[]> {
  return (await plane.policies.list())
    .map((entry) => ({ ...policyResource(entry.value, entry.etag), status: { shape: taintPolicyShape(entry.value.spec) } }))
    .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
}

/** One taint action of a policy, from its events. */
export interface TaintPolicyAction {
  time: string;
  cluster: string;
  action: 'added' | 'removed';
  taint: { key: string; value?: string; effect: string };
  shape: TaintPolicyShape;
  rule: string;
  reason: string;
}

/**
 * One ClusterTaintPolicy, with its shape, what that shape does, and its latest taint actions (newest
 * last): on which cluster, which taint, and which rule acted. `status` is ignored on apply.
 */
export async function getTaintPolicy(plane: ControlPlane, name: string): Promise<TaintPolicyView | undefined> {
  const entry = await plane.policies.get(name);
  if (!entry) return undefined;
  const shape = taintPolicyShape(entry.value.spec);
  const [state, { total }] = await Promise.all([plane.policyStates.get(name), fleetCounts(plane)]);
  const events = await plane.events.list({ kind: 'ClusterTaintPolicy', name, since: entry.value.createdAt, limit: 200 });
  const actions: TaintPolicyAction[] = events
    .filter((e) => (e.reason === 'TaintAdded' || e.reason === 'TaintRemoved') && e.details)
    .map((e) => {
      const d = e.details as Record<string, unknown>;
      return {
        time: e.time,
        cluster: String(d.cluster),
        action: e.reason === 'TaintAdded' ? 'added' : 'removed',
        taint: d.taint as TaintPolicyAction['taint'],
        shape: d.shape as TaintPolicyShape,
        rule: String(d.rule),
        reason: String(d.reason),
      };
    });
  return {
    ...policyResource(entry.value, entry.etag),
    status: {
      shape,
      mode: policyMode(entry.value.annotations),
      rules: shapeText(shape),
      recentActions: actions.slice(-RECENT_ACTIONS),
      ...policyStatusView(plane, entry.value, state?.value, total),
    },
  };
}

/**
 * The status the controllers keep for a policy: its conditions (before the first status refresh, the ones
 * a policy that holds nothing has) and the blast-radius guard's count.
 */
function policyStatusView(plane: ControlPlane, policy: PolicyRecord, state: PolicyState | undefined, total: number) {
  const current = state ?? emptyPolicyState();
  const maxShare = plane.config.maxFleetShareTaintedByPolicy;
  const held = Object.keys(current.held).sort();
  const conditions =
    current.conditions.length > 0
      ? current.conditions
      : policyConditions(
          [],
          [evictionInProgress({ pending: 0, scheduled: 0, clusters: 0 }, 0), blastRadiusExceeded(current, total, maxShare)],
          new Date(policy.createdAt),
        );
  return {
    conditions,
    blastRadius: {
      maxShare,
      fleet: total,
      limit: blastRadiusLimit(total, maxShare),
      held: held.length,
      clusters: held.slice(0, 100),
      ...(current.exceeded ? { exceededSince: current.exceeded.since, refused: current.exceeded.refused } : {}),
      ...(current.acknowledged ? { acknowledgedAt: current.acknowledged.at } : {}),
    },
  };
}

export type { AcknowledgeAnswer } from '../api/contract/views';

/**
 * POST /api/clustertaintpolicies/{name}/acknowledge: an admin accepts the policy's exceeded blast radius.
 * BlastRadiusExceeded turns False and the policy may hold NoExecute/PreferNoExecute taints beyond the share
 * for the current episode (until it holds them on fewer clusters than the share allows); the refused
 * clusters are evaluated again at once. Idempotent. Undefined for an unknown policy.
 */
export async function acknowledgeTaintPolicy(plane: ControlPlane, name: string): Promise<AcknowledgeAnswer | undefined> {
  const policy = await plane.policies.get(name);
  if (!policy) return undefined;
  const now = plane.clock.now();
  const { total } = await fleetCounts(plane);
  const maxShare = plane.config.maxFleetShareTaintedByPolicy;
  const { result } = await mutate<PolicyState, { state: PolicyState; changed: boolean; refused: string[] }>(plane.policyStates, name, (current) => {
    const state = current?.value ?? emptyPolicyState();
    const acked = acknowledge(state, now);
    if (!acked.changed) return keep({ state, changed: false, refused: [] });
    const next = { ...acked.guard, conditions: policyConditions(state.conditions, [blastRadiusExceeded(acked.guard, total, maxShare)], now) };
    return write(next, { state: next, changed: true, refused: acked.refused });
  });
  if (result.changed) {
    await plane.events.append([acknowledgedEvent(name, result.refused, now)]);
    await requestEvaluations(plane, result.refused, 'policy-changed');
    plane.log.info('blast radius acknowledged', { policy: name, refused: result.refused });
  }
  const acknowledged = result.state.acknowledged !== undefined;
  return {
    kind: 'ClusterTaintPolicy',
    name,
    acknowledged,
    changed: result.changed,
    reevaluated: result.refused,
    message: result.changed
      ? `acknowledged: the policy may go beyond MAX_FLEET_SHARE_TAINTED_BY_POLICY=${maxShare} until it holds NoExecute/PreferNoExecute taints on fewer than ${blastRadiusLimit(total, maxShare)} clusters`
      : acknowledged
        ? `already acknowledged at ${result.state.acknowledged!.at}`
        : 'nothing to acknowledge: BlastRadiusExceeded is False',
    conditions: policyStatusView(plane, policy.value, result.state, total).conditions,
  };
}

/** The ledger rows that make EvictionInProgress True, per cluster: pending and scheduled, drains left out. */
async function activeEvictions(plane: ControlPlane, clusters: readonly string[]): Promise<Map<string, { pending: number; scheduled: number }>> {
  const counts = new Map<string, { pending: number; scheduled: number }>();
  if (clusters.length === 0) return counts;
  const states = ['pending', 'scheduled'] as const;
  // A few clusters: a query of each one's partition; many: one scan of the active rows.
  const rows =
    clusters.length <= 16
      ? (await mapConcurrent([...clusters], 8, (cluster) => plane.ledger.listEvictions(cluster, states))).flat()
      : await plane.ledger.scanEvictions({ states });
  for (const { record } of rows) {
    if (record.reason === DRAIN_REASON || (record.state !== 'pending' && record.state !== 'scheduled')) continue;
    const count = counts.get(record.cluster) ?? { pending: 0, scheduled: 0 };
    count[record.state]++;
    counts.set(record.cluster, count);
  }
  return counts;
}

/**
 * The policy-status round (a 5 s timer): each policy's conditions from its guard and the ledger, written
 * only when one changed (lastTransitionTime moves only with a status); an acknowledgement whose policy
 * fell back under the share expires. Standalone, it looks only at the policies with a state document (one
 * without has never held a faulty taint: GET shows its conditions False), so idle it costs one listing.
 * In Karmada mode every ClusterTaintPolicy of either kind gets its conditions, written where kubectl reads
 * them when they differ from what is there (so `kubectl wait` finds them from the start): ours on their
 * status subresource, Karmada's (which have none) on a TaintPolicyStatus of the same name.
 */
export async function refreshPolicyStatuses(plane: ControlPlane): Promise<{ policies: number; written: number; published: number }> {
  // Karmada mode: one listing of the policies (and their status objects) serves both the ids and the status to compare with.
  const [targets, states] = await Promise.all([plane.karmada ? listPolicyStatusTargets(plane) : undefined, plane.policyStates.list()]);
  const createdAt = new Map((targets ?? []).map((target) => [target.id, target.createdAt]));
  const names = targets ? [...createdAt.keys()] : states.map((s) => s.id);
  if (names.length === 0) return { policies: 0, written: 0, published: 0 };
  const listed = new Map<string, Versioned<PolicyState>>(states.map((s) => [s.id, s]));
  const held = [...new Set(names.flatMap((name) => Object.keys(listed.get(name)?.value.held ?? {})))];
  const active = await activeEvictions(plane, held);
  const { total } = await fleetCounts(plane);
  const maxShare = plane.config.maxFleetShareTaintedByPolicy;
  const now = plane.clock.now();
  let written = 0;
  const statuses = new Map<string, Condition[]>();
  for (const name of names) {
    const { result } = await mutate<PolicyState, { conditions: Condition[]; written: boolean; expired: boolean }>(
      plane.policyStates,
      name,
      (current) => {
        const state = current?.value ?? emptyPolicyState();
        const settled = settle(state, total, maxShare);
        const clusters = Object.keys(settled.guard.held);
        const counts: EvictionCounts = { pending: 0, scheduled: 0, clusters: 0 };
        for (const cluster of clusters) {
          const count = active.get(cluster);
          if (!count) continue;
          counts.pending += count.pending;
          counts.scheduled += count.scheduled;
          counts.clusters++;
        }
        const conditions = policyConditions(
          state.conditions,
          [evictionInProgress(counts, clusters.length), blastRadiusExceeded(settled.guard, total, maxShare)],
          current ? now : new Date(createdAt.get(name) ?? now),
        );
        if (current && !settled.expired && !conditionsChanged(state.conditions, conditions))
          return keep({ conditions: state.conditions, written: false, expired: false });
        return write({ ...settled.guard, conditions }, { conditions, written: true, expired: settled.expired });
      },
      listed.get(name),
    );
    if (result.written) written++;
    if (result.expired) await recordAcknowledgementExpired(plane, name, total, maxShare, now);
    statuses.set(name, result.conditions);
  }
  const published = targets ? await publishPolicyStatuses(plane, targets, statuses) : 0;
  return { policies: names.length, written, published };
}
