import { PlaneState } from '../cache';
import { mapConcurrent } from '../concurrency';
import type { EvictionRecord } from '../failover/bindingModel';
import { bypassesGate } from '../failover/drain';
import { assignSlots, directStartLeads, earliestSlot, slotHorizon, SlotLeads } from '../failover/evictionDecision';
import { evictionRowId, park, postpone, schedule } from '../failover/evictionRow';
import { interleave, startAfter, turnsOf } from '../failover/priority';
import type { DueGroup, PacerState, VersionedEviction } from '../store/ports';
import { errorFields } from '../telemetry/log';
import { ATTR, inSpan, recordSpan } from '../telemetry/tracing';
import type { ControlPlane, EvictionBatch, EvictionMessage } from './ports';
import { BudgetGate } from './state/budgets';
import { evictionEvent, switchEvent, tierEvent } from './state/events';
import { applyRowChange, applyRowChanges } from './state/evictionRows';
import { currentFleetHealth, rememberPacerState } from './state/reads';

/**
 * The pacer turns due ledger rows into queue messages that become visible at the current global rate.
 * Send slots come from one stored row (`~pacer`) written with its ETag, so two pacers never hand out the
 * same slot and the rate is the same with one host or four. It looks ahead only WINDOW_MS (more while its
 * ticks come late: slotHorizon), so a change of fleet health changes the rate within seconds; at rate 0 it
 * schedules nothing. The slots are one series, 1/rate apart across ticks and messages: a tick continues it at
 * its next free slot while a message can still reach the worker by then (earliestSlot), so a late tick
 * leaves no slot unused.
 *
 * Which due row takes the next slot: the binding's spec.schedulePriority.priority carried in the row, then
 * the due time, with a hard starvation bound (shared/failover/priority.ts). FailoverBudgets: a row is given a
 * slot only when every budget that selects its binding has room; the budgets count it in flight (one
 * ETag-checked write per budget) before it is released. A row without room waits out of the way (state
 * reason `BudgetExceeded`, one event) and is read again only when its budget has room, so it holds up no
 * other row and costs nothing while it waits. In flight is counted from a small per-budget record kept by
 * whoever releases, never from a listing of the bindings (why: shared/controllers/state/budgets.ts).
 */
export const WINDOW_MS = 3000;
/** Messages become visible this long before their slot; the worker waits out the rest (see host.json). */
export const SLOT_LEAD_SECONDS = 2;
/**
 * The first free slot is at least this far ahead, so that a message visible at once is picked up (queue
 * polling runs at least every maxPollingInterval, 1 s) before its slot, and evictions keep their spacing.
 */
export const MIN_SLOT_LEAD_MS = 1500;
/**
 * A running series continues down to this far ahead (host.json's maxPollingInterval: a message visible at
 * once is received by then), so a tick that comes late keeps the slots contiguous: restarting the series
 * MIN_SLOT_LEAD_MS out left the slots in between unused (an interval or more lost at the change of tick).
 */
export const DELIVERY_LEAD_MS = 1000;
export const SLOT_LEADS: SlotLeads = { freshMs: MIN_SLOT_LEAD_MS, deliveryMs: DELIVERY_LEAD_MS };

/**
 * The lead of a fresh series whose first messages are executed by the pass's own caller (`runHere`): the
 * rest of the pass and the worker's read, no queue in between.
 */
export const RUN_HERE_LEAD_MS = 50;
/** Messages whose first slot is nearer than this go to `runHere`: a queue poll could not deliver them in time. */
export const RUN_HERE_WITHIN_MS = 1000;
/** A short pass's leads: every slot runs here, so the series continues (or starts) RUN_HERE_LEAD_MS ahead. */
const RUN_HERE_LEADS: SlotLeads = { freshMs: RUN_HERE_LEAD_MS, deliveryMs: RUN_HERE_LEAD_MS };

