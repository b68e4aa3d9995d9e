/**
 * The Kubernetes API port: what the app asks of a Karmada API server (and of member clusters' health
 * endpoints). One adapter, `clientNode.ts`, implements it with @kubernetes/client-node; controllers and
 * tests see only this interface.
 */

import { endCondition, Logger, reportCondition } from '../telemetry/log';

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

/**
 * Our own kinds on the Karmada API server (group failover.io, CRDs in infra/): what Karmada's strict
 * schemas cannot hold. A server without one of these CRDs answers 404, and the feature it carries is off.
 */
export const FAILOVER = {
  /** Seed-shape (windowed) ClusterTaintPolicies, with a status subresource (infra/clustertaintpolicy-crd.yaml). */
  clusterTaintPolicies: { group: 'failover.io', version: 'v1alpha1', plural: 'clustertaintpolicies', kind: 'ClusterTaintPolicy', namespaced: false },
  /** The status of a Karmada ClusterTaintPolicy, which has no status subresource; named after it (infra/taintpolicystatus-crd.yaml). */
  taintPolicyStatuses: { group: 'failover.io', version: 'v1alpha1', plural: 'taintpolicystatuses', kind: 'TaintPolicyStatus', namespaced: false },
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

  /**
   * What the failure says about the app's access to the API server, when it says something lasting:
   * `unreachable`, `unauthorized` (the credentials are refused), or `forbidden: <verb> <resource>` (an RBAC
   * rule is missing). Undefined for a failure of this one request (a conflict, an invalid patch, a 500).
   */
  get condition(): string | undefined {
    return accessCondition(this.status, this.verb, rbacResourceOf(this.resource));
  }

  /** The condition and then the failure that showed it: what /api/healthz and a 503 answer say. */
  get explanation(): string {
    const condition = this.condition;
    return condition ? `${condition}: ${this.message}` : this.message;
  }
}

/** The condition an `explanation` begins with, if any. */
export function conditionOfExplanation(text: string): string | undefined {
  return /^(unreachable|unauthorized|forbidden: \S+ \S+): /.exec(text)?.[1];
}

/** Statuses that mean the API server itself is down or overloaded rather than refusing this one request. */
const UNREACHABLE_STATUSES = new Set([0, 502, 503, 504]);

function accessCondition(status: number, verb: KubeVerb, rbacResource: string): string | undefined {
  if (UNREACHABLE_STATUSES.has(status)) return 'unreachable';
  if (status === 401) return 'unauthorized';
  if (status === 403) return `forbidden: ${verb} ${rbacResource}`;
  return undefined;
}

/** `clusters/status` from `clusters/status.cluster.karmada.io "member1"` (resourceName's form): the resource as an RBAC rule names it. */
function rbacResourceOf(resource: string): string {
  return resource.split(/[ .]/, 1)[0];
}

export const isConflict = (error: unknown): boolean => error instanceof KubeApiError && error.status === 409;
export const isGone = (error: unknown): boolean => error instanceof KubeApiError && error.status === 410;
/** A 404: the object is gone, or (on a list or a watch) its kind's CRD is not installed. */
export const isNotFound = (error: unknown): boolean => error instanceof KubeApiError && error.status === 404;

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
  /** Where the app's access to the API server stands, when the outcome of each request is noted (withAccessTracking). */
  readonly access?: KubeAccess;
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

/** `clusters/status`: a resource (and subresource) as an RBAC rule names it. */
export const rbacName = (resource: KubeResource, subresource?: string): string => `${resource.plural}${subresource ? `/${subresource}` : ''}`;

/** One lasting problem with the app's access to the API server, as this process sees it. */
export interface AccessProblem {
  /** `unreachable`, `unauthorized`, or `forbidden: <verb> <resource>`. */
  condition: string;
  /** The condition and the failure that showed it first. */
  reason: string;
  since: string;
}

const REMINDER_MS = 60_000;
const FAILING_SAFE = 'failing safe (no taint removed, no eviction)';
/**
 * Permissions the app can do without: with no `get` on Secrets the app cannot find the members'
 * credentials, so its own probes are off and Karmada's cluster-status controller alone writes `Ready`.
 * Refused, they are said once, not reported as a degraded service.
 */
export const OPTIONAL_PERMISSIONS: ReadonlySet<string> = new Set(['forbidden: get secrets']);

