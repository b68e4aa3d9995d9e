import { randomUUID } from 'node:crypto';
import { sleep } from '../clock';
import { EvictionRecord, parseBindingKey } from '../failover/bindingModel';
import { bypassesGate, DRAIN_REASON, isCordoned } from '../failover/drain';
import { isFaultyTaint } from '../failover/evictionDecision';
import { decideFailback, FAILBACK_REASON, failbackClusters, purgeNever, recordFailoverEviction, replacementOf } from '../failover/failback';
import { dropPlacedAgain } from '../failover/gracefulEviction';
import { evictFromPlacement } from '../failover/placementEviction';
import { preScheduleCheck } from '../failover/precheck';
import type { MissedRule } from '../failover/statePreservation';
import { keep, write } from '../store/optimistic';
import type { EventRecord, PacerState, Versioned, VersionedEviction } from '../store/ports';
import { errorFields } from '../telemetry/log';
import { annotate, ATTR, currentTraceCarrier, inSpan, recordSpan } from '../telemetry/tracing';
import { failbackWindowOf, failedBackEvent, homeFacts, reconcileFailbackBinding } from './failback';
import { oldCopyRemovedEvents, sweepRecord } from './gracefulEviction';
import { unschedule } from './pacer';
import type { ControlPlane, EvictionBatch, EvictionMessage } from './ports';
import type { BindingRecord, ClusterRecord } from './records';
import {
  forgetPlacement,
  notePlacement,
  placementCandidates,
  placementCounts,
  placeRecord,
  readPlacementCounts,
  scheduleBinding,
  settlePlacement,
} from './scheduler';
import { writeBinding } from './state/bindingWrites';
import { RecentCache } from './state/cache';
import { evictionEvent, stateNotPreservedEvent } from './state/events';
import { fleetClusters, recentPacerState } from './state/reads';

const MAX_SLOT_WAIT_MS = 15_000;
/** A scheduled row this long past its slot has lost its message or its worker (a live worker acts at the slot). */
export const REPAIR_AFTER_MS = 10_000;
/** A storage read answered later than this may be stale against a write made meanwhile (a recovery, a pause). */
export const SLOW_READ_MS = 500;
/** When this process last scanned and found no scheduled row at all. */
const cleanScans = new RecentCache<number>(Number.POSITIVE_INFINITY);

/**
 * `evicted`: this call took the cluster out; `finished`: it completed an eviction an earlier attempt had
 * applied to the binding but not committed; `recovered`: the cluster is no longer faulty, the row is
 * abandoned; `requeued`: (repair only) the row is back in line for a new slot.
 */
export type WorkerOutcome =
  | 'evicted'
  | 'finished'
  | 'duplicate'
  | 'postponed'
  | 'blocked'
  | 'left'
  | 'recovered'
  | 'requeued'
  | 'lost-race'
  // A Failback row: the binding went home; or it did not (the home is not healthy, or the rule now says no).
  | 'failed-back'
  | 'cancelled';

/**
 * Executes one paced eviction. Acts only if the row is still `scheduled` at the ETag the pacer left, the
 * gate is on, evictions are not paused or halted, the source cluster still carries a faulty taint (read
 * from storage just before acting: docs/architecture.md, decision 8), and the workload has somewhere to go.
 *
 * The effect comes first and the ledger commit second: the binding is written (with its ETag) carrying the
 * decision's mark, then the row moves to `done` with its ETag. A crash between the two leaves a `scheduled`
 * row whose binding already carries the mark; whoever settles that row next (a redelivery, or the repair
 * timer within seconds) sees the mark and finishes the eviction (commit, `Evicted` event, rescheduling)
 * without evicting again. The `Evicted` event is written with an id, so finishing twice records it once.
 */
export async function executeEviction(plane: ControlPlane, message: EvictionMessage): Promise<WorkerOutcome> {
  return inSpan('eviction.execute', { attributes: { [ATTR.cluster]: message.cluster, [ATTR.binding]: message.bindingKey } }, async () => {
    try {
      const outcome = await execute(plane, message);
      annotate({ [ATTR.outcome]: outcome });
      return outcome;
    } catch (error) {
      // Counted (the `eviction failures` alert watches it) and rethrown: the queue retries, then poisons.
      plane.metrics.recordProcessed(parseBindingKey(message.bindingKey).kind, 'error');
      throw error;
    }
  });
}