export interface PacerOptions {
  /**
   * The caller executes the messages whose first slot is less than RUN_HERE_WITHIN_MS away itself (a
   * long-running invocation that cannot hand off: the Karmada watch), so a fresh series starts
   * RUN_HERE_LEAD_MS ahead; false: it cannot (it is about to end), and the message is sent. The rows are
   * `scheduled` as for any message: one lost with its process is put back in line by the repair, as a lost
   * message is.
   */
  runHere?: (batch: EvictionBatch) => boolean;
  /**
   * With `runHere`: hand out slots only this far ahead (at most RUN_HERE_WITHIN_MS, so that every one runs
   * here), continuing the series right where it stands. A pass repeated at short intervals while failures are
   * being planned (paceAndRun.ts) commits little ahead, so a cluster whose rows are stored a moment later
   * takes turns with the others instead of waiting behind a whole look-ahead of their slots.
   */
  lookAheadMs?: number;
  /**
   * With `runHere`, and no deadline for it: a running series continues RUN_HERE_LEAD_MS ahead, not a queue
   * poll's lead (implied by `lookAheadMs`).
   */
  allHere?: boolean;
  /**
   * A short pass's clusters expected to have rows soon (the failures being planned here): while fewer have
   * rows stored, each takes at most its share of the pass's slots as if they all had, leaving the rest to the
   * next pass, when the others' first rows may be there to take turns with.
   */
  lanesExpected?: number;
  /**
   * A short pass's planners here have yet to hand over their first rows: each cluster takes one slot this
   * pass, so that the series stays a moment ahead and a cluster whose first rows come next takes its turn at
   * once, not behind the slots the others were given.
   */
  firstRowsAwaited?: boolean;
  /**
   * With `runHere`: whether rows were just stored for this pass to hand out (default true: a pass right after
   * planning), so that its reads go out beside the pacer row's. A short pass that may find nothing reads them
   * only once it knows it has room, and none when nothing is due.
   */
  rowsJustStored?: boolean;
  /**
   * With `runHere`: rows this process has just planned, held with the ETags their write returned (the
   * planning loop's pool, by evictionRowId). While it holds rows due by the pass's horizon, the pass hands
   * out slots to these rows instead of reading the due rows from storage, which is busiest then: storing the
   * rest of the plans. Any pass given the pool removes the rows it acted on (slotted, or set to wait for a
   * budget); the others stay pending where they are, found by any later pass that reads storage. A row
   * changed since it was planned fails its ETag and keeps its place in line (its slot goes unused).
   */
  planned?: Map<string, VersionedEviction>;
}
/**
 * How far ahead a tick hands out slots: MIN_SLOT_LEAD_MS + WINDOW_MS, or more while the ticks come further
 * apart than that covers (failover/evictionDecision.ts: slotHorizon), at most MAX_LOOK_AHEAD_MS.
 */
export const MAX_LOOK_AHEAD_MS = 10_000;
const LOOK_AHEAD = { baseMs: MIN_SLOT_LEAD_MS + WINDOW_MS, deliveryMs: DELIVERY_LEAD_MS, tickMs: 1000, maxMs: MAX_LOOK_AHEAD_MS };
/** Due groups a pass reads at most (a group is one cluster shard's rows of one due time). */
const DUE_GROUPS_PER_PASS = 500;
/** Evictions one queue message carries at most (a row is under 1 kB: well inside the 64 KiB message limit). */
export const MAX_EVICTIONS_PER_MESSAGE = 16;

export interface PacerOutcome {
  tier: string;
  rate: number;
  scheduled: number;
  skipped?: 'gate' | 'paused' | 'halted' | 'busy' | 'conflict';
  /** Each cluster's first slot handed out by this pass (epoch ms). */
  firstSlots?: Record<string, number>;
}

/** Pacer passes after planning: another pass that wrote the pacer's row first (the timer) may not have seen the new rows. */
const PACE_ATTEMPTS = 3;

/** Per process: how many passes that run their first evictions themselves are on their way (planning, then pacing). */
const passesHere = new PlaneState<{ count: number }>('pacerPassesHere');

/**
 * Announces a pacer pass whose first evictions its caller will run itself, from before the rows it follows
 * are planned until it is done (call the returned function then). Meanwhile this process's timer ticks hand
 * out no slots: a tick that won the pacer's row would give the new rows the queue's lead (a second and a
 * half) instead of the caller's, and the pass that follows planning paces every due row anyway.
 */
export function announcePassHere(plane: ControlPlane): () => void {
  return holdCount(passesHere.of(plane, () => ({ count: 0 })));
}

/**
 * Counts one more holder in `state` until the returned function is called (once: later calls do nothing);
 * the last one to let go resumes whoever waits for none to be left (`idle`).
 */
function holdCount(state: { count: number; idle?: Array<() => void> }): () => void {
  state.count++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    state.count--;
    if (state.count === 0) for (const resume of state.idle?.splice(0) ?? []) resume();
  };
}

export const passesHereAnnounced = (plane: ControlPlane): number => passesHere.get(plane)?.count ?? 0;
export const passHereAnnounced = (plane: ControlPlane): boolean => passesHereAnnounced(plane) > 0;

/** Per process: the short pass of the loop that paces while failures are planned here (paceAndRun.ts), while it runs. */
const shortPassHere = new PlaneState<{ run?: (rows: readonly VersionedEviction[]) => Promise<PacerOutcome> }>('pacerShortPassHere');

/**
 * While it runs, the planning loop offers its short pass: `run` takes a planner's first rows (as stored, with
 * their ETags) and returns a pass that began after the call.
 */
export function offerShortPass(plane: ControlPlane, run: ((rows: readonly VersionedEviction[]) => Promise<PacerOutcome>) | undefined): void {
  shortPassHere.of(plane, () => ({})).run = run;
}

/**
 * A planner's first rows are stored: when the planning loop runs here, hands them to it and waits for a
 * short pass that began after them (so they have their slots before the rest of the plan competes with the
 * pass for storage); otherwise at once. The cluster's first slot that pass handed out (epoch ms), if any. A
 * pass that fails is the loop's to report.
 */
