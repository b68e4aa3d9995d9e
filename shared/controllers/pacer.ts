import type { EvictionRecord } from '../failover/bindingModel';
import { bypassesGate } from '../failover/drain';
import { assignSlots } from '../failover/evictionDecision';
import { shardOf } from '../store/ledgerTable';
import type { DueGroup, PacerState } from '../store/ports';
import { ATTR, inSpan, recordSpan } from '../telemetry/tracing';
import type { ControlPlane, EvictionMessage } from './ports';
import { evictionEvent, switchEvent, tierEvent } from './state/events';
import { currentFleetHealth, rememberPacerState } from './state/reads';

/**
 * The pacer turns due ledger rows into queue messages that become visible at the current global rate.
 * Send slots come from one stored row (`~pacer`) written with its ETag, so two pacers never hand out the
 * same slot and the rate is the same with one host or four. It looks ahead only WINDOW_MS, so a change of
 * fleet health changes the rate within seconds; at rate 0 it schedules nothing.
 */
export const WINDOW_MS = 3000;
/** Messages become visible this long before their slot; the worker waits out the rest (see host.json). */
export const SLOT_LEAD_SECONDS = 2;
/**
 * The first free slot is at least this far ahead, so that a message visible at once is picked up (queue
 * polling runs at least every maxPollingInterval, 1 s) before its slot, and evictions keep their spacing.
 */
export const MIN_SLOT_LEAD_MS = 1500;
/** Evictions one queue message carries at most (a row is under 1 kB: well inside the 64 KiB message limit). */
export const MAX_EVICTIONS_PER_MESSAGE = 16;

export interface PacerOutcome {
  tier: string;
  rate: number;
  scheduled: number;
  skipped?: 'gate' | 'paused' | 'halted' | 'busy' | 'conflict';
}

