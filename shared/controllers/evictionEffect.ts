import { DRAIN_REASON, isCordoned } from '../failover/drain';
import { isFaultyTaint } from '../failover/evictionDecision';
import { block } from '../failover/evictionRow';
import { purgeNever, recordFailoverEviction } from '../failover/failback';
import { evictFromPlacement } from '../failover/placementEviction';
import { preScheduleCheck } from '../failover/precheck';
import type { MissedRule } from '../failover/statePreservation';
import { keep, write } from '../store/optimistic';
import type { EventRecord, Versioned, VersionedEviction } from '../store/ports';
import type { BindingRecord } from '../store/records';
import { errorFields } from '../telemetry/log';
import { ATTR, currentTraceCarrier, recordSpan } from '../telemetry/tracing';
import { type ClusterRead, freshClusterRead, SLOW_READ_MS, type SwitchCheck } from './evictionChecks';
import { abandonRow, decisionOf, finishEviction, landedAt, markEviction, type WorkerOutcome } from './evictionCommit';
import { failbackWindowOf, reconcileFailbackBinding } from './failback';
import { oldCopyRemovedEvents, sweepRecord } from './gracefulEviction';
import { unschedule } from './pacer';
import type { ControlPlane } from './ports';
import { forgetPlacement, notePlacement, placementCandidates, placementCounts, placeRecord, readPlacementCounts, settlePlacement } from './scheduler';
import { writeBinding } from './state/bindingWrites';
import { evictionEvent, stateNotPreservedEvent } from './state/events';
import { applyRowChange } from './state/evictionRows';
import { fleetClusters } from './state/reads';

/**
 * Settles a scheduled failure's (or drain's) row at its slot: evicts only while the source cluster still
 * carries a faulty taint (a drain's: the cordon), read from storage right before acting (docs/architecture.md,
 * decision 8), and the workload has somewhere to go; otherwise the row is abandoned, blocked or put back in line.
 *
 * The effect comes first and the ledger commit second (evictionCommit.ts): the binding is written (with
 * its ETag) carrying the decision's mark, then the row moves to `done` with its ETag.
 */
export async function settleEviction(
  plane: ControlPlane,
  row: VersionedEviction,
  mode: 'evict' | 'requeue',
  binding: Versioned<BindingRecord> | undefined,
  switches: SwitchCheck,
  /** The source cluster's read (promptRead), made beside the binding's. */
  sourceRead: Promise<ClusterRead>,
): Promise<WorkerOutcome> {
  const { record } = row;
  const drain = record.reason === DRAIN_REASON;
  const placedOn = (binding?.value.spec.clusters ?? []).map((c) => c.name);
  // The source cluster's taint, read now from storage (no cache an abandon pass could race: docs/architecture.md, decision 8).
  // An answer that took long may describe the cluster as it was before a recovery written meanwhile: it is
  // read again until one comes back promptly (or three tries), so the window stays about one read wide.
  const { cluster: source, prompt } = await freshClusterRead(plane, record.cluster, sourceRead);
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
    return (await abandonRow(plane, row, why)) ? 'recovered' : 'duplicate';
  }
  if (!binding || !placedOn.includes(record.cluster)) {
    return (await abandonRow(plane, row, binding ? 'the binding is no longer on this cluster' : 'the binding was deleted')) ? 'left' : 'duplicate';
  }
  if (mode === 'requeue') {
    await unschedule(plane, record, row.etag, 'its slot passed without an eviction (a lost message or a stopped worker): back in line for a new slot');
    return 'requeued';
  }
  // The switches were read before the storage reads above: when those were slow, a pause (or a halt) may
  // have come meanwhile. Read them again, fresh, right before acting.
  const hold = await switches.holdNow();
  if (hold) {
    await unschedule(plane, record, row.etag, hold);
    return 'postponed';
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
    const change = block(record, check.reason, now);
    if ((await applyRowChange(plane, row.etag, change)) !== undefined) {
      plane.metrics.recordProcessed(record.kind, 'blocked');
      await plane.events.append([evictionEvent(change.record, now, 'EvictionBlocked', `stays on ${record.cluster}: ${check.reason}`, 'Warning')]);
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
  let landedWhen: string | undefined;
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
        landedWhen = landedAt(current, record);
        return keep(landedWhen !== undefined);
      }
      landedWhen = undefined;
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
      markEviction(current, record, executedAt);
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
    return (await abandonRow(plane, row, 'the binding is no longer on this cluster')) ? 'left' : 'duplicate';
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
  const outcome = await finishEviction(plane, row, landedWhen ?? executedAt, written && etag ? { value: written, etag } : undefined, followUps);
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
