import { episodeStart, isFaultyTaint } from '../../failover/evictionDecision';
import { nextHealthySince } from '../../failover/failback';
import { isUnhealthyCluster } from '../../failover/fleetHealth';
import type { TaintChange } from '../../failover/taintPolicy';
import { keep, mutate, Mutation, write } from '../../store/optimistic';
import type { EventRecord, Versioned } from '../../store/ports';
import { clusterFacts, ClusterRecord, PolicyRecord, taintPolicy } from '../../store/records';
import { annotate, ATTR, currentTraceCarrier } from '../../telemetry/tracing';
import type { ControlPlane } from '../ports';
import { taintChangeEvent, taintPolicyActionEvent } from './events';
import { evaluateWithGuard, PolicyEffects, recordPolicyEffects } from './policyGuard';
import { forgetFleet, loadTaintPolicies, noteFleetChange } from './reads';

/**
 * Seconds before a deadline at which a delayed evaluation message becomes visible. It covers the queue's
 * one-second visibility granularity plus host.json's maxPollingInterval (1 s); the handler then waits out
 * the remainder, so the taint lands at the deadline rather than up to two seconds after it.
 */
export const EVALUATION_LEAD_SECONDS = 2;

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

type Written<R> = { value: R; record?: ClusterRecord; changes: TaintChange[]; events: EventRecord[] };

export interface ClusterUpdateOptions {
  /**
   * The version the caller just listed: the first attempt uses it instead of reading again; `absent`: a
   * cluster the caller expects to be new (the first attempt creates it without a read).
   */
  listed?: Versioned<ClusterRecord> | 'absent';
  /**
   * The caller plans a change of faulty taints itself, at once (the Karmada watch's evaluation): the taint
   * manager's message is then a safety net for a caller that dies mid-way, sent delayed so that its pass (a
   * second planning that finds every row decided, the blocked rows, the failbacks home) runs after the first
   * evictions instead of competing with them.
   */
  plannedByCaller?: boolean;
}

/** How long the taint manager's message waits when the caller plans the change itself. */
export const CALLER_PLANNED_MESSAGE_DELAY_SECONDS = 5;

/**
 * The one way a cluster document changes: apply `change`, re-evaluate the taint policies on the result,
 * write with the ETag (retrying from a fresh read on conflict), then record events, schedule the next
 * deadline, and hand a change of faulty taints to the taint manager. `{ unchanged }` leaves it alone.
 */
