import { PlaneState, RecentCache } from '../../cache';
import { isFaultyTaint } from '../../failover/evictionDecision';
import { FleetHealth, fleetHealth, isUnhealthyCluster } from '../../failover/fleetHealth';
import type { CandidateCluster } from '../../failover/precheck';
import type { PropagationCandidate } from '../../failover/propagation';
import { keep, mutate, write } from '../../store/optimistic';
import type { PacerState } from '../../store/ports';
import { ConcurrencyError, Versioned } from '../../store/ports';
import type { PolicyRecord } from '../../store/records';
import { BindingFlag, bindingFlags, BindingRecord, clusterCandidate, ClusterRecord } from '../../store/records';
import type { ControlPlane, FleetSummary } from '../ports';

/**
 * Reads that many invocations share, each kept by this process for about a second: a burst of evictions
 * or reports then costs one listing, not one per item. A writer that changed the data forgets (or
 * replaces) its own copy; other processes see the change within the TTL.
 */
const SECOND = 1000;

/** A process's fleet view: the listing and the summary version it is current with. */
interface FleetView {
  version: number;
  clusters: CandidateCluster[];
  /** Karmada mode: the unhealthy clusters of the same listing (standalone: the summary keeps them). */
  unhealthy?: string[];
}
const fleetCache = new RecentCache<FleetView>('fleetView', SECOND);
/**
 * A fleet view is listed again at least this often even when no change was noted: the safety net for a
 * process that stopped between a cluster's write and the summary's bump (the minute recount bumps it too).
 */
const FLEET_VIEW_MAX_AGE_MS = 30_000;
/** The summary names the clusters of its last this many view changes, so a view catches up by point reads. */
export const FLEET_CHANGES_KEPT = 64;
/** Clusters this process wrote since its view was read: read again at its next use. */
const writtenHere = new PlaneState<Set<string>>('fleetWrittenHere');

/**
 * Every cluster's labels, location and taints (the pacer's fleet health, the pre-scheduling check, the
 * scheduler). Standalone: the listing is kept until the fleet summary's `viewVersion` moves (read at most
 * `maxAgeMs` ago: one small point read), so placements and evictions cost no listing while the fleet is
 * unchanged; when it moves, the clusters the summary names for the versions in between are read again one
 * by one (a listing only when it cannot name them all, and every 30 s). Karmada mode (Karmada changes its
 * Clusters, not us): listed again after `maxAgeMs`.
 */
export async function fleetClusters(plane: ControlPlane, maxAgeMs = SECOND): Promise<CandidateCluster[]> {
  if (plane.karmada) return (await karmadaFleetView(plane, maxAgeMs)).clusters;
  const summary = await fleetCounts(plane, maxAgeMs);
  const version = summary.viewVersion ?? 0;
  const cached = fleetCache.peek(plane, '', FLEET_VIEW_MAX_AGE_MS);
  const written = [...(writtenHere.get(plane) ?? [])];
  if (cached && cached.version === version && written.length === 0) return cached.clusters;
  // The callers that find the view behind (a burst of evictions and placements) share one refresh to the
  // version they read, unless they wrote a cluster themselves (the running one may have read it before).
  // Refreshes run one after another, each from the view the one before left, so none overwrites a later one.
  const running = refreshes.get(plane);
  if (running && running.version === version && written.length === 0) return running.done;
  const before = running?.done.catch(() => undefined);
  const done = (async () => {
    await before;
    const base = fleetCache.peek(plane, '', FLEET_VIEW_MAX_AGE_MS);
    const mine = [...(writtenHere.get(plane) ?? [])];
    // The refresh before brought the view past the version read here: only this process's writes are left.
    if (base && base.version > version) return refreshView(plane, base.version, [], base, mine);
    return refreshView(plane, version, changedSince(summary, base), base, mine);
  })();
  const entry = { version, done };
  refreshes.set(plane, entry);
  try {
    return await entry.done;
  } finally {
    if (refreshes.get(plane) === entry) refreshes.delete(plane);
  }
}

