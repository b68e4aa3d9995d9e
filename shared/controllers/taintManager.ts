import { PlaneState } from '../cache';
import { SharedPass } from '../concurrency';
import { ACTIVE_STATES, bindingKey, EvictionRecord, EvictionState, parseBindingKey, pendingEviction } from '../failover/bindingModel';
import { DRAIN_REASON } from '../failover/drain';
import { decidedInEpisode, decideEviction, episodeStart, isFaultyTaint } from '../failover/evictionDecision';
import { abandon, plan, retry, type RowChange, supersede } from '../failover/evictionRow';
import { FAILBACK_REASON } from '../failover/failback';
import { isUnhealthyCluster } from '../failover/fleetHealth';
import { orderDue } from '../failover/priority';
import type { Versioned, VersionedEviction } from '../store/ports';
import type { BindingRecord } from '../store/records';
import { queueNameOf } from '../telemetry/metrics';
import { annotate, ATTR, currentTraceCarrier, inSpan } from '../telemetry/tracing';
import { reconcileFailbackHome, resyncFailback } from './failback';
import { expectFirstEviction, expectFirstRows, othersFirstEvictions, paceFirstRows, pacingWhilePlanning } from './pacer';
import type { ControlPlane, TaintManagerMessage } from './ports';
import { listClusterPlacements } from './state/bindingWrites';
import { clusterEvent } from './state/events';
import { applyRowChanges, planRows } from './state/evictionRows';
import { fleetClusters, noteFleetChange } from './state/reads';

/** A failed cluster's rows stored ahead of the rest: its first seconds of slots at the highest rate. */
const FIRST_ROWS = 32;
/**
 * How long the rest of a plan waits at most for the other clusters planned here to have their first
 * evictions' slots (pacer.ts, `othersFirstEvictions`): a short pass hands out slots less than a second ahead.
 */
const REST_WAITS_FOR_FIRST_EVICTIONS_MS = 1000;
/** The time a first eviction's reads take after its slot while storage is not yet busy with the plans' rest. */
const FIRST_EVICTION_READS_MS = 200;

/** Rows waiting for a slot or a target: what a recovery abandons at once. */
const WAITING_STATES: readonly EvictionState[] = ['pending', 'blocked'];

/**
 * The taint manager: for a cluster with NoExecute/PreferNoExecute taints, decides per binding placed there
 * whether and when it must leave (docs/architecture.md, decision 4) and records each decision as a ledger
 * row. Decisions are frozen: an active row is never re-decided. A cluster without such taints has its active
 * rows abandoned.
 */

export interface PlanOutcome {
  cluster: string;
  faulty: boolean;
  planned: number;
  tolerated: number;
  alreadyDecided: number;
  abandoned: number;
}

export async function manageCluster(plane: ControlPlane, name: string): Promise<PlanOutcome> {
  const { outcome, recorded } = await planningPass(plane, name);
  await recorded;
  return outcome;
}

/**
 * A planning pass whose EvictionsEnqueued event may still be on its way (`recorded`): the pacer pass that
 * follows planning starts as soon as the rows are stored, beside the event's write.
 */
interface PlanningPass {
  outcome: PlanOutcome;
  recorded: Promise<void>;
}

async function planningPass(plane: ControlPlane, name: string): Promise<PlanningPass> {
  return inSpan('taintManager.plan', { attributes: { [ATTR.cluster]: name } }, async () => {
    const { outcome, recorded } = await planCluster(plane, name);
    annotate({
      [ATTR.outcome]: outcome.faulty ? 'planned' : 'recovered',
      [ATTR.count]: outcome.planned,
      'failover.tolerated': outcome.tolerated,
      'failover.abandoned': outcome.abandoned,
    });
    // Awaited by whoever takes the pass; never left rejected and unheard.
    void recorded.catch(() => undefined);
    return { outcome, recorded };
  });
}

async function planCluster(plane: ControlPlane, name: string): Promise<PlanningPass> {
  // Said before the cluster is read: meanwhile the planning loop waits for its first rows instead of reading storage for them.
  const handedOver = expectFirstRows(plane);
  const firstEvictionDue = expectFirstEviction(plane);
  try {
    return await planClusterRows(plane, name, handedOver, firstEvictionDue);
  } finally {
    handedOver();
    firstEvictionDue();
  }
}