export async function runPacer(plane: ControlPlane): Promise<PacerOutcome> {
  const now = plane.clock.now();
  const nowMs = now.getTime();
  const [{ state, etag }, recent] = await Promise.all([plane.ledger.getPacerState(), currentFleetHealth(plane)]);
  // With the Failover gate off only a drain's rows go (a person's decision): the pacer looks at the
  // draining clusters' rows and leaves every other row where it is.
  const gateOff = !plane.config.failoverEnabled;
  const draining = new Set(state.draining);
  const held =
    gateOff && draining.size === 0
      ? 'gate'
      : state.paused
        ? 'paused'
        : Date.parse(state.nextSlotAt) > nowMs + MIN_SLOT_LEAD_MS + WINDOW_MS
          ? 'busy'
          : undefined;
  // Candidates in due order: due groups (one per cluster shard and due time) say which clusters have rows
  // due when; one range query per (due time, cluster) then reads those rows across the cluster's shards.
  const listed = held ? [] : await plane.ledger.listDue(new Date(nowMs + MIN_SLOT_LEAD_MS + WINDOW_MS).toISOString(), 500);
  const groups = gateOff ? listed.filter((group) => draining.has(group.cluster)) : listed;
  // The tier that claims rows is judged on the fleet as it is now, not on the second-old view (a fleet
  // that turned halted since, with rows decided on it, must schedule nothing). Idle ticks use the view.
  const health = groups.length > 0 ? await currentFleetHealth(plane, 0) : recent;
  const base: PacerState = { ...state, tier: health.tier, rate: health.rate, total: health.total, faulty: health.faulty, updatedAt: now.toISOString() };
  const skipped = held ?? (health.rate === 0 ? 'halted' : undefined);
  const healthChanged = state.tier !== base.tier || state.rate !== base.rate || state.total !== base.total || state.faulty !== base.faulty;
  if (skipped) {
    if (healthChanged && (await plane.ledger.putPacerState(base, etag))) await noteTier(plane, state, base);
    return { tier: health.tier, rate: health.rate, scheduled: 0, skipped };
  }

  const limit = Math.ceil((health.rate * WINDOW_MS) / 1000) + 1;
  const buckets = new Map<string, DueGroup[]>();
  for (const group of groups) {
    const id = `${group.dueAt}|${group.cluster}`;
    const bucket = buckets.get(id);
    if (bucket) bucket.push(group);
    else buckets.set(id, [group]);
  }
  const ready: Array<{ record: EvictionRecord; etag: string; group: string }> = [];
  const exhausted: DueGroup[] = [];
  /** Groups with a row the gate holds: kept for when the gate opens. */
  const gated = new Set<string>();
  for (const bucket of buckets.values()) {
    if (ready.length >= limit) break;
    const wanted = limit - ready.length;
    const { dueAt, cluster } = bucket[0];
    const rows = await plane.ledger.pendingDue(cluster, dueAt, wanted + 1);
    const taken = rows.slice(0, wanted);
    for (const row of taken) {
      const group = `${dueAt}|${cluster}|${shardOf(row.record.bindingKey)}`;
      if (gateOff && !bypassesGate(row.record)) gated.add(group);
      else ready.push({ ...row, group });
    }
    // Rows come in shard order: shards before the last one read have nothing more due at this time.
    const lastShard = rows.length > wanted ? shardOf(rows[rows.length - 1].record.bindingKey) : '~';
    exhausted.push(...bucket.filter((g) => g.shard < lastShard));
  }
  const { slots, nextFreeSlot } = assignSlots(
    ready.map((r) => Date.parse(r.record.dueAt)),
    Date.parse(state.nextSlotAt),
    nowMs + MIN_SLOT_LEAD_MS,
    health.rate,
    nowMs + MIN_SLOT_LEAD_MS + WINDOW_MS,
  );
  const claimed = ready.slice(0, slots.length);
  const next: PacerState = { ...base, nextSlotAt: new Date(nextFreeSlot).toISOString() };
  if (claimed.length > 0 || healthChanged) {
    if (!(await plane.ledger.putPacerState(next, etag))) return { tier: health.tier, rate: health.rate, scheduled: 0, skipped: 'conflict' };
    await noteTier(plane, state, next);
  }

  // The slots are ours: mark the rows scheduled (ETag-checked, batched per cluster), then send.
  const byCluster = new Map<string, number[]>();
  claimed.forEach((c, i) => byCluster.set(c.record.cluster, [...(byCluster.get(c.record.cluster) ?? []), i]));
  const sent: Array<Promise<void>> = [];
  const outgoing: Array<{ slot: number; traceparent?: string; message: EvictionMessage }> = [];
  let scheduled = 0;
  for (const indexes of byCluster.values()) {
    const updates = indexes.map((i) => ({
      record: { ...claimed[i].record, state: 'scheduled' as const, scheduledFor: new Date(slots[i]).toISOString(), updatedAt: now.toISOString() },
      etag: claimed[i].etag,
    }));
    let etags: Array<string | undefined>;
    try {
      etags = await plane.ledger.updateEvictions(updates);
    } catch {
      // One row changed since it was read (abandoned on recovery), and the batches without it may have
      // landed: read each row again. Ours are scheduled with this tick's stamp (send them with their new
      // ETag); one still pending at its old ETag is tried alone; any other was taken by someone else.
      etags = [];
      for (const update of updates) {
        const latest = await plane.ledger.getEviction(update.record.cluster, update.record.bindingKey);
        if (
          latest?.record.state === 'scheduled' &&
          latest.record.updatedAt === update.record.updatedAt &&
          latest.record.scheduledFor === update.record.scheduledFor
        )
          etags.push(latest.etag);
        else if (latest?.record.state === 'pending' && latest.etag === update.etag)
          etags.push((await plane.ledger.updateEviction(update.record, update.etag)) || undefined);
        else etags.push(undefined);
      }
    }
    indexes.forEach((i, k) => {
      const newEtag = etags[k];
      if (!newEtag) return;
      scheduled++;
      const row = updates[k].record;
      outgoing.push({
        slot: slots[i],
        traceparent: row.traceparent,
        message: { cluster: row.cluster, bindingKey: row.bindingKey, etag: newEtag, slot: row.scheduledFor, record: row },
      });
    });
  }
  // One queue message per run of slots less than a second apart (at most MAX_EVICTIONS_PER_MESSAGE): the
  // worker takes them in slot order, waiting for each, so a message costs a send and a delete whatever the
  // rate, and becomes visible SLOT_LEAD_SECONDS before its first slot.
  outgoing.sort((a, b) => a.slot - b.slot);
  const batches: Array<typeof outgoing> = [];
  for (const item of outgoing) {
    const batch = batches[batches.length - 1];
    if (batch && batch.length < MAX_EVICTIONS_PER_MESSAGE && item.slot - batch[0].slot < 1000) batch.push(item);
    else batches.push([item]);
  }
  for (const group of batches) {
    const first = group[0];
    const delaySeconds = Math.max(0, Math.floor((first.slot - nowMs) / 1000) - SLOT_LEAD_SECONDS);
    const attributes = (item: (typeof group)[number]) => ({
      [ATTR.cluster]: item.message.cluster,
      [ATTR.binding]: item.message.bindingKey,
      [ATTR.tier]: health.tier,
      [ATTR.rate]: health.rate,
      'failover.slot': item.message.slot,
    });
    // Each row's failure trace gets its pacer.schedule span; the message is sent in the first row's.
    for (const item of group.slice(1))
      recordSpan('pacer.schedule', { parent: { traceparent: item.traceparent }, startTime: Date.now(), attributes: attributes(item) });
    sent.push(
      inSpan('pacer.schedule', { parent: { traceparent: first.traceparent }, attributes: { ...attributes(first), [ATTR.count]: group.length } }, () =>
        plane.evictions.send({ evictions: group.map((item) => item.message) }, { delaySeconds }),
      ),
    );
  }
  await Promise.all(sent);
  // A group is dropped only when every one of its rows got a slot; otherwise it is read again next time.
  const unclaimed = new Set([...ready.slice(claimed.length).map((r) => r.group), ...gated]);
  await plane.ledger.deleteDue(exhausted.filter((g) => !unclaimed.has(g.rowKey)));
  if (scheduled > 0) {
    plane.log.info('evictions scheduled', { count: scheduled, tier: health.tier, rate: health.rate, firstSlot: new Date(slots[0]).toISOString() });
  }
  return { tier: health.tier, rate: health.rate, scheduled };
}

