import { type BindingSpec, failoverSchema, placementSchema } from '../../api/resources';
import type { WorkloadStatusItem } from '../../failover/applicationFailover';
import { BindingKind, parseBindingKey } from '../../failover/bindingModel';
import { KARMADA, KubeApi, KubeObject, KubeResource } from '../../kube/api';
import { ConcurrencyError, FlaggedDocumentStore, Versioned } from '../ports';
import { BindingFlag, bindingFlags, BindingRecord } from '../records';
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

/** What application failover keeps per cluster, beside Karmada's aggregatedStatus (which Karmada writes). */
type WorkloadExtras = Pick<WorkloadStatusItem, 'creationTimestamp' | 'settled' | 'unhealthySince' | 'failoverHeld'>;
interface WorkloadState {
  clusters?: Record<string, WorkloadExtras>;
  checkAt?: string;
}

export const bindingKubeResource = (kind: BindingKind): KubeResource =>
  kind === 'ResourceBinding' ? KARMADA.resourceBindings : KARMADA.clusterResourceBindings;

export function bindingKeyOf(object: KubeObject, kind: BindingKind): string {
  return kind === 'ResourceBinding' ? `rb:${object.metadata.namespace ?? 'default'}:${object.metadata.name}` : `crb:${object.metadata.name}`;
}

/**
 * ResourceBindings and ClusterResourceBindings read from and written to the Karmada API server. The app
 * writes what Karmada's taint manager, graceful-eviction and application-failover controllers write:
 * `spec.clusters`, `spec.gracefulEvictionTasks`, plus its own bookkeeping as annotations — all in one
 * merge patch guarded by the resourceVersion it was computed from. Status belongs to Karmada's
 * binding-status controller and is never written; placement belongs to Karmada's scheduler.
 */
export class KarmadaBindingStore implements FlaggedDocumentStore<BindingRecord, BindingFlag> {
  private readonly read = new ReadObjects();

  constructor(private readonly api: KubeApi) {}

  async get(id: string): Promise<Versioned<BindingRecord> | undefined> {
    const ref = parseBindingKey(id);
    const object = await this.api.get(bindingKubeResource(ref.kind), ref.name, ref.namespace);
    if (!object) return undefined;
    this.read.remember(id, object);
    noteUid(this.api, ref.kind, object);
    return { value: toBindingRecord(object, ref.kind), etag: object.metadata.resourceVersion ?? '' };
  }

  async list(where?: (value: BindingRecord) => boolean): Promise<Array<Versioned<BindingRecord> & { id: string }>> {
    const [namespaced, clusterScoped] = await Promise.all([listAll(this.api, KARMADA.resourceBindings), listAll(this.api, KARMADA.clusterResourceBindings)]);
    const entries = (objects: KubeObject[], kind: BindingKind) =>
      objects.map((object) => {
        const id = bindingKeyOf(object, kind);
        this.read.remember(id, object);
        noteUid(this.api, kind, object);
        return { id, value: toBindingRecord(object, kind), etag: object.metadata.resourceVersion ?? '' };
      });
    const all = [...entries(namespaced.items, 'ResourceBinding'), ...entries(clusterScoped.items, 'ClusterResourceBinding')];
    return where ? all.filter((entry) => where(entry.value)) : all;
  }

  /** Karmada has no such index: the listing, filtered. */
  async listFlagged(flag: BindingFlag): Promise<Array<Versioned<BindingRecord> & { id: string }>> {
    return this.list((value) => bindingFlags(value)[flag]);
  }

  create(): Promise<string> {
    return Promise.reject(new ManagedInKarmadaError('ResourceBinding'));
  }

  delete(): Promise<boolean> {
    return Promise.reject(new ManagedInKarmadaError('ResourceBinding'));
  }

  async replace(id: string, value: BindingRecord, etag: string): Promise<string> {
    const ref = parseBindingKey(id);
    const resource = bindingKubeResource(ref.kind);
    const object = this.read.recall(id, etag) ?? (await this.api.get(resource, ref.name, ref.namespace));
    if (!object) throw new ConcurrencyError(`binding ${id} is gone`);
    if (object.metadata.resourceVersion !== etag) throw new ConcurrencyError(`binding ${id} changed since it was read`);
    const patch = bindingPatch(object, value);
    if (!patch) return etag;
    const written = await conditional(() => this.api.patch(resource, ref.name, ref.namespace, patch, 'merge'));
    this.read.remember(id, written);
    noteUid(this.api, ref.kind, written);
    return written.metadata.resourceVersion ?? '';
  }
}