async function execute(plane: ControlPlane, message: EvictionMessage): Promise<WorkerOutcome> {
  const wait = Date.parse(message.slot) - plane.clock.now().getTime();
  if (wait > 0) await sleep(Math.min(wait, MAX_SLOT_WAIT_MS));
  // The message carries the row as scheduled; every write below is conditional on its ETag, so a row that
  // changed meanwhile (abandoned, done, back in line) is never acted on. Older messages without it read the row.
  // A message whose slot passed long ago may have been overtaken by the repair, which puts such a row back
  // in line for a new slot: then the row is read first, and a row no longer as scheduled is not acted on
  // (acting would evict outside the pacing). A timely message saves the read.
  const late = plane.clock.now().getTime() - Date.parse(message.slot) > REPAIR_AFTER_MS / 2;
  const row = message.record && !late ? { record: message.record, etag: message.etag } : await plane.ledger.getEviction(message.cluster, message.bindingKey);
  if (!row || row.record.state !== 'scheduled' || row.etag !== message.etag) return 'duplicate';
  return settleScheduledRow(plane, row, 'evict');
}

/**
 * A queue message's evictions, each at its slot. They run side by side, each waiting for its own slot (one
 * binding's, rare, one after another): taken one after another, a message of 16 slots spread over a second
 * took 16 evictions' time, so under a slow storage the evictions fell behind their slots, and a message
 * whose slot had passed long ago costs a read more per eviction (the backlog fed itself). Each is settled on
 * its own (one failing does not hold up the others); if any threw, the message is retried after the rest
 * are done, and the ones already settled are duplicates then (their rows moved on from the message's ETag).
 */
export async function executeEvictionBatch(plane: ControlPlane, batch: EvictionBatch): Promise<WorkerOutcome[]> {
  const byBinding = new Map<string, EvictionMessage[]>();
  for (const message of [...batch.evictions].sort((a, b) => a.slot.localeCompare(b.slot))) {
    byBinding.set(message.bindingKey, [...(byBinding.get(message.bindingKey) ?? []), message]);
  }
  const outcomes: WorkerOutcome[] = [];
  let failure: Error | undefined;
  await Promise.all(
    [...byBinding.values()].map(async (messages) => {
      for (const message of messages) {
        try {
          outcomes.push(await executeEviction(plane, message));
        } catch (error) {
          failure ??= error instanceof Error ? error : new Error(String(error));
        }
      }
    }),
  );
  if (failure !== undefined) throw failure;
  return outcomes;
}

/** The identity of a decision: its row is replaced when a later failure decides anew. */
const decisionOf = (record: EvictionRecord) => record.decidedAt;

/**
 * Settles a `scheduled` row: the worker at the row's slot (`evict`), or the repair for a row whose slot
 * passed long ago (`requeue`: a lost message or a dead worker; instead of evicting now, outside the rate,
 * the row goes back in line for a new slot). Both finish an eviction already applied to the binding.
 */
