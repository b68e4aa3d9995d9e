import type { EvictionRecord } from '../../failover/bindingModel';
import { displayName, type BindingRef } from '../../failover/bindingModel';
import type { TaintChange } from '../../failover/taintPolicy';
import type { EventRecord } from '../../store/ports';

/**
 * Every event the control plane records (design decision 11: who, what, why, when), built here and only
 * here: one builder per subject, reasons as one union so a typo is a compile error.
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
  // cluster failover
  | 'EvictionsEnqueued'
  | 'EvictionsAbandoned'
  | 'Evicted'
  | 'EvictionBlocked'
  | 'EvictionPostponed'
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
  // switches
  | 'Paused'
  | 'Resumed';

type Type = EventRecord['type'];
type Details = Record<string, unknown>;

function event(kind: string, name: string, now: Date | string, type: Type, reason: EventReason, message: string, details?: Details): EventRecord {
  return { time: typeof now === 'string' ? now : now.toISOString(), kind, name, type, reason, message, ...(details ? { details } : {}) };
}

/** On a Cluster. */
export function clusterEvent(name: string, now: Date | string, reason: EventReason, message: string, type: Type = 'Normal', details?: Details): EventRecord {
  return event('Cluster', name, now, type, reason, message, details);
}

/** A taint added or removed by the policies, with the conditions it looked at. */
export function taintChangeEvent(cluster: string, change: TaintChange, now: Date): EventRecord {
  const taint = `${change.taint.key}${change.taint.value ? `=${change.taint.value}` : ''}:${change.taint.effect}`;
  const conditions = change.conditions.map((c) => `${c.type}=${c.status}`).join(', ') || 'none';
  const added = change.action === 'added';
  return clusterEvent(
    cluster,
    now,
    added ? 'TaintAdded' : 'TaintRemoved',
    `${added ? 'added' : 'removed'} taint ${taint} (policy ${change.policy || 'none'}: ${change.reason}; conditions: ${conditions})`,
    added ? 'Warning' : 'Normal',
    { taint: change.taint, policy: change.policy, reason: change.reason, conditions: change.conditions },
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

/** The pause switch. */
export function switchEvent(paused: boolean, now: Date | string): EventRecord {
  return event('Failover', 'evictions', now, 'Normal', paused ? 'Paused' : 'Resumed', paused ? 'evictions paused' : 'evictions resumed');
}
