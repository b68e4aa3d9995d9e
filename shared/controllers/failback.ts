import { PlaneState, RecentCache } from '../cache';
import { ACTIVE_STATES, bindingKey, displayName, EvictionRecord, pendingEviction } from '../failover/bindingModel';
import { abandon, evictionRowId, plan, redate, type RowChange } from '../failover/evictionRow';
import {
  decideFailback,
  FAILBACK_DONE_RETENTION_MS,
  FAILBACK_REASON,
  FailbackEntry,
  FailbackVerdict,
  failbackWindow,
  HomeFacts,
  replacementOf,
} from '../failover/failback';
import { policyKey, PropagationCandidate, selectPolicy } from '../failover/propagation';
import { keep, write } from '../store/optimistic';
import type { EventRecord, Versioned, VersionedEviction } from '../store/ports';
import { type BindingRecord, clusterCandidate, type ClusterRecord } from '../store/records';
import { currentTraceCarrier } from '../telemetry/tracing';
import type { ControlPlane } from './ports';
import { placementsOf, writeBinding } from './state/bindingWrites';
import { bindingEvent, evictionEvent } from './state/events';
import { applyRowChange, planRows } from './state/evictionRows';
import { evictionView, FailbackItem, failbackItemView, FailbackState } from './views';

/**
 * Failback (the rule is shared/failover/failback.ts). What this module does with it:
 *
 * - **Planning, ahead of time.** When a cluster's healthy run begins (its `healthySince` is written by the
 *   cluster write, which sends the taint manager a message), the bindings whose home it is get a `Failback`
 *   ledger row under the cluster they will leave, due at `healthySince + window`: the pacer (which looks a
 *   few seconds ahead) gives it a slot at that time, at the global rate, after budgets and priority. When
 *   the run ends (a flap), their waiting rows are cancelled; the next run plans them again. The bindings are
 *   found by their `awaitsFailback` flag (a Table column): one query returns only them.
 * - **The window** is read from the governing PropagationPolicy or ClusterPropagationPolicy (the policy the
 *   binding's labels name, as Karmada's detector writes them, else the one that selects it), so an edit of
 *   the annotation applies to bindings already waiting; the policies are listed at most every 10 s.
 * - **A resync** (the taint manager's, at most once a minute) plans what a lost message missed, re-dates
 *   rows after a window edit, drops entries that no longer apply, and forgets failbacks done over an hour ago.
 * - **GET /api/failback** and the why-API show each entry: waiting for its home, counting, queued,
 *   scheduled, or done.
 *
 * The worker (evictionWorker.ts) settles a Failback row at its slot: it reads the home from storage right
 * before acting and goes home only if the rule still says so.
 */

// ---------------------------------------------------------------------------------------------
// The window, from the governing policy

interface PolicyWindows {
  candidates: PropagationCandidate[];
  windows: Map<string, number | undefined>;
}

/**
 * How long this process keeps the policies' windows (by the control plane's clock): every cluster-failover
 * eviction asks for its binding's window, so a burst of evictions costs one policy listing per this long,
 * and an edit of the annotation is seen within it.
 */
export const POLICY_WINDOWS_TTL_MS = 10_000;
const policyWindows = new RecentCache<Promise<PolicyWindows>>('failbackPolicyWindows', POLICY_WINDOWS_TTL_MS);

function loadPolicyWindows(plane: ControlPlane): Promise<PolicyWindows> {
  const hit = policyWindows.peek(plane);
  if (hit) return hit;
  const value = plane.propagationPolicies.list().then((listed) => ({
    candidates: listed.map(({ value }) => ({
      kind: value.kind,
      ...(value.namespace ? { namespace: value.namespace } : {}),
      name: value.name,
      spec: value.spec,
    })),
    windows: new Map(listed.map(({ value }) => [policyKey(value), failbackWindow(value.annotations)])),
  }));
  policyWindows.set(plane, value);
  // A failed listing is not kept.
  value.catch(() => policyWindows.forget(plane));
  return value;
}