/**
 * The app's access to the Karmada API server as this process sees it, from the outcome of every request.
 * A condition (KubeApiError's `condition`) holds from the first request that fails with it until a request
 * shows it gone: any answer ends `unreachable`, an authenticated one `unauthorized`, an allowed one
 * `forbidden` for its verb and resource. Each is logged when it begins, once a minute while requests keep
 * failing with it, and when it ends; in between, the failures it causes are not logged again (see
 * reportCondition).
 */
export class KubeAccess {
  private readonly held = new Map<string, { reason: string; since: number; remindedAt: number }>();
  /** When each condition last ended here: a report of it made before then is out of date. */
  private readonly ended = new Map<string, number>();
  /** Optional permissions found refused (said once). */
  private readonly optionalSaid = new Set<string>();

  constructor(
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** A request for `verb` on `resource` (`clusters/status`) got an answer other than 401 or 403. */
  answered(verb: KubeVerb, resource: string): void {
    if (this.held.size === 0) return;
    this.end('unreachable');
    this.end('unauthorized');
    this.end(`forbidden: ${verb} ${resource}`);
  }

  failed(error: KubeApiError): void {
    const condition = error.condition;
    if (!condition) return this.answered(error.verb, rbacResourceOf(error.resource));
    if (condition !== 'unreachable') this.end('unreachable');
    if (condition.startsWith('forbidden')) this.end('unauthorized');
    if (OPTIONAL_PERMISSIONS.has(condition)) {
      if (!this.optionalSaid.has(condition)) this.log.info('optional permission refused: the feature that needs it is off', { condition });
      this.optionalSaid.add(condition);
      return;
    }
    const now = this.now();
    const held = this.held.get(condition);
    if (!held) {
      this.held.set(condition, { reason: error.explanation, since: now, remindedAt: now });
      reportCondition(condition);
      this.log.error(`Karmada API server unusable: ${FAILING_SAFE}`, { condition, reason: error.message });
    } else if (now - held.remindedAt >= REMINDER_MS) {
      held.remindedAt = now;
      this.log.error(`Karmada API server still unusable: ${FAILING_SAFE}`, {
        condition,
        forSeconds: Math.round((now - held.since) / 1000),
        reason: error.message,
      });
    }
  }

  /** The conditions that hold, oldest first. */
  problems(): AccessProblem[] {
    return [...this.held]
      .sort(([, a], [, b]) => a.since - b.since)
      .map(([condition, { reason, since }]) => ({ condition, reason, since: new Date(since).toISOString() }));
  }

  /** This process saw `condition` end after `time` (ms). */
  endedAfter(condition: string, time: number): boolean {
    return (this.ended.get(condition) ?? -Infinity) > time;
  }

  private end(condition: string): void {
    const held = this.held.get(condition);
    if (!held) return;
    const now = this.now();
    this.held.delete(condition);
    this.ended.set(condition, now);
    endCondition(condition);
    this.log.info('Karmada API server usable again', { condition, afterSeconds: Math.round((now - held.since) / 1000) });
  }
}

/** `api`, with the outcome of every request noted in `access`. */
export function withAccessTracking(api: KubeApi, access: KubeAccess): KubeApi {
  const noted = async <T>(verb: KubeVerb, resource: string, request: () => Promise<T>, cancelled?: AbortSignal): Promise<T> => {
    try {
      const answer = await request();
      // A watch cut short by its signal ends without proving anything.
      if (!cancelled?.aborted) access.answered(verb, resource);
      return answer;
    } catch (error) {
      if (error instanceof KubeApiError) access.failed(error);
      throw error;
    }
  };
  return {
    access,
    get: (resource, name, namespace) => noted('get', rbacName(resource), () => api.get(resource, name, namespace)),
    list: (resource, options) => noted('list', rbacName(resource), () => api.list(resource, options)),
    watch: (resource, options, onEvent) => noted('watch', rbacName(resource), () => api.watch(resource, options, onEvent), options.signal),
    patch: (resource, name, namespace, patch, type, subresource) =>
      noted('patch', rbacName(resource, subresource), () => api.patch(resource, name, namespace, patch, type, subresource)),
    create: (resource, namespace, body) => noted('create', rbacName(resource), () => api.create(resource, namespace, body)),
  };
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
