import { createHash } from 'node:crypto';
import { type BindingStatusReport, type ClusterFailoverAnnotations, clusterFailoverAnnotations, withClusterFailoverAnnotations } from '../api/resources';
import { PlaneState, RecentCache } from '../cache';
import { mapConcurrent } from '../concurrency';
import { bindingKey, type BindingKind, type PlacementFacts } from '../failover/bindingModel';
import { isFaultyTaint } from '../failover/evictionDecision';
import type { Condition } from '../failover/model';
import { POLICY_LABELS, policyKey } from '../failover/propagation';
import { conditionOfExplanation, FAILOVER, isGone, isNotFound, KARMADA, KubeApiError, KubeObject, KubeResource, WatchEvent } from '../kube/api';
import { bindingKeyOf, toBindingRecord } from '../store/karmada/bindingStore';
import { KarmadaClusterStore, toRecord } from '../store/karmada/clusterStore';
import { listAll, userAnnotations } from '../store/karmada/kubeObjects';
import { ownPolicyId } from '../store/karmada/policyStores';
import { canWriteMany, ConcurrencyError, listByPrefix, Versioned } from '../store/ports';
import type { BindingRecord, ClusterRecord, PolicyRecord } from '../store/records';
import { errorFields, StateChanges } from '../telemetry/log';
import { reportWorkloadStatus } from './applicationFailover';
import { sweepBinding } from './gracefulEviction';
import { paceAndRunFirst } from './paceAndRun';
import { announcePassHere } from './pacer';
import type { ControlPlane, IndexedPlacement, KarmadaConnection, KarmadaPorts, SyncCursor } from './ports';
import { placementsOf } from './state/bindingWrites';
import { requestEvaluations } from './state/evaluationRequests';
import { fleetClusters, forgetFleet, forgetPropagationPolicies, forgetTaintPolicies, noteWatchedCluster, watchingClusters } from './state/reads';
import { evaluateToPlan, fanOutEvaluations } from './taintEvaluation';
import { planInline, type PlanOutcome } from './taintManager';

/**
 * Change detection against the Karmada API server, shaped for Functions: one bounded invocation (a timer)
 * lists once, then watches from the stored resourceVersion with bookmarks until its time is up, and stores
 * where it got to. The next invocation, on this instance or another, resumes from there; a 410 Gone
 * relists. Each change becomes the message our own API would have sent for it (evaluate a cluster, plan a
 * cluster's evictions, sweep a binding), so the rest of the app does not know where the change came from.
 */

interface SyncedKind {
  key: string;
  resource: KubeResource;
  /** One of our own kinds: a server without its CRD (404) has none, and the sync goes on without it. */
  optional?: boolean;
  /** Handles one object that was added or changed (or, with `deleted`, removed). */
  handle: (plane: ControlPlane, object: KubeObject, deleted: boolean, run: SyncRun) => Promise<void>;
  /** After a (re)list: every object as it is now. */
  relisted: (plane: ControlPlane, objects: KubeObject[]) => Promise<void>;
  /** The watch runs until `untilMs` (the plane's clock; 0: it ended): every change reaches `handle` as it comes. */
  watching?: (plane: ControlPlane, untilMs: number) => void;
}

/** One sync invocation: work a handler starts and leaves running, awaited before the invocation returns. */
export interface SyncRun {
  /** When the watches end (epoch ms). */
  deadline: number;
  later(work: Promise<unknown>): void;
}

export interface KindReport {
  events: number;
  relisted: boolean;
  resourceVersion: string;
  /** An optional kind the server does not serve (its CRD is not installed). */
  notServed?: boolean;
}

export interface SyncReport {
  kinds: Record<string, KindReport>;
  /** When every watch had ended and saved its cursor (epoch ms), before the evictions run beside them were awaited. */
  watchesEndedAt?: number;
  /** The verb and resource that failed, when the API server could not be used. */
  degraded?: string;
}

const CURSOR_SAVE_EVERY = 200;
/** A watch shorter than this is not started: the next invocation resumes from the cursor. */
const MIN_WATCH_MS = 200;
/** A (re)list hands its objects on this many at a time. */
const RELIST_CONCURRENCY = 16;

/** Per process: the faulty taints last seen per cluster, so a taint someone else added reaches the taint manager once. */
const seenFaulty = new PlaneState<Map<string, string>>('karmadaSeenFaulty');
/** Per process: the conditions (type and status) last seen per cluster, so a change of them is evaluated at once. */
const seenConditions = new PlaneState<Map<string, string>>('karmadaSeenConditions');