async function karmadaFleetView(plane: ControlPlane, maxAgeMs: number): Promise<FleetView> {
  // While this process watches the Clusters, its view follows each change as it arrives: no listing. Not
  // while a request of this process has found the API server refusing or unreachable: then the fleet is
  // read again (and a refusal answered as one), never taken on trust.
  const watched = fleetWatch.get(plane);
  const troubled = (plane.karmada?.api.access?.problems().length ?? 0) > 0;
  const live = watched !== undefined && watched.until > plane.clock.now().getTime() && !troubled;
  const followed = live ? fleetCache.peek(plane, '', FLEET_VIEW_MAX_AGE_MS) : undefined;
  if (followed) return followed;
  const notesBefore = watched?.notes ?? 0;
  const view = await fleetCache.get(
    plane,
    async () => {
      const listed = await plane.clusters.list();
      return {
        version: 0,
        clusters: listed.map(({ value }) => clusterCandidate(value)),
        unhealthy: listed.filter(({ value }) => isUnhealthyCluster(value)).map(({ value }) => value.name),
      };
    },
    { maxAgeMs },
  );
  // A change noted while the listing was on its way may be newer than what it returned: not kept to follow.
  if ((fleetWatch.get(plane)?.notes ?? 0) !== notesBefore) fleetCache.forget(plane);
  return view;
}

/** Karmada mode, per process: until when (plane clock, ms) its watch of Clusters runs, and how many changes it noted. */
const fleetWatch = new PlaneState<{ until: number; notes: number }>('karmadaFleetWatch');

/**
 * Karmada mode: this process watches the Clusters until `untilMs` (0: the watch ended), handing each change
 * to `noteWatchedCluster`, so its fleet view is current without listing (FLEET_VIEW_MAX_AGE_MS at most).
 */
export function watchingClusters(plane: ControlPlane, untilMs: number): void {
  fleetWatch.set(plane, { until: untilMs, notes: fleetWatch.get(plane)?.notes ?? 0 });
}

/**
 * Karmada mode: a Cluster as watched (or written here), or gone (`record` undefined). A view being
 * followed takes it in place; otherwise the view is listed again at its next use.
 */
export function noteWatchedCluster(plane: ControlPlane, name: string, record: ClusterRecord | undefined): void {
  const watch = fleetWatch.get(plane);
  if (watch) watch.notes++;
  const view = watch && watch.until > plane.clock.now().getTime() ? fleetCache.peek(plane, '', FLEET_VIEW_MAX_AGE_MS) : undefined;
  if (!view) {
    fleetCache.forget(plane);
    return;
  }
  const clusters = view.clusters.filter((c) => c.name !== name);
  const unhealthy = (view.unhealthy ?? []).filter((n) => n !== name);
  if (record) {
    clusters.push(clusterCandidate(record));
    clusters.sort(byClusterName);
    if (isUnhealthyCluster(record)) unhealthy.push(name);
  }
  // Aged from its listing: the safety net stays.
  fleetCache.replace(plane, { version: 0, clusters, unhealthy });
}

/** Views keep their clusters in name order. */
const byClusterName = (a: CandidateCluster, b: CandidateCluster) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

const refreshes = new PlaneState<{ version: number; done: Promise<CandidateCluster[]> }>('fleetRefreshes');

async function refreshView(
  plane: ControlPlane,
  version: number,
  changed: string[] | undefined,
  cached: FleetView | undefined,
  written: string[],
): Promise<CandidateCluster[]> {
  for (const name of written) writtenHere.get(plane)?.delete(name);
  try {
    if (cached && changed) {
      // Read after the version: a change in between is in what is read or moves the version again.
      const names = [...new Set([...changed, ...written])];
      const reads = await Promise.all(names.map((name) => plane.clusters.get(name)));
      const byName = new Map(cached.clusters.map((c) => [c.name, c]));
      names.forEach((name, i) => {
        const read = reads[i];
        if (read) byName.set(name, clusterCandidate(read.value));
        else byName.delete(name);
      });
      const clusters = [...byName.values()].sort(byClusterName);
      // Still aged from its listing: the 30 s safety net stays.
      fleetCache.replace(plane, { version, clusters });
      return clusters;
    }
    // Listed after the version was read: a change in between is in the listing or moves the version again.
    const sentAt = plane.clock.now().getTime();
    const clusters = (await plane.clusters.list()).map(({ value }) => clusterCandidate(value));
    fleetCache.set(plane, { version, clusters }, '', sentAt);
    return clusters;
  } catch (error) {
    // Not refreshed: what this process wrote is still to be read.
    for (const name of written) forgetFleet(plane, name);
    throw error;
  }
}