/** Loads the policies' failback windows into this process's copy, unless it holds a fresh one (a failed listing is not kept). */
export function warmFailbackWindows(plane: ControlPlane): void {
  void loadPolicyWindows(plane).catch(() => undefined);
}

/** The policy keys Karmada writes on a binding as labels (older Karmada) or annotations (newer): both are read. */
const POLICY_NAME_KEYS = ['propagationpolicy.karmada.io/name', 'propagationpolicy.karmada.io/namespace', 'clusterpropagationpolicy.karmada.io/name'];

/** The failback window (seconds) of the policy that governs the binding, or undefined when it has none. */
export async function failbackWindowOf(plane: ControlPlane, binding: BindingRecord): Promise<number | undefined> {
  const { candidates, windows } = await loadPolicyWindows(plane);
  if (candidates.length === 0) return undefined;
  const named = Object.fromEntries(POLICY_NAME_KEYS.flatMap((key) => (binding.annotations[key] ? [[key, binding.annotations[key]]] : [])));
  const policy = selectPolicy({ namespace: binding.namespace, labels: { ...named, ...binding.labels }, resource: binding.spec.resource }, candidates);
  return policy ? windows.get(policyKey(policy)) : undefined;
}

// ---------------------------------------------------------------------------------------------
// The home's facts

export function homeFacts(record: ClusterRecord): HomeFacts {
  return {
    ...clusterCandidate(record),
    conditions: record.conditions,
    ...(record.healthySince ? { healthySince: record.healthySince } : {}),
  };
}

/** Cluster reads shared by one pass (a resync, a listing): each home is read once. */
type HomeLookup = (name: string) => Promise<ClusterRecord | undefined>;
function homeLookup(plane: ControlPlane): HomeLookup {
  const read = new Map<string, Promise<ClusterRecord | undefined>>();
  return (name) => {
    let hit = read.get(name);
    if (!hit) read.set(name, (hit = plane.clusters.get(name).then((entry) => entry?.value)));
    return hit;
  };
}

/** An entry still to go home (not one that went back within the hour). */
const isOpen = (entry: FailbackEntry | undefined): boolean => entry !== undefined && entry.doneAt === undefined;

/** The decision for one entry of a binding, on the home as `lookup` reads it. */
async function verdictOf(
  plane: ControlPlane,
  binding: BindingRecord,
  entry: FailbackEntry,
  windowSeconds: number | undefined,
  lookup: HomeLookup,
): Promise<FailbackVerdict> {
  const home = await lookup(entry.home);
  return decideFailback({
    entry,
    windowSeconds,
    home: home ? homeFacts(home) : undefined,
    binding: binding.spec,
    otherHomes: Object.keys(binding.failback ?? {}).filter((h) => h !== entry.home),
    now: plane.clock.now(),
  });
}

/** Whether a ledger row is this entry's failback, still to run. */
const isWaitingFailback = (row: VersionedEviction | undefined, home: string): row is VersionedEviction =>
  row !== undefined && row.record.reason === FAILBACK_REASON && row.record.home === home && ACTIVE_STATES.includes(row.record.state);

// ---------------------------------------------------------------------------------------------
// Planning

export interface FailbackPass {
  planned: number;
  redated: number;
  cancelled: number;
  dropped: number;
}

const emptyPass = (): FailbackPass => ({ planned: 0, redated: 0, cancelled: 0, dropped: 0 });
const add = (a: FailbackPass, b: FailbackPass): FailbackPass => ({
  planned: a.planned + b.planned,
  redated: a.redated + b.redated,
  cancelled: a.cancelled + b.cancelled,
  dropped: a.dropped + b.dropped,
});

/**
 * A cluster's healthy run began or ended (or the taint manager's message for it came): plans, re-dates or
 * cancels the failbacks of the bindings whose home it is. Cost: one query for the bindings awaiting a
 * failback, then per binding of this home one ledger read; the new rows are written together (100 to a
 * transaction) with one event append.
 */