const conditionsKey = (object: KubeObject) =>
  JSON.stringify(
    ((object.status as { conditions?: Condition[] } | undefined)?.conditions ?? []).map((c) => [c.type, c.status]).sort((a, b) => a[0].localeCompare(b[0])),
  );

/**
 * A watched Cluster whose conditions changed (Karmada's clusterStatus controller wrote Ready=False, say) is
 * evaluated right here, in the watch handler, instead of through the `taint-evaluations` queue: a message
 * sent from this long invocation waits for the queue's idle poll (up to host.json's maxPollingInterval),
 * which put the taint up to a second after Ready. A taint that makes the cluster faulty is planned here too
 * (the taint manager's shared pass, so the message the write also sends plans nothing twice) and paced at
 * once; the first evictions, due within a second, are executed by this invocation beside the watch (a queue
 * message would wait for the worker's poll), the rest go to the queue as from any pacer pass.
 * A failure falls back to the messages.
 */
async function evaluateNow(plane: ControlPlane, object: KubeObject, run: SyncRun): Promise<void> {
  const name = object.metadata.name;
  const started = performance.now();
  const took = () => Math.round(performance.now() - started);
  try {
    // The watched version is the one to decide on: a GET would wait on an API server that is busiest right
    // now (every controller reacts to the same change). Stale by the time of the write: refused, read again.
    // A change of faulty taints this evaluation writes is planned below: the write's taint-manager message
    // goes delayed, and the watch that delivers the write sends none (plannedHere).
    const { changes, record } = await evaluateToPlan(plane, name, await watchedVersion(plane, object));
    if (!changes.some((c) => isFaultyTaint(c.taint))) return;
    if (record) plannedHere.of(plane, () => new Map()).set(name, faultyEffects(record));
    const evaluatedMs = took();
    let plannedMs = 0;
    // Announced before planning: a timer tick meanwhile leaves the new rows to the pass that follows it.
    const release = announcePassHere(plane);
    let outcome: PlanOutcome;
    try {
      // Paced as soon as the cluster is planned; the rest of the pass (blocked rows, failbacks home) comes
      // with the change's delayed message.
      outcome = await planInline(plane, name, async ({ planned }) => {
        plannedMs = took();
        // Run here until the watch's deadline: a failure seen late in a watch still gets its first evictions
        // at once, and the invocation may end up to a second or two late (the timer ticks every second).
        if (planned > 0) await paceAndRunFirst(plane, { until: run.deadline, later: (work) => run.later(work) });
      });
    } finally {
      release();
    }
    plane.log.debug('inline taint evaluation', { cluster: name, evaluatedMs, planned: outcome.planned, plannedMs, pacedMs: took() });
  } catch (error) {
    plane.log.warn('inline taint evaluation failed: the evaluation message takes it', { cluster: name, ...errorFields(error) });
    await plane.evaluations.send({ cluster: name, reason: 'watch' });
  }
}

/**
 * Per cluster, the faulty taints (key and effect: Karmada stores timeAdded to the second) that this process's
 * watch evaluation wrote and planned itself: the watch delivering that write sends no taint-manager message.
 */
const plannedHere = new PlaneState<Map<string, string>>('karmadaPlannedHere');

const faultyEffects = (record: ClusterRecord) =>
  record.taints
    .filter(isFaultyTaint)
    .map((t) => `${t.key}:${t.effect}`)
    .sort()
    .join(',');

/** The cluster as watched, with the app's overlay (one Table read): what `evaluateCluster` would otherwise GET. */
async function watchedVersion(plane: ControlPlane, object: KubeObject): Promise<Versioned<ClusterRecord> | undefined> {
  return plane.clusters instanceof KarmadaClusterStore ? plane.clusters.watched(object) : undefined;
}

async function clusterChanged(
  plane: ControlPlane,
  object: KubeObject,
  deleted: boolean,
  run: SyncRun | undefined,
  /** A relist's: the clusters to evaluate, sent together once every cluster is seen. */
  toEvaluate?: string[],
): Promise<void> {
  const name = object.metadata.name;
  const watched = deleted ? undefined : toRecord(object, undefined);
  noteWatchedCluster(plane, name, watched);
  const seen = seenFaulty.get(plane) ?? new Map<string, string>();
  seenFaulty.set(plane, seen);
  const faulty = (watched?.taints ?? [])
    .filter(isFaultyTaint)
    .map((t) => `${t.key}:${t.effect}@${t.timeAdded}`)
    .sort()
    .join(',');
  const firstSight = !seen.has(name);
  if (seen.get(name) !== faulty) {
    seen.set(name, faulty);
    // A cluster first seen without a faulty taint has nothing to plan: rows left from before (it recovered
    // while no process watched) are abandoned by the taint manager's resync, as after any restart. A first
    // sync of a large fleet so sends no message per healthy cluster.
    const planned = plannedHere.get(plane);
    const ownWrite = watched !== undefined && planned?.get(name) === faultyEffects(watched);
    planned?.delete(name);
    if (!(firstSight && faulty === '') && !ownWrite) await plane.taintManager.send({ cluster: name, reason: 'taints-changed' });
  }
  const conditions = seenConditions.get(plane) ?? new Map<string, string>();
  seenConditions.set(plane, conditions);
  if (deleted) {
    conditions.delete(name);
    return;
  }
  const now = conditionsKey(object);
  const before = conditions.get(name);
  conditions.set(name, now);
  // A relist hands on every cluster: those go through the queue, many to a message.
  if (run && before !== now) await evaluateNow(plane, object, run);
  else if (toEvaluate) toEvaluate.push(name);
  else await plane.evaluations.send({ cluster: name, reason: 'watch' });
}