export async function paceFirstRows(plane: ControlPlane, rows: readonly VersionedEviction[]): Promise<number | undefined> {
  const outcome = await shortPassHere
    .get(plane)
    ?.run?.(rows)
    .catch(() => undefined);
  return rows.length > 0 ? outcome?.firstSlots?.[rows[0].record.cluster] : undefined;
}

/** Per process: planners here that will hand their first rows to the planning loop and have not yet. */
const firstRowsPending = new PlaneState<{ count: number }>('pacerFirstRowsPending');

/**
 * A planner here is about to read a cluster whose first rows it will hand to the planning loop (call the
 * returned function once it has, or once it knows it has none). While any is pending and the loop holds
 * no rows, the loop's own passes wait instead of reading storage (planningLoop in paceAndRun.ts).
 */
export function expectFirstRows(plane: ControlPlane): () => void {
  return pacingWhilePlanning(plane) ? holdCount(firstRowsPending.of(plane, () => ({ count: 0 }))) : () => undefined;
}

export const firstRowsExpected = (plane: ControlPlane): boolean => (firstRowsPending.get(plane)?.count ?? 0) > 0;

/** Per process: planners here whose clusters have yet to see their first eviction run, and the plans waiting for them. */
const firstEvictionsPending = new PlaneState<{ count: number; idle: Array<() => void> }>('pacerFirstEvictionsPending');

/**
 * A planner here is about to read a cluster whose first rows the planning loop will run (call the returned
 * function once the first of them has had its slot, or once it knows there is none). Meanwhile the rest of
 * every plan here waits (`othersFirstEvictions`).
 */
export function expectFirstEviction(plane: ControlPlane): () => void {
  return pacingWhilePlanning(plane) ? holdCount(firstEvictionsPending.of(plane, () => ({ count: 0, idle: [] }))) : () => undefined;
}

/**
 * Waits, at most `maxMs`, until every cluster planned here has had its first eviction's slot. The rest of a
 * plan is seconds of storage writes: sent while other clusters are still being listed, storing their first
 * rows, being given slots or running their first evictions, it puts its transactions ahead of each of those
 * requests, and so delays those clusters' first evictions. The writes are the same either way, so the plans
 * are stored at about the same time.
 */
export async function othersFirstEvictions(plane: ControlPlane, maxMs: number): Promise<void> {
  const state = firstEvictionsPending.get(plane);
  if (!state || state.count === 0) return;
  let timer: NodeJS.Timeout | undefined;
  await new Promise<void>((resolve) => {
    state.idle.push(resolve);
    timer = setTimeout(resolve, maxMs);
  });
  clearTimeout(timer);
}

/** Whether the planning loop runs here (a planner's first rows would get a short pass of their own). */
export const pacingWhilePlanning = (plane: ControlPlane): boolean => shortPassHere.get(plane)?.run !== undefined;

/**
 * A pacer pass right after rows were planned, instead of waiting up to a second for the timer's tick. It is
 * the pass the timer runs, ETag-guarded on the pacer's row, so two passes never hand out the same slot. One
 * that fails leaves the rows to the next tick: the planning stands.
 */
export async function paceAfterPlanning(plane: ControlPlane, options: PacerOptions = {}): Promise<void> {
  try {
    await paceUnlessOvertaken(plane, options);
  } catch (error) {
    plane.log.warn('pacer pass after planning failed: the next tick paces the rows', { ...errorFields(error) });
  }
}

/**
 * A pass for rows just planned, tried again at once when another writer took the pacer's row first (up to
 * PACE_ATTEMPTS passes): that writer may not have seen the new rows, which would otherwise wait a pass.
 */
export async function paceUnlessOvertaken(plane: ControlPlane, options: PacerOptions): Promise<PacerOutcome> {
  let outcome = await runPacer(plane, options);
  for (let attempt = 1; attempt < PACE_ATTEMPTS && outcome.skipped === 'conflict'; attempt++) outcome = await runPacer(plane, options);
  return outcome;
}