/**
 * The clusters whose view changed after `since`, as the summary names them; undefined when it cannot name
 * every version in between (a recount's bump, a new summary, more changes than it keeps).
 */
function changedSince(summary: FleetSummary, view: FleetView | undefined): string[] | undefined {
  if (!view) return undefined;
  const since = view.version;
  const version = summary.viewVersion ?? 0;
  if (version === since) return [];
  if (version < since || version - since > FLEET_CHANGES_KEPT) return undefined;
  const named = new Map((summary.viewChanges ?? []).map((c) => [c.version, c.name]));
  const names: string[] = [];
  for (let v = since + 1; v <= version; v++) {
    const name = named.get(v);
    if (name === undefined) return undefined;
    names.push(name);
  }
  return names;
}

/**
 * After this process wrote a cluster, its next placement and pre-check read it again (`name`), or the
 * whole fleet (none given, and in Karmada mode unless the view follows a watch: then the `version` written
 * takes the cluster's place in it).
 */
export function forgetFleet(plane: ControlPlane, name?: string, version?: ClusterRecord): void {
  if (plane.karmada && name !== undefined && version) return noteWatchedCluster(plane, name, version);
  if (name === undefined || plane.karmada) {
    fleetCache.forget(plane);
    return;
  }
  const written = writtenHere.get(plane) ?? new Set<string>();
  writtenHere.set(plane, written.add(name));
}

const summaryCache = new RecentCache<FleetSummary>('fleetSummary', SECOND);
const SUMMARY = 'fleet';

/**
 * The fleet's counts: the maintained summary (one small read, whatever the fleet's size); built from a
 * listing the first time. In Karmada mode, counted from Karmada's Clusters (Karmada changes them, not us).
 */
export async function fleetCounts(plane: ControlPlane, maxAgeMs = SECOND): Promise<FleetSummary> {
  if (plane.karmada) {
    const { clusters, unhealthy } = await karmadaFleetView(plane, maxAgeMs);
    return { total: clusters.length, faulty: clusters.filter((c) => c.taints.some(isFaultyTaint)).map((c) => c.name), unhealthy: unhealthy ?? [] };
  }
  return summaryCache.get(
    plane,
    async () => {
      const stored = await plane.fleetSummary.get(SUMMARY);
      return stored?.value.unhealthy ? stored.value : await recountFleet(plane);
    },
    { maxAgeMs },
  );
}

/**
 * A full recount of the summary from a listing (the minute resync's check, and the first use), written
 * when it differs. The stored summary is read before the listing and written with that ETag: a change
 * noted meanwhile wins (the recount is skipped), so a listing older than a noted change never undoes it.
 */
export async function recountFleet(plane: ControlPlane): Promise<FleetSummary> {
  const recount = await beginFleetRecount(plane);
  return recount(plane.karmada ? [] : await plane.clusters.list());
}

/**
 * A recount in two steps, for a caller that lists the clusters anyway (the minute resync): the stored
 * summary is read now, and the returned function counts a listing made after this call and writes the
 * result with the ETag read here (skipped when a change was noted meanwhile).
 */
