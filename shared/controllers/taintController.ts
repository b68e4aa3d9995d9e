import { annotate, ATTR, inSpan } from '../telemetry/tracing';
import { isFaultyTaint } from '../failover/evictionDecision';
import { evaluateTaintPolicies, TaintChange } from '../failover/taintPolicy';
import { mutate, write, keep, Mutation } from '../store/optimistic';
import type { EventRecord, Versioned } from '../store/ports';
import type { ControlPlane } from './deps';
import { ClusterRecord, clusterFacts, PolicyRecord, taintPolicy } from './records';

/**
 * Seconds before a deadline at which a delayed evaluation message becomes visible. It covers the queue's
 * one-second visibility granularity plus host.json's maxPollingInterval (1 s); the handler then waits out
 * the remainder, so the taint lands at the deadline rather than up to two seconds after it.
 */
export const EVALUATION_LEAD_SECONDS = 2;

/**
 * The policies, as this process read them at most a second ago. A policy change also queues a
 * re-evaluation of every cluster, so a report evaluated against a second-old list is corrected at once.
 */
const POLICY_TTL_MS = 1000;
const policyCache = new WeakMap<ControlPlane, { at: number; policies: PolicyRecord[] }>();

export async function loadPolicies(plane: ControlPlane, maxAgeMs = POLICY_TTL_MS): Promise<PolicyRecord[]> {
  const hit = policyCache.get(plane);
  if (hit && Date.now() - hit.at < maxAgeMs) return hit.policies;
  const policies = (await plane.policies.list()).map((entry) => entry.value);
  policyCache.set(plane, { at: Date.now(), policies });
  return policies;
}

/** After this process changed a policy, its next evaluation reads them again. */
export function forgetPolicies(plane: ControlPlane): void {
  policyCache.delete(plane);
}

export interface ClusterUpdate<R> {
  record: ClusterRecord;
  result: R;
  events?: EventRecord[];
}

export interface ClusterUpdateOutcome<R> {
  result: R;
  record?: ClusterRecord;
  etag?: string;
  changes: TaintChange[];
}

/**
 * The one way a cluster document changes: apply `change`, re-evaluate the taint policies on the result,
 * write with the ETag (retrying from a fresh read on conflict), then record events and schedule the next
 * deadline. `change` returning undefined leaves the cluster alone.
 */
export async function updateCluster<R>(
  plane: ControlPlane,
  name: string,
  change: (current: ClusterRecord | undefined, now: Date) => ClusterUpdate<R> | { unchanged: R },
  policies?: PolicyRecord[],
): Promise<ClusterUpdateOutcome<R>> {
  // Loaded only when something changes: an unchanged heartbeat costs no policy read.
  let taintPolicies: ReturnType<typeof taintPolicy>[] | undefined = policies?.map(taintPolicy);
  let schedule: Date | undefined;
  let faultyChanged = false;
  const outcome = await mutate<ClusterRecord, { value: R; record?: ClusterRecord; changes: TaintChange[]; events: EventRecord[] }>(
    plane.clusters,
    name,
    async (current: Versioned<ClusterRecord> | undefined): Promise<Mutation<ClusterRecord, { value: R; record?: ClusterRecord; changes: TaintChange[]; events: EventRecord[] }>> => {
      const now = plane.clock.now();
      const proposed = change(current ? structuredClone(current.value) : undefined, now);
      if ('unchanged' in proposed) return keep({ value: proposed.unchanged, record: current?.value, changes: [], events: [] });
      const next = proposed.record;
      taintPolicies ??= (await loadPolicies(plane)).map(taintPolicy);
      const evaluation = evaluateTaintPolicies(clusterFacts(next), taintPolicies, now);
      next.taints = evaluation.taints;
      next.policyWindows = evaluation.policyWindows;
      schedule = undefined;
      const scheduled = next.evaluationScheduledFor ? new Date(next.evaluationScheduledFor) : undefined;
      if (evaluation.nextDeadline && (!scheduled || scheduled.getTime() <= now.getTime() || scheduled.getTime() > evaluation.nextDeadline.getTime())) {
        next.evaluationScheduledFor = evaluation.nextDeadline.toISOString();
        schedule = evaluation.nextDeadline;
      }
      faultyChanged = faultyIds(current?.value.taints ?? []) !== faultyIds(next.taints);
      const events = [...(proposed.events ?? []), ...evaluation.changes.map((c) => taintEvent(next.name, c, now))];
      const result = { value: proposed.result, record: next, changes: evaluation.changes, events };
      if (current && JSON.stringify(current.value) === JSON.stringify(next)) return keep(result);
      return write(next, result);
    },
  );
  const { value, record, changes, events } = outcome.result;
  if (events.length > 0) await plane.events.append(events);
  if (changes.length > 0) annotate({ [ATTR.cluster]: name, [ATTR.taint]: changes.map((c) => `${c.action} ${c.taint.key}:${c.taint.effect}`).join(', ') });
  for (const c of changes) {
    plane.log.info(`taint ${c.action}`, { cluster: name, taint: `${c.taint.key}:${c.taint.effect}`, policy: c.policy, reason: c.reason });
  }
  if (schedule) await scheduleEvaluation(plane, name, schedule);
  // The taint manager plans (or abandons) this cluster's evictions when its faulty taints change.
  if (faultyChanged && outcome.etag !== undefined) await plane.taintManager.send({ cluster: name, reason: 'taints-changed' });
  return { result: value, record, etag: outcome.etag, changes };
}