const clusters: SyncedKind = {
  key: 'clusters',
  resource: KARMADA.clusters,
  handle: (plane, object, deleted, run) => clusterChanged(plane, object, deleted, run),
  async relisted(plane, objects) {
    forgetFleet(plane);
    const toEvaluate: string[] = [];
    await mapConcurrent(objects, RELIST_CONCURRENCY, (object) => clusterChanged(plane, object, false, undefined, toEvaluate));
    await requestEvaluations(plane, toEvaluate, 'watch');
  },
  // The fleet view follows the watch meanwhile: placement, the guard and the pacer list no Clusters.
  watching: (plane, untilMs) => watchingClusters(plane, untilMs),
};

const evaluatedPart = (object: KubeObject) =>
  JSON.stringify([object.metadata.uid ?? '', object.metadata.generation ?? 0, object.metadata.labels ?? {}, userAnnotations(object)]);

/**
 * A kind of ClusterTaintPolicy: Karmada's, or ours (`idOf` gives the app's policy id). A change of what the
 * taint evaluation reads re-evaluates every cluster; a status write (our policy status) changes nothing it reads.
 */
const taintPolicyKind = (key: string, resource: KubeResource, idOf: (name: string) => string, optional: boolean): SyncedKind => {
  /** Per process: what the taint evaluation reads of each policy (its spec's generation, labels, annotations), and the policy as read then. */
  const seenPolicies = new PlaneState<Map<string, { part: string; record?: PolicyRecord }>>(`karmadaSeenPolicies.${key}`);
  return {
    key,
    resource,
    optional,
    async handle(plane, object, deleted) {
      const seen = seenPolicies.of(plane, () => new Map());
      const id = idOf(object.metadata.name);
      const before = seen.get(id);
      if (!deleted && before?.part === evaluatedPart(object)) return;
      forgetTaintPolicies(plane);
      // The clusters the policy targeted (as last read here) or targets now, or that hold a taint it adds.
      const after = deleted ? undefined : (await plane.policies.get(id))?.value;
      if (deleted) seen.delete(id);
      else seen.set(id, { part: evaluatedPart(object), ...(after ? { record: after } : {}) });
      await fanOutEvaluations(plane, { versions: [before?.record, after] });
    },
    async relisted(plane, objects) {
      seenPolicies.set(plane, new Map(objects.map((object) => [idOf(object.metadata.name), { part: evaluatedPart(object) }])));
      forgetTaintPolicies(plane);
      await fanOutEvaluations(plane);
    },
  };
};

/** Karmada's ClusterTaintPolicies (its shape), and ours: the seed shape with windows (infra/clustertaintpolicy-crd.yaml). */
const taintPolicies = taintPolicyKind('clustertaintpolicies', KARMADA.clusterTaintPolicies, (name) => name, false);
const ownTaintPolicies = taintPolicyKind('clustertaintpolicies.failover.io', FAILOVER.clusterTaintPolicies, ownPolicyId, true);

// ----------------------------------------------------------------------------------- cluster failover settings

/**
 * Per policy (policyKey), the cluster-failover settings its annotations give (failover.io/cluster-*):
 * what Karmada's PropagationPolicy schema cannot hold. Only policies that validate (the store leaves the
 * others out) and set some. Kept a second by this process; a policy event forgets it.
 */
const policySettingsCache = new RecentCache<Map<string, ClusterFailoverAnnotations>>('karmadaPolicySettings', 1000);

function policySettings(plane: ControlPlane): Promise<Map<string, ClusterFailoverAnnotations>> {
  return policySettingsCache.get(plane, async () => {
    const settings = new Map<string, ClusterFailoverAnnotations>();
    for (const { id, value } of await plane.propagationPolicies.list()) {
      const annotations = clusterFailoverAnnotations(value.annotations);
      if (Object.keys(annotations).length > 0) settings.set(id, annotations);
    }
    return settings;
  });
}

