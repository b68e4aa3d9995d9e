import { abandon, redate } from '../failover/evictionRow';
import { decideFailback, failbackClusters, replacementOf } from '../failover/failback';
import { dropPlacedAgain } from '../failover/gracefulEviction';
import { evictFromPlacement } from '../failover/placementEviction';
import { keep, write } from '../store/optimistic';
import type { EventRecord, Versioned, VersionedEviction } from '../store/ports';
import type { BindingRecord } from '../store/records';
import { currentTraceCarrier } from '../telemetry/tracing';
import { promptRead, SLOW_READ_MS, type SwitchCheck } from './evictionChecks';
import { abandonRow, finishEviction, landedAt, markEviction, type WorkerOutcome } from './evictionCommit';
import { failbackWindowOf, homeFacts, reconcileFailbackBinding } from './failback';
import { oldCopyRemovedEvents, sweepRecord } from './gracefulEviction';
import { unschedule } from './pacer';
import type { ControlPlane } from './ports';
import { setBindingCondition } from './scheduler';
import { writeBinding } from './state/bindingWrites';
import { evictionEvent } from './state/events';
import { applyRowChange } from './state/evictionRows';

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
export async function settleFailback(
  plane: ControlPlane,
  row: VersionedEviction,
  mode: 'evict' | 'requeue',
  binding: Versioned<BindingRecord> | undefined,
  switches: SwitchCheck,
): Promise<WorkerOutcome> {
  const { record } = row;
  const home = record.home ?? '';
  const { cluster: homeRead, prompt } = await promptRead(plane, home);
  if (!prompt && mode === 'evict') {
    await unschedule(plane, record, row.etag, `the home cluster ${home} could not be read promptly (3 reads over ${SLOW_READ_MS} ms): back in line`);
    return 'postponed';
  }
  const confirmedAt = plane.clock.now();
  if (!binding) return (await abandonRow(plane, row, 'the binding was deleted')) ? 'left' : 'duplicate';
  const entry = binding.value.failback?.[home];
  if (!entry || entry.doneAt) return (await abandonRow(plane, row, `the binding no longer has a failback to ${home} to make`)) ? 'left' : 'duplicate';
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
    if (!(await abandonRow(plane, row, why))) return 'duplicate';
    await plane.events.append([evictionEvent(abandon(record, why, confirmedAt).record, confirmedAt, 'FailbackCancelled', why)]);
    // A dropped entry leaves the binding (the reconcile removes it and says why).
    if ('drop' in verdict) await reconcileFailbackBinding(plane, record.bindingKey, { only: home });
    return 'cancelled';
  }
  if (!verdict.replacement.includes(record.cluster)) {
    if (!(await abandonRow(plane, row, `the binding no longer runs on ${record.cluster} in place of ${home}`))) return 'duplicate';
    // Planned again where it runs now.
    await reconcileFailbackBinding(plane, record.bindingKey, { only: home });
    return 'left';
  }
  if (verdict.due.getTime() > confirmedAt.getTime()) {
    // The home's healthy run restarted after this row was planned (a flap, or a longer window): back in line.
    const now = confirmedAt.toISOString();
    const change = redate(
      record,
      {
        dueAt: verdict.due.toISOString(),
        why: verdict.why,
        homeHealthySince: verdict.healthySince,
        ...(windowSeconds !== undefined ? { failbackWindowSeconds: windowSeconds } : {}),
        message: `the count restarted: ${home} healthy since ${verdict.healthySince}, due ${verdict.due.toISOString()}`,
      },
      now,
    );
    if ((await applyRowChange(plane, row.etag, change)) !== undefined) {
      await plane.events.append([
        evictionEvent(change.record, now, 'FailbackPlanned', `failback to ${home} re-dated to ${change.record.dueAt}: ${change.record.message}`),
      ]);
    }
    return 'postponed';
  }
  if (mode === 'requeue') {
    await unschedule(plane, record, row.etag, 'its slot passed without a failback (a lost message or a stopped worker): back in line for a new slot');
    return 'requeued';
  }
  // As for an eviction: the switches read again, fresh, when the reads above were slow.
  const hold = await switches.holdNow();
  if (hold) {
    await unschedule(plane, record, row.etag, hold);
    return 'postponed';
  }

  const executedAt = confirmedAt.toISOString();
  let landedWhen: string | undefined;
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
        landedWhen = landedAt(current, record);
        return keep(landedWhen !== undefined);
      }
      landedWhen = undefined;
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
      markEviction(current, record, executedAt);
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
        setBindingCondition(
          current.status,
          { type: 'Scheduled', status: 'True', reason: 'Success', message: `placed on ${placedText} (back to its home ${home})` },
          at,
        );
        followUps = oldCopyRemovedEvents(current, sweepRecord(current, at, plane.config), at);
      }
      followUps = [...oldCopyRemovedEvents(current, placedAgain.drop, at), ...followUps];
      return write(current, true);
    },
    { placementsAlreadyRemoved: [record.cluster], current: binding },
  );
  if (!wentHome) {
    if (!(await abandonRow(plane, row, `the binding changed before its failback to ${home}`))) return 'duplicate';
    await reconcileFailbackBinding(plane, record.bindingKey, { only: home });
    return 'left';
  }
  const done: VersionedEviction = {
    ...row,
    record: { ...record, homeHealthySince: verdict.healthySince, ...(windowSeconds !== undefined ? { failbackWindowSeconds: windowSeconds } : {}) },
  };
  const outcome = await finishEviction(plane, done, landedWhen ?? executedAt, written && etag ? { value: written, etag } : undefined, followUps, from);
  return outcome === 'finished' ? 'failed-back' : outcome;
}