export async function reconcileFailbackHome(
  plane: ControlPlane,
  home: string,
  /** The bindings flagged as awaiting a failback, as listed for several homes at once (listed now if absent). */
  flagged?: Array<Versioned<BindingRecord> & { id: string }>,
): Promise<FailbackPass> {
  const awaiting = (flagged ?? (await plane.bindings.listFlagged('awaitsFailback'))).filter((entry) => isOpen(entry.value.failback?.[home]));
  const lookup = homeLookup(plane);
  let pass = emptyPass();
  const planned: PlannedRow[] = [];
  for (const entry of awaiting) pass = add(pass, await reconcileFailbackBinding(plane, entry, { lookup, only: home, cancelWaiting: true, planned }));
  pass.planned += await flushPlanned(plane, planned);
  if (pass.planned + pass.redated + pass.cancelled + pass.dropped > 0) plane.log.info('failback reconciled', { home, ...pass });
  return pass;
}

const lastResync = new PlaneState<number>('failbackLastResync');
/** The failback resync runs at most this often (it rides on the taint manager's 30 s resync). */
export const FAILBACK_RESYNC_MS = 60_000;

/**
 * The safety net: every binding awaiting a failback (its flag), planned, re-dated or
 * dropped as the rule says now; failbacks done over an hour ago are forgotten. Waiting rows are not read
 * for an entry whose home is not healthy (the home's change cancels them; the worker never acts on one).
 */
export async function resyncFailback(plane: ControlPlane, force = false): Promise<FailbackPass> {
  const now = plane.clock.now().getTime();
  const last = lastResync.get(plane);
  if (!force && last !== undefined && now - last < FAILBACK_RESYNC_MS) return emptyPass();
  lastResync.set(plane, now);
  const lookup = homeLookup(plane);
  let pass = emptyPass();
  const planned: PlannedRow[] = [];
  // The flag is written with every entry (entries are newer than the flag), so no full scan is needed behind it.
  for (const entry of await plane.bindings.listFlagged('awaitsFailback')) {
    if (Object.keys(entry.value.failback ?? {}).length === 0) continue;
    pass = add(pass, await reconcileFailbackBinding(plane, entry, { lookup, cancelWaiting: false, planned }));
  }
  pass.planned += await flushPlanned(plane, planned);
  return pass;
}

/**
 * One binding's entries (or only `only`'s): drops what no longer applies (and forgets failbacks done more
 * than an hour ago) in one ETag-guarded write, plans or re-dates the due ones, and (with `cancelWaiting`)
 * cancels the waiting rows of entries that must wait.
 */
export async function reconcileFailbackBinding(
  plane: ControlPlane,
  /** The binding as just listed, or its key (read now). */
  target: (Versioned<BindingRecord> & { id: string }) | string,
  options: { lookup?: HomeLookup; only?: string; cancelWaiting?: boolean; planned?: PlannedRow[] } = {},
): Promise<FailbackPass> {
  const lookup = options.lookup ?? homeLookup(plane);
  const pass = emptyPass();
  const planned = options.planned ?? [];
  const read = typeof target === 'string' ? await plane.bindings.get(target) : target;
  if (!read) return pass;
  const binding = { id: typeof target === 'string' ? target : target.id, ...read };
  const record = binding.value;
  const now = plane.clock.now();
  const windowSeconds = await failbackWindowOf(plane, record);
  const drops = new Map<string, string>();
  const expired: string[] = [];
  for (const entry of Object.values(record.failback ?? {})) {
    if (options.only !== undefined && entry.home !== options.only) continue;
    if (!isOpen(entry)) {
      if (now.getTime() - Date.parse(entry.doneAt!) > FAILBACK_DONE_RETENTION_MS) expired.push(entry.home);
      continue;
    }
    const verdict = await verdictOf(plane, record, entry, windowSeconds, lookup);
    if ('drop' in verdict) {
      drops.set(entry.home, verdict.drop);
      pass.cancelled += await cancelRows(plane, record, entry, `failback to ${entry.home} dropped: ${verdict.drop}`);
    } else if ('wait' in verdict) {
      if (options.cancelWaiting) pass.cancelled += await cancelRows(plane, record, entry, `failback to ${entry.home} cancelled: ${verdict.wait}`);
    } else {
      const outcome = await planRow(plane, record, entry, verdict, windowSeconds!);
      if (outcome === 'redated') pass.redated++;
      else if (outcome !== 'kept') planned.push(outcome);
    }
  }
  if (drops.size > 0 || expired.length > 0) pass.dropped += await dropEntries(plane, binding.id, drops, expired);
  // Alone, its new rows are written now; in a pass over many bindings, with theirs.
  if (!options.planned) pass.planned += await flushPlanned(plane, planned);
  return pass;
}

