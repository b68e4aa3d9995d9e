import type { EvictionRecord } from '../../failover/bindingModel';
import { type BindingRef, displayName } from '../../failover/bindingModel';
import type { MissedRule } from '../../failover/statePreservation';
import type { TaintChange } from '../../failover/taintPolicy';
import type { EventRecord } from '../../store/ports';

/**
 * Every event the control plane records (docs/architecture.md, decision 11: who, what, why, when), built here
 * and only here: one builder per subject, reasons as one union so a typo is a compile error.
 */
export type EventReason =
  // objects
  | 'Created'
  | 'Configured'
  | 'Deleted'
  | 'Registered'
  // cluster health and taints
  | 'ConditionChanged'
  | 'ClusterStatusUnknown'
  | 'TaintAdded'
  | 'TaintRemoved'
  // taint policies: shadow mode's findings and the blast-radius guard (state/policyGuard.ts)
  | 'WouldTaint'
  | 'WouldEvict'
  | 'PolicyBlastRadiusExceeded'
  | 'BlastRadiusAcknowledged'
  | 'BlastRadiusAcknowledgementExpired'
  // cluster failover
  | 'EvictionsEnqueued'
  | 'EvictionsAbandoned'
  | 'Evicted'
  | 'EvictionBlocked'
  | 'EvictionPostponed'
  // a FailoverBudget holds an eviction (written once, when it starts waiting)
  | 'BudgetExceeded'
  // failback (shared/failover/failback.ts): planned for a due time, cancelled (the home's count restarts), dropped, done
  | 'FailbackPlanned'
  | 'FailbackCancelled'
  | 'FailbackDropped'
  | 'FailedBack'
  // drain (a person's decision)
  | 'Cordoned'
  | 'DrainStarted'
  | 'Uncordoned'
  // scheduling and graceful eviction
  | 'Scheduled'
  | 'NoClusterFit'
  | 'OldCopyRemoved'
  | 'PolicyApplied'
  // application failover
  | 'WorkloadUnhealthy'
  | 'WorkloadRecovered'
  | 'ApplicationFailoverHeld'
  | 'ApplicationFailover'
  // statePreservation: a rule found nothing in the evicted cluster's status
  | 'StateNotPreserved'
  // resource templates
  | 'Claimed'
  | 'Unclaimed'
  // switches
  | 'Paused'
  | 'Resumed'
  | 'RateTierChanged';

type Type = EventRecord['type'];
type Details = Record<string, unknown>;

function event(kind: string, name: string, now: Date | string, type: Type, reason: EventReason, message: string, details?: Details): EventRecord {
  return { time: typeof now === 'string' ? now : now.toISOString(), kind, name, type, reason, message, ...(details ? { details } : {}) };
}

/** On a Cluster. */
export function clusterEvent(name: string, now: Date | string, reason: EventReason, message: string, type: Type = 'Normal', details?: Details): EventRecord {
  return event('Cluster', name, now, type, reason, message, details);
}

const taintText = (taint: TaintChange['taint']) => `${taint.key}${taint.value ? `=${taint.value}` : ''}:${taint.effect}`;
const conditionsText = (change: TaintChange) => change.conditions.map((c) => `${c.type}=${c.status}`).join(', ') || 'none';
/** Which policy, of which shape, and which of its rules acted: "Karmada shape: addOnConditions matched". */
const actedText = (change: TaintChange) => `${change.shape === 'karmada' ? 'Karmada' : 'windowed'} shape: ${change.reason}`;

/** A taint added or removed by the policies: which policy, which shape and rule, and the conditions it looked at. */
export function taintChangeEvent(cluster: string, change: TaintChange, now: Date): EventRecord {
  const added = change.action === 'added';
  const by = change.policy ? `by ClusterTaintPolicy ${change.policy} (${actedText(change)}` : `(${change.reason}`;
  return clusterEvent(
    cluster,
    now,
    added ? 'TaintAdded' : 'TaintRemoved',
    `${added ? 'added' : 'removed'} taint ${taintText(change.taint)} ${by}; conditions: ${conditionsText(change)})`,
    added ? 'Warning' : 'Normal',
    { taint: change.taint, policy: change.policy, shape: change.shape, rule: change.rule, reason: change.reason, conditions: change.conditions },
  );
}

