import { TAINT_EFFECTS, TaintEffect } from '../../api/resources';
import type { ClusterTaint, Condition, PolicyWindow } from '../../failover/model';
import { KARMADA, KubeApi, KubeObject } from '../../kube/api';
import { ConcurrencyError, DocumentStore, Versioned } from '../ports';
import type { ClusterRecord } from '../records';
import {
  ANNOTATIONS,
  annotationValue,
  conditional,
  listAll,
  ManagedInKarmadaError,
  noteUid,
  parseAnnotation,
  ReadObjects,
  userAnnotations,
} from './kubeObjects';

/**
 * What the app keeps about a Karmada Cluster that Karmada has no place for, in its own table: the taint
 * windows, the deadline already queued, the heartbeat and replay bookkeeping of pushed reports, the
 * probe's run of successes or failures, and since when it has been healthy (failback's count).
 */
export interface ClusterOverlay {
  policyWindows: Record<string, PolicyWindow>;
  evaluationScheduledFor?: string;
  lastReportAt?: string;
  lastObservedAt?: string;
  lastSignedAt?: number;
  lastSignature?: string;
  probe?: ClusterRecord['probe'];
  /** Failback's count: Ready and free of faulty taints since when (ClusterRecord.healthySince). */
  healthySince?: string;
  /** The failure's trace (ClusterRecord.faultTraceparent). */
  faultTraceparent?: string;
  faultTraceSince?: string;
}

type Ownership = Pick<ClusterTaint, 'owners' | 'manual' | 'karmadaOwners' | 'leftBy'>;
interface KarmadaTaint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}

const taintId = (t: { key: string; effect: string }) => `${t.key}:${t.effect}`;
const isKnownEffect = (effect: string): effect is TaintEffect => (TAINT_EFFECTS as readonly string[]).includes(effect);
/** What Karmada's Cluster validation takes in spec.taints; the app's other effects live in an annotation. */
const KARMADA_EFFECTS: readonly string[] = ['NoSchedule', 'NoExecute'];
const inSpec = (t: { effect: string }) => KARMADA_EFFECTS.includes(t.effect);
const wire = (t: { key: string; value?: string; effect: string; timeAdded?: string }): KarmadaTaint => ({
  key: t.key,
  ...(t.value ? { value: t.value } : {}),
  effect: t.effect,
  ...(t.timeAdded ? { timeAdded: t.timeAdded } : {}),
});

/** The ETag of a Karmada-backed cluster: the Cluster's resourceVersion and the overlay row's ETag. */
const joinEtag = (resourceVersion: string, overlayEtag: string | undefined) => `${resourceVersion}|${overlayEtag ?? ''}`;
function splitEtag(etag: string): { resourceVersion: string; overlayEtag?: string } {
  const at = etag.lastIndexOf('|');
  const overlayEtag = etag.slice(at + 1);
  return { resourceVersion: etag.slice(0, at), ...(overlayEtag ? { overlayEtag } : {}) };
}

/**
 * Clusters read from and written to the Karmada API server. A write goes out as Karmada's own controllers
 * would make it: the overlay row first (windows are re-derived if the rest fails), then `status.conditions`
 * on the status subresource, then `spec.taints` with the taint-ownership annotation in one merge patch;
 * each patch carries the resourceVersion it was computed from, so a concurrent change is a 409, re-read
 * and decided again, never overwritten. Taints of effects the app does not know are carried through.
 */
export class KarmadaClusterStore implements DocumentStore<ClusterRecord> {
  private readonly read = new ReadObjects();
  /** The overlay as read, by ETag: a write that leaves it as it was costs no request. */
  private readonly overlaysRead = new Map<string, string>();

  constructor(
    private readonly api: KubeApi,
    private readonly overlays: DocumentStore<ClusterOverlay>,
  ) {}

  async get(id: string): Promise<Versioned<ClusterRecord> | undefined> {
    const [object, overlay] = await Promise.all([this.api.get(KARMADA.clusters, id), this.overlays.get(id)]);
    if (!object) return undefined;
    this.read.remember(id, object);
    noteUid(this.api, 'Cluster', object);
    if (overlay) this.rememberOverlay(id, overlay.etag, overlay.value);
    return { value: toRecord(object, overlay?.value), etag: joinEtag(object.metadata.resourceVersion ?? '', overlay?.etag) };
  }

  /** A Cluster as a watch delivered it, with its overlay read now: the version `get` would return, without the GET. */
  async watched(object: KubeObject): Promise<Versioned<ClusterRecord>> {
    const id = object.metadata.name;
    const overlay = await this.overlays.get(id);
    this.read.remember(id, object);
    noteUid(this.api, 'Cluster', object);
    if (overlay) this.rememberOverlay(id, overlay.etag, overlay.value);
    return { value: toRecord(object, overlay?.value), etag: joinEtag(object.metadata.resourceVersion ?? '', overlay?.etag) };
  }