export async function settleScheduledRow(plane: ControlPlane, row: VersionedEviction, mode: 'evict' | 'requeue'): Promise<WorkerOutcome> {
  const { record } = row;
  const drain = record.reason === DRAIN_REASON;
  const holdReason = (state: PacerState) =>
    !plane.config.failoverEnabled && !bypassesGate(record)
      ? 'the Failover gate is off'
      : state.paused
        ? 'evictions are paused'
        : state.tier === 'halted'
          ? 'evictions are halted: too many clusters are faulty'
          : undefined;
  let switchesReadAt = performance.now();
  let hold = holdReason(await recentPacerState(plane));

  const binding = await plane.bindings.get(record.bindingKey);
  const mark = binding?.value.evictionMarks?.[record.cluster];
  const placedOn = (binding?.value.spec.clusters ?? []).map((c) => c.name);
  if (binding && mark?.decision === decisionOf(record) && !placedOn.includes(record.cluster)) {
    // This decision already took the cluster out (the attempt that did it died before its commit).
    return finishEviction(plane, row, mark.at);
  }
  if (hold) {
    await unschedule(plane, record, row.etag, hold);
    return 'postponed';
  }
  if (record.reason === FAILBACK_REASON) return settleFailback(plane, row, mode, binding, holdReason, switchesReadAt);
  // The source cluster's taint, read now from storage (no cache an abandon pass could race: docs/architecture.md, decision 8).
  // An answer that took long may describe the cluster as it was before a recovery written meanwhile: it is
  // read again until one comes back promptly (or three tries), so the window stays about one read wide.
  const { cluster: source, prompt } = await promptRead(plane, record.cluster);
  // Never act on a taint read answered late: it may describe the cluster as it was before a recovery. So an
  // eviction is always decided on a read served at most SLOW_READ_MS before the worker acts.
  if (!prompt && mode === 'evict') {
    await unschedule(plane, record, row.etag, `the cluster's taint could not be read promptly (3 reads over ${SLOW_READ_MS} ms): back in line`);
    return 'postponed';
  }
  // The moment the taint was confirmed: the eviction's executedAt (the write follows within milliseconds;
  // stamping it later would date a decision made before a recovery after it).
  const confirmedAt = plane.clock.now();
  // A drain's row needs the cordon still there (an uncordon ends the drain); any other row a faulty taint.
  const stillDue = drain ? isCordoned(source?.value.taints ?? []) : (source?.value.taints.some(isFaultyTaint) ?? false);
  if (!stillDue) {
    const why = !source
      ? 'the cluster was deleted'
      : drain
        ? 'the cluster was uncordoned before its slot: the drain is over'
        : 'the cluster recovered before its slot: it has no NoExecute or PreferNoExecute taint';
    return (await abandon(plane, row, why)) ? 'recovered' : 'duplicate';
  }
  if (!binding || !placedOn.includes(record.cluster)) {
    return (await abandon(plane, row, binding ? 'the binding is no longer on this cluster' : 'the binding was deleted')) ? 'left' : 'duplicate';
  }
  if (mode === 'requeue') {
    await unschedule(plane, record, row.etag, 'its slot passed without an eviction (a lost message or a stopped worker): back in line for a new slot');
    return 'requeued';
  }
  // The switches were read before the storage reads above: when those were slow, a pause (or a halt) may
  // have come meanwhile. Read them again, fresh, right before acting.
  if (performance.now() - switchesReadAt > SLOW_READ_MS) {
    switchesReadAt = performance.now();
    hold = holdReason(await recentPacerState(plane, 0));
    if (hold) {
      await unschedule(plane, record, row.etag, hold);
      return 'postponed';
    }
  }

  const now = plane.clock.now();
  const fleet = await fleetClusters(plane);
  const check = preScheduleCheck({
    placement: binding.value.spec.placement,
    placedOn,
    evictFrom: record.cluster,
    clusters: fleet,
    gracefulEvictionTasks: binding.value.spec.gracefulEvictionTasks,
  });
  if (!check.ok) {
    const blocked = { ...record, state: 'blocked' as const, message: check.reason, attempts: record.attempts + 1, updatedAt: now.toISOString() };
    if ((await plane.ledger.updateEviction(blocked, row.etag)) !== false) {
      plane.metrics.recordProcessed(record.kind, 'blocked');
      await plane.events.append([evictionEvent(blocked, now, 'EvictionBlocked', `stays on ${record.cluster}: ${check.reason}`, 'Warning')]);
      plane.log.warn('eviction blocked', { cluster: record.cluster, binding: record.bindingKey, reason: check.reason });
    }
    return 'blocked';
  }

  // The effect: the cluster leaves the binding (one rule: failover/placementEviction.ts) with this
  // decision's mark, in one ETag-guarded write. Its placement row goes with the ledger commit below. In the
  // same write the binding is placed again (the scheduler's rule) and a task whose old copy may go at once
  // (purge mode Directly) is dropped (the sweep's rule): one binding write per eviction, not three.
  const executedAt = confirmedAt.toISOString();
  let missedRules: MissedRule[] = [];
  let landedAt: string | undefined;
  let followUps: EventRecord[] = [];
  let placedInWrite: { swept: number } | undefined;
  // Failback: a binding whose policy asks for it remembers the cluster a failure took it off (not a drain).
  // Never in the way of the eviction itself: a policy listing that fails records no home (logged).
  const windowSeconds =
    !drain && !purgeNever(binding.value.spec.failover)
      ? await failbackWindowOf(plane, binding.value).catch((error: unknown) => {
          plane.log.warn('the failback window could not be read; this eviction records no home', { binding: record.bindingKey, ...errorFields(error) });
          return undefined;
        })
      : undefined;
  /** The eviction took the binding off a cluster that stood in for a home: that home's failback now points at what replaced it. */
  let transferred = false;
  // Standalone, the write places the binding again: the placement counts the spread rule compares (the
  // clusters it could go to instead of this one) are read before it. In Karmada mode Karmada's scheduler places it.
  const fleetNames = fleet.map((c) => c.name);
  if (!plane.karmada) {
    const leaving = { ...binding.value, generation: binding.value.generation + 1 };
    leaving.spec = { ...leaving.spec, clusters: (leaving.spec.clusters ?? []).filter((c) => c.name !== record.cluster) };
    await readPlacementCounts(plane, placementCandidates(leaving, fleet, now));
  }
  const writeStarted = Date.now();
  const {
    result: evicted,
    record: written,
    etag,
  } = await writeBinding<boolean>(
    plane,
    record.bindingKey,
    (current, at) => {
      missedRules = [];
      forgetPlacement(plane, record.bindingKey);
      if (!current) return keep(false);
      const placedBefore = (current.spec.clusters ?? []).map((c) => c.name);
      const rules = current.spec.failover?.cluster?.statePreservation?.rules ?? [];
      const status = current.status.aggregatedStatus?.find((item) => item.clusterName === record.cluster)?.status;
      const eviction = evictFromPlacement(
        current.spec,
        record.cluster,
        {
          ...(drain ? { reason: 'Drain', producer: 'ClusterDrain' } : { reason: 'TaintUntolerated', producer: 'TaintManager' }),
          purgeMode: record.purgeMode,
          ...(record.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: record.gracePeriodSeconds } : {}),
          statePreservation: { rules, status },
        },
        at,
      );
      followUps = [];
      placedInWrite = undefined;
      if (!eviction.evicted) {
        // Our own write landed and only its answer was lost (the retry saw 412 and read it back): the
        // binding is off the cluster with this decision's mark. Finish it, do not abandon it.
        const mark = current.evictionMarks?.[record.cluster];
        const ours = mark?.decision === decisionOf(record) && !(current.spec.clusters ?? []).some((c) => c.name === record.cluster);
        landedAt = ours ? mark.at : undefined;
        return keep(ours);
      }
      landedAt = undefined;
      missedRules = eviction.missedRules;
      const kept = eviction.clusters.map((c) => c.name);
      transferred = Object.values(current.failback ?? {}).some((e) => !e.doneAt && (e.replacedBy ?? []).includes(record.cluster));
      /** The failback entries after this eviction; `gained`: what the same write placed the binding on, when it did. */
      const remember = (target: BindingRecord, gained?: string[]) => {
        const entries = recordFailoverEviction(target.failback, { evicted: record.cluster, kept, gained, windowSeconds, now: at });
        if (entries) target.failback = entries;
        else delete target.failback;
      };
      current.spec.clusters = eviction.clusters;
      current.spec.gracefulEvictionTasks = eviction.gracefulEvictionTasks;
      const placed = new Set(eviction.clusters.map((c) => c.name));
      const marks = Object.fromEntries(Object.entries(current.evictionMarks ?? {}).filter(([cluster]) => !placed.has(cluster)));
      current.evictionMarks = { ...marks, [record.cluster]: { decision: decisionOf(record), at: executedAt } };
      current.generation += 1;
      current.traceparent = currentTraceCarrier().traceparent;
      // Karmada mode: Karmada's scheduler places it. A no-fit on the cached fleet view is left to the
      // scheduler after the commit, which decides again on a fresh view.
      if (!plane.karmada) {
        const placed = structuredClone(current);
        const decision = placeRecord(placed, fleet, at, placementCounts(plane, fleetNames));
        if (decision.outcome === 'scheduled') {
          notePlacement(
            plane,
            record.bindingKey,
            placedBefore,
            (placed.spec.clusters ?? []).map((c) => c.name),
          );
          remember(
            placed,
            (placed.spec.clusters ?? []).map((c) => c.name).filter((name) => !kept.includes(name)),
          );
          const dropped = sweepRecord(placed, at, plane.config);
          followUps = [decision.event, ...oldCopyRemovedEvents(placed, dropped, at)];
          placedInWrite = { swept: dropped.length };
          return write(placed, true);
        }
      }
      remember(current);
      return write(current, true);
    },
    { placementsAlreadyRemoved: [record.cluster], current: binding },
  ).then(
    (done) => {
      // The placement this write decided counts as landed only if the write did.
      settlePlacement(plane, record.bindingKey, done.result && placedInWrite !== undefined);
      return done;
    },
    (error: unknown) => {
      settlePlacement(plane, record.bindingKey, false);
      throw error;
    },
  );
  if (!evicted) {
    // The binding left the cluster between the read and the write (another path took it): settle again.
    return (await abandon(plane, row, 'the binding is no longer on this cluster')) ? 'left' : 'duplicate';
  }
  if (missedRules.length > 0) {
    await plane.events.append([
      { ...stateNotPreservedEvent(record, executedAt, record.cluster, missedRules), id: `state-${record.cluster}-${decisionOf(record)}` },
    ]);
  }
  if (placedInWrite) {
    // The scheduler's and the sweep's work done in the eviction's write keep their spans in the failure's trace.
    const attributes = { [ATTR.binding]: record.bindingKey };
    recordSpan('scheduler.place', { startTime: writeStarted, attributes: { ...attributes, [ATTR.outcome]: 'scheduled' } });
    if (placedInWrite.swept > 0)
      recordSpan('gracefulEviction.sweep', {
        startTime: writeStarted,
        attributes: { ...attributes, [ATTR.count]: placedInWrite.swept, [ATTR.outcome]: 'cleared' },
      });
  }
  const outcome = await finishEviction(plane, row, landedAt ?? executedAt, written && etag ? { value: written, etag } : undefined, followUps);
  if (transferred && written && etag) {
    // The home this cluster stood in for may be healthy already: its failback is planned on the new replacement now.
    try {
      await reconcileFailbackBinding(plane, record.bindingKey);
    } catch (error) {
      plane.log.warn('failback planning after an eviction failed; the resync plans it', { binding: record.bindingKey, ...errorFields(error) });
    }
  }
  return outcome === 'finished' ? 'evicted' : outcome;
}