export async function beginFleetRecount(plane: ControlPlane): Promise<(clusters: Array<{ value: ClusterRecord }>) => Promise<FleetSummary>> {
  if (plane.karmada) return () => fleetCounts(plane, 0);
  const stored = await plane.fleetSummary.get(SUMMARY);
  return async (clusters) => {
    const members = clusters.map(({ value }) => value.name).sort();
    const counted: FleetSummary = {
      // A summary made anew (first use, or lost) starts a version no process has cached.
      viewVersion: stored?.value.viewVersion ?? Date.now(),
      total: members.length,
      members,
      faulty: clusters
        .filter(({ value }) => value.taints.some(isFaultyTaint))
        .map(({ value }) => value.name)
        .sort(),
      unhealthy: clusters
        .filter(({ value }) => isUnhealthyCluster(value))
        .map(({ value }) => value.name)
        .sort(),
      recountedAt: plane.clock.now().toISOString(),
    };
    try {
      if (!stored) await plane.fleetSummary.create(SUMMARY, counted);
      else if (
        !sameNames(stored.value.members ?? [], members) ||
        !sameNames(stored.value.faulty, counted.faulty) ||
        !sameNames(stored.value.unhealthy ?? [], counted.unhealthy ?? [])
      ) {
        // A summary of an older version (no unhealthy set) is completed silently; anything else was not noted.
        if (stored.value.unhealthy) {
          plane.log.warn('fleet summary corrected by the recount', {
            stored: { total: stored.value.total, faulty: stored.value.faulty.length, unhealthy: stored.value.unhealthy.length },
            counted: { total: counted.total, faulty: counted.faulty.length, unhealthy: counted.unhealthy?.length },
          });
        }
        // Something was not noted (a stopped process): the fleet views are listed again too.
        counted.viewVersion = (counted.viewVersion ?? 0) + 1;
        await plane.fleetSummary.replace(SUMMARY, counted, stored.etag);
      }
    } catch (error) {
      if (!(error instanceof ConcurrencyError)) throw error;
      return (await plane.fleetSummary.get(SUMMARY))?.value ?? counted;
    }
    summaryCache.set(plane, counted);
    return counted;
  };
}

/** One cluster's change, as the fleet summary notes it. */
export interface FleetChange {
  created?: boolean;
  deleted?: boolean;
  /** Holds a NoExecute/PreferNoExecute taint now. */
  faulty: boolean;
  /** Counts as unhealthy now (failover/fleetHealth.ts). */
  unhealthy: boolean;
  /** What the fleet view holds of the cluster changed (labels, location, taints). */
  viewChanged?: boolean;
}

interface PendingNote {
  name: string;
  change: FleetChange;
  done: { resolve: () => void; reject: (error: unknown) => void };
}
/** Per plane: the notes waiting for this process's next summary write, and whether one is running. */
const noteQueues = new PlaneState<{ waiting: PendingNote[]; running: boolean }>('fleetNoteQueues');

/**
 * Keeps the summary in step with one cluster's change: created or deleted (the member set), faulty or not,
 * unhealthy or not. Resolves once the change is stored, so a caller that acknowledges a write after this
 * has the summary exact. The notes of a burst (a thousand clusters registering at once) are written
 * together: one summary write carries every note that arrived while the one before it ran, so the hot
 * document sees one writer per process instead of one per request. Idempotent: the sets make a note that
 * races a recount's listing count a cluster once. A note lost to a crash between the cluster's write and
 * this one is corrected by the minute recount.
 */
export function noteFleetChange(plane: ControlPlane, name: string, change: FleetChange): Promise<void> {
  if (plane.karmada) return Promise.resolve();
  let queue = noteQueues.get(plane);
  if (!queue) noteQueues.set(plane, (queue = { waiting: [], running: false }));
  const noted = new Promise<void>((resolve, reject) => queue.waiting.push({ name, change, done: { resolve, reject } }));
  if (!queue.running) {
    queue.running = true;
    void writeNotes(plane, queue);
  }
  return noted;
}

async function writeNotes(plane: ControlPlane, queue: { waiting: PendingNote[]; running: boolean }): Promise<void> {
  while (queue.waiting.length > 0) {
    const notes = queue.waiting.splice(0);
    try {
      await applyNotes(plane, notes);
      for (const note of notes) note.done.resolve();
    } catch (error) {
      for (const note of notes) note.done.reject(error);
    }
  }
  queue.running = false;
}

/**
 * The summary as this process's last note wrote it, with its ETag: the next round that changes it writes on
 * it without a read first (a summary another process changed meanwhile fails the write, and that round reads
 * it). A round that would change nothing on the copy reads the summary: only a write is checked.
 */