/** The policy Karmada's detector names on a binding (annotations; labels on older Karmada), as a policyKey. */
function governingPolicyKey(binding: BindingRecord): string | undefined {
  const named = { ...binding.labels, ...binding.annotations };
  const name = named[POLICY_LABELS.name];
  if (name && binding.namespace !== undefined)
    return policyKey({ kind: 'PropagationPolicy', namespace: named[POLICY_LABELS.namespace] ?? binding.namespace, name });
  const clusterPolicy = named[POLICY_LABELS.clusterName];
  return clusterPolicy ? policyKey({ kind: 'ClusterPropagationPolicy', name: clusterPolicy }) : undefined;
}

/**
 * The binding as the taint manager acts on it: Karmada copies its policy's spec.failover to the binding,
 * not its annotations, so the settings of the policy it names go into failover.cluster here.
 */
function withPolicySettings(record: BindingRecord, settings: ReadonlyMap<string, ClusterFailoverAnnotations>): BindingRecord {
  const key = settings.size > 0 ? governingPolicyKey(record) : undefined;
  const own = key ? settings.get(key) : undefined;
  const failover = own ? withClusterFailoverAnnotations(record.spec.failover, own) : record.spec.failover;
  return failover === record.spec.failover ? record : { ...record, spec: { ...record.spec, failover } };
}

const failoverSettingsText = (failover: PlacementFacts['failoverCluster']) => JSON.stringify(failover ?? null);

/**
 * After a policy's settings changed (or may have, while nobody watched): the placement rows of the
 * bindings in scope whose failover.cluster differs from what is indexed, written again. Rows not indexed
 * yet are the binding sync's; a row a newer binding revision wrote is left alone. Returns the rows written.
 */
async function reindexFailoverSettings(plane: ControlPlane, scope: { namespace?: string; clusterScoped: boolean; policy?: string }): Promise<number> {
  const karmada = plane.karmada!;
  policySettingsCache.forget(plane);
  // Only indexed bindings can have rows to correct: an empty index (a first sync, whose binding relist writes
  // every row with the settings it reads) needs no binding listing and no cluster's rows read.
  const listed =
    scope.namespace !== undefined && !scope.clusterScoped ? await listByPrefix(karmada.placements, `rb:${scope.namespace}:`) : await karmada.placements.list();
  const indexed = new Set(listed.map((entry) => entry.id));
  if (indexed.size === 0) return 0;
  const [settings, namespaced, clusterScoped] = await Promise.all([
    policySettings(plane),
    listAll(karmada.api, KARMADA.resourceBindings, scope.namespace),
    scope.clusterScoped ? listAll(karmada.api, KARMADA.clusterResourceBindings) : undefined,
  ]);
  const records = [
    ...namespaced.items.map((object) => toBindingRecord(object, 'ResourceBinding')),
    ...(clusterScoped?.items ?? []).map((object) => toBindingRecord(object, 'ClusterResourceBinding')),
  ].filter((record) => indexed.has(bindingKey(record)) && (!scope.policy || governingPolicyKey(record) === scope.policy));
  const wanted = records.flatMap((record) => placementsOf(withPolicySettings(record, settings)));
  const byCluster = new Map<string, PlacementFacts[]>();
  for (const row of wanted) byCluster.set(row.cluster, [...(byCluster.get(row.cluster) ?? []), row]);
  const stale = (
    await mapConcurrent([...byCluster], RELIST_CONCURRENCY, async ([cluster, rows]) => {
      const indexed = new Map((await plane.ledger.listPlacements(cluster)).map((row) => [bindingKey(row), row]));
      return rows.filter((row) => {
        const current = indexed.get(bindingKey(row));
        return current && current.rev <= row.rev && failoverSettingsText(current.failoverCluster) !== failoverSettingsText(row.failoverCluster);
      });
    })
  ).flat();
  if (stale.length > 0) await plane.ledger.upsertPlacements(stale);
  return stale.length;
}

/** The cluster-failover annotations of a policy as last seen (with its generation: a spec edit can make them apply or not). */
const settingsPart = (object: KubeObject) => JSON.stringify([object.metadata.generation ?? 0, clusterFailoverAnnotations(object.metadata.annotations)]);

/**
 * PropagationPolicies and ClusterPropagationPolicies: watched for their cluster-failover annotations
 * (Karmada does not copy annotations to bindings, and an annotation edit changes no binding). A change
 * re-indexes the bindings that name the policy; a relist (changes nobody watched) every binding in scope.
 */
