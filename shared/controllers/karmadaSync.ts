import type { BindingStatusReport } from '../api/resources';
import { mapConcurrent } from '../concurrency';
import type { BindingKind } from '../failover/bindingModel';
import { isFaultyTaint } from '../failover/evictionDecision';
import type { Condition } from '../failover/model';
import { conditionOfExplanation, isConflict, isGone, KARMADA, KubeApiError, KubeObject, KubeResource, WatchEvent } from '../kube/api';
import { ConcurrencyError, Versioned } from '../store/ports';
import { errorFields, StateChanges } from '../telemetry/log';
import { reportWorkloadStatus } from './applicationFailover';
import { sweepBinding } from './gracefulEviction';
import type { ControlPlane, IndexedPlacement, KarmadaConnection, KarmadaPorts, SyncCursor } from './ports';
import type { BindingRecord } from './records';
import { placementsOf } from './state/bindingWrites';
import { bindingKeyOf, toBindingRecord } from './state/karmada/bindingStore';
import { toRecord } from './state/karmada/clusterStore';
import { listAll, userAnnotations } from './state/karmada/kubeObjects';
import { fleetClusters, forgetFleet, forgetTaintPolicies } from './state/reads';
import { fanOutEvaluations } from './taintEvaluation';

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
  /** Handles one object that was added or changed (or, with `deleted`, removed). */
  handle: (plane: ControlPlane, object: KubeObject, deleted: boolean) => Promise<void>;
  /** After a (re)list: every object as it is now. */
  relisted: (plane: ControlPlane, objects: KubeObject[]) => Promise<void>;
}

export interface KindReport {
  events: number;
  relisted: boolean;
  resourceVersion: string;
}

export interface SyncReport {
  kinds: Record<string, KindReport>;
  /** The verb and resource that failed, when the API server could not be used. */
  degraded?: string;
}

const CURSOR_SAVE_EVERY = 200;
/** A (re)list hands its objects on this many at a time. */
const RELIST_CONCURRENCY = 16;

/** Per process: the faulty taints last seen per cluster, so a taint someone else added reaches the taint manager once. */
const seenFaulty = new WeakMap<object, Map<string, string>>();

const clusters: SyncedKind = {
  key: 'clusters',
  resource: KARMADA.clusters,
  async handle(plane, object, deleted) {
    forgetFleet(plane);
    const name = object.metadata.name;
    const seen = seenFaulty.get(plane) ?? new Map<string, string>();
    seenFaulty.set(plane, seen);
    const faulty = deleted
      ? ''
      : toRecord(object, undefined)
          .taints.filter(isFaultyTaint)
          .map((t) => `${t.key}:${t.effect}@${t.timeAdded}`)
          .sort()
          .join(',');
    if (seen.get(name) !== faulty) {
      seen.set(name, faulty);
      await plane.taintManager.send({ cluster: name, reason: 'taints-changed' });
    }
    if (!deleted) await plane.evaluations.send({ cluster: name, reason: 'watch' });
  },
  async relisted(plane, objects) {
    forgetFleet(plane);
    await mapConcurrent(objects, RELIST_CONCURRENCY, (object) => clusters.handle(plane, object, false));
  },
};

/** Per process: what the taint evaluation reads of each ClusterTaintPolicy (its spec's generation, labels, annotations). */
const seenPolicies = new WeakMap<object, Map<string, string>>();
const evaluatedPart = (object: KubeObject) =>
  JSON.stringify([object.metadata.uid ?? '', object.metadata.generation ?? 0, object.metadata.labels ?? {}, userAnnotations(object)]);

const taintPolicies: SyncedKind = {
  key: 'clustertaintpolicies',
  resource: KARMADA.clusterTaintPolicies,
  async handle(plane, object, deleted) {
    const seen = seenPolicies.get(plane) ?? new Map<string, string>();
    seenPolicies.set(plane, seen);
    const name = object.metadata.name;
    if (deleted) seen.delete(name);
    else {
      // A status write (this app's policy status) changes nothing the evaluation reads: no fan-out.
      if (seen.get(name) === evaluatedPart(object)) return;
      seen.set(name, evaluatedPart(object));
    }
    forgetTaintPolicies(plane);
    await fanOutEvaluations(plane);
  },
  async relisted(plane, objects) {
    seenPolicies.set(plane, new Map(objects.map((object) => [object.metadata.name, evaluatedPart(object)])));
    forgetTaintPolicies(plane);
    await fanOutEvaluations(plane);
  },
};

/** Every ClusterTaintPolicy in Karmada, as the API server has it (status included): what the status round works from. */
export async function listPolicyObjects(plane: ControlPlane): Promise<KubeObject[]> {
  return plane.karmada ? (await listAll(plane.karmada.api, KARMADA.clusterTaintPolicies)).items : [];
}

const conditionTuples = (conditions: readonly Condition[]) =>
  JSON.stringify(
    [...conditions].sort((a, b) => a.type.localeCompare(b.type)).map((c) => [c.type, c.status, c.reason ?? '', c.message ?? '', c.lastTransitionTime]),
  );

/** Per process: why each policy's status could not be written last, so a refusal repeated every round is logged once. */
const statusRefusals = new WeakMap<object, StateChanges>();

