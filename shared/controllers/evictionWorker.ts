import { sleep } from '../clock';
import { EvictionRecord, parseBindingKey } from '../failover/bindingModel';
import { evictFromPlacement } from '../failover/placementEviction';
import { preScheduleCheck } from '../failover/precheck';
import { keep, write } from '../store/optimistic';
import type { Versioned } from '../store/ports';
import { errorFields } from '../telemetry/log';
import { annotate, ATTR, currentTraceCarrier, inSpan } from '../telemetry/tracing';
import { unschedule } from './pacer';
import type { ControlPlane, EvictionMessage } from './ports';
import type { BindingRecord } from './records';
import { scheduleBinding } from './scheduler';
import { writeBinding } from './state/bindingWrites';
import { evictionEvent } from './state/events';
import { fleetClusters, recentPacerState } from './state/reads';

const MAX_SLOT_WAIT_MS = 15_000;

export type WorkerOutcome = 'evicted' | 'duplicate' | 'postponed' | 'blocked' | 'left' | 'lost-race';

/**
 * Executes one paced eviction. Re-reads everything; acts only if the row is still `scheduled` at the ETag
 * the pacer left, the gate is on, evictions are not paused or halted, and the workload has somewhere to
 * go. The row moves to `done` with its ETag before the binding is written (the commit point): a recovery
 * that abandons the row first wins, and under at-least-once delivery the eviction takes effect once.
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
  // changed meanwhile (abandoned, done) is never acted on. Older messages without it read the row.
  const row = message.record ? { record: message.record, etag: message.etag } : await plane.ledger.getEviction(message.cluster, message.bindingKey);
  if (!row) return 'duplicate';
  if (row.record.state === 'done') return (await finishCommitted(plane, row.record, true)).done ? 'evicted' : 'duplicate';
  if (row.record.state !== 'scheduled' || row.etag !== message.etag) return 'duplicate';

  const state = await recentPacerState(plane);
  const hold = !plane.config.failoverEnabled ? 'the Failover gate is off' : state.paused ? 'evictions are paused' : state.tier === 'halted' ? 'evictions are halted: too many clusters are faulty' : undefined;
  if (hold) {
    await unschedule(plane, row.record, row.etag, hold);
    return 'postponed';
  }

  const binding = await plane.bindings.get(message.bindingKey);
  const placedOn = (binding?.value.spec.clusters ?? []).map((c) => c.name);
  const now = plane.clock.now();
  if (!binding || !placedOn.includes(message.cluster)) {
    const left = { ...row.record, state: 'abandoned' as const, message: binding ? 'the binding is no longer on this cluster' : 'the binding was deleted', updatedAt: now.toISOString() };
    if ((await plane.ledger.updateEviction(left, row.etag)) === false) return 'duplicate';
    plane.metrics.recordProcessed(row.record.kind, 'abandoned');
    return 'left';
  }

  const check = preScheduleCheck({ placement: binding.value.spec.placement, placedOn, evictFrom: message.cluster, clusters: await fleetClusters(plane) });
  if (!check.ok) {
    const blocked = { ...row.record, state: 'blocked' as const, message: check.reason, attempts: row.record.attempts + 1, updatedAt: now.toISOString() };
    if ((await plane.ledger.updateEviction(blocked, row.etag)) !== false) {
      plane.metrics.recordProcessed(row.record.kind, 'blocked');
      await plane.events.append([evictionEvent(blocked, now, 'EvictionBlocked', `stays on ${message.cluster}: ${check.reason}`, 'Warning')]);
      plane.log.warn('eviction blocked', { cluster: message.cluster, binding: message.bindingKey, reason: check.reason });
    }
    return 'blocked';
  }

  // Commit point. decisionRev now records the binding revision the eviction applies to, so a redelivered
  // message can finish an interrupted eviction but never evict a later placement.
  const committed: EvictionRecord = { ...row.record, state: 'done', executedAt: now.toISOString(), attempts: row.record.attempts + 1, decisionRev: binding.value.rev, updatedAt: now.toISOString() };
  if (!(await plane.ledger.commitEviction(committed, row.etag))) {
    // Someone changed the row first. If it is `done`, this is a redelivery of an eviction that was
    // committed but not finished (the host died in between): finish it.
    const latest = await plane.ledger.getEviction(message.cluster, message.bindingKey);
    if (latest?.record.state === 'done' && (await finishCommitted(plane, latest.record, true)).done) return 'evicted';
    return 'lost-race';
  }
  const finished = await finishCommitted(plane, committed, false, binding);
  // The binding lost a cluster: place it again, here and now from the version just written (no queue hop,
  // no re-read); if that fails, the scheduler queue (and its resync) takes it.
  try {
    await scheduleBinding(plane, message.bindingKey, undefined, finished.written);
  } catch (error) {
    plane.log.warn('rescheduling after eviction failed; queued for the scheduler', { binding: message.bindingKey, ...errorFields(error) });
    await plane.scheduler.send({ binding: message.bindingKey });
  }
  const latency = (now.getTime() - Date.parse(row.record.decidedAt)) / 1000;
  plane.metrics.recordProcessed(row.record.kind, 'success', latency);
  await plane.events.append([evictionEvent(committed, now, 'Evicted', `evicted from ${message.cluster} (${committed.purgeMode}): ${committed.why}`, 'Warning')]);
  plane.log.info('evicted', { cluster: message.cluster, binding: message.bindingKey, purgeMode: committed.purgeMode, latencySeconds: latency });
  return 'evicted';
}

/**
 * Removes the cluster from the binding and records the graceful-eviction task; idempotent. A redelivered
 * message (`redelivery`) finishes only if the binding is still at the revision the commit saw.
 */
async function finishCommitted(plane: ControlPlane, record: EvictionRecord, redelivery: boolean, current?: Versioned<BindingRecord>): Promise<{ done: boolean; written?: Versioned<BindingRecord> }> {
  const { result, record: written, etag } = await writeBinding<boolean>(
    plane,
    record.bindingKey,
    (current, now) => {
      if (!current || (redelivery && current.rev !== record.decisionRev)) return keep(false);
      const eviction = evictFromPlacement(current.spec, record.cluster, { reason: 'TaintUntolerated', producer: 'TaintManager', purgeMode: record.purgeMode }, now);
      if (!eviction.evicted) return keep(false);
      current.spec.clusters = eviction.clusters;
      current.spec.gracefulEvictionTasks = eviction.gracefulEvictionTasks;
      current.generation += 1;
      current.traceparent = currentTraceCarrier().traceparent;
      return write(current, true);
    },
    { placementsAlreadyRemoved: [record.cluster], current },
  );
  return { done: result, ...(written && etag ? { written: { value: written, etag } } : {}) };
}
