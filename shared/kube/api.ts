/**
 * The Kubernetes API port: what the app asks of a Karmada API server (and of member clusters' health
 * endpoints). One adapter, `clientNode.ts`, implements it with @kubernetes/client-node; controllers and
 * tests see only this interface.
 */

/** A kind the app reads or writes: where it lives in the API. */
export interface KubeResource {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
}

export const KARMADA = {
  clusters: { group: 'cluster.karmada.io', version: 'v1alpha1', plural: 'clusters', kind: 'Cluster', namespaced: false },
  clusterTaintPolicies: { group: 'policy.karmada.io', version: 'v1alpha1', plural: 'clustertaintpolicies', kind: 'ClusterTaintPolicy', namespaced: false },
  propagationPolicies: { group: 'policy.karmada.io', version: 'v1alpha1', plural: 'propagationpolicies', kind: 'PropagationPolicy', namespaced: true },
  clusterPropagationPolicies: {
    group: 'policy.karmada.io',
    version: 'v1alpha1',
    plural: 'clusterpropagationpolicies',
    kind: 'ClusterPropagationPolicy',
    namespaced: false,
  },
  resourceBindings: { group: 'work.karmada.io', version: 'v1alpha2', plural: 'resourcebindings', kind: 'ResourceBinding', namespaced: true },
  clusterResourceBindings: {
    group: 'work.karmada.io',
    version: 'v1alpha2',
    plural: 'clusterresourcebindings',
    kind: 'ClusterResourceBinding',
    namespaced: false,
  },
  events: { group: 'events.k8s.io', version: 'v1', plural: 'events', kind: 'Event', namespaced: true },
  secrets: { group: '', version: 'v1', plural: 'secrets', kind: 'Secret', namespaced: true },
} as const satisfies Record<string, KubeResource>;

export interface KubeMetadata {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: KubeMetadata;
  [field: string]: unknown;
}

export interface KubeList {
  items: KubeObject[];
  resourceVersion: string;
  continue?: string;
}

export type WatchEvent = { type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: KubeObject } | { type: 'BOOKMARK'; resourceVersion: string };

export type KubeVerb = 'get' | 'list' | 'watch' | 'create' | 'patch' | 'update' | 'delete';

/**
 * A request the API server refused or could not be sent. `status` is the HTTP status (0: no answer); the
 * message names the verb and the resource, so an operator can tell a missing RBAC rule from an outage.
 */
export class KubeApiError extends Error {
  constructor(
    readonly verb: KubeVerb,
    readonly resource: string,
    readonly status: number,
    readonly reason: string,
    detail: string,
  ) {
    super(`${verb} ${resource}: ${status === 0 ? 'API server unreachable' : `${status} ${reason}`}${detail ? `: ${detail}` : ''}`);
    this.name = 'KubeApiError';
  }

  /** The API server is down, slow, or refuses us: callers fail safe (no taint removed, no eviction). */
  get unavailable(): boolean {
    return this.status === 0 || this.status === 401 || this.status === 403 || this.status >= 500;
  }
}

export const isConflict = (error: unknown): boolean => error instanceof KubeApiError && error.status === 409;
export const isGone = (error: unknown): boolean => error instanceof KubeApiError && error.status === 410;

/** `clusters.cluster.karmada.io "member1"` style name of a resource, for messages. */
export function resourceName(resource: KubeResource, name?: string, namespace?: string, subresource?: string): string {
  const type = `${resource.plural}${subresource ? `/${subresource}` : ''}${resource.group ? `.${resource.group}` : ''}`;
  if (!name) return namespace ? `${type} in namespace ${namespace}` : type;
  return `${type} "${namespace ? `${namespace}/` : ''}${name}"`;
}

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  limit?: number;
  continue?: string;
}

export interface WatchOptions {
  resourceVersion: string;
  timeoutSeconds: number;
  signal?: AbortSignal;
}

export type PatchType = 'merge' | 'json';

/** The Kubernetes API as the app uses it. Every method rejects with KubeApiError. */
export interface KubeApi {
  get(resource: KubeResource, name: string, namespace?: string): Promise<KubeObject | undefined>;
  /** One page; pass `continue` from the previous page for the next. */
  list(resource: KubeResource, options?: ListOptions): Promise<KubeList>;
  /**
   * Streams changes after `resourceVersion` (with bookmarks) until the server ends the watch after
   * `timeoutSeconds`, or `signal` aborts it. Events are delivered one at a time: `onEvent` is awaited.
   * Rejects with a 410 KubeApiError when the resourceVersion has expired (relist).
   */
  watch(resource: KubeResource, options: WatchOptions, onEvent: (event: WatchEvent) => Promise<void>): Promise<void>;
  /** A merge patch (RFC 7386) or JSON patch (RFC 6902); never a strategic-merge patch, which custom resources refuse. */
  patch(resource: KubeResource, name: string, namespace: string | undefined, patch: unknown, type: PatchType, subresource?: 'status'): Promise<KubeObject>;
  create(resource: KubeResource, namespace: string | undefined, body: KubeObject): Promise<KubeObject>;
}

/** A member cluster's API endpoint and credentials, as Karmada's Secret or a kubeconfig context give them. */
export interface MemberEndpoint {
  cluster: string;
  server: string;
  token?: string;
  /** PEM. */
  caBundle?: string;
  insecureSkipTLSVerification?: boolean;
  /** A kubeconfig's client certificate, when it authenticates that way (PEM). */
  clientCertificate?: string;
  clientKey?: string;
}

/** `ok`: /readyz (or /healthz) answered 200; `notOk`: it answered otherwise; `unreachable`: no answer in time. */
export type ProbeResult = { outcome: 'ok' } | { outcome: 'notOk'; detail: string } | { outcome: 'unreachable'; detail: string };

export interface MemberProber {
  probe(endpoint: MemberEndpoint, timeoutMs: number): Promise<ProbeResult>;
}
