export { ManagedInKarmadaError } from '../../api/errors';
import { isConflict, isNotFound, KubeApi, KubeApiError, KubeObject, KubeResource } from '../../kube/api';
import { ConcurrencyError } from '../ports';

/**
 * What the Karmada-backed stores share: the ETag is the object's resourceVersion, a 409 is a lost race
 * (ConcurrencyError, so the caller re-reads and decides again), and the object last read at a version is
 * kept briefly so a write can be computed against it without reading it again.
 */

/** Annotations the app keeps on Karmada's objects (Karmada's CRDs prune unknown fields, annotations stay). */
export const ANNOTATIONS = {
  /** Cluster: which policy holds which taint (key:effect → owners), written with spec.taints in one patch. */
  taintOwners: 'failover.io/taint-owners',
  /**
   * Cluster: the taints Karmada's Cluster validation refuses (effects PreferNoExecute and PreferNoSchedule:
   * it takes NoSchedule and NoExecute only), as the app holds them; written with spec.taints in one patch.
   */
  heldTaints: 'failover.io/taints',
  /** Binding: the eviction marks (cluster → ledger decision), written with spec.clusters in one patch. */
  evictionMarks: 'failover.io/eviction-marks',
  /** Binding: what application failover keeps per cluster (first unhealthy, settled) and the queued check. */
  workloadState: 'failover.io/workload-state',
  /** Binding: clusters application failover evicted, with when (the binding's activeEvictionHistory). */
  evictionHistory: 'failover.io/eviction-history',
  /** Binding: the trace of the last eviction. */
  traceparent: 'failover.io/traceparent',
  /** Binding: failback's entries (home → what replaced it), written with spec.clusters in one patch. */
  failback: 'failover.io/failback',
} as const;

/** Annotations that are the app's own bookkeeping, not shown as the object's annotations. */
export const OWN_ANNOTATIONS = new Set<string>([...Object.values(ANNOTATIONS), 'kubectl.kubernetes.io/last-applied-configuration']);

export function userAnnotations(object: KubeObject): Record<string, string> {
  return Object.fromEntries(Object.entries(object.metadata.annotations ?? {}).filter(([key]) => !OWN_ANNOTATIONS.has(key)));
}

export function parseAnnotation<T>(object: KubeObject, key: string, fallback: T): T {
  const text = object.metadata.annotations?.[key];
  if (!text) return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

/** The annotation value to write: JSON, or null (a merge patch deletes the key) when empty. */
export function annotationValue(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'object' && Object.keys(value).length === 0) return null;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Every object of a kind (in one namespace when given), page by page (500 a page, as client-go's informers). */
export async function listAll(api: KubeApi, resource: KubeResource, namespace?: string): Promise<{ items: KubeObject[]; resourceVersion: string }> {
  const items: KubeObject[] = [];
  const scope = namespace ? { namespace } : {};
  let page = await api.list(resource, { ...scope, limit: 500 });
  items.push(...page.items);
  while (page.continue) {
    page = await api.list(resource, { ...scope, limit: 500, continue: page.continue });
    items.push(...page.items);
  }
  return { items, resourceVersion: page.resourceVersion };
}

/** Every object of one of our own kinds, or undefined when the server does not serve it (its CRD is not installed: 404). */
export async function listIfServed(api: KubeApi, resource: KubeResource): Promise<KubeObject[] | undefined> {
  try {
    return (await listAll(api, resource)).items;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** The objects read at a resourceVersion, kept for the write that usually follows the read. */
export class ReadObjects {
  private readonly byKey = new Map<string, KubeObject>();

  constructor(private readonly limit = 5_000) {}

  remember(id: string, object: KubeObject): void {
    const key = `${id}@${object.metadata.resourceVersion}`;
    this.byKey.delete(key);
    this.byKey.set(key, object);
    if (this.byKey.size > this.limit) this.byKey.delete(this.byKey.keys().next().value!);
  }

  recall(id: string, resourceVersion: string): KubeObject | undefined {
    return this.byKey.get(`${id}@${resourceVersion}`);
  }
}

/** A patch that lost the race (409) is a ConcurrencyError; everything else stays a KubeApiError. */
export async function conditional<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (isConflict(error)) throw new ConcurrencyError((error as KubeApiError).message);
    throw error;
  }
}

/**
 * The uids of Karmada objects read through an API client, by `kind/namespace/name`: an Event about an
 * object names its uid (kubectl describe finds events by it), and a uid never changes for the life of an
 * object, so the stores' reads save the event mirror a lookup.
 */
const uidsByApi = new WeakMap<KubeApi, Map<string, string>>();
const uidKey = (kind: string, name: string, namespace?: string) => `${kind}/${namespace ?? ''}/${name}`;

export function noteUid(api: KubeApi, kind: string, object: KubeObject): void {
  if (!object.metadata.uid) return;
  let uids = uidsByApi.get(api);
  if (!uids) uidsByApi.set(api, (uids = new Map<string, string>()));
  const key = uidKey(kind, object.metadata.name, object.metadata.namespace);
  if (uids.get(key) === object.metadata.uid) return;
  uids.set(key, object.metadata.uid);
  if (uids.size > 50_000) uids.delete(uids.keys().next().value!);
}

export function knownUid(api: KubeApi, kind: string, name: string, namespace?: string): string | undefined {
  return uidsByApi.get(api)?.get(uidKey(kind, name, namespace));
}