const propagationPolicyKind = (kind: 'PropagationPolicy' | 'ClusterPropagationPolicy', resource: KubeResource, key: string): SyncedKind => {
  /** Per process: settingsPart of each policy last seen (absent: not seen by this process, so it may have changed). */
  const seenSettings = new PlaneState<Map<string, string>>(`karmadaSeenSettings.${key}`);
  const keyOf = (object: KubeObject) =>
    policyKey({ kind, ...(object.metadata.namespace ? { namespace: object.metadata.namespace } : {}), name: object.metadata.name });
  return {
    key,
    resource,
    async handle(plane, object, deleted) {
      policySettingsCache.forget(plane);
      forgetPropagationPolicies(plane);
      const seen = seenSettings.of(plane, () => new Map<string, string>());
      const id = keyOf(object);
      const now = deleted ? '' : settingsPart(object);
      if (seen.get(id) === now) return;
      seen.set(id, now);
      await reindexFailoverSettings(plane, {
        ...(object.metadata.namespace ? { namespace: object.metadata.namespace } : {}),
        clusterScoped: kind === 'ClusterPropagationPolicy',
        policy: id,
      });
    },
    async relisted(plane, objects) {
      seenSettings.set(plane, new Map(objects.map((object) => [keyOf(object), settingsPart(object)])));
      policySettingsCache.forget(plane);
      forgetPropagationPolicies(plane);
      await reindexFailoverSettings(plane, { clusterScoped: kind === 'ClusterPropagationPolicy' });
    },
  };
};

const bindingKind = (kind: BindingKind, resource: KubeResource, key: string): SyncedKind => {
  const synced: SyncedKind = {
    key,
    resource,
    handle: (plane, object, deleted) => bindingChanged(plane, object, kind, deleted),
    async relisted(plane, objects) {
      const karmada = plane.karmada!;
      const listed = new Set(objects.map((o) => bindingKeyOf(o, kind)));
      // A binding deleted while nobody watched leaves index rows behind: drop them.
      const prefix = kind === 'ResourceBinding' ? 'rb:' : 'crb:';
      const indexed = await karmada.placements.list();
      const gone = indexed.filter((entry) => entry.id.startsWith(prefix) && !listed.has(entry.id));
      await mapConcurrent(gone, RELIST_CONCURRENCY, (entry) => dropPlacements(plane, entry.id, entry));
      const byId = new Map(indexed.map((entry) => [entry.id, entry]));
      // Unchanged since it was indexed: nothing to do (a relist costs one listing, not one write per binding).
      const changed = objects.filter((object) => byId.get(bindingKeyOf(object, kind))?.value.resourceVersion !== object.metadata.resourceVersion);
      // The snapshot is indexed in bulk: placement rows 100 to a transaction per cluster, index rows 100 to one.
      const settings = await policySettings(plane);
      const records = changed.map((object) => ({
        object,
        key: bindingKeyOf(object, kind),
        record: withPolicySettings(toBindingRecord(object, kind), settings),
      }));
      // A binding not indexed yet (all of them on a first sync) most likely has no rows: they are created,
      // which the store does without looking for a stored row; a row found there after all is written over.
      const fresh = records.filter(({ key }) => !byId.has(key)).flatMap(({ record }) => placementsOf(record));
      const created = fresh.length > 0 ? await plane.ledger.createPlacements(fresh) : [];
      await plane.ledger.upsertPlacements([
        ...records.filter(({ key }) => byId.has(key)).flatMap(({ record }) => placementsOf(record)),
        ...fresh.filter((_, i) => !created[i]),
      ]);
      const departures = records.flatMap(({ key, record }) => {
        const now = new Set((record.spec.clusters ?? []).map((c) => c.name));
        return (byId.get(key)?.value.clusters ?? []).filter((c) => !now.has(c)).map((cluster) => ({ cluster, key, rev: record.rev }));
      });
      await mapConcurrent(departures, RELIST_CONCURRENCY, ({ cluster, key, rev }) => plane.ledger.removePlacement(cluster, key, rev));
      const indexRows = records.map(({ object, key, record }) => ({
        id: key,
        value: {
          clusters: (record.spec.clusters ?? []).map((c) => c.name),
          resourceVersion: object.metadata.resourceVersion ?? '',
          facts: placementDigest(record),
        },
      }));
      // The same for the index rows: a binding not indexed yet gets its row created.
      const store = karmada.placements;
      const freshIndex = indexRows.filter(({ id }) => !byId.has(id));
      const createdRows = freshIndex.length > 0 && canWriteMany(store) ? await store.writeMany(freshIndex) : freshIndex.map(() => undefined);
      await store.upsertMany([...indexRows.filter(({ id }) => byId.has(id)), ...freshIndex.filter((_, i) => createdRows[i] === undefined)]);
      await mapConcurrent(records, RELIST_CONCURRENCY, ({ object, key, record }) => followUp(plane, key, record, false, object.metadata.resourceVersion));
      // One message per faulty cluster for the whole relist, not one per binding placed there.
      const faulty = (await fleetClusters(plane, 0)).filter((c) => c.taints.some(isFaultyTaint)).map((c) => c.name);
      await Promise.all(faulty.map((cluster) => plane.taintManager.send({ cluster, reason: 'binding-changed' })));
    },
  };
  return synced;
};