/** The cluster's NoExecute/PreferNoExecute taints, as one comparable string. */
function faultyIds(taints: ClusterRecord['taints']): string {
  return taints
    .filter(isFaultyTaint)
    .map((t) => `${t.key}:${t.effect}@${t.timeAdded}`)
    .sort()
    .join(',');
}

export async function scheduleEvaluation(plane: ControlPlane, cluster: string, dueAt: Date): Promise<void> {
  const seconds = (dueAt.getTime() - plane.clock.now().getTime()) / 1000 - EVALUATION_LEAD_SECONDS;
  await plane.evaluations.send({ cluster, reason: 'deadline', dueAt: dueAt.toISOString() }, { delaySeconds: Math.max(0, Math.floor(seconds)) });
}

function taintEvent(cluster: string, change: TaintChange, now: Date): EventRecord {
  const taint = `${change.taint.key}${change.taint.value ? `=${change.taint.value}` : ''}:${change.taint.effect}`;
  const conditions = change.conditions.map((c) => `${c.type}=${c.status}`).join(', ') || 'none';
  return {
    time: now.toISOString(),
    kind: 'Cluster',
    name: cluster,
    type: change.action === 'added' ? 'Warning' : 'Normal',
    reason: change.action === 'added' ? 'TaintAdded' : 'TaintRemoved',
    message: `${change.action === 'added' ? 'added' : 'removed'} taint ${taint} (policy ${change.policy || 'none'}: ${change.reason}; conditions: ${conditions})`,
    details: { taint: change.taint, policy: change.policy, reason: change.reason, conditions: change.conditions },
  };
}

/** Re-evaluates one cluster (deadline, policy change, resync). A missing cluster is nothing to do. */
export async function evaluateCluster(plane: ControlPlane, name: string, policies?: PolicyRecord[]): Promise<TaintChange[]> {
  return inSpan('taint.evaluate', { attributes: { [ATTR.cluster]: name } }, () => evaluate(plane, name, policies));
}

async function evaluate(plane: ControlPlane, name: string, policies?: PolicyRecord[]): Promise<TaintChange[]> {
  const outcome = await updateCluster(
    plane,
    name,
    (current) => (current ? { record: current, result: undefined } : { unchanged: undefined }),
    policies,
  );
  return outcome.changes;
}

/** The safety net behind the deadline messages: evaluates every cluster against the current policies. */
export async function resyncAllClusters(plane: ControlPlane): Promise<{ clusters: number; changes: number }> {
  const policies = await loadPolicies(plane);
  const clusters = await plane.clusters.list();
  let changes = 0;
  for (const entry of clusters) changes += (await evaluateCluster(plane, entry.id, policies)).length;
  return { clusters: clusters.length, changes };
}

/** Queues an immediate re-evaluation of every cluster (after a policy is applied or deleted). */
export async function fanOutEvaluations(plane: ControlPlane): Promise<number> {
  const clusters = await plane.clusters.list();
  await Promise.all(clusters.map((entry) => plane.evaluations.send({ cluster: entry.id, reason: 'policy-changed' })));
  return clusters.length;
}