export async function updateCluster<R>(
  plane: ControlPlane,
  name: string,
  change: (current: ClusterRecord | undefined, now: Date) => ClusterUpdate<R> | { unchanged: R },
  policies?: PolicyRecord[],
  { listed, plannedByCaller = false }: ClusterUpdateOptions = {},
): Promise<ClusterUpdateOutcome<R>> {
  // Loaded only when something changes: an unchanged heartbeat costs no policy read.
  let taintPolicies: ReturnType<typeof taintPolicy>[] | undefined = policies?.map(taintPolicy);
  let schedule: Date | undefined;
  let faultyChanged = false;
  let healthChanged = false;
  let fleetChanged = false;
  let created = false;
  let faultyNow = false;
  let unhealthyChanged = false;
  let unhealthyNow = false;
  let policyEffects: PolicyEffects | undefined;
  const outcome = await mutate<ClusterRecord, Written<R>>(
    plane.clusters,
    name,
    async (current: Versioned<ClusterRecord> | undefined): Promise<Mutation<ClusterRecord, Written<R>>> => {
      const now = plane.clock.now();
      policyEffects = undefined;
      const proposed = change(current ? structuredClone(current.value) : undefined, now);
      if ('unchanged' in proposed) return keep({ value: proposed.unchanged, record: current?.value, changes: [], events: [] });
      const next = proposed.record;
      taintPolicies ??= (await loadTaintPolicies(plane)).map(taintPolicy);
      // With the blast-radius guard: a new NoExecute/PreferNoExecute taint first takes a place in its policy's share.
      const evaluation = await evaluateWithGuard(plane, clusterFacts(next), taintPolicies, now);
      next.taints = evaluation.taints;
      next.policyWindows = evaluation.policyWindows;
      policyEffects = {
        cluster: next.name,
        before: current?.value.taints ?? [],
        after: next.taints,
        reserved: evaluation.reserved,
        wouldTaint: evaluation.wouldTaint,
      };
      schedule = undefined;
      const scheduled = next.evaluationScheduledFor ? new Date(next.evaluationScheduledFor) : undefined;
      if (evaluation.nextDeadline && (!scheduled || scheduled.getTime() <= now.getTime() || scheduled.getTime() > evaluation.nextDeadline.getTime())) {
        next.evaluationScheduledFor = evaluation.nextDeadline.toISOString();
        schedule = evaluation.nextDeadline;
      }
      faultyChanged = faultyIds(current?.value.taints ?? []) !== faultyIds(next.taints);
      faultyNow = next.taints.some(isFaultyTaint);
      unhealthyNow = isUnhealthyCluster(next);
      unhealthyChanged = !current || isUnhealthyCluster(current.value) !== unhealthyNow;
      if (faultyChanged) {
        const { traceparent } = currentTraceCarrier();
        if (faultyNow && traceparent) {
          next.faultTraceparent = traceparent;
          next.faultTraceSince = episodeStart(next.taints);
        } else {
          delete next.faultTraceparent;
          delete next.faultTraceSince;
        }
      }
      // Failback's count (persisted: a restart moves no due time): Ready=True and no faulty taint since when.
      const healthySince = nextHealthySince(current?.value, next, now);
      if (healthySince) next.healthySince = healthySince;
      else delete next.healthySince;
      healthChanged = current?.value.healthySince !== next.healthySince;
      created = !current;
      const events = [
        ...(proposed.events ?? []),
        ...evaluation.changes.map((c) => taintChangeEvent(next.name, c, now)),
        // Also on the policy that acted, so GET /api/clustertaintpolicies/{name} can say what it did.
        ...evaluation.changes.filter((c) => c.policy !== '').map((c) => taintPolicyActionEvent(next.name, c, now)),
      ];
      const result = { value: proposed.result, record: next, changes: evaluation.changes, events };
      if (current && JSON.stringify(current.value) === JSON.stringify(next)) return keep(result);
      // What the fleet view holds (labels, location, taints) changed: this process's next placement reads it again.
      fleetChanged = !current || fleetFacts(current.value) !== fleetFacts(next);
      return write(next, result);
    },
    listed,
  );
  const { value, record, changes, events } = outcome.result;
  if (fleetChanged) forgetFleet(plane, name, record);
  // What follows the write goes side by side (none reads what another writes): the events; the guard's
  // places, which follow the policies' holds, and the shadow policies' findings; the maintained fleet
  // summary, for a new cluster, one that became faulty, unhealthy or recovered, or a change the fleet views
  // hold (every process's next placement lists the fleet again).
  const effects = policyEffects;
  await Promise.all([
    events.length > 0 ? plane.events.append(events) : undefined,
    effects ? recordPolicyEffects(plane, effects, plane.clock.now()) : undefined,
    outcome.etag !== undefined && (created || faultyChanged || unhealthyChanged || fleetChanged)
      ? noteFleetChange(plane, name, { created, faulty: faultyNow, unhealthy: unhealthyNow, viewChanged: fleetChanged })
      : undefined,
  ]);
  if (changes.length > 0) annotate({ [ATTR.cluster]: name, [ATTR.taint]: changes.map((c) => `${c.action} ${c.taint.key}:${c.taint.effect}`).join(', ') });
  for (const c of changes) {
    plane.log.info(`taint ${c.action}`, {
      cluster: name,
      taint: `${c.taint.key}:${c.taint.effect}`,
      policy: c.policy,
      shape: c.shape,
      rule: c.rule,
      reason: c.reason,
    });
  }
  if (schedule) await scheduleEvaluation(plane, name, schedule);
  // The taint manager plans (or abandons) this cluster's evictions when its faulty taints change.
  if (faultyChanged && outcome.etag !== undefined)
    await plane.taintManager.send(
      { cluster: name, reason: 'taints-changed' },
      plannedByCaller ? { delaySeconds: CALLER_PLANNED_MESSAGE_DELAY_SECONDS } : undefined,
    );
  // A healthy run that began or ended (Ready alone changed), or a healthy cluster's labels or taints changed (a
  // cordon lifted): the taint manager plans or cancels the failbacks home to it. Not for a cluster that has
  // just registered: no failback can be home to it yet (one left by a deleted namesake is the failback
  // resync's), and a fleet registering at once would cost a taint-manager pass per cluster.
  else if (!created && (healthChanged || (fleetChanged && record?.healthySince)) && outcome.etag !== undefined)
    await plane.taintManager.send({ cluster: name, reason: 'resync' });
  return { result: value, record, etag: outcome.etag, changes };
}

const fleetFacts = (record: ClusterRecord) =>
  JSON.stringify([record.labels, record.spec.provider, record.spec.region, record.spec.zone, record.taints.map((t) => [t.key, t.value, t.effect])]);

/** The cluster's NoExecute/PreferNoExecute taints, as one comparable string. */
function faultyIds(taints: ClusterRecord['taints']): string {
  return taints
    .filter(isFaultyTaint)
    .map((t) => `${t.key}:${t.effect}@${t.timeAdded}`)
    .sort()
    .join(',');
}

/** Queues a re-evaluation of `cluster` at `dueAt` (visible EVALUATION_LEAD_SECONDS before it). */
export async function scheduleEvaluation(plane: ControlPlane, cluster: string, dueAt: Date): Promise<void> {
  const seconds = (dueAt.getTime() - plane.clock.now().getTime()) / 1000 - EVALUATION_LEAD_SECONDS;
  await plane.evaluations.send({ cluster, reason: 'deadline', dueAt: dueAt.toISOString() }, { delaySeconds: Math.max(0, Math.floor(seconds)) });
}