const notedHere = new PlaneState<Versioned<FleetSummary>>('fleetNotedHere');

async function applyNotes(plane: ControlPlane, notes: PendingNote[], useCopy = true): Promise<void> {
  const copy = useCopy ? notedHere.get(plane) : undefined;
  let stored = copy && noteAll(copy.value, notes) ? copy : await plane.fleetSummary.get(SUMMARY);
  if (!stored?.value.members || !stored.value.unhealthy) {
    // First use: counted from a listing. A listing made before these clusters' writes (another writer's
    // recount won the create) may miss them, so the notes are applied to whatever summary now stands.
    await recountFleet(plane);
    stored = await plane.fleetSummary.get(SUMMARY);
    if (!stored?.value.members || !stored.value.unhealthy) return;
  }
  const outcome = await mutate<FleetSummary, FleetSummary | undefined>(
    plane.fleetSummary,
    SUMMARY,
    (current) => {
      if (!current?.value.members || !current.value.unhealthy) return keep(undefined);
      const summary = noteAll(current.value, notes);
      return summary ? write(summary, summary) : keep(current.value);
    },
    stored,
  );
  if (outcome.result && outcome.etag) notedHere.set(plane, { value: outcome.result, etag: outcome.etag });
  else notedHere.delete(plane);
  if (outcome.result) summaryCache.set(plane, outcome.result);
  // Gone since the copy was written: decided again from what storage holds.
  else if (stored === copy) await applyNotes(plane, notes, false);
  // Deleted or rewritten by an older version meanwhile: counted again from a listing.
  else await recountFleet(plane);
}

/**
 * The summary after a round of clusters' changes, applied in order; undefined when they change nothing. A
 * cluster that joined or left, or whose fleet-view facts changed, takes a view version of its own.
 */
function noteAll(current: FleetSummary, notes: ReadonlyArray<{ name: string; change: FleetChange }>): FleetSummary | undefined {
  const members = new Set(current.members);
  const faulty = new Set(current.faulty);
  const unhealthy = new Set(current.unhealthy);
  let viewVersion = current.viewVersion ?? 0;
  const viewChanges = [...(current.viewChanges ?? [])];
  let changed = false;
  let viewed = false;
  const mark = (set: Set<string>, name: string, on: boolean): boolean => {
    if (set.has(name) === on) return false;
    if (on) set.add(name);
    else set.delete(name);
    return true;
  };
  for (const { name, change } of notes) {
    const membersChanged = (change.created && mark(members, name, true)) || (change.deleted && mark(members, name, false));
    const faultyChanged = mark(faulty, name, change.faulty && !change.deleted);
    const unhealthyChanged = mark(unhealthy, name, change.unhealthy && !change.deleted);
    if (membersChanged || change.viewChanged) {
      // Named with its version, so a process's view catches up by reading this cluster alone.
      viewChanges.push({ version: ++viewVersion, name });
      viewed = true;
    }
    if (membersChanged || faultyChanged || unhealthyChanged || change.viewChanged) changed = true;
  }
  if (!changed) return undefined;
  const names = [...members].sort();
  return {
    ...current,
    members: names,
    total: names.length,
    faulty: [...faulty].sort(),
    unhealthy: [...unhealthy].sort(),
    ...(viewed ? { viewVersion, viewChanges: viewChanges.slice(-FLEET_CHANGES_KEPT) } : {}),
  };
}

/** Two lists of cluster names hold the same names (in any order). */
const sameNames = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());

/**
 * Fleet health (docs/architecture.md, decision 6) from the maintained counts, with the names of the unhealthy
 * clusters and of those holding a faulty taint; updates the gauges. The one assessment the pacer, the API,
 * what-if, metrics, console and CLI show.
 */