async function planClusterRows(plane: ControlPlane, name: string, handedOver: () => void, firstEvictionDue: () => void): Promise<PlanningPass> {
  const now = plane.clock.now();
  // The cluster's rows are read beside the cluster itself: planning is asked for when it has turned faulty
  // (or a binding landed on it while faulty), and its first evictions wait for both reads. A recovery leaves
  // the listing unused.
  const listing = listClusterPlacements(plane, name);
  void listing.catch(() => undefined);
  const cluster = await plane.clusters.get(name);
  const faultyTaints = cluster?.value.taints.filter(isFaultyTaint) ?? [];
  // The failure's trace, as the taint's write recorded it (the same whether its message or the resync plans);
  // one recorded for an earlier episode (taints someone else changed, as Karmada can) is not this failure's.
  const faultTrace = cluster?.value.faultTraceSince === episodeStart(faultyTaints) ? cluster?.value.faultTraceparent : undefined;
  const traceparent = faultTrace ?? currentTraceCarrier().traceparent;
  // The fleet summary agrees with what is planned on (idempotent: repairs a note lost to a crash between
  // the cluster's write and the summary's, within the 30 s resync rather than the minute recount).
  const noted = cluster ? noteFleetChange(plane, name, { faulty: faultyTaints.length > 0, unhealthy: isUnhealthyCluster(cluster.value) }) : Promise.resolve();
  void noted.catch(() => undefined);
  if (faultyTaints.length === 0) {
    // The rows listed beside the cluster's read are the ones to abandon (this pass is the cluster's only
    // planning pass, so none was planned since): no second listing.
    const [{ evictions: listed }] = await Promise.all([listing, noted]);
    const why = cluster ? 'the cluster recovered: it has no NoExecute or PreferNoExecute taint' : 'the cluster was deleted';
    // A drain's rows are not the taint manager's: they end with an uncordon, not with a recovery. Nor are
    // failbacks (they leave a healthy cluster for a home that is healthy again: failback.ts decides them).
    const abandoned = await abandonEvictions(plane, name, why, (record) => record.reason !== DRAIN_REASON && record.reason !== FAILBACK_REASON, listed);
    return { outcome: { cluster: name, faulty: false, planned: 0, tolerated: 0, alreadyDecided: 0, abandoned }, recorded: Promise.resolve() };
  }
  // A failure episode starts with its earliest faulty taint; ended rows from before it may be decided anew.
  const episodeBegan = episodeStart(faultyTaints)!;
  const [{ placements, evictions: existing }] = await Promise.all([listing, noted]);
  const prior = new Map(existing.map((row) => [row.record.bindingKey, row]));
  const rows: Array<{ change: RowChange; replaceEtag?: string }> = [];
  let tolerated = 0;
  let alreadyDecided = 0;
  for (const placement of placements) {
    const key = bindingKey(placement);
    const before = prior.get(key);
    // A failback waiting to leave this cluster gives way to the failure (the binding must leave now, wherever
    // its home stands; its failback follows it to where it goes); one already given a slot goes first.
    const failback = before?.record.reason === FAILBACK_REASON;
    if (
      before &&
      (failback ? before.record.state === 'scheduled' : ACTIVE_STATES.includes(before.record.state) || decidedInEpisode(before.record.decidedAt, episodeBegan))
    ) {
      alreadyDecided++;
      continue;
    }
    const verdict = decideEviction(faultyTaints, placement.tolerations, placement.failoverCluster, now);
    if (!verdict.evict) {
      tolerated++;
      continue;
    }
    const record = pendingEviction(
      placement,
      { reason: 'TaintUntolerated', why: verdict.why, taints: verdict.taints.join(','), dueAt: verdict.dueAt.toISOString() },
      now.toISOString(),
      traceparent,
    );
    // A failback still waiting here is superseded; a finished row of an earlier episode is replaced.
    const waiting = before && ACTIVE_STATES.includes(before.record.state);
    rows.push({ replaceEtag: before?.etag, change: waiting ? supersede(record, before.record) : plan(record, before?.record) });
  }
  let recorded = Promise.resolve();
  if (rows.length > 0) {
    // While the planning loop runs here, the rows that go first are stored first, on their own, and given
    // their slots before the rest are written: with a thousand bindings on the cluster those take seconds of
    // storage time, and the first evictions need not wait for them. Otherwise (the Karmada watch's own
    // planning, whose single pass follows the whole plan) every row is written at once.
    if (pacingWhilePlanning(plane)) {
      const byDueOrder = orderDue(
        rows.map((row) => ({ row, priority: row.change.record.priority ?? 0, dueAt: Date.parse(row.change.record.dueAt) })),
        now.getTime(),
      ).map(({ row }) => row);
      // Handed over as soon as they are stored: the short passes slot them from the planner's copy, so their
      // due entries (the way to them for a pass that reads storage) are written meanwhile.
      let slotted: Promise<number | undefined> | undefined;
      const first = await planRows(plane, byDueOrder.slice(0, FIRST_ROWS), {
        onStored: (stored) => {
          handedOver();
          slotted = paceFirstRows(plane, stored);
        },
      });
      handedOver();
      const firstSlot = await (slotted ?? paceFirstRows(plane, first));
      // Let go once the first eviction has had its slot and the moment its reads take; at once without a slot.
      setTimeout(firstEvictionDue, firstSlot === undefined ? 0 : Math.max(0, firstSlot + FIRST_EVICTION_READS_MS - plane.clock.now().getTime()));
      const rest = byDueOrder.slice(FIRST_ROWS);
      // A plan that fits in its first rows ends here: its message's own work after planning (the blocked rows'
      // retry) must not wait for other clusters, and then find this plan's own evictions blocked meanwhile.
      if (rest.length > 0) {
        await othersFirstEvictions(plane, REST_WAITS_FOR_FIRST_EVICTIONS_MS);
        await planRows(plane, rest, { background: true });
      }
    } else await planRows(plane, rows);
    const dues = rows.map((r) => r.change.record.dueAt).sort();
    recorded = plane.events.append([
      clusterEvent(
        name,
        now,
        'EvictionsEnqueued',
        `${rows.length} binding(s) must leave (due ${dues[0]}${dues.length > 1 ? ` to ${dues[dues.length - 1]}` : ''}); ${tolerated} tolerate the taints`,
        'Warning',
        {
          count: rows.length,
          tolerated,
          taints: faultyTaints.map((t) => `${t.key}:${t.effect}`),
          bindings: rows.slice(0, 50).map((r) => r.change.record.bindingKey),
        },
      ),
    ]);
    plane.log.info('evictions enqueued', { cluster: name, count: rows.length, tolerated });
  }
  return { outcome: { cluster: name, faulty: true, planned: rows.length, tolerated, alreadyDecided, abandoned: 0 }, recorded };
}