/** Abandons the entry's waiting Failback rows (pending or blocked; a scheduled one is its worker's). */
async function cancelRows(plane: ControlPlane, binding: BindingRecord, entry: FailbackEntry, why: string): Promise<number> {
  const key = bindingKey(binding);
  const clusters = new Set([
    ...(entry.replacedBy ?? []),
    ...replacementOf(
      entry,
      (binding.spec.clusters ?? []).map((c) => c.name),
    ),
  ]);
  let cancelled = 0;
  const at = plane.clock.now().toISOString();
  for (const cluster of clusters) {
    const row = await plane.ledger.getEviction(cluster, key);
    if (!isWaitingFailback(row, entry.home) || row.record.state === 'scheduled') continue;
    const change = abandon(row.record, why, at);
    if ((await applyRowChange(plane, row.etag, change)) === undefined) continue;
    cancelled++;
    plane.metrics.recordProcessed(change.record.kind, 'abandoned');
    await plane.events.append([evictionEvent(change.record, at, 'FailbackCancelled', why)]);
  }
  return cancelled;
}

/** The entry's Failback row under the first cluster that replaced its home: created, or re-dated to `verdict.due`. */
async function planRow(
  plane: ControlPlane,
  binding: BindingRecord,
  entry: FailbackEntry,
  verdict: Extract<FailbackVerdict, { due: Date }>,
  windowSeconds: number,
): Promise<PlannedRow | 'redated' | 'kept'> {
  const key = bindingKey(binding);
  const cluster = verdict.replacement[0];
  const placement = placementsOf(binding).find((p) => p.cluster === cluster);
  if (!placement) return 'kept';
  const dueAt = verdict.due.toISOString();
  const at = plane.clock.now().toISOString();
  const existing = await plane.ledger.getEviction(cluster, key);
  if (existing && ACTIVE_STATES.includes(existing.record.state)) {
    // Another eviction from that cluster is under way (a failure of its own, a drain): it goes first.
    if (!isWaitingFailback(existing, entry.home) || existing.record.state !== 'pending' || existing.record.stateReason) return 'kept';
    if (existing.record.dueAt === dueAt && existing.record.failbackWindowSeconds === windowSeconds) return 'kept';
    const change = redate(
      existing.record,
      {
        dueAt,
        why: verdict.why,
        homeHealthySince: verdict.healthySince,
        failbackWindowSeconds: windowSeconds,
        message: `re-dated: the count now runs from ${verdict.healthySince} (window ${windowSeconds}s)`,
      },
      at,
    );
    const redated = change.record;
    if ((await applyRowChange(plane, existing.etag, change)) === undefined) return 'kept';
    await plane.events.append([
      evictionEvent(redated, at, 'FailbackPlanned', `failback to ${entry.home} from ${cluster} re-dated to ${dueAt}: ${verdict.why}`),
    ]);
    return 'redated';
  }
  const failover = binding.spec.failover?.cluster;
  const planned = pendingEviction(placement, { reason: FAILBACK_REASON, why: verdict.why, taints: '', dueAt }, at, currentTraceCarrier().traceparent);
  // The copy that stood in goes once the copy back home is healthy, whatever purge mode a failure would use.
  const record: EvictionRecord = {
    ...planned,
    purgeMode: 'Gracefully',
    ...(failover?.purgeMode === 'Gracefully' && failover.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: failover.gracePeriodSeconds } : {}),
    home: entry.home,
    failbackWindowSeconds: windowSeconds,
    homeHealthySince: verdict.healthySince,
  };
  if (failover?.purgeMode !== 'Gracefully' || failover.gracePeriodSeconds === undefined) delete record.gracePeriodSeconds;
  return {
    change: plan(record, existing?.record),
    ...(existing ? { replaceEtag: existing.etag } : {}),
    message: `goes back to ${entry.home} from ${verdict.replacement.join(', ')} at ${dueAt}, at the global rate: ${verdict.why}`,
  };
}