  async list(): Promise<Array<Versioned<ClusterRecord> & { id: string }>> {
    const [{ items }, overlays] = await Promise.all([listAll(this.api, KARMADA.clusters), this.overlays.list()]);
    const byName = new Map(overlays.map((o) => [o.id, o]));
    return items.map((object) => {
      const id = object.metadata.name;
      const overlay = byName.get(id);
      this.read.remember(id, object);
      noteUid(this.api, 'Cluster', object);
      if (overlay) this.rememberOverlay(id, overlay.etag, overlay.value);
      return { id, value: toRecord(object, overlay?.value), etag: joinEtag(object.metadata.resourceVersion ?? '', overlay?.etag) };
    });
  }

  create(): Promise<string> {
    return Promise.reject(new ManagedInKarmadaError('Cluster'));
  }

  delete(): Promise<boolean> {
    return Promise.reject(new ManagedInKarmadaError('Cluster'));
  }

  async replace(id: string, value: ClusterRecord, etag: string): Promise<string> {
    const { resourceVersion, overlayEtag } = splitEtag(etag);
    const object = this.read.recall(id, resourceVersion) ?? (await this.api.get(KARMADA.clusters, id));
    if (!object) throw new ConcurrencyError(`cluster ${id} is gone`);
    if (object.metadata.resourceVersion !== resourceVersion) throw new ConcurrencyError(`cluster ${id} changed since it was read`);
    const before = toRecord(object, undefined);

    // 1. The overlay.
    let nextOverlayEtag = overlayEtag;
    const overlay = overlayOf(value);
    const overlayText = JSON.stringify(overlay);
    if (overlayEtag === undefined || this.overlaysRead.get(`${id}@${overlayEtag}`) !== overlayText) {
      nextOverlayEtag = overlayEtag === undefined ? await this.overlays.create(id, overlay) : await this.overlays.replace(id, overlay, overlayEtag);
      this.rememberOverlay(id, nextOverlayEtag, overlay);
    }

    // 2. Conditions, on the status subresource.
    let current = object;
    if (JSON.stringify(value.conditions) !== JSON.stringify(before.conditions)) {
      current = await conditional(() =>
        this.api.patch(
          KARMADA.clusters,
          id,
          undefined,
          { metadata: { resourceVersion: current.metadata.resourceVersion }, status: { conditions: value.conditions.map(wireCondition) } },
          'merge',
          'status',
        ),
      );
    }

    // 3. Taints and who holds them, in one patch: the effects Karmada takes in spec.taints, the others
    // (PreferNoExecute, PreferNoSchedule) in an annotation.
    const taints = nextTaints(object, value.taints.filter(inSpec), before.taints.filter(inSpec));
    const heldText = annotationValue(value.taints.filter((t) => !inSpec(t)).map(wire));
    const owners = ownersOf(value.taints);
    const ownersText = annotationValue(owners);
    const annotations = object.metadata.annotations ?? {};
    const heldChanged = (annotations[ANNOTATIONS.heldTaints] ?? null) !== heldText;
    const annotationsChanged = (annotations[ANNOTATIONS.taintOwners] ?? null) !== ownersText || heldChanged;
    if (taints !== undefined || annotationsChanged) {
      current = await conditional(() =>
        this.api.patch(
          KARMADA.clusters,
          id,
          undefined,
          {
            metadata: {
              resourceVersion: current.metadata.resourceVersion,
              annotations: { [ANNOTATIONS.taintOwners]: ownersText, ...(heldChanged ? { [ANNOTATIONS.heldTaints]: heldText } : {}) },
            },
            ...(taints ? { spec: { taints } } : {}),
          },
          'merge',
        ),
      );
    }
    this.read.remember(id, current);
    return joinEtag(current.metadata.resourceVersion ?? '', nextOverlayEtag);
  }

  private rememberOverlay(id: string, etag: string, overlay: ClusterOverlay): void {
    this.overlaysRead.set(`${id}@${etag}`, JSON.stringify(overlayOf(overlay as ClusterRecord)));
    if (this.overlaysRead.size > 5_000) this.overlaysRead.delete(this.overlaysRead.keys().next().value!);
  }
}

const sameTaint = (a: { key: string; value?: string; effect: string; timeAdded?: string }, b: typeof a) =>
  a.key === b.key && (a.value ?? '') === (b.value ?? '') && a.effect === b.effect && a.timeAdded === b.timeAdded;

/**
 * The spec.taints to write, or undefined when the taints the app acts on are the ones read (in any order).
 * Entries that stay are written back exactly as they were (a missing timeAdded stays missing, a taint of
 * an effect we do not act on keeps its place); removed ones go, new ones are appended.
 */
function nextTaints(object: KubeObject, wanted: ClusterTaint[], read: ClusterTaint[]): KarmadaTaint[] | undefined {
  const unchanged = wanted.length === read.length && wanted.every((w) => read.some((r) => sameTaint(w, r)));
  if (unchanged) return undefined;
  const raw = rawTaints(object);
  const created = object.metadata.creationTimestamp;
  const kept = raw.filter((t) => !isKnownEffect(t.effect) || wanted.some((w) => sameTaint(w, { ...t, timeAdded: t.timeAdded ?? created })));
  const added = wanted.filter((w) => !raw.some((t) => isKnownEffect(t.effect) && sameTaint(w, { ...t, timeAdded: t.timeAdded ?? created })));
  return [...kept.map(wire), ...added.map(wire)];
}