/**
 * docs/architecture.md, decision 8: a recovered cluster's waiting rows (`pending`, `blocked`) are abandoned,
 * ETag-checked. `scheduled` rows are left to their worker, which reads the taint from storage right before it
 * acts and abandons the row itself (or the repair timer does, if the worker is gone): abandoning them here
 * would race a worker that has already read the taint. Counts only the rows this pass really moved.
 */
export async function abandonEvictions(
  plane: ControlPlane,
  cluster: string,
  why: string,
  which: (record: EvictionRecord) => boolean = () => true,
  /** The cluster's rows as just listed (any states), when the caller has them. */
  listed?: readonly VersionedEviction[],
): Promise<number> {
  const rows = listed ? listed.filter((row) => WAITING_STATES.includes(row.record.state)) : await plane.ledger.listEvictions(cluster, WAITING_STATES);
  const waiting = rows.filter((row) => which(row.record));
  if (waiting.length === 0) return 0;
  const now = plane.clock.now().toISOString();
  // A row that moved under us (the pacer scheduled it, a retry re-queued it) is abandoned at its new ETag
  // while it still waits; one that left the waiting states is not this pass's.
  const etags = await applyRowChanges(
    plane,
    waiting.map(({ record, etag }) => ({ etag, change: abandon(record, why, now) })),
    { retry: (latest) => (WAITING_STATES.includes(latest.record.state) && which(latest.record) ? abandon(latest.record, why, now) : undefined) },
  );
  const abandoned = waiting.filter((_, i) => etags[i] !== undefined);
  for (const row of abandoned) plane.metrics.recordProcessed(row.record.kind, 'abandoned');
  await plane.events.append([
    clusterEvent(cluster, now, 'EvictionsAbandoned', `${abandoned.length} eviction(s) abandoned: ${why}`, 'Normal', {
      count: abandoned.length,
      why,
      bindings: abandoned.slice(0, 50).map((r) => r.record.bindingKey),
    }),
  ]);
  plane.log.info('evictions abandoned', { cluster, count: abandoned.length, why });
  return abandoned.length;
}

/** Blocked rows are tried again when the fleet changes: back to pending, with a due entry. */
export async function retryBlocked(plane: ControlPlane): Promise<number> {
  const blocked = await plane.ledger.scanEvictions({ state: 'blocked' });
  if (blocked.length === 0) return 0;
  const now = plane.clock.now().toISOString();
  const etags = await applyRowChanges(
    plane,
    blocked.map(({ record, etag }) => ({ etag, change: retry(record, now) })),
  );
  const retried = etags.filter((etag) => etag !== undefined);
  return retried.length;
}