/** A new Failback row, written with the others of its pass. */
interface PlannedRow {
  change: RowChange;
  replaceEtag?: string;
  /** Its FailbackPlanned event's message. */
  message: string;
}

/**
 * Writes a pass's new rows in one call (the ledger batches them, 100 to a transaction per cluster), then
 * records FailbackPlanned for those that are ours: two planners at once leave one row each (the ledger skips
 * a row that exists), read back with one query per cluster. Returns how many were planned.
 */
async function flushPlanned(plane: ControlPlane, planned: PlannedRow[]): Promise<number> {
  if (planned.length === 0) return 0;
  await planRows(plane, planned);
  const stored = new Map<string, EvictionRecord>();
  for (const cluster of new Set(planned.map((p) => p.change.record.cluster))) {
    for (const row of await plane.ledger.listEvictions(cluster, ['pending'])) stored.set(evictionRowId(row.record), row.record);
  }
  const ours = planned.filter(({ change: { record } }) => {
    const row = stored.get(evictionRowId(record));
    return row?.decidedAt === record.decidedAt && row.home === record.home;
  });
  const at = plane.clock.now();
  if (ours.length > 0) await plane.events.append(ours.map(({ change, message }) => evictionEvent(change.record, at, 'FailbackPlanned', message)));
  return ours.length;
}

/** Removes dropped and expired entries from the binding (ETag-guarded), with a FailbackDropped event per dropped one. */
async function dropEntries(plane: ControlPlane, key: string, drops: Map<string, string>, expired: string[]): Promise<number> {
  const gone = new Set([...drops.keys(), ...expired]);
  let removed: string[] = [];
  const { record } = await writeBinding<null>(plane, key, (current) => {
    removed = [];
    if (!current?.failback) return keep(null);
    const next = { ...current.failback };
    for (const home of gone) {
      const entry = next[home];
      // Only what was decided: an entry that changed meanwhile (done, or a new eviction) stays.
      if (!entry || (drops.has(home) ? !isOpen(entry) : isOpen(entry))) continue;
      delete next[home];
      removed.push(home);
    }
    if (removed.length === 0) return keep(null);
    if (Object.keys(next).length > 0) current.failback = next;
    else delete current.failback;
    return write(current, null);
  });
  const dropped = removed.filter((home) => drops.has(home));
  if (record && dropped.length > 0) {
    const at = plane.clock.now();
    await plane.events.append(
      dropped.map((home) =>
        bindingEvent(record, at, 'FailbackDropped', `no failback to ${home}: ${drops.get(home)}`, 'Normal', { home, why: drops.get(home) }),
      ),
    );
  }
  return dropped.length;
}

/** A FailedBack event: on the binding, when and why it went home. */
export function failedBackEvent(
  record: EvictionRecord,
  at: string,
  from: readonly string[],
  extra: { healthySince?: string; windowSeconds?: number } = {},
): EventRecord {
  const healthySince = extra.healthySince ?? record.homeHealthySince;
  const windowSeconds = extra.windowSeconds ?? record.failbackWindowSeconds;
  return bindingEvent(
    record,
    at,
    'FailedBack',
    `went back to ${record.home} from ${from.join(', ')}: ${record.home} Ready and free of NoExecute/PreferNoExecute taints since ${healthySince}, failback after ${windowSeconds}s (due ${record.dueAt}); the copy on ${from.join(', ')} goes once the copy on ${record.home} is healthy`,
    'Normal',
    { home: record.home, from: [...from], windowSeconds, healthySince, dueAt: record.dueAt, cluster: record.cluster },
  );
}