/**
 * A cluster read from storage until an answer comes back promptly (three tries at most): an answer that took
 * long may describe the cluster as it was before a write made meanwhile (a recovery, a new failure).
 */
async function promptRead(plane: ControlPlane, name: string): Promise<{ cluster?: Versioned<ClusterRecord>; prompt: boolean }> {
  let cluster: Versioned<ClusterRecord> | undefined;
  let prompt = false;
  for (let attempt = 0; attempt < 3 && !prompt; attempt++) {
    const asked = performance.now();
    cluster = await plane.clusters.get(name);
    prompt = performance.now() - asked <= SLOW_READ_MS;
  }
  return { cluster, prompt };
}

/**
 * Settles a scheduled `Failback` row (shared/failover/failback.ts). The binding goes back only if the rule
 * still says so on the home as read from storage right now (never from a cache; a late answer is never acted
 * on): Ready and free of NoExecute/PreferNoExecute taints for the whole window, admitted by the placement,
 * the binding still on the cluster that replaced it, the policy still asking for it. A home whose healthy
 * run restarted since the row was planned (a flap) puts the row back in line for the new due time; a home
 * that is not healthy cancels it (it is planned again when the home's next run begins).
 *
 * The effect, in one ETag-guarded binding write: the home comes back (with the replicas of what replaced
 * it), what replaced it leaves with a graceful-eviction task (reason and producer `Failback`, purge mode
 * Gracefully: the sweep clears it once the copy on the home is healthy), the entry is marked done, and the
 * row's mark is set (a crash before the commit is finished, never repeated). The scheduler does not run
 * over it: the home is the placement. Then the commit, as for any eviction, with a `FailedBack` event.
 */