export async function currentFleetHealth(
  plane: ControlPlane,
  maxAgeMs?: number,
): Promise<FleetHealth & { faulty: number; faultyClusters: string[]; unhealthyClusters: string[] }> {
  const { total, faulty: faultyClusters, unhealthy: unhealthyClusters = [] } = await fleetCounts(plane, maxAgeMs);
  const health = fleetHealth(total, unhealthyClusters.length, plane.config.rates);
  plane.metrics.setFleet({ faulty: faultyClusters.length, unhealthy: health.unhealthy, failureRatio: health.failureRatio, rate: health.rate });
  return { ...health, faulty: faultyClusters.length, faultyClusters, unhealthyClusters };
}

const taintPolicyCache = new RecentCache<PolicyRecord[]>('taintPolicies', SECOND);
/**
 * The ClusterTaintPolicies. A policy change also queues a re-evaluation of every cluster, so a report
 * evaluated against a second-old list is corrected at once.
 */
export function loadTaintPolicies(plane: ControlPlane, maxAgeMs = SECOND): Promise<PolicyRecord[]> {
  return taintPolicyCache.get(plane, async () => (await plane.policies.list()).map((entry) => entry.value), { maxAgeMs });
}
export function forgetTaintPolicies(plane: ControlPlane): void {
  taintPolicyCache.forget(plane);
}

const propagationPolicyCache = new RecentCache<PropagationCandidate[]>('propagationPolicies', SECOND);
/** The PropagationPolicies and ClusterPropagationPolicies, as selection candidates. */
export function loadPropagationPolicies(plane: ControlPlane, maxAgeMs = SECOND): Promise<PropagationCandidate[]> {
  return propagationPolicyCache.get(
    plane,
    async () =>
      (await plane.propagationPolicies.list()).map(({ value }) => ({
        kind: value.kind,
        ...(value.namespace ? { namespace: value.namespace } : {}),
        name: value.name,
        spec: value.spec,
      })),
    { maxAgeMs },
  );
}
export function forgetPropagationPolicies(plane: ControlPlane): void {
  propagationPolicyCache.forget(plane);
}

const pacerStateCache = new RecentCache<PacerState>('pacerState', SECOND);
/**
 * The pause switch and tier as this process last read them: the worker checks them before every eviction,
 * and a second-old answer still stops evictions within seconds.
 */
export function recentPacerState(plane: ControlPlane, maxAgeMs = SECOND): Promise<PacerState> {
  return pacerStateCache.get(plane, loadPacerState(plane), { maxAgeMs });
}
/** As `recentPacerState`, with the age the answer had when asked for (0: read now; see RecentCache.getAged). */
export function recentPacerStateAged(plane: ControlPlane, maxAgeMs = SECOND): Promise<{ value: PacerState; ageMs: number }> {
  return pacerStateCache.getAged(plane, loadPacerState(plane), { maxAgeMs });
}
const loadPacerState = (plane: ControlPlane) => async () => (await plane.ledger.getPacerState()).state;
/** After this process wrote the pacer row (the pause switch), its own checks see it at once. */
export function rememberPacerState(plane: ControlPlane, state: PacerState): void {
  pacerStateCache.set(plane, state);
}

/**
 * At a process's first run and then once an hour, a timer lists every binding instead of its flag's few:
 * the safety net for a flag written by an older version (or not at all). By time, not by run count, so the
 * rows an idle fleet reads do not grow with the number of bindings times the timers' frequency.
 */
export const FULL_SCAN_INTERVAL_MS = 3600_000;
const lastFullScans = new PlaneState<Map<BindingFlag, number>>('bindingFullScans');

/** The bindings a timer has work for: those whose flag is set, one query that returns only them. */
export async function bindingsNeeding(plane: ControlPlane, flag: BindingFlag): Promise<Array<Versioned<BindingRecord> & { id: string }>> {
  let scans = lastFullScans.get(plane);
  if (!scans) lastFullScans.set(plane, (scans = new Map<BindingFlag, number>()));
  const now = plane.clock.now().getTime();
  const last = scans.get(flag);
  if (last === undefined || now - last >= FULL_SCAN_INTERVAL_MS) {
    scans.set(flag, now);
    // Filtered as it is read: the scan never holds every binding in memory at once.
    return plane.bindings.list((value) => bindingFlags(value)[flag]);
  }
  return plane.bindings.listFlagged(flag);
}