const SYNCED: SyncedKind[] = [
  clusters,
  taintPolicies,
  ownTaintPolicies,
  propagationPolicyKind('PropagationPolicy', KARMADA.propagationPolicies, 'propagationpolicies'),
  propagationPolicyKind('ClusterPropagationPolicy', KARMADA.clusterPropagationPolicies, 'clusterpropagationpolicies'),
  bindingKind('ResourceBinding', KARMADA.resourceBindings, 'resourcebindings'),
  bindingKind('ClusterResourceBinding', KARMADA.clusterResourceBindings, 'clusterresourcebindings'),
];

async function bindingChanged(
  plane: ControlPlane,
  object: KubeObject,
  kind: BindingKind,
  deleted: boolean,
  known?: Versioned<IndexedPlacement>,
  notifyTaintManager = true,
): Promise<void> {
  const key = bindingKeyOf(object, kind);
  const karmada = plane.karmada!;
  const indexed = known ?? (await karmada.placements.get(key));
  if (deleted) {
    await dropPlacements(plane, key, indexed);
    return;
  }
  const record = withPolicySettings(toBindingRecord(object, kind), await policySettings(plane));
  // Karmada rewrites a binding many times while it fails over (status, Works, its scheduler's results): a
  // version that leaves the placement rows as they are writes nothing and sends the taint manager nothing.
  const facts = placementDigest(record);
  const placed = indexed?.value.facts === facts;
  if (!placed) await indexPlacements(plane, karmada, key, record, { resourceVersion: object.metadata.resourceVersion ?? '', facts }, indexed);
  await followUp(plane, key, record, notifyTaintManager && !placed, object.metadata.resourceVersion);
}

/** IndexedPlacement.facts of a binding version: its placement rows without the revision they were taken at. */
function placementDigest(record: BindingRecord): string {
  const rows = placementsOf(record).map((row) => ({ ...row, rev: 0 }));
  return createHash('sha256').update(JSON.stringify(rows)).digest('base64url');
}

/** What a binding's change sets off: the taint manager of a faulty cluster it is on, its sweep, its application failover. */
async function followUp(plane: ControlPlane, key: string, record: BindingRecord, notifyTaintManager: boolean, resourceVersion?: string): Promise<void> {
  // Placed on a faulty cluster: that cluster's taint manager plans it.
  const faulty = !notifyTaintManager ? new Set<string>() : new Set((await fleetClusters(plane)).filter((c) => c.taints.some(isFaultyTaint)).map((c) => c.name));
  for (const target of record.spec.clusters ?? []) {
    if (faulty.has(target.name)) await plane.taintManager.send({ cluster: target.name, reason: 'binding-changed' });
  }
  // The watched object is the current version: the sweep decides on it without reading it again.
  if ((record.spec.gracefulEvictionTasks ?? []).length > 0)
    await sweepBinding(plane, key, resourceVersion ? { value: record, etag: resourceVersion } : undefined);
  if (record.spec.failover?.application && record.status.aggregatedStatus?.length) {
    // Karmada's binding-status controller wrote the health: fold it in as a report would be.
    const report: BindingStatusReport = {
      aggregatedStatus: record.status.aggregatedStatus.map((item) => ({
        clusterName: item.clusterName,
        health: item.health ?? 'Unknown',
        ...(item.applied !== undefined ? { applied: item.applied } : {}),
        ...(item.status ? { status: item.status } : {}),
      })),
    };
    await reportWorkloadStatus(plane, key, report);
  }
}