async function settleFailback(
  plane: ControlPlane,
  row: VersionedEviction,
  mode: 'evict' | 'requeue',
  binding: Versioned<BindingRecord> | undefined,
  holdReason: (state: PacerState) => string | undefined,
  switchesReadAt: number,
): Promise<WorkerOutcome> {
  const { record } = row;
  const home = record.home ?? '';
  const { cluster: homeRead, prompt } = await promptRead(plane, home);
  if (!prompt && mode === 'evict') {
    await unschedule(plane, record, row.etag, `the home cluster ${home} could not be read promptly (3 reads over ${SLOW_READ_MS} ms): back in line`);
    return 'postponed';
  }
  const confirmedAt = plane.clock.now();
  if (!binding) return (await abandon(plane, row, 'the binding was deleted')) ? 'left' : 'duplicate';
  const entry = binding.value.failback?.[home];
  if (!entry || entry.doneAt) return (await abandon(plane, row, `the binding no longer has a failback to ${home} to make`)) ? 'left' : 'duplicate';
  const windowSeconds = await failbackWindowOf(plane, binding.value);
  const otherHomes = Object.keys(binding.value.failback ?? {}).filter((h) => h !== home);
  const verdict = decideFailback({
    entry,
    windowSeconds,
    home: homeRead ? homeFacts(homeRead.value) : undefined,
    binding: binding.value.spec,
    otherHomes,
    now: confirmedAt,
  });
  if (!('due' in verdict)) {
    const why = 'drop' in verdict ? `failback to ${home} dropped: ${verdict.drop}` : `failback to ${home} cancelled at its slot: ${verdict.wait}`;
    if (!(await abandon(plane, row, why))) return 'duplicate';
    await plane.events.append([evictionEvent({ ...record, state: 'abandoned' }, confirmedAt, 'FailbackCancelled', why)]);
    // A dropped entry leaves the binding (the reconcile removes it and says why).
    if ('drop' in verdict) await reconcileFailbackBinding(plane, record.bindingKey, { only: home });
    return 'cancelled';
  }
  if (!verdict.replacement.includes(record.cluster)) {
    if (!(await abandon(plane, row, `the binding no longer runs on ${record.cluster} in place of ${home}`))) return 'duplicate';
    // Planned again where it runs now.
    await reconcileFailbackBinding(plane, record.bindingKey, { only: home });
    return 'left';
  }
  if (verdict.due.getTime() > confirmedAt.getTime()) {
    // The home's healthy run restarted after this row was planned (a flap, or a longer window): back in line.
    const now = confirmedAt.toISOString();
    const next: EvictionRecord = {
      ...record,
      state: 'pending',
      dueAt: verdict.due.toISOString(),
      why: verdict.why,
      homeHealthySince: verdict.healthySince,
      ...(windowSeconds !== undefined ? { failbackWindowSeconds: windowSeconds } : {}),
      message: `the count restarted: ${home} healthy since ${verdict.healthySince}, due ${verdict.due.toISOString()}`,
      updatedAt: now,
    };
    delete next.scheduledFor;
    if ((await plane.ledger.updateEviction(next, row.etag)) !== false) {
      await plane.ledger.addDue([next]);
      await plane.events.append([evictionEvent(next, now, 'FailbackPlanned', `failback to ${home} re-dated to ${next.dueAt}: ${next.message}`)]);
    }
    return 'postponed';
  }
  if (mode === 'requeue') {
    await unschedule(plane, record, row.etag, 'its slot passed without a failback (a lost message or a stopped worker): back in line for a new slot');
    return 'requeued';
  }
  // As for an eviction: the switches read again, fresh, when the reads above were slow.
  if (performance.now() - switchesReadAt > SLOW_READ_MS) {
    const hold = holdReason(await recentPacerState(plane, 0));
    if (hold) {
      await unschedule(plane, record, row.etag, hold);
      return 'postponed';
    }
  }

  const executedAt = confirmedAt.toISOString();
  let landedAt: string | undefined;
  let from = verdict.replacement;
  let followUps: EventRecord[] = [];
  const {
    result: wentHome,
    record: written,
    etag,
  } = await writeBinding<boolean>(
    plane,
    record.bindingKey,
    (current, at) => {
      followUps = [];
      if (!current) return keep(false);
      const placed = (current.spec.clusters ?? []).map((c) => c.name);
      const open = current.failback?.[home];
      const replacement =
        open && !open.doneAt
          ? replacementOf(
              open,
              placed,
              Object.keys(current.failback ?? {}).filter((h) => h !== home),
            )
          : [];
      if (!open || open.doneAt || placed.includes(home) || !replacement.includes(record.cluster)) {
        // Our own write landed and only its answer was lost: finish it. Anything else changed the binding first.
        const mark = current.evictionMarks?.[record.cluster];
        const ours = mark?.decision === decisionOf(record) && !placed.includes(record.cluster);
        landedAt = ours ? mark.at : undefined;
        return keep(ours);
      }
      landedAt = undefined;
      from = replacement;
      let tasks = current.spec.gracefulEvictionTasks ?? [];
      for (const cluster of replacement) {
        tasks = evictFromPlacement(
          { ...current.spec, gracefulEvictionTasks: tasks },
          cluster,
          {
            reason: 'Failback',
            producer: 'Failback',
            purgeMode: 'Gracefully',
            ...(record.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: record.gracePeriodSeconds } : {}),
            message: `back to its home ${home}`,
          },
          at,
        ).gracefulEvictionTasks;
      }
      current.spec.clusters = failbackClusters(current.spec, home, replacement);
      // The home's own task goes in the same write, in both modes: in Karmada mode its scheduler would keep
      // the home out of the placement for it and send the workload to a third cluster.
      const placedAgain = dropPlacedAgain(
        tasks,
        current.spec.clusters.map((c) => c.name),
      );
      current.spec.gracefulEvictionTasks = placedAgain.keep;
      // What the home reported before its failure is stale: the sweep waits for a new report of the copy there.
      if (current.status.aggregatedStatus) current.status.aggregatedStatus = current.status.aggregatedStatus.filter((item) => item.clusterName !== home);
      const placedNow = new Set(current.spec.clusters.map((c) => c.name));
      const marks = Object.fromEntries(Object.entries(current.evictionMarks ?? {}).filter(([cluster]) => !placedNow.has(cluster)));
      current.evictionMarks = { ...marks, [record.cluster]: { decision: decisionOf(record), at: executedAt } };
      current.failback = {
        ...current.failback,
        [home]: {
          home,
          evictedAt: open.evictedAt,
          doneAt: executedAt,
          from: replacement,
          healthySince: verdict.healthySince,
          ...(windowSeconds !== undefined ? { windowSeconds } : {}),
        },
      };
      current.generation += 1;
      current.traceparent = currentTraceCarrier().traceparent;
      // Standalone: the home is the placement (the scheduler is not run over it). Karmada mode: its scheduler's.
      if (!plane.karmada) {
        current.status.schedulerObservedGeneration = current.generation;
        const placedText = current.spec.clusters.map((c) => `${c.name} (${c.replicas ?? current.spec.replicas ?? 0})`).join(', ');
        const previous = current.status.conditions?.find((c) => c.type === 'Scheduled');
        current.status.conditions = [
          ...(current.status.conditions ?? []).filter((c) => c.type !== 'Scheduled'),
          {
            type: 'Scheduled',
            status: 'True',
            reason: 'Success',
            message: `placed on ${placedText} (back to its home ${home})`,
            lastTransitionTime: previous?.status === 'True' ? previous.lastTransitionTime : at.toISOString(),
          },
        ];
        followUps = oldCopyRemovedEvents(current, sweepRecord(current, at, plane.config), at);
      }
      followUps = [...oldCopyRemovedEvents(current, placedAgain.drop, at), ...followUps];
      return write(current, true);
    },
    { placementsAlreadyRemoved: [record.cluster], current: binding },
  );
  if (!wentHome) {
    if (!(await abandon(plane, row, `the binding changed before its failback to ${home}`))) return 'duplicate';
    await reconcileFailbackBinding(plane, record.bindingKey, { only: home });
    return 'left';
  }
  const done: VersionedEviction = {
    ...row,
    record: { ...record, homeHealthySince: verdict.healthySince, ...(windowSeconds !== undefined ? { failbackWindowSeconds: windowSeconds } : {}) },
  };
  const outcome = await finishEviction(plane, done, landedAt ?? executedAt, written && etag ? { value: written, etag } : undefined, followUps, from);
  return outcome === 'finished' ? 'failed-back' : outcome;
}