export async function runPacer(plane: ControlPlane, options: PacerOptions = {}): Promise<PacerOutcome> {
  const shortPass = options.runHere !== undefined && options.lookAheadMs !== undefined;
  const leads =
    shortPass || (options.runHere && options.allHere) ? RUN_HERE_LEADS : options.runHere ? directStartLeads(SLOT_LEADS, RUN_HERE_LEAD_MS) : SLOT_LEADS;
  // Passes that send their slots by queue yield to a pass announced in this process, and to short passes
  // running the series in any process (the pacer row's lease).
  const yieldsToPassHere = (state: PacerState, atMs: number) => !options.runHere && (passHereAnnounced(plane) || shortPassesRunning(state, atMs));
  // With the Failover gate off only a drain's rows go, and the pool holds none: such a pass reads storage.
  const planned = options.runHere && options.planned && options.planned.size > 0 && plane.config.failoverEnabled ? options.planned : undefined;
  const now = plane.clock.now();
  const nowMs = now.getTime();
  // A pass right after planning has rows to hand out: the due listing (to the furthest horizon a pass may
  // have, cut to this pass's once that is known), the fresh fleet view and the budgets are read beside the
  // pacer's row instead of after it (an idle tick reads none of them).
  const early =
    options.runHere && options.rowsJustStored !== false
      ? {
          // Not when the pool is likely to serve the pass (then, if it does not, the listing is read after all).
          listed:
            planned && hasDueRows(planned, nowMs + MAX_LOOK_AHEAD_MS)
              ? undefined
              : plane.ledger.listDue(new Date(nowMs + MAX_LOOK_AHEAD_MS).toISOString(), DUE_GROUPS_PER_PASS),
          fresh: currentFleetHealth(plane, 0),
          budgets: BudgetGate.open(plane, now),
        }
      : undefined;
  // Not needed when the pass is held or finds nothing: never left rejected and unhandled.
  for (const read of early ? [early.listed, early.fresh, early.budgets] : []) void read?.catch(() => undefined);
  const [{ state, etag }, recent] = await Promise.all([plane.ledger.getPacerState(), currentFleetHealth(plane)]);
  const nextSlotAt = Date.parse(state.nextSlotAt);
  // The row's updatedAt is the last tick that handed out slots (or changed the tier).
  const fullHorizon = slotHorizon(nextSlotAt, nowMs, Date.parse(state.updatedAt), LOOK_AHEAD);
  const horizon = shortPass ? Math.min(fullHorizon, nowMs + Math.min(options.lookAheadMs!, RUN_HERE_WITHIN_MS)) : fullHorizon;
  // With the Failover gate off only a drain's rows go (a person's decision): the pacer looks at the
  // draining clusters' rows and leaves every other row where it is.
  const gateOff = !plane.config.failoverEnabled;
  const draining = new Set(state.draining);
  const yielding = yieldsToPassHere(state, nowMs);
  const held = gateOff && draining.size === 0 ? 'gate' : state.paused ? 'paused' : nextSlotAt > horizon || yielding ? 'busy' : undefined;
  // Candidates in due order: due groups (one per cluster shard and due time) say which clusters have rows
  // due when; one range query per (due time, cluster) then reads those rows across the cluster's shards.
  const fresh = held ? undefined : early?.fresh;
  const budgetsRead = held ? undefined : early?.budgets;
  // The pool serves the pass when it holds rows due by the horizon; rows due later are read from storage when due.
  const pooled = planned && !held ? memoryBuckets(planned, horizon) : undefined;
  const inMemory = pooled && pooled.size > 0 ? pooled : undefined;
  const listed = held
    ? []
    : inMemory
      ? [...inMemory.keys()]
      : early?.listed
        ? (await early.listed).filter((group) => group.parkedFor !== undefined || Date.parse(group.dueAt) <= horizon)
        : await plane.ledger.listDue(new Date(horizon).toISOString(), DUE_GROUPS_PER_PASS);
  const groups = gateOff ? listed.filter((group) => draining.has(group.cluster)) : listed;
  // The tier that claims rows is judged on the fleet as it is now, not on the second-old view (a fleet
  // that turned halted since, with rows decided on it, must schedule nothing). Idle ticks use the view.
  const health = groups.length > 0 ? await (fresh ?? currentFleetHealth(plane, 0)) : recent;
  const base: PacerState = { ...state, tier: health.tier, rate: health.rate, total: health.total, unhealthy: health.unhealthy, updatedAt: now.toISOString() };
  const skipped = held ?? (health.rate === 0 ? 'halted' : undefined);
  const healthChanged = state.tier !== base.tier || state.rate !== base.rate || state.total !== base.total || state.unhealthy !== base.unhealthy;
  if (skipped) {
    // A tick that yields to a pass here leaves the row to it (that pass writes the fleet's change with its
    // slots): a write here would make it lose the row and hand out nothing until its next try.
    if (healthChanged && !yielding && (await plane.ledger.putPacerState(base, etag))) await noteTier(plane, state, base);
    return { tier: health.tier, rate: health.rate, scheduled: 0, skipped };
  }

  // The series continues at its next free slot whenever that can still be reached (however late this
  // tick), so the rows to read are the slots from there to the horizon: a late tick has more of them.
  const firstSlot = Math.max(nextSlotAt, earliestSlot(nextSlotAt, nowMs, leads));
  const limit = Math.ceil(((horizon - firstSlot) * health.rate) / 1000) + 1;
  // One bucket per (due key, cluster): rows of one due time, priority and holding budget, across the
  // cluster's shards. Buckets go in the queue's order, cut into turns (shared/failover/priority.ts: due rows
  // by priority, clusters taking turns within one; a row due for STARVATION_SECONDS goes first whatever its
  // priority).
  const byKey = new Map<string, DueGroup[]>();
  for (const group of groups) {
    const id = `${group.parkedFor ?? ''}|${group.priority ?? 0}|${group.dueAt}|${group.cluster}`;
    const bucket = byKey.get(id);
    if (bucket) bucket.push(group);
    else byKey.set(id, [group]);
  }
  const turns = turnsOf(
    [...byKey.values()].map((bucket) => ({
      bucket,
      cluster: bucket[0].cluster,
      parkedFor: bucket[0].parkedFor,
      priority: bucket[0].priority ?? 0,
      dueAt: Date.parse(bucket[0].dueAt),
    })),
    nowMs + MIN_SLOT_LEAD_MS,
  ).map((turn) => startAfter(turn, state.lastCluster));
  // FailoverBudgets: read only when there is something to release (an idle tick reads none).
  const gate = groups.length > 0 ? await (budgetsRead ?? BudgetGate.open(plane, now)) : undefined;
  const ready: Ready[] = [];
  /** Groups with a row the gate holds: kept for when the gate opens. */
  const gated = new Set<string>();
  let parkable = MAX_PARKED_PER_TICK;
  const cursors: BucketCursor[] = [];
  /** The next `asked` pending rows of a bucket, in pendingDue's order: from storage, or from the pool. */
  const read = (cursor: BucketCursor, asked: number): Promise<VersionedEviction[]> => {
    const pool = inMemory?.get(cursor.bucket[0]);
    if (pool) return Promise.resolve(pool.filter((row) => !cursor.parked.has(row.record.bindingKey)).slice(0, asked));
    const { dueAt, cluster, priority, parkedFor } = cursor.bucket[0];
    return plane.ledger.pendingDue(cluster, dueAt, asked, { priority, parkedFor });
  };

  /** Takes up to `want` rows of a bucket into `out`, from where earlier calls this pass left it; how many it took. */
  const take = async (cursor: BucketCursor, want: number, out: Ready[]): Promise<number> => {
    const { parkedFor } = cursor.bucket[0];
    let taken = 0;
    for (let round = 0; round < MAX_ROUNDS && !cursor.full; round++) {
      const prefetched = round === 0 ? cursor.prefetched : undefined;
      cursor.prefetched = undefined;
      if (prefetched && prefetched.asked >= cursor.stillPending + want + 1) {
        cursor.asked = prefetched.asked;
        cursor.rows = await prefetched.rows;
      } else {
        cursor.asked = cursor.stillPending + (want - taken) + 1;
        cursor.rows = await read(cursor, cursor.asked);
      }
      const toPark: Parking[] = [];
      for (const row of cursor.rows) {
        if (cursor.seen.has(row.record.bindingKey)) continue;
        if (taken >= want) break;
        const group = plane.ledger.dueGroupOf(row.record);
        if (gateOff && !bypassesGate(row.record)) {
          cursor.seen.add(row.record.bindingKey);
          cursor.stillPending++;
          gated.add(group);
          continue;
        }
        const { admission, budgets } = await gate!.admit(row.record);
        if (admission.allowed) {
          cursor.seen.add(row.record.bindingKey);
          cursor.stillPending++;
          await gate!.reserve(row.record, budgets, 'pacer');
          out.push({ ...row, group, budgets });
          taken++;
        } else if (admission.blockedBy === parkedFor) {
          // The budget holding this bucket filled up again this tick: its other rows wait as they are.
          cursor.full = true;
          break;
        } else {
          cursor.seen.add(row.record.bindingKey);
          cursor.parked.add(row.record.bindingKey);
          toPark.push({ row, blockedBy: admission.blockedBy, limit: admission.limit, inFlight: admission.inFlight });
        }
      }
      if (toPark.length === 0) break;
      await parkForBudgets(plane, toPark, now);
      parkable -= toPark.length;
      // Rows behind the ones that now wait are read in another round, while this tick may still park.
      if (cursor.rows.length < cursor.asked || taken >= want || parkable <= 0) break;
    }
    return taken;
  };

  for (const turn of turns) {
    if (ready.length >= limit) break;
    // A budget's waiting rows are read only when it has room again (such a bucket is a turn of its own).
    const parkedFor = turn[0][0].bucket[0].parkedFor;
    if (parkedFor !== undefined && !(await gate!.hasRoom(parkedFor))) continue;
    const lanes = turn.map((lane) => ({ cursors: lane.map(({ bucket }) => newCursor(bucket)), at: 0, taken: [] as Ready[] }));
    const laneCap = !shortPass
      ? limit
      : options.firstRowsAwaited
        ? 1
        : options.lanesExpected
          ? Math.max(1, Math.ceil(limit / Math.max(options.lanesExpected, lanes.length)))
          : limit;
    let active = lanes;
    // The room left is shared out evenly among the lanes that still have rows, until it is used or they run out.
    while (active.length > 0) {
      const room = limit - ready.length - lanes.reduce((sum, lane) => sum + lane.taken.length, 0);
      if (room <= 0) break;
      // The share is rounded down (rounded up, the lanes served first would use all the room and the last ones
      // get none); room for fewer rows than there are lanes goes to the first lanes, one row each.
      const serving = active.slice(0, room);
      const share = Math.floor(room / serving.length);
      // The lanes' reads go out together; the rows are then taken lane by lane (the budgets admit in order).
      if (serving.length > 1)
        for (const lane of serving) {
          const cursor = lane.cursors[lane.at];
          const asked = cursor.stillPending + share + 1;
          const rows = read(cursor, asked);
          void rows.catch(() => undefined);
          cursor.prefetched = { asked, rows };
        }
      for (const lane of serving) {
        let want = Math.min(share, laneCap - lane.taken.length, limit - ready.length - lanes.reduce((sum, l) => sum + l.taken.length, 0));
        while (want > 0 && lane.at < lane.cursors.length) {
          const cursor = lane.cursors[lane.at];
          if (cursor.asked === 0) cursors.push(cursor);
          const taken = await take(cursor, want, lane.taken);
          want -= taken;
          // Fewer than asked, or a read that came back short: the bucket has no more that can go this tick.
          if (want > 0 || (cursor.rows.length < cursor.asked && !cursor.full)) lane.at++;
        }
      }
      active = active.filter((lane) => lane.at < lane.cursors.length && lane.taken.length < laneCap);
    }
    ready.push(...interleave(lanes.map((lane) => lane.taken)));
  }
  // The pool's rows set to wait for a budget have left its pending rows (whether this pass read them from the
  // pool or from storage: a planner may have handed them over while it read).
  for (const cursor of cursors) for (const key of cursor.parked) options.planned?.delete(evictionRowId({ cluster: cursor.bucket[0].cluster, bindingKey: key }));
  // The groups the ledger has read past hold nothing more due: those before the first row read and not
  // handled; all of them when the read came back short; those before the last row when it came back full.
  const exhausted: DueGroup[] = [];
  // The pool's buckets say nothing of what storage holds: their groups are left to a pass that reads them.
  for (const cursor of cursors.filter((c) => !inMemory?.has(c.bucket[0]))) {
    const firstLeft = cursor.rows.find((row) => !cursor.seen.has(row.record.bindingKey));
    const readPast = firstLeft ?? (cursor.rows.length < cursor.asked && !cursor.full ? undefined : cursor.rows[cursor.rows.length - 1]);
    exhausted.push(...plane.ledger.groupsBefore(cursor.bucket, readPast?.record));
  }
  // The leads count from now, not from the tick's start: the reads above may have been slow, and a slot
  // whose message goes out later than its lead allows is missed by the worker.
  const handedOutAt = plane.clock.now().getTime();
  const { slots, nextFreeSlot } = assignSlots(
    ready.map((r) => Date.parse(r.record.dueAt)),
    nextSlotAt,
    earliestSlot(nextSlotAt, handedOutAt, leads),
    health.rate,
    horizon + (handedOutAt - nowMs),
  );
  const lastCluster = slots.length > 0 ? ready[slots.length - 1].record.cluster : state.lastCluster;
  const next: PacerState = {
    ...base,
    nextSlotAt: new Date(nextFreeSlot).toISOString(),
    ...(lastCluster !== undefined ? { lastCluster } : {}),
    ...(shortPass && slots.length > 0 ? { shortPassesUntil: new Date(handedOutAt + SHORT_PASSES_LEASE_MS).toISOString() } : {}),
  };
  // Checked again right before the claim: a pass here may have been announced while this one read.
  if (slots.length > 0 && yieldsToPassHere(state, handedOutAt)) return { tier: health.tier, rate: health.rate, scheduled: 0, skipped: 'busy' };
  if (slots.length > 0 || healthChanged) {
    if (!(await plane.ledger.putPacerState(next, etag))) return { tier: health.tier, rate: health.rate, scheduled: 0, skipped: 'conflict' };
    await noteTier(plane, state, next);
  }
  // The budgets count the rows that got a slot as in flight (ETag-checked) before any is released; a row
  // another writer left no room for keeps its place in line (its slot goes unused).
  const slotted = new Set(ready.slice(0, slots.length).map((r) => evictionRowId(r.record)));
  const refused = gate ? await gate.commit((entry) => slotted.has(evictionRowId({ cluster: entry.cluster, bindingKey: entry.binding }))) : new Set<string>();
  const claimed = ready
    .slice(0, slots.length)
    .map((r, i) => ({ ...r, slot: slots[i] }))
    .filter((r) => !refused.has(evictionRowId(r.record)));
  // The pool's rows about to be marked scheduled leave it (however this pass found them).
  for (const r of claimed) options.planned?.delete(evictionRowId(r.record));

  // The slots are ours: mark the rows scheduled (ETag-checked, batched per cluster, the clusters side by
  // side: their partitions are distinct), then send.
  const byCluster = new Map<string, number[]>();
  claimed.forEach((c, i) => byCluster.set(c.record.cluster, [...(byCluster.get(c.record.cluster) ?? []), i]));
  const sent: Array<Promise<void>> = [];
  const outgoing: Array<{ slot: number; traceparent?: string; message: EvictionMessage }> = [];
  let scheduled = 0;
  await mapConcurrent([...byCluster.values()], CLUSTERS_SCHEDULED_AT_ONCE, async (indexes) => {
    const updates = indexes.map((i) => ({ change: schedule(claimed[i].record, claimed[i].slot, now), etag: claimed[i].etag }));
    const etags = await applyRowChanges(plane, updates);
    indexes.forEach((i, k) => {
      const newEtag = etags[k];
      if (!newEtag) return;
      scheduled++;
      const row = updates[k].change.record;
      outgoing.push({
        slot: claimed[i].slot,
        traceparent: row.traceparent,
        message: { cluster: row.cluster, bindingKey: row.bindingKey, etag: newEtag, slot: row.scheduledFor!, record: row },
      });
    });
  });
  // One queue message per run of slots less than a second apart (at most MAX_EVICTIONS_PER_MESSAGE): the
  // worker acts on each at its slot, so a message costs a send and a delete whatever the rate, and becomes
  // visible SLOT_LEAD_SECONDS before its first slot.
  outgoing.sort((a, b) => a.slot - b.slot);
  const batches: Array<typeof outgoing> = [];
  for (const item of outgoing) {
    const batch = batches[batches.length - 1];
    if (batch && batch.length < MAX_EVICTIONS_PER_MESSAGE && item.slot - batch[0].slot < 1000) batch.push(item);
    else batches.push([item]);
  }
  // Delays count from the send (the row writes above took their time).
  const sentAt = plane.clock.now().getTime();
  for (const group of batches) {
    const first = group[0];
    const delaySeconds = Math.max(0, Math.floor((first.slot - sentAt) / 1000) - SLOT_LEAD_SECONDS);
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
    if (options.runHere && first.slot - sentAt < RUN_HERE_WITHIN_MS && options.runHere({ evictions: group.map((item) => item.message) })) {
      recordSpan('pacer.schedule', {
        parent: { traceparent: first.traceparent },
        startTime: Date.now(),
        attributes: { ...attributes(first), [ATTR.count]: group.length },
      });
      continue;
    }
    sent.push(
      inSpan('pacer.schedule', { parent: { traceparent: first.traceparent }, attributes: { ...attributes(first), [ATTR.count]: group.length } }, () =>
        plane.evictions.send({ evictions: group.map((item) => item.message) }, { delaySeconds }),
      ),
    );
  }
  await Promise.all(sent);
  // A group is dropped only when every one of its rows got a slot (or went to wait for a budget);
  // otherwise it is read again next time.
  const releasedNow = new Set(claimed.map((r) => evictionRowId(r.record)));
  const unclaimed = new Set([...ready.filter((r) => !releasedNow.has(evictionRowId(r.record))).map((r) => r.group), ...gated]);
  await plane.ledger.deleteDue(exhausted.filter((g) => !unclaimed.has(g.token)));
  if (scheduled > 0) {
    plane.log.info('evictions scheduled', { count: scheduled, tier: health.tier, rate: health.rate, firstSlot: new Date(claimed[0].slot).toISOString() });
  }
  const firstSlots: Record<string, number> = {};
  for (const { slot, message } of outgoing) firstSlots[message.cluster] = Math.min(firstSlots[message.cluster] ?? slot, slot);
  return { tier: health.tier, rate: health.rate, scheduled, ...(scheduled > 0 ? { firstSlots } : {}) };
}