/** The same change on the policy that made it, so the policy's own history says what it did where. */
export function taintPolicyActionEvent(cluster: string, change: TaintChange, now: Date): EventRecord {
  const added = change.action === 'added';
  return event(
    'ClusterTaintPolicy',
    change.policy,
    now,
    added ? 'Warning' : 'Normal',
    added ? 'TaintAdded' : 'TaintRemoved',
    `${added ? 'added' : 'removed'} taint ${taintText(change.taint)} ${added ? 'to' : 'from'} cluster ${cluster} (${actedText(change)}; conditions: ${conditionsText(change)})`,
    { cluster, taint: change.taint, shape: change.shape, rule: change.rule, reason: change.reason, conditions: change.conditions },
  );
}

/** On a ClusterTaintPolicy, PropagationPolicy or ClusterPropagationPolicy (`name` is `namespace/name` when namespaced). */
export function policyEvent(kind: string, name: string, now: Date | string, reason: EventReason, message: string): EventRecord {
  return event(kind, name, now, 'Normal', reason, message);
}

/** On a ResourceBinding or ClusterResourceBinding. */
export function bindingEvent(ref: BindingRef, now: Date | string, reason: EventReason, message: string, type: Type = 'Normal', details?: Details): EventRecord {
  return event(ref.kind, displayName(ref), now, type, reason, message, details);
}

/** On the binding of a ledger row, with the frozen decision. */
export function evictionEvent(record: EvictionRecord, now: Date | string, reason: EventReason, message: string, type: Type = 'Normal'): EventRecord {
  return bindingEvent(record, now, reason, message, type, { cluster: record.cluster, purgeMode: record.purgeMode, dueAt: record.dueAt, why: record.why });
}

/**
 * statePreservation rules that found nothing in the status collected from the cluster a binding was evicted
 * from: the eviction went ahead and its task preserves the other rules' values.
 */
export function stateNotPreservedEvent(ref: BindingRef, now: Date | string, cluster: string, missed: readonly MissedRule[]): EventRecord {
  const rules = missed.map((m) => `${m.aliasLabelName} (${m.jsonPath}): ${m.why}`).join('; ');
  return bindingEvent(
    ref,
    now,
    'StateNotPreserved',
    `evicted from ${cluster}; ${missed.length} statePreservation rule(s) preserved nothing, the task's preservedLabelState lacks them: ${rules}`,
    'Warning',
    { cluster, missed: missed.map((m) => ({ aliasLabelName: m.aliasLabelName, jsonPath: m.jsonPath, why: m.why })) },
  );
}

/** The pause switch. */
export function switchEvent(paused: boolean, now: Date | string, actor?: string): EventRecord {
  const what = paused ? 'evictions paused' : 'evictions resumed';
  return event('Failover', 'evictions', now, 'Normal', paused ? 'Paused' : 'Resumed', actor ? `${what} by ${actor}` : what, actor ? { actor } : undefined);
}

/**
 * The fleet's eviction tier changed (on `Failover/evictions`, beside the switches): the console's tier
 * history, one small partition read for the last hour.
 */
export function tierEvent(from: string, to: string, rate: number, counts: { total: number; unhealthy: number }, now: Date | string): EventRecord {
  return event(
    'Failover',
    'evictions',
    now,
    to === 'primary' ? 'Normal' : 'Warning',
    'RateTierChanged',
    `eviction tier ${from} → ${to} (${rate}/s; ${counts.unhealthy} of ${counts.total} clusters unhealthy)`,
    {
      from,
      to,
      rate,
      ...counts,
    },
  );
}

/** On a resource template (`kind` is the template's own, e.g. Deployment; `name` is `namespace/name` when namespaced). */
export function templateEvent(kind: string, name: string, now: Date | string, reason: EventReason, message: string, details?: Details): EventRecord {
  return event(kind, name, now, 'Normal', reason, message, details);
}