function rawTaints(object: KubeObject): KarmadaTaint[] {
  const spec = (object.spec ?? {}) as { taints?: KarmadaTaint[] };
  return Array.isArray(spec.taints) ? spec.taints : [];
}

function ownersOf(taints: ClusterTaint[]): Record<string, Ownership> {
  return Object.fromEntries(
    taints
      .filter((t) => t.owners.length > 0 || t.karmadaOwners?.length || t.leftBy)
      .map((t) => [
        taintId(t),
        {
          owners: t.owners,
          manual: t.manual,
          ...(t.karmadaOwners?.length ? { karmadaOwners: t.karmadaOwners } : {}),
          ...(t.leftBy ? { leftBy: t.leftBy } : {}),
        },
      ]),
  );
}

function overlayOf(record: ClusterRecord): ClusterOverlay {
  return {
    policyWindows: record.policyWindows,
    ...(record.evaluationScheduledFor ? { evaluationScheduledFor: record.evaluationScheduledFor } : {}),
    ...(record.lastReportAt ? { lastReportAt: record.lastReportAt } : {}),
    ...(record.lastObservedAt ? { lastObservedAt: record.lastObservedAt } : {}),
    ...(record.lastSignedAt !== undefined ? { lastSignedAt: record.lastSignedAt } : {}),
    ...(record.lastSignature ? { lastSignature: record.lastSignature } : {}),
    ...(record.probe ? { probe: record.probe } : {}),
    ...(record.healthySince ? { healthySince: record.healthySince } : {}),
    ...(record.faultTraceparent ? { faultTraceparent: record.faultTraceparent, faultTraceSince: record.faultTraceSince } : {}),
  };
}

/** Kubernetes conditions need a reason (CamelCase); a report without one gets the status as reason. */
function wireCondition(c: Condition): Condition {
  return { type: c.type, status: c.status, reason: c.reason || `Reported${c.status}`, message: c.message ?? '', lastTransitionTime: c.lastTransitionTime };
}

/** A Karmada Cluster (plus the app's overlay) as the controllers see it. */
export function toRecord(object: KubeObject, overlay: ClusterOverlay | undefined): ClusterRecord {
  const meta = object.metadata;
  const { taints: _taints, ...spec } = (object.spec ?? {}) as Record<string, unknown>;
  const owners = parseAnnotation<Record<string, Ownership>>(object, ANNOTATIONS.taintOwners, {});
  const created = meta.creationTimestamp ?? new Date(0).toISOString();
  const held = parseAnnotation<KarmadaTaint[]>(object, ANNOTATIONS.heldTaints, []);
  const taints: ClusterTaint[] = [...rawTaints(object), ...(Array.isArray(held) ? held.filter((t) => !inSpec(t)) : [])].flatMap((t) => {
    if (!isKnownEffect(t.effect)) return [];
    // A taint no policy of ours holds was put there by someone else (a person, Karmada's cluster
    // controller): policies never remove it. Karmada leaves timeAdded unset on some; creation time stands in.
    const held = owners[taintId(t)] ?? { owners: [], manual: true };
    return [{ key: t.key, ...(t.value ? { value: t.value } : {}), effect: t.effect, timeAdded: t.timeAdded ?? created, ...held }];
  });
  const status = (object.status ?? {}) as { conditions?: Condition[] };
  return {
    name: meta.name,
    uid: meta.uid ?? '',
    createdAt: created,
    generation: meta.generation ?? 1,
    labels: meta.labels ?? {},
    annotations: userAnnotations(object),
    spec: spec,
    taints,
    conditions: (status.conditions ?? []).map((c) => ({
      type: c.type,
      status: c.status,
      ...(c.reason ? { reason: c.reason } : {}),
      ...(c.message ? { message: c.message } : {}),
      lastTransitionTime: c.lastTransitionTime,
    })),
    registeredBy: 'apply',
    policyWindows: overlay?.policyWindows ?? {},
    ...(overlay?.evaluationScheduledFor ? { evaluationScheduledFor: overlay.evaluationScheduledFor } : {}),
    ...(overlay?.lastReportAt ? { lastReportAt: overlay.lastReportAt } : {}),
    ...(overlay?.lastObservedAt ? { lastObservedAt: overlay.lastObservedAt } : {}),
    ...(overlay?.lastSignedAt !== undefined ? { lastSignedAt: overlay.lastSignedAt } : {}),
    ...(overlay?.lastSignature ? { lastSignature: overlay.lastSignature } : {}),
    ...(overlay?.probe ? { probe: overlay.probe } : {}),
    ...(overlay?.healthySince ? { healthySince: overlay.healthySince } : {}),
    ...(overlay?.faultTraceparent ? { faultTraceparent: overlay.faultTraceparent, faultTraceSince: overlay.faultTraceSince } : {}),
  };
}