/** Clusters whose rows a pass marks scheduled at once (one batch per cluster shard each). */
const CLUSTERS_SCHEDULED_AT_ONCE = 4;

/** Rows read per bucket in one tick at most this many times (rows that start waiting for a budget make room for the next). */
const MAX_ROUNDS = 8;
/** Rows that start waiting for a budget in one tick, at most (the rest on the next tick). */
export const MAX_PARKED_PER_TICK = 256;

/** Where a pass stands in one bucket: its last read and the rows of it already taken or held. */
interface BucketCursor {
  bucket: DueGroup[];
  seen: Set<string>;
  /** Rows taken or held by the gate this pass: still pending, so read again by a later read. */
  stillPending: number;
  /** Rows set to wait for a budget this pass (no longer pending here). */
  parked: Set<string>;
  /** Rows the last read asked for (0: not read yet). */
  asked: number;
  rows: VersionedEviction[];
  /** The budget holding the bucket filled up again. */
  full: boolean;
  /** Its next read, sent beside the other lanes' (taken when it asked for enough). */
  prefetched?: { asked: number; rows: Promise<VersionedEviction[]> };
}

const newCursor = (bucket: DueGroup[]): BucketCursor => ({ bucket, seen: new Set(), stillPending: 0, asked: 0, rows: [], full: false, parked: new Set() });