async function indexPlacements(
  plane: ControlPlane,
  karmada: KarmadaPorts,
  key: string,
  record: BindingRecord,
  /** The binding version's resourceVersion and its placementDigest. */
  version: { resourceVersion: string; facts: string },
  indexed: Versioned<IndexedPlacement> | undefined,
): Promise<void> {
  const now = (record.spec.clusters ?? []).map((c) => c.name);
  const rows = placementsOf(record);
  if (rows.length > 0) await plane.ledger.upsertPlacements(rows);
  const left = (indexed?.value.clusters ?? []).filter((c) => !now.includes(c));
  await Promise.all(left.map((cluster) => plane.ledger.removePlacement(cluster, key, record.rev)));
  const value: IndexedPlacement = { clusters: now, ...version };
  try {
    if (indexed) await karmada.placements.replace(key, value, indexed.etag);
    else await karmada.placements.create(key, value);
  } catch (error) {
    // Another sync indexed it meanwhile; its row is at least as new.
    if (!(error instanceof ConcurrencyError)) throw error;
  }
}

async function dropPlacements(plane: ControlPlane, key: string, indexed: Versioned<IndexedPlacement> | undefined): Promise<void> {
  if (!indexed) return;
  await Promise.all(indexed.value.clusters.map((cluster) => plane.ledger.removePlacement(cluster, key, Number.MAX_SAFE_INTEGER)));
  await plane.karmada!.placements.delete(key, indexed.etag).catch((error: unknown) => {
    if (!(error instanceof ConcurrencyError)) throw error;
  });
}

/** Per process: the optional kinds found not served, so that is said once (and again when it changes). */
const notServedKinds = new PlaneState<StateChanges>('karmadaNotServedKinds');

/**
 * One sync invocation: every kind in parallel, each watching for at most `budgetSeconds`. Never throws for
 * an unusable API server: the connection row says degraded, with the verb and resource that failed.
 */
export async function syncKarmada(plane: ControlPlane, budgetSeconds: number, signal?: AbortSignal): Promise<SyncReport> {
  const karmada = plane.karmada;
  if (!karmada) return { kinds: {} };
  const deadline = Date.now() + budgetSeconds * 1000;
  let degraded: string | undefined;
  const failed = async (error: unknown) => {
    if (!(error instanceof KubeApiError)) throw error;
    degraded ??= error.explanation;
    // Said at once, not at the end of the watch budget: /api/healthz reports it within a request.
    await recordConnection(plane, karmada, error);
  };
  try {
    // One small request first: the API server is usable (reachable, and it lets us list) or it is not.
    await karmada.api.list(KARMADA.clusters, { limit: 1 });
  } catch (error) {
    await failed(error);
    return { kinds: {}, degraded };
  }
  await recordConnection(plane, karmada, undefined);
  const kinds: Record<string, KindReport> = {};
  const started: Array<Promise<unknown>> = [];
  const run: SyncRun = { deadline, later: (work) => void started.push(work.catch(() => undefined)) };
  const notServed = notServedKinds.get(plane) ?? new StateChanges();
  notServedKinds.set(plane, notServed);
  await Promise.all(
    SYNCED.map(async (kind) => {
      try {
        kinds[kind.key] = await syncKind(plane, karmada, kind, deadline, run, signal);
        if (kind.optional && notServed.cleared(kind.key)) plane.log.info('Karmada API server serves our kind now', { kind: kind.key });
      } catch (error) {
        if (!(kind.optional && isNotFound(error))) return failed(error);
        // Its CRD is not installed: the feature it carries is off, and the rest of the sync goes on.
        kinds[kind.key] = { events: 0, relisted: false, resourceVersion: '', notServed: true };
        if (notServed.changed(kind.key, 'not served'))
          plane.log.info('Karmada API server does not serve our kind (its CRD is not installed): what it carries is off', { kind: kind.key });
      }
    }),
  );
  const watchesEndedAt = Date.now();
  // Work the handlers left running (evictions executed beside the watch) ends with the invocation.
  while (started.length > 0) await Promise.all(started.splice(0));
  return { kinds, watchesEndedAt, ...(degraded ? { degraded } : {}) };
}