/** The merge patch that takes `object` to `next` in what the app may write, or undefined when nothing changed. */
export function bindingPatch(object: KubeObject, next: BindingRecord): Record<string, unknown> | undefined {
  const spec = (object.spec ?? {}) as BindingSpec;
  const specPatch: Record<string, unknown> = {};
  if (JSON.stringify(next.spec.clusters ?? []) !== JSON.stringify(spec.clusters ?? [])) specPatch.clusters = next.spec.clusters ?? [];
  if (JSON.stringify(next.spec.gracefulEvictionTasks ?? []) !== JSON.stringify(spec.gracefulEvictionTasks ?? [])) {
    specPatch.gracefulEvictionTasks = next.spec.gracefulEvictionTasks ?? [];
  }
  const annotations: Record<string, string | null> = {};
  const wanted: Record<string, string | null> = {
    [ANNOTATIONS.evictionMarks]: annotationValue(next.evictionMarks),
    [ANNOTATIONS.workloadState]: annotationValue(workloadStateOf(next)),
    [ANNOTATIONS.evictionHistory]: annotationValue(next.spec.activeEvictionHistory),
    [ANNOTATIONS.traceparent]: annotationValue(next.traceparent),
    [ANNOTATIONS.failback]: annotationValue(next.failback),
  };
  for (const [key, text] of Object.entries(wanted)) {
    if ((object.metadata.annotations?.[key] ?? null) !== text) annotations[key] = text;
  }
  if (Object.keys(specPatch).length === 0 && Object.keys(annotations).length === 0) return undefined;
  return {
    metadata: { resourceVersion: object.metadata.resourceVersion, ...(Object.keys(annotations).length > 0 ? { annotations } : {}) },
    ...(Object.keys(specPatch).length > 0 ? { spec: specPatch } : {}),
  };
}

function workloadStateOf(record: BindingRecord): WorkloadState | undefined {
  const clusters = Object.fromEntries(
    (record.status.aggregatedStatus ?? []).flatMap((item) => {
      const extras: WorkloadExtras = {
        ...(item.creationTimestamp ? { creationTimestamp: item.creationTimestamp } : {}),
        ...(item.settled ? { settled: item.settled } : {}),
        ...(item.unhealthySince ? { unhealthySince: item.unhealthySince } : {}),
        ...(item.failoverHeld ? { failoverHeld: item.failoverHeld } : {}),
      };
      return Object.keys(extras).length > 0 ? [[item.clusterName, extras]] : [];
    }),
  );
  const state: WorkloadState = {
    ...(Object.keys(clusters).length > 0 ? { clusters } : {}),
    ...(record.status.applicationFailoverCheckAt ? { checkAt: record.status.applicationFailoverCheckAt } : {}),
  };
  return Object.keys(state).length > 0 ? state : undefined;
}

/**
 * Placement and failover as our apply would have them: the same schemas fill the same defaults (Karmada's
 * CRDs default some of them server-side, not all). A part that does not validate is left as Karmada has it.
 */
function withDefaults(spec: BindingSpec): Pick<BindingSpec, 'placement' | 'failover'> {
  const placement = spec.placement === undefined ? undefined : placementSchema.safeParse(spec.placement);
  const failover = spec.failover === undefined ? undefined : failoverSchema.safeParse(spec.failover);
  return {
    ...(placement?.success ? { placement: placement.data } : {}),
    ...(failover?.success ? { failover: failover.data } : {}),
  };
}

/** A Karmada binding (plus the app's annotations) as the controllers see it. */
export function toBindingRecord(object: KubeObject, kind: BindingKind): BindingRecord {
  const meta = object.metadata;
  const spec = (object.spec ?? {}) as BindingSpec;
  const status = (object.status ?? {}) as {
    schedulerObservedGeneration?: number;
    conditions?: BindingRecord['status']['conditions'];
    aggregatedStatus?: Array<{ clusterName: string; applied?: boolean; health?: WorkloadStatusItem['health']; status?: Record<string, unknown> }>;
  };
  const state = parseAnnotation<WorkloadState>(object, ANNOTATIONS.workloadState, {});
  const history = parseAnnotation<BindingSpec['activeEvictionHistory']>(object, ANNOTATIONS.evictionHistory, undefined);
  const marks = parseAnnotation<BindingRecord['evictionMarks']>(object, ANNOTATIONS.evictionMarks, undefined);
  const failback = parseAnnotation<BindingRecord['failback']>(object, ANNOTATIONS.failback, undefined);
  const traceparent = meta.annotations?.[ANNOTATIONS.traceparent];
  const aggregatedStatus = status.aggregatedStatus?.map((item) => ({
    clusterName: item.clusterName,
    ...(item.applied !== undefined ? { applied: item.applied } : {}),
    ...(item.health ? { health: item.health } : {}),
    ...(item.status ? { status: item.status } : {}),
    ...(state.clusters?.[item.clusterName] ?? {}),
  }));
  return {
    kind,
    ...(kind === 'ResourceBinding' ? { namespace: meta.namespace ?? 'default' } : {}),
    name: meta.name,
    uid: meta.uid ?? '',
    createdAt: meta.creationTimestamp ?? new Date(0).toISOString(),
    generation: meta.generation ?? 1,
    // Placement rows are versioned by the binding's generation: Karmada's scheduler moves it too.
    rev: meta.generation ?? 1,
    labels: meta.labels ?? {},
    annotations: userAnnotations(object),
    spec: { ...spec, ...withDefaults(spec), ...(history?.length ? { activeEvictionHistory: history } : {}) },
    status: {
      ...(status.schedulerObservedGeneration !== undefined ? { schedulerObservedGeneration: status.schedulerObservedGeneration } : {}),
      ...(status.conditions ? { conditions: status.conditions } : {}),
      ...(aggregatedStatus ? { aggregatedStatus } : {}),
      ...(state.checkAt ? { applicationFailoverCheckAt: state.checkAt } : {}),
    },
    ...(traceparent ? { traceparent } : {}),
    ...(marks ? { evictionMarks: marks } : {}),
    ...(failback && Object.keys(failback).length > 0 ? { failback } : {}),
  };
}