/**
 * Completes an eviction whose effect is in the binding: the `Evicted` event (idempotent), the ledger
 * commit (row `done`, its placement row removed), then the rescheduling. Whoever's commit lands does the
 * metrics; the event and the rescheduling are safe to repeat.
 */
async function finishEviction(
  plane: ControlPlane,
  row: VersionedEviction,
  executedAt: string,
  written?: Versioned<BindingRecord>,
  /** Events of what the eviction's write also did (placed, old copy dropped): one append with `Evicted`. */
  followUps: EventRecord[] = [],
  /** A Failback row: the clusters the binding left for its home (default: the row's cluster). */
  failedBackFrom?: string[],
): Promise<WorkerOutcome> {
  const { record } = row;
  const now = plane.clock.now();
  const committed: EvictionRecord = {
    ...record,
    state: 'done',
    executedAt,
    attempts: record.attempts + 1,
    updatedAt: now.toISOString(),
    commitId: randomUUID(),
  };
  const failback = record.reason === FAILBACK_REASON;
  await plane.events.append([
    failback
      ? { ...failedBackEvent(committed, executedAt, failedBackFrom ?? [record.cluster]), id: `failedback-${record.cluster}-${decisionOf(record)}` }
      : {
          ...evictionEvent(committed, executedAt, 'Evicted', `evicted from ${record.cluster} (${committed.purgeMode}): ${committed.why}`, 'Warning'),
          id: `evicted-${record.cluster}-${decisionOf(record)}`,
        },
    ...followUps,
  ]);
  let etag = row.etag;
  let landed = false;
  for (let attempt = 0; attempt < 5 && !landed; attempt++) {
    if (await plane.ledger.commitEviction(committed, etag)) {
      landed = true;
      break;
    }
    // The row changed: someone finished it (done), or a recovery or the repair moved it. The binding has
    // this decision's effect, so the ledger must say `done` whatever it says now.
    const latest = await plane.ledger.getEviction(record.cluster, record.bindingKey);
    if (!latest || decisionOf(latest.record) !== decisionOf(record)) return 'lost-race';
    if (latest.record.state === 'done') {
      // Our own commit, answered with a lost response and retried, or another finisher's.
      if (latest.record.commitId !== committed.commitId) return 'duplicate';
      landed = true;
      break;
    }
    etag = latest.etag;
  }
  if (!landed) throw new Error(`could not commit the eviction of ${record.bindingKey} from ${record.cluster}: the ledger row keeps changing`);
  // The binding lost a cluster: unless the eviction's own write placed it again, place it here and now from
  // the version just written (no queue hop, no re-read); if that fails, the scheduler queue (and its resync) takes it.
  try {
    if (!written || written.value.status.schedulerObservedGeneration !== written.value.generation)
      await scheduleBinding(plane, record.bindingKey, undefined, written);
  } catch (error) {
    plane.log.warn('rescheduling after eviction failed; queued for the scheduler', { binding: record.bindingKey, ...errorFields(error) });
    await plane.scheduler.send({ binding: record.bindingKey });
  }
  const latency = (Date.parse(executedAt) - Date.parse(record.decidedAt)) / 1000;
  // A failback is planned ahead of its due time: its decision-to-execution time is no eviction latency.
  plane.metrics.recordProcessed(record.kind, 'success', failback ? undefined : latency);
  if (failback)
    plane.log.info('failed back', {
      home: record.home,
      from: record.cluster,
      binding: record.bindingKey,
      lateSeconds: (Date.parse(executedAt) - Date.parse(record.dueAt)) / 1000,
    });
  else plane.log.info('evicted', { cluster: record.cluster, binding: record.bindingKey, purgeMode: committed.purgeMode, latencySeconds: latency });
  return 'finished';
}