/** Per process: whether the last resync was deferred (a planning loop ran here). */
const resyncsDeferred = new PlaneState<{ last: boolean }>('taintManagerResyncDeferred');

/**
 * The periodic resync: plans every faulty cluster, abandons rows of clusters that are no longer faulty,
 * retries blocked rows, and refreshes the ledger gauges. Scheduled rows whose message was lost are the
 * repair timer's (evictionWorker.ts `repairInFlight`): it puts them back in line, paced.
 */
export async function resyncTaintManager(plane: ControlPlane): Promise<{ planned: number; abandoned: number; retried: number; deferred?: true }> {
  // While failures are being planned here, a resync would list every faulty cluster's rows and scan the
  // ledger, competing for storage with the plans and their first evictions, only to find what is being
  // planned. It waits for the next tick instead, once: two in a row are never skipped.
  const skipped = resyncsDeferred.of(plane, () => ({ last: false }));
  if (pacingWhilePlanning(plane) && !skipped.last) {
    skipped.last = true;
    return { planned: 0, abandoned: 0, retried: 0, deferred: true };
  }
  skipped.last = false;
  const clusters = await fleetClusters(plane, 0);
  const faulty = new Set(clusters.filter((c) => c.taints.some(isFaultyTaint)).map((c) => c.name));
  let planned = 0;
  let abandoned = 0;
  // Passes that begin after the listing serve the resync (a message's planning of the same cluster, say):
  // the tickets are taken before any is awaited, and through the same passes nothing runs twice at once.
  const ticketOf = <T>(pass: SharedPass<T>) => ({ pass, ticket: pass.ticket() });
  const retry = ticketOf(sharedPassesOf(plane).retryBlocked);
  for (const { pass, ticket } of [...faulty].map((name) => ticketOf(planPassOf(plane, name)))) planned += (await settled(pass.after(ticket))).planned;
  const active = await plane.ledger.scanEvictions({ states: ['pending', 'scheduled'] });
  // A failback's row lives on a healthy cluster by design: no recovery to look for there.
  for (const cluster of new Set(active.filter((r) => r.record.reason !== FAILBACK_REASON).map((r) => r.record.cluster))) {
    if (faulty.has(cluster)) continue;
    const plan = planPassOf(plane, cluster);
    abandoned += (await settled(plan.after(plan.ticket()))).abandoned;
  }
  const retried = await retry.pass.after(retry.ticket);
  // Failback's safety net (at most once a minute): what a lost message missed, a window edited, entries to drop.
  const failback = await resyncFailback(plane);
  if (failback.planned + failback.redated + failback.cancelled + failback.dropped > 0) plane.log.info('failback resync', { ...failback });
  await restoreDueEntries(plane, active);
  const depth: Record<string, number> = {};
  const byKind = new Map<string, { cluster: string; resourceKind: string; count: number }>();
  for (const { record } of active) {
    const queue = queueNameOf(parseBindingKey(record.bindingKey).kind);
    depth[queue] = (depth[queue] ?? 0) + 1;
    const id = `${record.cluster}|${record.resourceKind}`;
    byKind.set(id, { cluster: record.cluster, resourceKind: record.resourceKind, count: (byKind.get(id)?.count ?? 0) + 1 });
  }
  plane.metrics.setLedger({ depth, byKind: [...byKind.values()] });
  return { planned, abandoned, retried };
}

/** A pending row this long past its due time should have been read by the pacer (it looks 4.5 s ahead every second). */
const OVERDUE_MS = 10_000;

/**
 * Every pending row has a due entry, the pacer's way to it. A pacer that found a due group exhausted deletes
 * its entry; a row put back in line (the repair) or decided (the taint manager) with the same due time just
 * before that delete loses its entry, and would wait for ever. The resync gives an overdue pending row
 * without an entry a new one (an upsert: harmless when it has one).
 */
async function restoreDueEntries(plane: ControlPlane, active: VersionedEviction[]): Promise<void> {
  const now = plane.clock.now().getTime();
  const overdue = active.filter(({ record }) => record.state === 'pending' && Date.parse(record.dueAt) < now - OVERDUE_MS);
  if (overdue.length === 0) return;
  const indexed = new Set((await plane.ledger.listDue(new Date(now).toISOString(), 100_000)).map((group) => group.token));
  const lost = overdue.filter(({ record }) => !indexed.has(plane.ledger.dueGroupOf(record)));
  if (lost.length === 0) return;
  await plane.ledger.addDue(lost.map(({ record }) => record));
  plane.log.warn('due entries restored for pending evictions the pacer could not find', {
    count: lost.length,
    clusters: [...new Set(lost.map((r) => r.record.cluster))],
  });
}