/**
 * Policy status in Karmada mode: each ClusterTaintPolicy's conditions (`statuses`, by name) written to its
 * status subresource when they differ from what it has, with its resourceVersion (a lost race waits for
 * the next round). `kubectl wait --for=condition=EvictionInProgress=false clustertaintpolicy/<name>` reads
 * them. A refusal (no RBAC for clustertaintpolicies/status, a CRD without the subresource) is logged when
 * it begins or changes, not fatal: the API's own view of the status stays right. An RBAC refusal or an
 * outage is reported by the API's access tracking (and makes the app degraded).
 */
export async function publishPolicyStatuses(
  plane: ControlPlane,
  items: readonly KubeObject[],
  statuses: ReadonlyMap<string, readonly Condition[]>,
): Promise<number> {
  const karmada = plane.karmada;
  if (!karmada || statuses.size === 0) return 0;
  let written = 0;
  const refusals = statusRefusals.get(plane) ?? new StateChanges();
  statusRefusals.set(plane, refusals);
  for (const object of items) {
    const conditions = statuses.get(object.metadata.name);
    const current = (object.status as { conditions?: Condition[] } | undefined)?.conditions ?? [];
    if (!conditions || conditionTuples(current) === conditionTuples(conditions)) continue;
    try {
      await karmada.api.patch(
        KARMADA.clusterTaintPolicies,
        object.metadata.name,
        undefined,
        { metadata: { resourceVersion: object.metadata.resourceVersion }, status: { conditions } },
        'merge',
        'status',
      );
      written++;
      if (refusals.cleared(object.metadata.name)) plane.log.info('ClusterTaintPolicy status written to Karmada again', { policy: object.metadata.name });
    } catch (error) {
      if (isConflict(error)) continue;
      if (!(error instanceof KubeApiError)) throw error;
      if (refusals.changed(object.metadata.name, `${error.status} ${error.reason}`)) {
        plane.log.warn('ClusterTaintPolicy status not written to Karmada (said again when the answer changes)', {
          policy: object.metadata.name,
          ...errorFields(error),
        });
      }
    }
  }
  return written;
}

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
      const records = changed.map((object) => ({ object, key: bindingKeyOf(object, kind), record: toBindingRecord(object, kind) }));
      await plane.ledger.upsertPlacements(records.flatMap(({ record }) => placementsOf(record)));
      const departures = records.flatMap(({ key, record }) => {
        const now = new Set((record.spec.clusters ?? []).map((c) => c.name));
        return (byId.get(key)?.value.clusters ?? []).filter((c) => !now.has(c)).map((cluster) => ({ cluster, key, rev: record.rev }));
      });
      await mapConcurrent(departures, RELIST_CONCURRENCY, ({ cluster, key, rev }) => plane.ledger.removePlacement(cluster, key, rev));
      await karmada.placements.upsertMany(
        records.map(({ object, key, record }) => ({
          id: key,
          value: { clusters: (record.spec.clusters ?? []).map((c) => c.name), resourceVersion: object.metadata.resourceVersion ?? '' },
        })),
      );
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
  const record = toBindingRecord(object, kind);
  await indexPlacements(plane, karmada, key, record, object.metadata.resourceVersion ?? '', indexed);
  await followUp(plane, key, record, notifyTaintManager, object.metadata.resourceVersion);
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
  resourceVersion: string,
  indexed: Versioned<IndexedPlacement> | undefined,
): Promise<void> {
  const now = (record.spec.clusters ?? []).map((c) => c.name);
  const rows = placementsOf(record);
  if (rows.length > 0) await plane.ledger.upsertPlacements(rows);
  const left = (indexed?.value.clusters ?? []).filter((c) => !now.includes(c));
  await Promise.all(left.map((cluster) => plane.ledger.removePlacement(cluster, key, record.rev)));
  const value: IndexedPlacement = { clusters: now, resourceVersion };
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
  await Promise.all(
    SYNCED.map(async (kind) => {
      try {
        kinds[kind.key] = await syncKind(plane, karmada, kind, deadline, signal);
      } catch (error) {
        await failed(error);
      }
    }),
  );
  return { kinds, ...(degraded ? { degraded } : {}) };
}

async function syncKind(plane: ControlPlane, karmada: KarmadaPorts, kind: SyncedKind, deadline: number, signal?: AbortSignal): Promise<KindReport> {
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
    await watchUntil();
    await save();
  } catch (error) {
    // Another instance moved the cursor: it is syncing this kind now.
    if (!(error instanceof ConcurrencyError)) throw error;
  }
  return { events, relisted, resourceVersion: resourceVersion ?? '' };

  async function watchUntil() {
    while (!signal?.aborted) {
      const remaining = Math.floor((deadline - Date.now()) / 1000);
      if (remaining < 1) break;
      try {
        await karmada.api.watch(
          kind.resource,
          { resourceVersion: resourceVersion!, timeoutSeconds: remaining, ...(signal ? { signal } : {}) },
          async (event: WatchEvent) => {
            if (event.type === 'BOOKMARK') {
              resourceVersion = event.resourceVersion;
              await save();
              return;
            }
            await kind.handle(plane, event.object, event.type === 'DELETED');
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