async function syncKind(
  plane: ControlPlane,
  karmada: KarmadaPorts,
  kind: SyncedKind,
  deadline: number,
  run: SyncRun,
  signal?: AbortSignal,
): Promise<KindReport> {
  let cursor = await karmada.cursors.get(kind.key);
  let resourceVersion = cursor?.value.resourceVersion;
  let relisted = false;
  let events = 0;
  let unsaved = 0;
  const save = async () => {
    if (!resourceVersion || resourceVersion === cursor?.value.resourceVersion) return;
    const value: SyncCursor = { resourceVersion, updatedAt: plane.clock.now().toISOString() };
    // Conditional: when another instance moved the cursor, it is syncing; this one stops.
    const etag = cursor ? await karmada.cursors.replace(kind.key, value, cursor.etag) : await karmada.cursors.create(kind.key, value);
    cursor = { value, etag };
    unsaved = 0;
  };
  const relist = async () => {
    const { items, resourceVersion: listedAt } = await listAll(karmada.api, kind.resource);
    await kind.relisted(plane, items);
    resourceVersion = listedAt;
    relisted = true;
    await save();
  };
  try {
    if (!resourceVersion) await relist();
    kind.watching?.(plane, plane.clock.now().getTime() + (deadline - Date.now()));
    await watchUntil();
    await save();
  } catch (error) {
    // Another instance moved the cursor: it is syncing this kind now.
    if (!(error instanceof ConcurrencyError)) throw error;
  } finally {
    kind.watching?.(plane, 0);
  }
  return { events, relisted, resourceVersion: resourceVersion ?? '' };

  async function watchUntil() {
    while (!signal?.aborted) {
      // The watch ends at the deadline to the millisecond (the next invocation starts right after it), not
      // at the last whole second before it: a change in the gap waited for the next invocation.
      const remainingMs = deadline - Date.now();
      if (remainingMs < MIN_WATCH_MS) break;
      const atDeadline = AbortSignal.timeout(remainingMs);
      try {
        await karmada.api.watch(
          kind.resource,
          {
            resourceVersion: resourceVersion!,
            timeoutSeconds: Math.ceil(remainingMs / 1000),
            signal: signal ? AbortSignal.any([signal, atDeadline]) : atDeadline,
          },
          async (event: WatchEvent) => {
            if (event.type === 'BOOKMARK') {
              resourceVersion = event.resourceVersion;
              await save();
              return;
            }
            await kind.handle(plane, event.object, event.type === 'DELETED', run);
            resourceVersion = event.object.metadata.resourceVersion ?? resourceVersion;
            events++;
            if (++unsaved >= CURSOR_SAVE_EVERY) await save();
          },
        );
      } catch (error) {
        if (!isGone(error)) throw error;
        await relist();
      }
    }
  }
}

const CONNECTION = 'karmada';

/**
 * The connection row: the sync's view of the API server, shared by every instance. A failure that is a
 * lasting condition (unreachable, forbidden) is logged by the API's access tracking when it begins; other
 * failures of the sync (a missing CRD, a 500) are logged here, when the row changes.
 */
async function recordConnection(plane: ControlPlane, karmada: KarmadaPorts, failure: KubeApiError | undefined): Promise<void> {
  const now = plane.clock.now().toISOString();
  const current = await karmada.connection.get(CONNECTION);
  const state: KarmadaConnection['state'] = failure ? 'degraded' : 'ok';
  const reason = failure?.explanation;
  if (current && current.value.state === state && current.value.reason === reason) return;
  const value: KarmadaConnection = { state, ...(reason ? { reason } : {}), since: now, checkedAt: now };
  try {
    if (current) await karmada.connection.replace(CONNECTION, value, current.etag);
    else await karmada.connection.create(CONNECTION, value);
  } catch (error) {
    if (!(error instanceof ConcurrencyError)) throw error;
  }
  if (failure && !failure.condition) plane.log.error('Karmada sync failed: failing safe (no taint removed, no eviction)', { reason });
  else if (!failure && current?.value.state === 'degraded') plane.log.info('Karmada sync running again');
}

/**
 * The connection as /api/healthz and /api/fleet report it (undefined in standalone mode, or before the
 * first sync when nothing has failed yet): the sync's row, and what this process's own requests found
 * (a write the API server forbids is seen only by the writer). A condition in the row that this process
 * has since seen end is out of date.
 */
export async function karmadaConnection(plane: ControlPlane): Promise<KarmadaConnection | undefined> {
  if (!plane.karmada) return undefined;
  const stored = (await plane.karmada.connection.get(CONNECTION))?.value;
  const access = plane.karmada.api.access;
  const problems = access?.problems() ?? [];
  const storedReason = stored?.state === 'degraded' ? stored.reason : undefined;
  const storedCondition = storedReason && conditionOfExplanation(storedReason);
  const storedStands =
    storedReason !== undefined &&
    !(storedCondition && problems.some((p) => p.condition === storedCondition)) &&
    !(storedCondition && access?.endedAfter(storedCondition, Date.parse(stored!.checkedAt)));
  const reasons = [...problems.map((p) => p.reason), ...(storedStands ? [storedReason] : [])];
  if (reasons.length === 0) {
    if (!stored) return undefined;
    return stored.state === 'ok' ? stored : { state: 'ok', since: stored.checkedAt, checkedAt: stored.checkedAt };
  }
  const since = [...problems.map((p) => p.since), ...(storedStands ? [stored!.since] : [])].sort()[0];
  return { state: 'degraded', reason: reasons.join('; '), since, checkedAt: plane.clock.now().toISOString() };
}