/**
 * A taint-manager message: plan or abandon the cluster; a change of taints also retries blocked rows (the
 * fleet changed); and the failbacks whose home it is are planned or cancelled.
 */
export async function handleTaintManagerMessage(
  plane: ControlPlane,
  message: TaintManagerMessage,
  /** Runs as soon as the cluster is planned, beside the rest (the trigger's pacer pass for the rows just planned). */
  afterPlan?: AfterPlan,
): Promise<PlanOutcome> {
  const passes = sharedPassesOf(plane);
  // The change behind the message was stored before it was sent: a pass that starts from here on sees it, so
  // messages handled at once share one scan of the blocked rows and one listing of the awaiting failbacks.
  const retryTicket = passes.retryBlocked.ticket();
  const listingTicket = passes.awaitingFailback.ticket();
  return planThen(plane, message.cluster, afterPlan, async () => {
    if (message.reason === 'taints-changed') await passes.retryBlocked.after(retryTicket);
    // The cluster's healthy run began or ended (the cluster write sends `taints-changed`, or `resync` when only
    // Ready changed): the failbacks home to it are planned for its end of window, or cancelled.
    if (message.reason !== 'binding-changed') await reconcileFailbackHome(plane, message.cluster, await passes.awaitingFailback.after(listingTicket));
  });
}

type AfterPlan = (outcome: PlanOutcome) => Promise<void>;

/**
 * The planning part of a taint-manager pass alone, for a change planned where it was seen (the Karmada
 * watch's evaluation): plans or abandons the cluster's evictions and runs `afterPlan` (the pacer pass) as soon
 * as the rows are stored. The rest of the pass (blocked rows, failbacks home) is left to the change's own
 * message, which waits meanwhile (state/inlinePlanning.ts) so that it does not compete with the first evictions.
 */
export function planInline(plane: ControlPlane, cluster: string, afterPlan: AfterPlan): Promise<PlanOutcome> {
  return planThen(plane, cluster, afterPlan, () => Promise.resolve());
}

async function planThen(plane: ControlPlane, cluster: string, afterPlan: AfterPlan | undefined, rest: () => Promise<void>): Promise<PlanOutcome> {
  const plan = planPassOf(plane, cluster);
  const { outcome, recorded } = await plan.after(plan.ticket());
  const after = afterPlan?.(outcome);
  try {
    await recorded;
    await rest();
  } finally {
    await after?.catch(() => undefined);
  }
  await after;
  return outcome;
}

/**
 * Per control plane, the passes taint-manager work shares: the blocked-rows retry, the listing of the bindings
 * awaiting a failback, and each cluster's planning. A message and the resync that plan the same cluster at
 * once would both read no rows and both write them, and the second's transactions would all be refused
 * (every row is there); through its pass the later one waits, or shares a pass that began after it asked.
 */
interface TaintManagerPasses {
  retryBlocked: SharedPass<number>;
  awaitingFailback: SharedPass<Array<Versioned<BindingRecord> & { id: string }>>;
  plans: Map<string, SharedPass<PlanningPass>>;
}
const passesByPlane = new PlaneState<TaintManagerPasses>('taintManagerPasses');

function sharedPassesOf(plane: ControlPlane): TaintManagerPasses {
  let passes = passesByPlane.get(plane);
  if (!passes) {
    passes = {
      retryBlocked: new SharedPass(() => retryBlocked(plane)),
      awaitingFailback: new SharedPass(() => plane.bindings.listFlagged('awaitsFailback')),
      plans: new Map(),
    };
    passesByPlane.set(plane, passes);
  }
  return passes;
}

/** A pass's outcome once its event is written. */
async function settled(pass: Promise<PlanningPass>): Promise<PlanOutcome> {
  const { outcome, recorded } = await pass;
  await recorded;
  return outcome;
}

function planPassOf(plane: ControlPlane, cluster: string): SharedPass<PlanningPass> {
  const { plans } = sharedPassesOf(plane);
  let pass = plans.get(cluster);
  if (!pass) plans.set(cluster, (pass = new SharedPass(() => planningPass(plane, cluster))));
  return pass;
}