/**
 * How long a short pass's slots keep passes that send by queue from handing out slots (the pacer row's
 * `shortPassesUntil`): the loop's next pass comes PLANNING_PASS_INTERVAL_MS later and hands out slots
 * PLANNING_PASS_LOOK_AHEAD_MS ahead (paceAndRun.ts), so a lease of both spans a running loop's passes, and
 * one whose process is gone lapses within a second.
 */
export const SHORT_PASSES_LEASE_MS = 1000;

const shortPassesRunning = (state: PacerState, atMs: number): boolean => state.shortPassesUntil !== undefined && Date.parse(state.shortPassesUntil) > atMs;

/** Whether the pool holds a row due by `horizon` (epoch ms). */
const hasDueRows = (planned: Map<string, VersionedEviction>, horizon: number): boolean =>
  [...planned.values()].some((row) => row.record.state === 'pending' && Date.parse(row.record.dueAt) <= horizon);

/**
 * The pool's rows due by `horizon` as buckets of the pass (one per cluster, due time and priority, rows in
 * the order they were planned), each under a group made for the pass: not one the ledger lists.
 */
function memoryBuckets(planned: Map<string, VersionedEviction>, horizon: number): Map<DueGroup, VersionedEviction[]> {
  const byKey = new Map<string, { group: DueGroup; rows: VersionedEviction[] }>();
  for (const row of planned.values()) {
    const { cluster, dueAt, priority } = row.record;
    if (row.record.state !== 'pending' || Date.parse(dueAt) > horizon) continue;
    const key = `${priority ?? 0}|${dueAt}|${cluster}`;
    const bucket = byKey.get(key);
    if (bucket) bucket.rows.push(row);
    else byKey.set(key, { group: { token: `planned|${key}`, cluster, dueAt, ...(priority ? { priority } : {}) }, rows: [row] });
  }
  return new Map([...byKey.values()].map(({ group, rows }) => [group, rows]));
}

