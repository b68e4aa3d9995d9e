import { RecentCache } from '../cache';
import { sleep } from '../clock';
import { parseBindingKey } from '../failover/bindingModel';
import { DRAIN_REASON } from '../failover/drain';
import { FAILBACK_REASON } from '../failover/failback';
import type { VersionedEviction } from '../store/ports';
import { annotate, ATTR, inSpan } from '../telemetry/tracing';
import { promptRead, SwitchCheck } from './evictionChecks';
import { finishEviction, landedAt, type WorkerOutcome } from './evictionCommit';
import { settleEviction } from './evictionEffect';
import { warmFailbackWindows } from './failback';
import { settleFailback } from './failbackEffect';
import { unschedule } from './pacer';
import type { ControlPlane, EvictionBatch, EvictionMessage } from './ports';
import { fleetClusters, recentPacerState } from './state/reads';

const MAX_SLOT_WAIT_MS = 15_000;
/** A scheduled row this long past its slot has lost its message or its worker (a live worker acts at the slot). */
export const REPAIR_AFTER_MS = 10_000;
/** When this process last scanned and found no scheduled row at all. */
const cleanScans = new RecentCache<number>('cleanRepairScans', Number.POSITIVE_INFINITY);

export type { WorkerOutcome } from './evictionCommit';

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

/**
 * Settles a `scheduled` row: the worker at the row's slot (`evict`), or the repair for a row whose slot
 * passed long ago (`requeue`: a lost message or a dead worker; instead of evicting now, outside the rate,
 * the row goes back in line for a new slot). Both finish an eviction already applied to the binding.
 */
export async function settleScheduledRow(plane: ControlPlane, row: VersionedEviction, mode: 'evict' | 'requeue'): Promise<WorkerOutcome> {
  const { record } = row;
  const bindingRead = plane.bindings.get(record.bindingKey);
  // A failure's or a drain's eviction reads its source cluster right before acting: beside the binding's read
  // rather than after it (one round trip less between the slot and the eviction; unused if the row is held).
  const sourceRead = record.reason === FAILBACK_REASON ? undefined : promptRead(plane, record.cluster, bindingRead);
  void sourceRead?.catch(() => undefined);
  // What the eviction reads after its checks, the fleet view (where the binding can go) and a failure's
  // failback windows, is asked for now, beside the checks' reads: both are per-process copies that callers
  // share, so the eviction finds them there instead of waiting two more round trips after its slot.
  if (sourceRead && mode === 'evict') {
    void fleetClusters(plane).catch(() => undefined);
    if (record.reason !== DRAIN_REASON) warmFailbackWindows(plane);
  }
  const switches = await SwitchCheck.read(plane, record);
  const binding = await bindingRead;
  // This decision already took the cluster out (the attempt that did it died before its commit).
  const landed = binding && landedAt(binding.value, record);
  if (landed) return finishEviction(plane, row, landed);
  if (switches.hold) {
    await unschedule(plane, record, row.etag, switches.hold);
    return 'postponed';
  }
  return sourceRead ? settleEviction(plane, row, mode, binding, switches, sourceRead) : settleFailback(plane, row, mode, binding, switches);
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