/** The pacer that wrote a change of tier records it (the console's tier history). */
async function noteTier(plane: ControlPlane, before: PacerState, after: PacerState): Promise<void> {
  if (before.tier === after.tier) return;
  await plane.events.append([tierEvent(before.tier, after.tier, after.rate, { total: after.total, faulty: after.faulty }, after.updatedAt)]);
}

/** POST /api/failover/pause and /resume: a stored switch the pacer and the worker read. */
export async function setPaused(plane: ControlPlane, paused: boolean): Promise<void> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const { state, etag } = await plane.ledger.getPacerState();
    if (state.paused === paused) return;
    const next = { ...state, paused, updatedAt: plane.clock.now().toISOString() };
    if (await plane.ledger.putPacerState(next, etag)) {
      rememberPacerState(plane, next);
      await plane.events.append([switchEvent(paused, plane.clock.now())]);
      plane.log.info(paused ? 'evictions paused' : 'evictions resumed');
      return;
    }
  }
  throw new Error('could not update the pause switch: too much contention');
}

/** Adds or removes a cluster from the pacer's draining set (ETag-checked); true when it changed. */
export async function setDraining(plane: ControlPlane, cluster: string, draining: boolean): Promise<boolean> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const { state, etag } = await plane.ledger.getPacerState();
    if (state.draining.includes(cluster) === draining) return false;
    const set = draining ? [...state.draining, cluster].sort() : state.draining.filter((name) => name !== cluster);
    const next = { ...state, draining: set, updatedAt: plane.clock.now().toISOString() };
    if (await plane.ledger.putPacerState(next, etag)) {
      rememberPacerState(plane, next);
      return true;
    }
  }
  throw new Error('could not update the draining clusters: too much contention');
}

/** Puts a scheduled row back to pending (paused or halted when its slot came): it keeps its place in line. */
export async function unschedule(plane: ControlPlane, record: EvictionRecord, etag: string, why: string): Promise<void> {
  const now = plane.clock.now().toISOString();
  const next: EvictionRecord = { ...record, state: 'pending', updatedAt: now, message: why };
  delete next.scheduledFor;
  if ((await plane.ledger.updateEviction(next, etag)) !== false) {
    await plane.ledger.addDue([next]);
    await plane.events.append([evictionEvent(next, now, 'EvictionPostponed', `eviction from ${record.cluster} postponed: ${why}`)]);
  }
}