interface Ready extends VersionedEviction {
  /** Its due group's row key. */
  group: string;
  /** The budgets that count it in flight once it has a slot. */
  budgets: string[];
}

interface Parking {
  row: VersionedEviction;
  blockedBy: string;
  limit: number;
  inFlight: number;
}

/**
 * Rows a FailoverBudget has no room for wait, out of the way (state reason `BudgetExceeded`, due key of the
 * budget: see shared/store/ledger/entities.ts), so they are not read again every tick and the rows behind
 * them go. The event is written when a row starts waiting, not while it waits.
 */
async function parkForBudgets(plane: ControlPlane, rows: Parking[], now: Date): Promise<void> {
  const updates = rows.map(({ row, blockedBy, limit, inFlight }) => ({
    change: park(row.record, { name: blockedBy, limit, inFlight }, now),
    etag: row.etag,
  }));
  const etags = await applyRowChanges(plane, updates);
  const waiting = updates.filter((_, i) => etags[i]).map((u) => u.change);
  if (waiting.length === 0) return;
  const started = waiting.filter((change) => change.before?.stateReason !== 'BudgetExceeded');
  if (started.length > 0) {
    await plane.events.append(
      started.map(({ record }) =>
        evictionEvent(
          record,
          now,
          'BudgetExceeded',
          `eviction from ${record.cluster} waits: ${record.message}; it goes as soon as the budget allows`,
          'Warning',
        ),
      ),
    );
    plane.log.info('evictions wait for a budget', { count: started.length, budgets: [...new Set(started.map((c) => c.record.waitingFor))] });
  }
}