/** The row ends `abandoned` (ETag-checked); false when it changed first. */
async function abandon(plane: ControlPlane, row: VersionedEviction, why: string): Promise<boolean> {
  const left = { ...row.record, state: 'abandoned' as const, message: why, updatedAt: plane.clock.now().toISOString() };
  if ((await plane.ledger.updateEviction(left, row.etag)) === false) return false;
  plane.metrics.recordProcessed(row.record.kind, 'abandoned');
  return true;
}

/**
 * The repair (a timer, every few seconds): a `scheduled` row whose slot passed more than `staleAfterMs`
 * ago lost its message or its worker. Its eviction is finished if the binding already carries it, the row
 * is abandoned if the cluster recovered or the binding left, and otherwise it goes back in line (paced
 * like any other row: never re-sent all at once).
 */
export async function repairInFlight(plane: ControlPlane, staleAfterMs = REPAIR_AFTER_MS): Promise<Record<string, number>> {
  const now = plane.clock.now().getTime();
  // Idle costs one cached read: nothing was scheduled since the last scan that found no scheduled row.
  const clearAt = cleanScans.peek(plane);
  if (clearAt !== undefined && Date.parse((await recentPacerState(plane)).nextSlotAt) <= clearAt) return {};
  const scheduled = await plane.ledger.scanEvictions({ state: 'scheduled' });
  if (scheduled.length === 0) cleanScans.set(plane, now);
  const stale = scheduled.filter((row) => row.record.scheduledFor && Date.parse(row.record.scheduledFor) < now - staleAfterMs);
  const outcomes: Record<string, number> = {};
  for (const row of stale) {
    const outcome = await settleScheduledRow(plane, row, 'requeue');
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
  }
  return outcomes;
}
