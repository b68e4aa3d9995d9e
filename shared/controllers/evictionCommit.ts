import { randomUUID } from 'node:crypto';
import type { EvictionRecord } from '../failover/bindingModel';
import { abandon, complete } from '../failover/evictionRow';
import { FAILBACK_REASON } from '../failover/failback';
import type { EventRecord, Versioned, VersionedEviction } from '../store/ports';
import type { BindingRecord } from '../store/records';
import { errorFields } from '../telemetry/log';
import { failedBackEvent } from './failback';
import type { ControlPlane } from './ports';
import { scheduleBinding } from './scheduler';
import { evictionEvent } from './state/events';
import { applyRowChange, commitRow } from './state/evictionRows';

/**
 * How the worker settled a row. `evicted`: this call took the cluster out; `finished`: it completed an
 * eviction an earlier attempt had applied to the binding but not committed; `recovered`: the cluster is no
 * longer faulty, the row is abandoned; `requeued`: (repair only) the row is back in line for a new slot.
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

/** The identity of a decision: its row is replaced when a later failure decides anew. */
export const decisionOf = (record: EvictionRecord) => record.decidedAt;

/**
 * When this row's decision took its cluster out of the binding (the mark the effect wrote, the cluster no
 * longer placed), or undefined: an attempt that died before its commit, or a write whose answer was lost,
 * is finished from it, never done again.
 */
export function landedAt(binding: BindingRecord, record: EvictionRecord): string | undefined {
  const mark = binding.evictionMarks?.[record.cluster];
  const placed = (binding.spec.clusters ?? []).some((c) => c.name === record.cluster);
  return mark?.decision === decisionOf(record) && !placed ? mark.at : undefined;
}

/** Marks the binding (its working copy) with this row's decision at `at`; marks of clusters it is placed on again go. */
export function markEviction(binding: BindingRecord, record: EvictionRecord, at: string): void {
  const placed = new Set((binding.spec.clusters ?? []).map((c) => c.name));
  const marks = Object.fromEntries(Object.entries(binding.evictionMarks ?? {}).filter(([cluster]) => !placed.has(cluster)));
  binding.evictionMarks = { ...marks, [record.cluster]: { decision: decisionOf(record), at } };
}

/**
 * Completes an eviction whose effect is in the binding: the `Evicted` event (idempotent), the ledger
 * commit (row `done`, its placement row removed), then the rescheduling. Whoever's commit lands does the
 * metrics; the event and the rescheduling are safe to repeat.
 */
export async function finishEviction(
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
  const commit = complete(record, { executedAt, commitId: randomUUID() }, now);
  const committed = commit.record;
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
    if (await commitRow(plane, etag, commit)) {
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
export async function abandonRow(plane: ControlPlane, row: VersionedEviction, why: string): Promise<boolean> {
  if ((await applyRowChange(plane, row.etag, abandon(row.record, why, plane.clock.now()))) === undefined) return false;
  plane.metrics.recordProcessed(row.record.kind, 'abandoned');
  return true;
}