/** The pacer that wrote a change of tier records it (the console's tier history). */
async function noteTier(plane: ControlPlane, before: PacerState, after: PacerState): Promise<void> {
  if (before.tier === after.tier) return;
  await plane.events.append([tierEvent(before.tier, after.tier, after.rate, { total: after.total, unhealthy: after.unhealthy }, after.updatedAt)]);
}

/** POST /api/failover/pause and /resume: a stored switch the pacer and the worker read. */
export async function setPaused(plane: ControlPlane, paused: boolean, actor?: string): Promise<void> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const { state, etag } = await plane.ledger.getPacerState();
    if (state.paused === paused) return;
    const next = { ...state, paused, updatedAt: plane.clock.now().toISOString() };
    if (await plane.ledger.putPacerState(next, etag)) {
      rememberPacerState(plane, next);
      await plane.events.append([switchEvent(paused, plane.clock.now(), actor)]);
      plane.log.info(paused ? 'evictions paused' : 'evictions resumed', actor ? { actor } : {});
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
  const change = postpone(record, why, now);
  if ((await applyRowChange(plane, etag, change)) !== undefined) {
    await plane.events.append([evictionEvent(change.record, now, 'EvictionPostponed', `eviction from ${record.cluster} postponed: ${why}`)]);
  }
}