// ---------------------------------------------------------------------------------------------
// What the API shows

/** The items of one binding (GET /api/failback, the why-API), each with its state and row. */
export async function failbackItems(plane: ControlPlane, binding: BindingRecord, lookup: HomeLookup = homeLookup(plane)): Promise<FailbackItem[]> {
  const entries = Object.values(binding.failback ?? {});
  if (entries.length === 0) return [];
  const key = bindingKey(binding);
  const now = plane.clock.now();
  const windowSeconds = await failbackWindowOf(plane, binding);
  const items: FailbackItem[] = [];
  for (const entry of entries.sort((a, b) => a.home.localeCompare(b.home))) {
    if (!isOpen(entry)) {
      const window = entry.windowSeconds ?? windowSeconds;
      items.push(
        failbackItemView(binding, entry, {
          state: 'done',
          windowSeconds: window,
          replacedBy: entry.from ?? [],
          why: `went back to ${entry.home} at ${entry.doneAt}`,
          ...(entry.healthySince ? { healthySince: entry.healthySince } : {}),
          ...(entry.healthySince && window !== undefined ? { dueAt: new Date(Date.parse(entry.healthySince) + window * 1000).toISOString() } : {}),
        }),
      );
      continue;
    }
    const verdict = await verdictOf(plane, binding, entry, windowSeconds, lookup);
    const placedOn = (binding.spec.clusters ?? []).map((c) => c.name);
    const replacedBy = 'due' in verdict ? verdict.replacement : replacementOf(entry, placedOn);
    const rows = await Promise.all(replacedBy.map((cluster) => plane.ledger.getEviction(cluster, key)));
    const row = rows.find((r) => isWaitingFailback(r, entry.home))?.record;
    const home = await lookup(entry.home);
    let state: FailbackState;
    let why: string;
    if (!('due' in verdict)) {
      state = 'waiting-for-home';
      why = 'drop' in verdict ? `will not go back: ${verdict.drop}` : verdict.wait;
    } else if (row?.state === 'scheduled') {
      state = 'scheduled';
      why = `goes back at its slot ${row.scheduledFor ?? row.dueAt}: ${verdict.why}`;
    } else if (verdict.due.getTime() > now.getTime()) {
      state = 'counting';
      why = `${entry.home} healthy since ${verdict.healthySince}: goes back at ${verdict.due.toISOString()}`;
    } else {
      state = 'queued';
      why = row?.message
        ? `due since ${verdict.due.toISOString()}, waiting for a slot at the global rate (${row.message})`
        : `due since ${verdict.due.toISOString()}, waiting for a slot at the global rate`;
    }
    items.push(
      failbackItemView(binding, entry, {
        state,
        windowSeconds,
        replacedBy,
        why,
        ...(home?.healthySince ? { healthySince: home.healthySince } : {}),
        ...('due' in verdict ? { dueAt: verdict.due.toISOString() } : {}),
        ...(row ? { row: evictionView(row) } : {}),
      }),
    );
  }
  return items;
}

/** GET /api/failback: every binding with a home to go back to, or that went back within the hour. */
export async function listFailback(plane: ControlPlane): Promise<{ bindings: FailbackItem[] }> {
  const lookup = homeLookup(plane);
  const bindings = (await plane.bindings.listFlagged('awaitsFailback')).filter((entry) => Object.keys(entry.value.failback ?? {}).length > 0);
  const items: FailbackItem[] = [];
  for (const { value } of bindings) items.push(...(await failbackItems(plane, value, lookup)));
  items.sort((a, b) => displayName(a.binding).localeCompare(displayName(b.binding)) || a.home.localeCompare(b.home));
  return { bindings: items };
}
