import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo, createServer as createNetServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { parse as parseYaml, parseAllDocuments, stringify as stringifyYaml } from 'yaml';
import {
  clone,
  deepEqual,
  eventFieldValue,
  eventsV1View,
  eventV1Errors,
  type FieldError,
  type FieldRequirement,
  fromCoreEvent,
  humanDuration,
  isObject,
  type Json,
  jsonPatch,
  type LabelRequirement,
  matchesFields,
  matchesLabels,
  mergePatch,
  metaFieldValue,
  microTimeError,
  parseFieldSelector,
  parseLabelSelector,
  PatchError,
  SelectorError,
  strategicAsMergePatch,
  toCoreEvent,
} from './kubeApiPatch';

/**
 * A Kubernetes API server for tests, standing in for a Karmada API server: HTTP and HTTPS on one port of
 * 127.0.0.1, JSON only, objects in memory. It follows the real kube-apiserver where a lenient fake would
 * let a broken client pass (resourceVersion preconditions, status subresources, generation, patch
 * content types, watch history and 410 Expired, events.k8s.io validation, RBAC messages), and
 * test/integration/kubeApiServer.test.ts holds it to that with the real kubectl and @kubernetes/client-node.
 *
 * Left out: protobuf; server-side apply (415); aggregated discovery (kubectl falls back to the legacy
 * documents); OpenAPI v2 (404) and any schema in OpenAPI v3 (see openApiV3), hence no field validation,
 * pruning or defaulting of custom resources; admission; garbage collection and owner references;
 * managedFields; graceful deletion beyond finalizers; impersonation; client certificates.
 */

/**
 * A self-signed certificate for 127.0.0.1 and localhost (valid 2000–2100), made for this test server only:
 * kubectl (clientcmd) sends a bearer token only over TLS, so the server answers HTTPS as well as HTTP on
 * its one port. Not a secret: it guards nothing but loopback test traffic.
 */
const TEST_TLS_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgyFkymyfyE6MefB55
iHgbT8l/fzMTmVo39HYjuV1HAE2hRANCAAR+XiuppqN/W5egJMET+vJ8niWWY03e
e+vIoObyXAOaeS336TAUSS59rGGG3h4jlMFgIQJRY15P2a+YlGFZGQlg
-----END PRIVATE KEY-----
`;
export const TEST_TLS_CERT = `-----BEGIN CERTIFICATE-----
MIIBojCCAUigAwIBAgIBATAKBggqhkjOPQQDAjAfMR0wGwYDVQQDDBRrdWJlLWFw
aS10ZXN0LXNlcnZlcjAgFw0wMDAxMDEwMDAwMDBaGA8yMTAwMDEwMTAwMDAwMFow
HzEdMBsGA1UEAwwUa3ViZS1hcGktdGVzdC1zZXJ2ZXIwWTATBgcqhkjOPQIBBggq
hkjOPQMBBwNCAAR+XiuppqN/W5egJMET+vJ8niWWY03ee+vIoObyXAOaeS336TAU
SS59rGGG3h4jlMFgIQJRY15P2a+YlGFZGQlgo3MwcTAaBgNVHREEEzARhwR/AAAB
gglsb2NhbGhvc3QwDwYDVR0TAQH/BAUwAwEB/zAOBgNVHQ8BAf8EBAMCAoQwEwYD
VR0lBAwwCgYIKwYBBQUHAwEwHQYDVR0OBBYEFAAmt3cuzz5LkyVzOhPNlJbM9OyJ
MAoGCCqGSM49BAMCA0gAMEUCIQDLNDpUCbgRWot0T28i18zO/SviuS4GgdCXd/Rd
W4ToUQIgKeaMCdeX9yg9CvwBo3G7oN9evj4HsiZjPr0O878xe1g=
-----END CERTIFICATE-----
`;

/** Objects are free-form JSON: `any` keeps the many nested reads short (tests may use it here). */
export type KubeObject = Record<string, any>;
type Obj = KubeObject;

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  description?: string;
  /** The cell, from the object as served (a date column takes the RFC 3339 string and prints an age). */
  value: (obj: Obj) => unknown;
}

/** A resource the server serves: the internal registry entry, as a test may add one (e.g. apps/v1 deployments). */
export interface ResourceSpec {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular?: string;
  namespaced: boolean;
  /** Has a `/status` subresource: main writes keep the stored status, status writes change only status. */
  hasStatus?: boolean;
  /** A custom resource (CRD): updates must carry metadata.resourceVersion, strategic merge patch is 415. */
  isCustom?: boolean;
  shortNames?: string[];
  categories?: string[];
  /** Table columns between NAME and AGE for `kubectl get`; default: just NAME and AGE. */
  columns?: PrinterColumn[];
}

interface ResourceDef extends ResourceSpec {
  singular: string;
  hasStatus: boolean;
  isCustom: boolean;
  apiVersion: string;
  /** `clusters.cluster.karmada.io`, or `secrets` in the core group: how the real server names it in messages. */
  qualified: string;
  /** Resources that are views of one store share this (core/v1 and events.k8s.io/v1 events). */
  storage: string;
  tracksGeneration: boolean;
  /** The stored (canonical) object as this view serves it, and back. */
  toView?: (stored: Obj) => Obj;
  fromView?: (obj: Obj) => Obj;
  /** Field-selector value of `field` on the served object; undefined for a field label the resource does not support. */
  fieldValue: (obj: Obj, field: string) => string | undefined;
  /** Checks a create or update body as sent (before conversion); throws ApiError. */
  validate?: (obj: Obj, namespace: string) => void;
  /** Server-side defaulting on create and update (secret stringData, namespace phase). */
  prepare?: (obj: Obj) => void;
}

export interface RequestAttributes {
  verb: string;
  apiGroup: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

export type Authorize = (user: string, attrs: RequestAttributes) => boolean;

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType?: string;
  accept?: string;
  /** The HTTP status sent; 0 while a request is pending, hung or reset by a fault. */
  status: number;
  /** The authorization verb (get, list, watch, create, update, patch, delete, deletecollection); `get` for discovery. */
  verb: string;
  resource?: string;
  subresource?: string;
  namespace?: string;
  name?: string;
  user?: string;
}

export interface Fault {
  method?: string;
  /** Matched against the path with its query string. */
  pathIncludes?: string;
  pathRegex?: RegExp;
  /** Answer this status with a Status body like the real server's (409 Conflict, 500 InternalError, 403 Forbidden, 429 with Retry-After, ...). */
  status?: number;
  message?: string;
  /** How many matching requests this fault takes (default 1; Infinity for all). */
  times?: number;
  /** Wait this long first; alone, the request is then served normally. */
  delayMs?: number;
  /** Never answer (until the server closes). */
  hang?: boolean;
  /** Destroy the socket without an answer. */
  reset?: boolean;
}

export interface FaultHandle {
  /** Requests this fault has taken so far. */
  readonly hits: number;
  readonly remaining: number;
}

/** A verb on a resource (`resource` is the plural, `clusters/status` for a subresource) that `deny` takes away. */
export interface DenyRule {
  verb: string;
  resource: string;
  user?: string;
}

export interface KubeconfigOptions {
  /** Bearer token (default: the first configured token). */
  token?: string;
  contextName?: string;
  /**
   * Point at `http://` (with insecure-skip-tls-verify, which client-node 1.4.0 demands for http) instead of
   * `https://` with the test CA. kubectl (clientcmd) drops credentials on a plain-HTTP server, so kubectl
   * needs the default.
   */
  plainHttp?: boolean;
}

export interface KubeApiServerOptions {
  /** token → user name. Requests with no or an unknown token get 401. Default `{ 'test-admin-token': 'admin' }`. */
  tokens?: Record<string, string>;
  /** Resource requests this denies get 403 Forbidden. Discovery is open to any authenticated user. */
  authorize?: Authorize;
  /** BOOKMARK period for watches with allowWatchBookmarks=true (default 1000 ms; the real server's is about a minute). */
  bookmarkIntervalMs?: number;
  /** Watch events kept for watches and consistent continue tokens (default 1000); older resourceVersions get 410. */
  historyLimit?: number;
  /** More resources to serve (e.g. apps/v1 deployments). */
  resources?: ResourceSpec[];
}

export interface KubeApiServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** `https://127.0.0.1:<port>`: the same port, with TEST_TLS_CERT (what kubeconfig() points at). */
  readonly httpsUrl: string;
  readonly port: number;
  /** Every request so far, in arrival order (status filled in when answered). */
  readonly requests: RecordedRequest[];
  resetRequests(): void;
  /** TCP connections accepted so far (TLS or plain). */
  readonly connections: number;
  addResource(spec: ResourceSpec): void;
  /** The stored object as served, or undefined. `plural` may be `plural.group`; `events` reads the events.k8s.io/v1 form. */
  get(plural: string, name: string, namespace?: string): Obj | undefined;
  /** All objects of a resource in every namespace, sorted by namespace then name. */
  list(plural: string): Obj[];
  /** Create or replace (status included), bumping the resourceVersion and emitting a watch event. Returns the stored object. */
  upsert(obj: Obj): Obj;
  /** Delete (ignoring finalizers); false when absent. */
  remove(plural: string, name: string, namespace?: string): boolean;
  /** Forget the watch history: watching from, or continuing a list at, any older resourceVersion gets 410 Expired. */
  compact(): void;
  /** Ends every open watch stream, as the API server does at a watch's request timeout: clients watch again from where they were. */
  endWatches(): void;
  currentResourceVersion(): string;
  inject(fault: Fault): FaultHandle;
  clearFaults(): void;
  /**
   * Takes a verb on a resource away from `user` (every user when omitted), as a missing RBAC rule would:
   * such requests get the real server's 403 Forbidden, after authentication, until `restore` is called.
   */
  deny(rule: DenyRule): { restore(): void };
  /** Stops listening (open connections and watches are cut): clients get ECONNREFUSED, as from a stopped server. */
  suspend(): Promise<void>;
  /** Listens again on the same port after `suspend`. */
  resume(): Promise<void>;
  kubeconfig(options?: KubeconfigOptions): string;
  /** Writes `<dir>/<contextName>.kubeconfig` and returns its path. */
  writeKubeconfig(dir: string, options?: KubeconfigOptions): string;
  /** Ends open watches and connections, then stops listening. */
  close(): Promise<void>;
}

/** Thrown inside a handler: the Status object to answer with. */
class ApiError extends Error {
  constructor(readonly status: Obj) {
    super(String(status.message));
  }
}

function statusObject(code: number, reason: string, message: string, details?: Obj): Obj {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, details, code };
}

const fail = (code: number, reason: string, message: string, details?: Obj): never => {
  throw new ApiError(statusObject(code, reason, message, details));
};

function resourceDetails(def: ResourceDef, name: string | undefined): Obj {
  return { name: name || undefined, group: def.group || undefined, kind: def.plural };
}

const notFound = (def: ResourceDef, name: string) => fail(404, 'NotFound', `${def.qualified} "${name}" not found`, resourceDetails(def, name));
const noRoute = () => fail(404, 'NotFound', 'the server could not find the requested resource', {});
const badRequest = (message: string) => fail(400, 'BadRequest', message);

function conflictStatus(
  qualified: string,
  name: string,
  details: Obj,
  why = 'the object has been modified; please apply your changes to the latest version and try again',
): Obj {
  return statusObject(409, 'Conflict', `Operation cannot be fulfilled on ${qualified} "${name}": ${why}`, details);
}

/** 422 Invalid as field.ErrorList renders it: one error bare, several in brackets. */
function invalid(def: ResourceDef, name: string, errors: FieldError[]): never {
  const rendered = errors.map((e) => `${e.field}: ${e.text}`);
  const kind = def.group ? `${def.kind}.${def.group}` : def.kind;
  const list = rendered.length === 1 ? rendered[0] : `[${rendered.join(', ')}]`;
  const causes = errors.map((e) => ({ reason: `FieldValue${e.type}`, message: e.text, field: e.field }));
  return fail(422, 'Invalid', `${kind} "${name}" is invalid: ${list}`, { name, group: def.group || undefined, kind: def.kind, causes });
}

const REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Expired',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

const nowSeconds = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

function checkMicroTimes(obj: Obj): void {
  const bad = microTimeError(obj);
  if (bad !== undefined) badRequest(bad);
}

function validateEventV1(def: ResourceDef): (obj: Obj, namespace: string) => void {
  return (obj, namespace) => {
    checkMicroTimes(obj);
    const errors = eventV1Errors(obj, namespace);
    if (errors.length > 0) invalid(def, obj.metadata?.name ?? '', errors);
  };
}

// ---------------------------------------------------------------------------------------------------------
// The registry.

function conditionStatus(obj: Obj, type: string): unknown {
  return (obj.status?.conditions as Obj[] | undefined)?.find((c) => c.type === type)?.status;
}

const BUILT_IN: ResourceSpec[] = [
  { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false, hasStatus: true, shortNames: ['ns'] },
  { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true },
  { group: '', version: 'v1', kind: 'Event', plural: 'events', namespaced: true, shortNames: ['ev'] },
  { group: 'events.k8s.io', version: 'v1', kind: 'Event', plural: 'events', namespaced: true, shortNames: ['ev'] },
  {
    group: 'cluster.karmada.io',
    version: 'v1alpha1',
    kind: 'Cluster',
    plural: 'clusters',
    namespaced: false,
    hasStatus: true,
    isCustom: true,
    // Karmada's CRD printer columns.
    columns: [
      { name: 'VERSION', type: 'string', value: (o) => o.status?.kubernetesVersion },
      { name: 'MODE', type: 'string', value: (o) => o.spec?.syncMode },
      { name: 'READY', type: 'string', value: (o) => conditionStatus(o, 'Ready') },
    ],
  },
  // As Karmada ships it: no status subresource (the app publishes policy status on its own kinds).
  {
    group: 'policy.karmada.io',
    version: 'v1alpha1',
    kind: 'ClusterTaintPolicy',
    plural: 'clustertaintpolicies',
    namespaced: false,
    hasStatus: false,
    isCustom: true,
  },
  {
    group: 'policy.karmada.io',
    version: 'v1alpha1',
    kind: 'PropagationPolicy',
    plural: 'propagationpolicies',
    namespaced: true,
    isCustom: true,
    shortNames: ['pp'],
  },
  {
    group: 'policy.karmada.io',
    version: 'v1alpha1',
    kind: 'ClusterPropagationPolicy',
    plural: 'clusterpropagationpolicies',
    namespaced: false,
    isCustom: true,
    shortNames: ['cpp'],
  },
  {
    group: 'work.karmada.io',
    version: 'v1alpha2',
    kind: 'ResourceBinding',
    plural: 'resourcebindings',
    namespaced: true,
    hasStatus: true,
    isCustom: true,
    shortNames: ['rb'],
  },
  {
    group: 'work.karmada.io',
    version: 'v1alpha2',
    kind: 'ClusterResourceBinding',
    plural: 'clusterresourcebindings',
    namespaced: false,
    hasStatus: true,
    isCustom: true,
    shortNames: ['crb'],
  },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRole', plural: 'clusterroles', namespaced: false },
];

function makeDef(spec: ResourceSpec): ResourceDef {
  const apiVersion = spec.group ? `${spec.group}/${spec.version}` : spec.version;
  const def: ResourceDef = {
    ...spec,
    singular: spec.singular ?? spec.kind.toLowerCase(),
    hasStatus: spec.hasStatus ?? false,
    isCustom: spec.isCustom ?? false,
    apiVersion,
    qualified: spec.group ? `${spec.plural}.${spec.group}` : spec.plural,
    storage: `${spec.group}/${spec.plural}`,
    // CRDs always track generation; of the built-ins, the ones with a spec/status split do.
    tracksGeneration: (spec.isCustom ?? false) || (spec.hasStatus ?? false),
    fieldValue: metaFieldValue,
  };
  if (def.group === '' && def.plural === 'namespaces') {
    def.tracksGeneration = false;
    def.prepare = (obj) => {
      obj.metadata.labels = { ...obj.metadata.labels, 'kubernetes.io/metadata.name': obj.metadata.name };
      obj.spec ??= { finalizers: ['kubernetes'] };
      obj.status ??= { phase: 'Active' };
    };
  }
  if (def.group === '' && def.plural === 'secrets') {
    def.fieldValue = (obj, field) => metaFieldValue(obj, field) ?? (field === 'type' ? String(obj.type ?? '') : undefined);
    def.prepare = (obj) => {
      // The real server folds write-only stringData into data.
      if (isObject(obj.stringData)) {
        obj.data = { ...obj.data };
        for (const [k, v] of Object.entries(obj.stringData)) obj.data[k] = Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64');
      }
      delete obj.stringData;
      obj.type ??= 'Opaque';
    };
  }
  if (def.plural === 'events' && (def.group === '' || def.group === 'events.k8s.io')) {
    def.storage = 'events.k8s.io/events';
    if (def.group === '') {
      def.toView = toCoreEvent;
      def.fromView = fromCoreEvent;
      def.validate = (obj) => checkMicroTimes(obj);
      def.fieldValue = eventFieldValue('involvedObject', 'reportingComponent', true);
    } else {
      def.toView = eventsV1View;
      def.validate = validateEventV1(def);
      def.fieldValue = eventFieldValue('regarding', 'reportingController', false);
    }
  }
  return def;
}

const keyOf = (namespace: string | undefined, name: string) => `${namespace ?? ''}/${name}`;

interface HistoryEntry {
  rv: number;
  storage: string;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  /** Stored form, after the change (for DELETED: the last state, with the deletion's resourceVersion). */
  obj: Obj;
  prev?: Obj;
}

type Rendering = { as: 'json' } | { as: 'table'; version: 'v1' | 'v1beta1' };

interface Selection {
  namespace?: string;
  labels: LabelRequirement[];
  fields: FieldRequirement[];
}

interface Watcher {
  def: ResourceDef;
  selection: Selection;
  rendering: Rendering;
  includeObject: string;
  res: ServerResponse;
  timers: NodeJS.Timeout[];
}

interface ParsedRequest {
  def: ResourceDef;
  namespace?: string;
  name?: string;
  subresource?: string;
  watch: boolean;
}

interface ArmedFault extends Fault {
  hits: number;
  remaining: number;
}

function parseRendering(accept: string | undefined): Rendering | undefined {
  if (!accept) return { as: 'json' };
  for (const part of accept.split(',')) {
    const [type, ...rawParams] = part.split(';').map((s) => s.trim());
    const params = Object.fromEntries(rawParams.map((p) => p.split('=').map((s) => s.trim())));
    if (type !== 'application/json' && type !== 'application/*' && type !== '*/*') continue;
    if (params.as === undefined) return { as: 'json' };
    if (params.as === 'Table' && params.g === 'meta.k8s.io' && (params.v === 'v1' || params.v === 'v1beta1')) return { as: 'table', version: params.v };
  }
  return undefined;
}

const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

export async function startKubeApiServer(options: KubeApiServerOptions = {}): Promise<KubeApiServer> {
  const tokens = options.tokens ?? { 'test-admin-token': 'admin' };
  const bookmarkIntervalMs = options.bookmarkIntervalMs ?? 1000;
  const historyLimit = options.historyLimit ?? 1000;

  const defs: ResourceDef[] = [];
  const stores = new Map<string, Map<string, Obj>>();
  let history: HistoryEntry[] = [];
  /** Every change with a resourceVersion above this is in `history`: the oldest RV one can watch from. */
  let historyFloor = 0;
  let counter = 0;
  const watchers = new Set<Watcher>();
  const hanging = new Set<ServerResponse>();
  let faults: ArmedFault[] = [];
  const denials = new Set<DenyRule>();
  let requests: RecordedRequest[] = [];
  let closed = false;

  const storeOf = (def: ResourceDef) => {
    let store = stores.get(def.storage);
    if (!store) stores.set(def.storage, (store = new Map()));
    return store;
  };
  const view = (def: ResourceDef, stored: Obj) => (def.toView ? def.toView(stored) : clone(stored));
  const fromView = (def: ResourceDef, obj: Obj) => (def.fromView ? def.fromView(obj) : clone(obj));

  function addResource(spec: ResourceSpec) {
    if (defs.some((d) => d.group === spec.group && d.version === spec.version && d.plural === spec.plural)) {
      throw new Error(`resource ${spec.plural}.${spec.group}/${spec.version} is already registered`);
    }
    defs.push(makeDef(spec));
  }
  for (const spec of [...BUILT_IN, ...(options.resources ?? [])]) addResource(spec);

  function defByPlural(plural: string): ResourceDef {
    const [p, ...g] = plural.split('.');
    const group = g.length > 0 ? g.join('.') : undefined;
    const found = defs.filter((d) => d.plural === p && (group === undefined || d.group === group));
    // Views of one store: the canonical (events.k8s.io/v1 for events) one.
    const def = found.find((d) => !d.fromView) ?? found[0];
    if (!def) throw new Error(`no resource ${plural}`);
    return def;
  }

  function defByKind(apiVersion: string, kind: string): ResourceDef {
    const def = defs.find((d) => d.apiVersion === apiVersion && d.kind === kind);
    if (!def) throw new Error(`no resource for ${apiVersion} ${kind}`);
    return def;
  }

  // -------------------------------------------------------------------------------------------------------
  // Writes, history and watch fan-out.

  function commit(def: ResourceDef, key: string, next: Obj | undefined, prev: Obj | undefined): Obj {
    const rv = ++counter;
    const store = storeOf(def);
    let entry: HistoryEntry;
    if (next) {
      next.metadata.resourceVersion = String(rv);
      store.set(key, next);
      entry = { rv, storage: def.storage, type: prev ? 'MODIFIED' : 'ADDED', obj: clone(next), prev: prev && clone(prev) };
    } else {
      store.delete(key);
      const gone = clone(prev!);
      gone.metadata.resourceVersion = String(rv);
      entry = { rv, storage: def.storage, type: 'DELETED', obj: gone, prev: clone(prev!) };
    }
    history.push(entry);
    while (history.length > historyLimit) historyFloor = history.shift()!.rv;
    for (const w of watchers) if (w.def.storage === def.storage) dispatch(w, entry);
    return entry.obj;
  }

  function selects(def: ResourceDef, selection: Selection, stored: Obj): boolean {
    // Read only: no copy of the stored object (a list filters every object of the snapshot on every page).
    const served = def.toView ? def.toView(stored) : stored;
    if (selection.namespace !== undefined && served.metadata?.namespace !== selection.namespace) return false;
    return matchesLabels(selection.labels, served.metadata?.labels) && matchesFields(selection.fields, (f) => def.fieldValue(served, f) ?? '');
  }

  function sendEvent(w: Watcher, type: string, object: Obj) {
    if (w.res.writableEnded || w.res.destroyed) return;
    w.res.write(`${JSON.stringify({ type, object })}\n`);
  }

  function sendObjectEvent(w: Watcher, type: string, stored: Obj) {
    const served = view(w.def, stored);
    const object = w.rendering.as === 'table' ? table(w.def, [served], w.rendering.version, w.includeObject, String(counter)) : served;
    sendEvent(w, type, object);
  }

  /** Like the watch cache: a change that moves an object into or out of the selection is ADDED or DELETED. */
  function dispatch(w: Watcher, e: HistoryEntry) {
    const now = e.type !== 'DELETED' && selects(w.def, w.selection, e.obj);
    const before = e.prev !== undefined && selects(w.def, w.selection, e.prev);
    if (now && before) sendObjectEvent(w, 'MODIFIED', e.obj);
    else if (now) sendObjectEvent(w, 'ADDED', e.obj);
    else if (before) {
      const last = e.type === 'DELETED' ? e.obj : { ...clone(e.prev!), metadata: { ...clone(e.prev!.metadata), resourceVersion: String(e.rv) } };
      sendObjectEvent(w, 'DELETED', last);
    }
  }

  /** The store as it was at `rv`, rebuilt by undoing later history; 410 once that history is gone. */
  function snapshot(def: ResourceDef, rv: number, what: 'list' | 'continue'): Map<string, Obj> {
    const current = storeOf(def);
    if (rv >= counter) return current;
    if (rv < historyFloor) {
      fail(
        410,
        'Expired',
        what === 'continue'
          ? 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.'
          : 'The resourceVersion for the provided list is too old.',
      );
    }
    const state = new Map(current);
    for (let i = history.length - 1; i >= 0 && history[i].rv > rv; i--) {
      const e = history[i];
      if (e.storage !== def.storage) continue;
      const key = keyOf(e.obj.metadata.namespace, e.obj.metadata.name);
      if (e.type === 'ADDED') state.delete(key);
      else state.set(key, e.prev!);
    }
    return state;
  }

  // -------------------------------------------------------------------------------------------------------
  // Object rules shared by the HTTP handlers and the test hooks.

  const SYSTEM_META = ['uid', 'creationTimestamp', 'generation', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'resourceVersion', 'selfLink'];

  function specOf(def: ResourceDef, obj: Obj): Obj {
    const { metadata: _m, status, ...rest } = obj;
    return def.hasStatus ? rest : { ...rest, status };
  }

  /** The object an update stores: system metadata and (for status subresources) the other half from the old object. */
  function nextForUpdate(def: ResourceDef, old: Obj, incoming: Obj, subresource: string | undefined): Obj {
    let next: Obj;
    if (subresource === 'status') {
      // Like the CRD status strategy: everything but status (metadata included) comes from the stored object.
      next = clone(old);
      if (incoming.status !== undefined) next.status = clone(incoming.status);
      else delete next.status;
    } else {
      next = clone(incoming);
      next.metadata = { ...(isObject(next.metadata) ? next.metadata : {}) };
      for (const f of SYSTEM_META) {
        if (old.metadata[f] !== undefined) next.metadata[f] = old.metadata[f];
        else delete next.metadata[f];
      }
      next.metadata.name = old.metadata.name;
      if (def.namespaced) next.metadata.namespace = old.metadata.namespace;
      else delete next.metadata.namespace;
      if (def.hasStatus) {
        if (old.status !== undefined) next.status = clone(old.status);
        else delete next.status;
      }
      def.prepare?.(next);
    }
    next.apiVersion = old.apiVersion;
    next.kind = old.kind;
    if (def.tracksGeneration && !deepEqual(specOf(def, old), specOf(def, next))) next.metadata.generation = (old.metadata.generation ?? 0) + 1;
    return next;
  }

  /** Stores an update; an object marked for deletion whose last finalizer went goes away. */
  function storeUpdate(def: ResourceDef, key: string, old: Obj, next: Obj, dryRun: boolean): Obj {
    if (dryRun) return next;
    if (next.metadata.deletionTimestamp && !(next.metadata.finalizers?.length > 0)) return commit(def, key, undefined, old);
    return commit(def, key, next, old);
  }

  function newObject(def: ResourceDef, body: Obj, namespace: string | undefined): Obj {
    const obj = clone(body);
    const meta: Obj = isObject(obj.metadata) ? obj.metadata : {};
    for (const f of SYSTEM_META) delete meta[f];
    if (!meta.name && meta.generateName) meta.name = `${meta.generateName}${randomBytes(4).toString('hex').slice(0, 5)}`;
    if (def.namespaced) meta.namespace = namespace ?? meta.namespace ?? 'default';
    else delete meta.namespace;
    meta.uid = randomUUID();
    meta.creationTimestamp = nowSeconds();
    if (def.tracksGeneration) meta.generation = 1;
    obj.metadata = meta;
    if (def.hasStatus) delete obj.status;
    return obj;
  }

  // -------------------------------------------------------------------------------------------------------
  // Rendering.

  function table(def: ResourceDef, items: Obj[], version: string, includeObject: string, rv: string, cont?: string): Obj {
    const columns = def.columns ?? [];
    const columnDefinitions = [
      { name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace.', priority: 0 },
      ...columns.map((c) => ({ name: c.name, type: c.type, format: '', description: c.description ?? '', priority: 0 })),
      {
        name: 'Age',
        type: 'date',
        format: '',
        description: 'CreationTimestamp is a timestamp representing the server time when this object was created.',
        priority: 0,
      },
    ];
    const age = (t: unknown) => (typeof t === 'string' && !Number.isNaN(Date.parse(t)) ? humanDuration(Date.now() - Date.parse(t)) : '<unknown>');
    const rows = items.map((o) => {
      const cells = [
        o.metadata.name,
        ...columns.map((c) => {
          const v = c.value(o);
          if (c.type === 'date') return age(v);
          return v ?? null;
        }),
        age(o.metadata.creationTimestamp),
      ];
      const row: Obj = { cells };
      if (includeObject === 'Object') row.object = o;
      else if (includeObject !== 'None') row.object = { kind: 'PartialObjectMetadata', apiVersion: `meta.k8s.io/${version}`, metadata: o.metadata };
      return row;
    });
    return { kind: 'Table', apiVersion: `meta.k8s.io/${version}`, metadata: { resourceVersion: rv, continue: cont }, columnDefinitions, rows };
  }

  function discoveryResources(group: string, version: string): Obj[] {
    return defs
      .filter((d) => d.group === group && d.version === version)
      .flatMap((d) => {
        const main: Obj = { name: d.plural, singularName: d.singular, namespaced: d.namespaced, kind: d.kind, verbs: ALL_VERBS };
        if (d.shortNames) main.shortNames = d.shortNames;
        if (d.categories) main.categories = d.categories;
        const status = { name: `${d.plural}/status`, singularName: '', namespaced: d.namespaced, kind: d.kind, verbs: ['get', 'patch', 'update'] };
        return d.hasStatus ? [main, status] : [main];
      });
  }

  function groupDoc(group: string): Obj {
    const versions = [...new Set(defs.filter((d) => d.group === group).map((d) => d.version))].map((v) => ({ groupVersion: `${group}/${v}`, version: v }));
    return { name: group, versions, preferredVersion: versions[0] };
  }

  // -------------------------------------------------------------------------------------------------------
  // HTTP.

  function send(res: ServerResponse, record: RecordedRequest, code: number, body: unknown, headers: Record<string, string> = {}) {
    record.status = code;
    if (res.headersSent || res.destroyed) return;
    res.writeHead(code, { 'Content-Type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  }

  function readBody(req: IncomingMessage): Promise<string> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      req.on('error', reject);
    });
  }

  function decodeBody(text: string, contentType: string | undefined): unknown {
    try {
      if (contentType === 'application/yaml') return parseYaml(text) as unknown;
      return JSON.parse(text) as unknown;
    } catch (err) {
      return badRequest(`error decoding request body: ${(err as Error).message}`);
    }
  }

  function parsePath(segments: string[]): { group: string; version: string; rest: string[] } | undefined {
    if (segments[0] === 'api' && segments.length >= 3) return { group: '', version: segments[1], rest: segments.slice(2) };
    if (segments[0] === 'apis' && segments.length >= 4) return { group: segments[1], version: segments[2], rest: segments.slice(3) };
    return undefined;
  }

  /** RequestInfoFactory's reading of a resource path (`namespaces/<ns>/status|finalize` are the namespace's own subresources). */
  function parseResource(group: string, version: string, rest: string[]): ParsedRequest {
    let watch = false;
    if (rest[0] === 'watch') {
      watch = true;
      rest = rest.slice(1);
    }
    let namespace: string | undefined;
    if (rest[0] === 'namespaces' && rest.length > 2 && !(group === '' && rest.length === 3 && (rest[2] === 'status' || rest[2] === 'finalize'))) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    if (rest.length === 0 || rest.length > 3) noRoute();
    const [plural, name, subresource] = rest;
    const def = defs.find((d) => d.group === group && d.version === version && d.plural === plural) ?? noRoute();
    if (subresource !== undefined && !(subresource === 'status' && def.hasStatus)) noRoute();
    // A namespaced resource has no by-name route outside a namespace, and a cluster-scoped one none inside.
    if ((namespace !== undefined && !def.namespaced) || (def.namespaced && name !== undefined && namespace === undefined)) noRoute();
    return { def, namespace, name, subresource, watch };
  }

  function verbOf(method: string, p: ParsedRequest, query: URLSearchParams): string {
    const watch = p.watch || query.get('watch') === 'true' || query.get('watch') === '1';
    switch (method) {
      case 'GET':
        if (watch) return 'watch';
        return p.name === undefined ? 'list' : 'get';
      case 'POST':
        return 'create';
      case 'PUT':
        return 'update';
      case 'PATCH':
        return 'patch';
      case 'DELETE':
        return p.name === undefined ? 'deletecollection' : 'delete';
      default:
        return method.toLowerCase();
    }
  }

  function isDenied(user: string, a: RequestAttributes): boolean {
    const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
    return [...denials].some((rule) => rule.verb === a.verb && rule.resource === resource && (rule.user === undefined || rule.user === user));
  }

  function forbidden(user: string, a: RequestAttributes, def: ResourceDef): never {
    const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
    const scope = a.namespace ? `in the namespace "${a.namespace}"` : 'at the cluster scope';
    const why = `User "${user}" cannot ${a.verb} resource "${resource}" in API group "${a.apiGroup}" ${scope}`;
    const subject = a.name ? `${def.qualified} "${a.name}"` : def.qualified;
    return fail(403, 'Forbidden', `${subject} is forbidden: ${why}`, resourceDetails(def, a.name));
  }

  function selectionOf(def: ResourceDef, namespace: string | undefined, query: URLSearchParams, name?: string): Selection {
    try {
      const labels = parseLabelSelector(query.get('labelSelector') ?? '');
      const fields = parseFieldSelector(query.get('fieldSelector') ?? '');
      for (const f of fields) if (def.fieldValue({ metadata: {} }, f.field) === undefined) badRequest(`field label not supported: ${f.field}`);
      if (name !== undefined) fields.push({ field: 'metadata.name', op: '=', value: name });
      return { namespace, labels, fields };
    } catch (err) {
      if (err instanceof SelectorError) return badRequest(err.message);
      throw err;
    }
  }

  function parseRv(value: string | null, what: string): number | undefined {
    if (value === null || value === '' || value === '0') return undefined;
    if (!/^[0-9]+$/.test(value)) badRequest(`${what}: Invalid value: "${value}": must be a non-negative integer`);
    return Number(value);
  }

  interface ContinueToken {
    rv: number;
    start: string;
  }

  function decodeContinue(token: string): ContinueToken {
    try {
      const parsed = JSON.parse(Buffer.from(token, 'base64').toString('utf8')) as Obj;
      if (parsed.v !== 'meta.k8s.io/v1' || typeof parsed.rv !== 'number' || typeof parsed.start !== 'string') throw new Error('bad token');
      return { rv: parsed.rv, start: parsed.start };
    } catch {
      return badRequest('continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
    }
  }

  function handleList(res: ServerResponse, record: RecordedRequest, p: ParsedRequest, query: URLSearchParams, rendering: Rendering) {
    const { def } = p;
    const selection = selectionOf(def, p.namespace, query);
    const cont = query.get('continue');
    const token = cont ? decodeContinue(cont) : undefined;
    // A continue token reads the snapshot of its first page; resourceVersionMatch=Exact reads that RV; else the latest.
    let rv = counter;
    if (token) rv = token.rv;
    else if (query.get('resourceVersionMatch') === 'Exact') rv = parseRv(query.get('resourceVersion'), 'resourceVersion') ?? counter;
    const state = snapshot(def, rv, token ? 'continue' : 'list');
    const keys = [...state.keys()].sort();
    let matching = keys
      .filter((k) => token === undefined || k > token.start)
      .map((k) => state.get(k)!)
      .filter((o) => selects(def, selection, o));
    const limit = Number(query.get('limit') ?? '0');
    let next: string | undefined;
    let remaining: number | undefined;
    if (limit > 0 && matching.length > limit) {
      remaining = matching.length - limit;
      matching = matching.slice(0, limit);
      const last = matching[matching.length - 1].metadata;
      next = Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start: keyOf(last.namespace, last.name) })).toString('base64');
    }
    const items = matching.map((o) => view(def, o));
    if (rendering.as === 'table') {
      send(res, record, 200, table(def, items, rendering.version, query.get('includeObject') ?? 'Metadata', String(rv), next));
      return;
    }
    send(res, record, 200, {
      kind: `${def.kind}List`,
      apiVersion: def.apiVersion,
      metadata: { resourceVersion: String(rv), continue: next, remainingItemCount: remaining },
      items,
    });
  }

  function handleWatch(res: ServerResponse, record: RecordedRequest, p: ParsedRequest, query: URLSearchParams, rendering: Rendering) {
    const { def } = p;
    const selection = selectionOf(def, p.namespace, query, p.name);
    const from = parseRv(query.get('resourceVersion'), 'resourceVersion');
    record.status = 200;
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    const w: Watcher = { def, selection, rendering, includeObject: query.get('includeObject') ?? 'Metadata', res, timers: [] };
    const bookmark = (annotations?: Record<string, string>) =>
      sendEvent(w, 'BOOKMARK', { kind: def.kind, apiVersion: def.apiVersion, metadata: { resourceVersion: String(counter), annotations } });
    if (from !== undefined && from < historyFloor) {
      // The real watch cache answers 200 and then one ERROR event carrying the 410, and ends the stream.
      sendEvent(w, 'ERROR', statusObject(410, 'Expired', `too old resource version: ${from} (${historyFloor})`));
      res.end();
      return;
    }
    const sendInitial = query.get('sendInitialEvents') === 'true';
    if (from === undefined || sendInitial) {
      const state = storeOf(def);
      for (const key of [...state.keys()].sort()) if (selects(def, selection, state.get(key)!)) sendObjectEvent(w, 'ADDED', state.get(key)!);
      if (sendInitial) bookmark({ 'k8s.io/initial-events-end': 'true' });
    } else {
      for (const e of history) if (e.rv > from && e.storage === def.storage) dispatch(w, e);
    }
    watchers.add(w);
    if (query.get('allowWatchBookmarks') === 'true') w.timers.push(setInterval(() => bookmark(), bookmarkIntervalMs));
    const timeout = Number(query.get('timeoutSeconds') ?? '0');
    if (timeout > 0) w.timers.push(setTimeout(() => res.end(), timeout * 1000));
    const stop = () => {
      watchers.delete(w);
      for (const t of w.timers) clearTimeout(t);
    };
    // The response's 'close' (not the request's, which fires once its empty body is read) means the client went away.
    res.on('close', stop);
  }

  function handleGet(res: ServerResponse, record: RecordedRequest, p: ParsedRequest, query: URLSearchParams, rendering: Rendering) {
    const stored = storeOf(p.def).get(keyOf(p.namespace, p.name!)) ?? notFound(p.def, p.name!);
    const served = view(p.def, stored);
    if (rendering.as === 'table' && p.subresource === undefined) {
      send(res, record, 200, table(p.def, [served], rendering.version, query.get('includeObject') ?? 'Metadata', stored.metadata.resourceVersion));
    } else send(res, record, 200, served);
  }

  /** The body's apiVersion/kind must name this resource; the body's namespace (if any) the URL's. */
  function checkBody(def: ResourceDef, body: unknown, p: ParsedRequest): Obj {
    if (!isObject(body)) return badRequest('the body of the request was not a JSON object');
    const obj: Obj = body;
    if (obj.apiVersion !== undefined && obj.apiVersion !== def.apiVersion)
      badRequest(`the API version in the data (${obj.apiVersion}) does not match the expected API version (${def.apiVersion})`);
    if (obj.kind !== undefined && obj.kind !== def.kind) badRequest(`the kind in the data (${obj.kind}) does not match the expected kind (${def.kind})`);
    obj.apiVersion = def.apiVersion;
    obj.kind = def.kind;
    obj.metadata = isObject(obj.metadata) ? obj.metadata : {};
    if (def.namespaced && obj.metadata.namespace && obj.metadata.namespace !== p.namespace)
      badRequest('the namespace of the provided object does not match the namespace sent on the request');
    if (p.name !== undefined && obj.metadata.name !== undefined && obj.metadata.name !== p.name)
      badRequest(`the name of the object (${obj.metadata.name}) does not match the name on the URL (${p.name})`);
    return obj;
  }

  function handleCreate(res: ServerResponse, record: RecordedRequest, p: ParsedRequest, body: unknown, dryRun: boolean) {
    const { def } = p;
    if (def.namespaced && p.namespace === undefined) noRoute();
    const obj = checkBody(def, body, p);
    if (!obj.metadata.name && !obj.metadata.generateName) {
      invalid(def, '', [{ field: 'metadata.name', type: 'Required', text: 'Required value: name or generateName is required' }]);
    }
    def.validate?.(obj, p.namespace ?? '');
    const created = newObject(def, fromView(def, obj), p.namespace);
    const key = keyOf(created.metadata.namespace, created.metadata.name);
    if (storeOf(def).has(key))
      fail(409, 'AlreadyExists', `${def.qualified} "${created.metadata.name}" already exists`, resourceDetails(def, created.metadata.name));
    def.prepare?.(created);
    send(res, record, 201, view(def, dryRun ? created : commit(def, key, created, undefined)));
  }

  function handleUpdate(res: ServerResponse, record: RecordedRequest, p: ParsedRequest, body: unknown, dryRun: boolean) {
    const { def } = p;
    const obj = checkBody(def, body, p);
    const key = keyOf(p.namespace, p.name!);
    const old = storeOf(def).get(key) ?? notFound(def, p.name!);
    const rv: unknown = obj.metadata.resourceVersion;
    if (rv === undefined || rv === '') {
      // CRDs do not allow unconditional updates; the built-ins here do.
      if (def.isCustom)
        invalid(def, p.name!, [{ field: 'metadata.resourceVersion', type: 'Invalid', text: 'Invalid value: 0x0: must be specified for an update' }]);
    } else if (rv !== old.metadata.resourceVersion) {
      throw new ApiError(conflictStatus(def.qualified, p.name!, resourceDetails(def, p.name)));
    }
    if (p.subresource === undefined) def.validate?.(obj, p.namespace ?? '');
    const next = nextForUpdate(def, old, fromView(def, obj), p.subresource);
    send(res, record, 200, view(def, storeUpdate(def, key, old, next, dryRun)));
  }

  function handlePatch(res: ServerResponse, record: RecordedRequest, p: ParsedRequest, text: string, contentType: string | undefined, dryRun: boolean) {
    const { def } = p;
    const key = keyOf(p.namespace, p.name!);
    const old = storeOf(def).get(key) ?? notFound(def, p.name!);
    const accepted = def.isCustom
      ? ['application/json-patch+json', 'application/merge-patch+json']
      : ['application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json'];
    if (contentType === undefined || !accepted.includes(contentType)) {
      // Server-side apply (application/apply-patch+yaml) is not implemented here, so it is 415 too.
      fail(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`);
    }
    const patch = decodeBody(text, 'application/json') as Json;
    const current = view(def, old) as Json;
    let patched: Json;
    try {
      if (contentType === 'application/json-patch+json') patched = jsonPatch(current, patch);
      else if (contentType === 'application/strategic-merge-patch+json') patched = strategicAsMergePatch(current, patch);
      else {
        if (!isObject(patch)) badRequest('the merge patch is not a JSON object');
        patched = mergePatch(current, patch);
      }
    } catch (err) {
      if (err instanceof PatchError) return err.unparsable ? badRequest(err.message) : fail(422, 'Invalid', err.message);
      throw err;
    }
    if (!isObject(patched)) return badRequest('the patched object is not a JSON object');
    const obj: Obj = patched;
    // A resourceVersion put into the object by the patch makes it conditional, as with an update.
    const rv: unknown = obj.metadata?.resourceVersion;
    if (rv !== undefined && rv !== null && rv !== old.metadata.resourceVersion)
      throw new ApiError(conflictStatus(def.qualified, p.name!, resourceDetails(def, p.name)));
    checkBody(def, obj, p);
    if (p.subresource === undefined) def.validate?.(obj, p.namespace ?? '');
    const next = nextForUpdate(def, old, fromView(def, obj), p.subresource);
    send(res, record, 200, view(def, storeUpdate(def, key, old, next, dryRun)));
  }

  function deleteOne(def: ResourceDef, key: string, old: Obj, dryRun: boolean): Obj {
    if (old.metadata.finalizers?.length > 0) {
      // Finalizers hold the object: mark it, and the update that removes the last one deletes it.
      if (old.metadata.deletionTimestamp) return old;
      const marked = clone(old);
      marked.metadata.deletionTimestamp = nowSeconds();
      marked.metadata.deletionGracePeriodSeconds = 0;
      return dryRun ? marked : commit(def, key, marked, old);
    }
    if (dryRun) return old;
    return commit(def, key, undefined, old);
  }

  function handleDelete(res: ServerResponse, record: RecordedRequest, p: ParsedRequest, body: unknown, dryRun: boolean) {
    const { def } = p;
    const key = keyOf(p.namespace, p.name!);
    const old = storeOf(def).get(key) ?? notFound(def, p.name!);
    const pre: Obj = isObject(body) && isObject(body.preconditions) ? body.preconditions : {};
    if (pre.uid && pre.uid !== old.metadata.uid) {
      throw new ApiError(
        conflictStatus(
          def.qualified,
          p.name!,
          resourceDetails(def, p.name),
          `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${old.metadata.uid}`,
        ),
      );
    }
    if (pre.resourceVersion && pre.resourceVersion !== old.metadata.resourceVersion) {
      throw new ApiError(
        conflictStatus(
          def.qualified,
          p.name!,
          resourceDetails(def, p.name),
          `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${old.metadata.resourceVersion}`,
        ),
      );
    }
    send(res, record, 200, view(def, deleteOne(def, key, old, dryRun)));
  }

  function handleDeleteCollection(res: ServerResponse, record: RecordedRequest, p: ParsedRequest, query: URLSearchParams, dryRun: boolean) {
    const { def } = p;
    const selection = selectionOf(def, p.namespace, query);
    const store = storeOf(def);
    const items = [...store.keys()]
      .sort()
      .filter((k) => selects(def, selection, store.get(k)!))
      .map((k) => view(def, deleteOne(def, k, store.get(k)!, dryRun)));
    send(res, record, 200, { kind: `${def.kind}List`, apiVersion: def.apiVersion, metadata: { resourceVersion: String(counter) }, items });
  }

  const groupVersions = () => [...new Set(defs.map((d) => d.apiVersion))].map((gv) => ({ gv, path: gv.includes('/') ? `apis/${gv}` : `api/${gv}` }));

  /**
   * A minimal OpenAPI v3 document for one group version: for each resource, its PATCH operation with the
   * GVK extension, the `fieldValidation` query parameter and the patch media types accepted. That is what
   * kubectl reads to decide that the server validates fields itself (it then sends fieldValidation=Strict
   * and skips client-side validation, which would need full schemas and, without them, fails with
   * "failed to download openapi"). No schemas: kubectl apply then computes a JSON merge patch for custom
   * resources and a strategic one from its compiled-in types for built-ins, as it does for a CRD without
   * a schema.
   */
  function openApiV3(apiVersion: string): Obj {
    const paths: Obj = {};
    for (const d of defs.filter((x) => x.apiVersion === apiVersion)) {
      const prefix = d.group ? `/apis/${d.apiVersion}` : `/api/${d.apiVersion}`;
      const item = d.namespaced ? `${prefix}/namespaces/{namespace}/${d.plural}/{name}` : `${prefix}/${d.plural}/{name}`;
      const types = ['application/json-patch+json', 'application/merge-patch+json'];
      const operation = (suffix: string) => ({
        operationId: `patch${d.kind}${suffix}`,
        'x-kubernetes-action': 'patch',
        'x-kubernetes-group-version-kind': { group: d.group, version: d.version, kind: d.kind },
        parameters: ['dryRun', 'fieldManager', 'fieldValidation', 'force'].map((name) => ({
          name,
          in: 'query',
          schema: { type: 'string', uniqueItems: true },
        })),
        requestBody: { content: Object.fromEntries(types.map((t) => [t, { schema: { type: 'object' } }])), required: true },
        responses: { '200': { description: 'OK' } },
      });
      paths[item] = { patch: operation('') };
      if (d.hasStatus) paths[`${item}/status`] = { patch: operation('Status') };
    }
    return { openapi: '3.0.0', info: { title: 'Kubernetes', version: 'v1.32.4' }, paths, components: { schemas: {} } };
  }

  function openApiHash(doc: Obj): string {
    return createHash('sha512').update(JSON.stringify(doc)).digest('hex').toUpperCase();
  }

  function handleDiscovery(segments: string[]): Obj | undefined {
    const path = segments.join('/');
    const port = (server.address() as AddressInfo).port;
    if (path === 'version') {
      return {
        major: '1',
        minor: '32',
        gitVersion: 'v1.32.4',
        gitCommit: '59526cd4867447956156ae3a602fcbac10a2c335',
        gitTreeState: 'clean',
        buildDate: '2025-04-22T16:02:27Z',
        goVersion: 'go1.23.6',
        compiler: 'gc',
        platform: 'linux/amd64',
      };
    }
    if (path === 'api') {
      return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: `127.0.0.1:${port}` }] };
    }
    if (path === 'api/v1') return { kind: 'APIResourceList', groupVersion: 'v1', resources: discoveryResources('', 'v1') };
    if (path === 'openapi/v3') {
      const paths = Object.fromEntries(
        groupVersions().map(({ gv, path: p }) => [p, { serverRelativeURL: `/openapi/v3/${p}?hash=${openApiHash(openApiV3(gv))}` }]),
      );
      return { paths };
    }
    if (segments[0] === 'openapi' && segments[1] === 'v3') {
      const found = groupVersions().find((g) => g.path === segments.slice(2).join('/'));
      return found && openApiV3(found.gv);
    }
    if (path === 'apis') {
      const groups = [...new Set(defs.map((d) => d.group).filter((g) => g !== ''))].map(groupDoc);
      return { kind: 'APIGroupList', apiVersion: 'v1', groups };
    }
    if (segments[0] === 'apis' && segments.length === 2 && defs.some((d) => d.group === segments[1])) {
      return { kind: 'APIGroup', apiVersion: 'v1', ...groupDoc(segments[1]) };
    }
    if (segments[0] === 'apis' && segments.length === 3 && defs.some((d) => d.group === segments[1] && d.version === segments[2])) {
      return {
        kind: 'APIResourceList',
        apiVersion: 'v1',
        groupVersion: `${segments[1]}/${segments[2]}`,
        resources: discoveryResources(segments[1], segments[2]),
      };
    }
    return undefined;
  }

  function faultStatus(f: Fault, p: ParsedRequest | undefined): Obj {
    const code = f.status!;
    const reason = REASONS[code] ?? 'Unknown';
    const details = p ? resourceDetails(p.def, p.name) : undefined;
    if (code === 409 && p) return conflictStatus(p.def.qualified, p.name ?? '', details!, f.message);
    if (code === 500)
      return statusObject(500, reason, `Internal error occurred: ${f.message ?? 'injected fault'}`, { causes: [{ message: f.message ?? 'injected fault' }] });
    if (code === 429)
      return statusObject(429, reason, f.message ?? 'the server has received too many requests and has asked us to try again later', { retryAfterSeconds: 1 });
    return statusObject(code, reason, f.message ?? `injected ${code}`, details);
  }

  function takeFault(method: string, url: string): ArmedFault | undefined {
    const f = faults.find(
      (x) =>
        x.remaining > 0 &&
        (x.method === undefined || x.method.toUpperCase() === method) &&
        (x.pathIncludes === undefined || url.includes(x.pathIncludes)) &&
        (x.pathRegex === undefined || x.pathRegex.test(url)),
    );
    if (f) {
      f.remaining--;
      f.hits++;
    }
    return f;
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'http://localhost');
    const query = url.searchParams;
    const contentType = req.headers['content-type']?.split(';')[0].trim();
    const record: RecordedRequest = {
      method,
      path: url.pathname,
      query: Object.fromEntries(query),
      contentType,
      accept: req.headers.accept,
      status: 0,
      verb: 'get',
    };
    requests.push(record);
    const segments = url.pathname
      .split('/')
      .filter((s) => s !== '')
      .map((s) => decodeURIComponent(s));
    const api = parsePath(segments);
    let parsed: ParsedRequest | undefined;
    try {
      if (api) {
        parsed = parseResource(api.group, api.version, api.rest);
        Object.assign(record, {
          verb: verbOf(method, parsed, query),
          resource: parsed.def.plural,
          subresource: parsed.subresource,
          namespace: parsed.namespace,
          name: parsed.name,
        });
      }
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      // An unknown resource path: still subject to faults and authentication below, then 404.
    }

    const fault = takeFault(method, req.url ?? '/');
    if (fault) {
      if (fault.delayMs) await new Promise((r) => setTimeout(r, fault.delayMs));
      if (closed || res.destroyed) return;
      if (fault.hang) {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      if (fault.reset) {
        req.socket.destroy();
        return;
      }
      if (fault.status !== undefined) {
        const body = faultStatus(fault, parsed);
        if (record.verb === 'watch' && fault.status === 410) {
          // How a real server reports an expired watch: 200, then an ERROR event.
          record.status = 200;
          res.writeHead(200, { 'Content-Type': 'application/json' });
          res.end(`${JSON.stringify({ type: 'ERROR', object: body })}\n`);
          return;
        }
        send(res, record, fault.status, body, fault.status === 429 ? { 'Retry-After': '1' } : {});
        return;
      }
    }

    const auth = req.headers.authorization ?? '';
    const user = auth.startsWith('Bearer ') ? tokens[auth.slice('Bearer '.length).trim()] : undefined;
    if (user === undefined) {
      send(res, record, 401, statusObject(401, 'Unauthorized', 'Unauthorized'));
      return;
    }
    record.user = user;

    if (method === 'GET' && !parsed) {
      if (segments[0] === 'healthz' || segments[0] === 'readyz' || segments[0] === 'livez') {
        record.status = 200;
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.end('ok');
        return;
      }
      const doc = handleDiscovery(segments);
      if (doc) send(res, record, 200, doc);
      else send(res, record, 404, statusObject(404, 'NotFound', 'the server could not find the requested resource', {}));
      return;
    }

    try {
      const p = parsed ?? noRoute();
      const attrs: RequestAttributes = {
        verb: record.verb,
        apiGroup: p.def.group,
        resource: p.def.plural,
        subresource: p.subresource,
        namespace: p.namespace,
        name: p.name,
      };
      if (options.authorize && !options.authorize(user, attrs)) forbidden(user, attrs, p.def);
      if (isDenied(user, attrs)) forbidden(user, attrs, p.def);
      const dryRun = query.getAll('dryRun').includes('All');
      const text = method === 'GET' ? '' : await readBody(req);
      const body = text.trim() === '' ? undefined : () => decodeBody(text, contentType);
      if (method === 'GET') {
        const rendering = parseRendering(req.headers.accept) ?? fail(406, 'NotAcceptable', 'only the following media types are accepted: application/json');
        if (record.verb === 'watch') handleWatch(res, record, p, query, rendering);
        else if (record.verb === 'list') handleList(res, record, p, query, rendering);
        else handleGet(res, record, p, query, rendering);
      } else if (method === 'POST' && p.name === undefined) handleCreate(res, record, p, body?.(), dryRun);
      else if (method === 'PUT' && p.name !== undefined) handleUpdate(res, record, p, body?.(), dryRun);
      else if (method === 'PATCH' && p.name !== undefined) handlePatch(res, record, p, text, contentType, dryRun);
      else if (method === 'DELETE' && p.name !== undefined && p.subresource === undefined) handleDelete(res, record, p, body?.(), dryRun);
      else if (method === 'DELETE' && p.name === undefined) handleDeleteCollection(res, record, p, query, dryRun);
      else fail(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`);
    } catch (err) {
      if (err instanceof ApiError) send(res, record, Number(err.status.code), err.status);
      else send(res, record, 500, statusObject(500, 'InternalError', `Internal error occurred: ${(err as Error).message}`));
    }
  }

  const listener = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent && !res.destroyed) {
        res.writeHead(500, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(statusObject(500, 'InternalError', `Internal error occurred: ${String(err)}`)));
      }
    });
  };
  const httpServer = createHttpServer(listener);
  const httpsServer = createHttpsServer({ key: TEST_TLS_KEY, cert: TEST_TLS_CERT }, listener);
  const sockets = new Set<Socket>();
  let connections = 0;
  // One port for both: a TLS connection starts with a handshake record (0x16), plain HTTP with a method name.
  const server = createNetServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    socket.once('data', (first: Buffer) => {
      socket.pause();
      socket.unshift(first);
      (first[0] === 0x16 ? httpsServer : httpServer).emit('connection', socket);
      process.nextTick(() => socket.resume());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  const httpsUrl = `https://127.0.0.1:${port}`;

  // The namespaces every cluster has.
  for (const name of ['default', 'kube-system', 'kube-public']) upsertObject({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });

  function upsertObject(input: Obj): Obj {
    const def = defByKind(String(input.apiVersion), String(input.kind));
    const obj = fromView(def, input);
    obj.metadata = { ...obj.metadata };
    if (def.namespaced) obj.metadata.namespace ??= 'default';
    const key = keyOf(def.namespaced ? obj.metadata.namespace : undefined, String(obj.metadata.name));
    const old = storeOf(def).get(key);
    if (!old) {
      const status = obj.status;
      const created = newObject(def, obj, obj.metadata.namespace);
      if (status !== undefined) created.status = clone(status);
      def.prepare?.(created);
      return view(def, commit(def, key, created, undefined));
    }
    const next = nextForUpdate(def, old, obj, undefined);
    if (def.hasStatus) {
      if (obj.status !== undefined) next.status = clone(obj.status);
      else delete next.status;
    }
    return view(def, commit(def, key, next, old));
  }

  function kubeconfig(opts: KubeconfigOptions = {}): string {
    const context = opts.contextName ?? 'karmada-test';
    const token = opts.token ?? Object.keys(tokens)[0];
    // client-node 1.4.0 refuses an http:// server unless insecure-skip-tls-verify is set.
    const cluster = opts.plainHttp
      ? { server: url, 'insecure-skip-tls-verify': true }
      : { server: httpsUrl, 'certificate-authority-data': Buffer.from(TEST_TLS_CERT).toString('base64') };
    return stringifyYaml({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: context, cluster }],
      users: [{ name: context, user: token === undefined ? {} : { token } }],
      contexts: [{ name: context, context: { cluster: context, user: context } }],
      'current-context': context,
      preferences: {},
    });
  }

  return {
    url,
    httpsUrl,
    port,
    get requests() {
      return requests;
    },
    get connections() {
      return connections;
    },
    resetRequests: () => {
      requests = [];
    },
    addResource,
    get: (plural, name, namespace) => {
      const def = defByPlural(plural);
      const stored = storeOf(def).get(keyOf(def.namespaced ? (namespace ?? 'default') : undefined, name));
      return stored && view(def, stored);
    },
    list: (plural) => {
      const def = defByPlural(plural);
      const store = storeOf(def);
      return [...store.keys()].sort().map((k) => view(def, store.get(k)!));
    },
    upsert: upsertObject,
    remove: (plural, name, namespace) => {
      const def = defByPlural(plural);
      const key = keyOf(def.namespaced ? (namespace ?? 'default') : undefined, name);
      const old = storeOf(def).get(key);
      if (!old) return false;
      commit(def, key, undefined, old);
      return true;
    },
    compact: () => {
      history = [];
      historyFloor = counter;
    },
    endWatches: () => {
      for (const w of [...watchers]) w.res.end();
    },
    currentResourceVersion: () => String(counter),
    inject: (fault) => {
      const armed: ArmedFault = { ...fault, hits: 0, remaining: fault.times ?? 1 };
      faults.push(armed);
      return {
        get hits() {
          return armed.hits;
        },
        get remaining() {
          return armed.remaining;
        },
      };
    },
    clearFaults: () => {
      faults = [];
    },
    deny: (rule) => {
      const held = { ...rule };
      denials.add(held);
      return { restore: () => void denials.delete(held) };
    },
    suspend: async () => {
      if (!server.listening) return;
      // Cut, not ended: a crashed server sends no end of stream.
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await stopped;
    },
    resume: async () => {
      if (server.listening || closed) return;
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => {
          server.off('error', reject);
          resolve();
        });
      });
    },
    kubeconfig,
    writeKubeconfig: (dir, opts) => {
      mkdirSync(dir, { recursive: true });
      const path = join(dir, `${opts?.contextName ?? 'karmada-test'}.kubeconfig`);
      writeFileSync(path, kubeconfig(opts), { mode: 0o600 });
      return path;
    },
    close: async () => {
      if (closed) return;
      closed = true;
      for (const w of watchers) w.res.end();
      watchers.clear();
      for (const res of hanging) res.destroy();
      if (!server.listening) return;
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await stopped;
    },
  };
}

/**
 * An `authorize` hook from RBAC YAML: `user` may do what the ClusterRole(s) in the YAML allow (apiGroups,
 * resources with `x/status` and `*` and `*\/status`, verbs with `*`, resourceNames); every other user is
 * an admin. Like RBAC, `clusters` does not grant `clusters/status`, and a resourceNames rule never
 * matches a request without a name (list, watch, create).
 */
export function rbacAuthorizer(clusterRoleYaml: string, user: string): Authorize {
  const roles = parseAllDocuments(clusterRoleYaml)
    .map((d) => d.toJS() as Obj | null)
    .filter((d): d is Obj => d?.kind === 'ClusterRole');
  if (roles.length === 0) throw new Error('rbacAuthorizer: no ClusterRole in the YAML');
  const rules = roles.flatMap((r) => (Array.isArray(r.rules) ? (r.rules as Obj[]) : []));
  const has = (list: unknown, value: string) => Array.isArray(list) && (list.includes('*') || list.includes(value));
  return (who, a) => {
    if (who !== user) return true;
    const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
    return rules.some((r) => {
      if (!has(r.verbs, a.verb) || !has(r.apiGroups, a.apiGroup)) return false;
      const resources = Array.isArray(r.resources) ? (r.resources as string[]) : [];
      const resourceOk = resources.includes('*') || resources.includes(resource) || (a.subresource !== undefined && resources.includes(`*/${a.subresource}`));
      if (!resourceOk) return false;
      const names = Array.isArray(r.resourceNames) ? (r.resourceNames as string[]) : [];
      return names.length === 0 || (a.name !== undefined && names.includes(a.name));
    });
  };
}

/**
 * A printer column's value by its CRD jsonPath, in the forms CRDs use: `.a.b`, `[n]`, and one filter
 * `[?(@.field=="value")]` (the first match), e.g. `.status.conditions[?(@.type=="Ready")].status`.
 */
function crdColumnValue(jsonPath: string, obj: Obj): unknown {
  const steps = jsonPath.match(/\.[A-Za-z0-9_-]+|\[\d+\]|\[\?\(@\.[A-Za-z0-9_-]+=="[^"]*"\)\]/g) ?? [];
  let at: unknown = obj;
  for (const step of steps) {
    if (at === undefined || at === null) return undefined;
    const filter = /^\[\?\(@\.([A-Za-z0-9_-]+)=="([^"]*)"\)\]$/.exec(step);
    if (filter) at = Array.isArray(at) ? at.find((item: Obj) => String(item?.[filter[1]]) === filter[2]) : undefined;
    else if (step.startsWith('[')) at = Array.isArray(at) ? at[Number(step.slice(1, -1))] : undefined;
    else at = (at as Obj)[step.slice(1)];
  }
  return at;
}

/**
 * The resources a CustomResourceDefinition YAML (one or more documents, e.g. a file of infra/) declares,
 * one per served version, to serve with `addResource` or the `resources` option: names, scope, status
 * subresource and printer columns as the real server takes them from the CRD. Its schema is not applied
 * (see the server's notes: no validation, pruning or defaulting).
 */
export function crdResources(crdYaml: string): ResourceSpec[] {
  const crds = parseAllDocuments(crdYaml)
    .map((d) => d.toJS() as Obj | null)
    .filter((d): d is Obj => d?.kind === 'CustomResourceDefinition');
  return crds.flatMap((crd) =>
    (crd.spec.versions as Obj[])
      .filter((v) => v.served)
      .map((v): ResourceSpec => ({
        group: crd.spec.group,
        version: v.name,
        kind: crd.spec.names.kind,
        plural: crd.spec.names.plural,
        ...(crd.spec.names.singular ? { singular: crd.spec.names.singular } : {}),
        namespaced: crd.spec.scope === 'Namespaced',
        hasStatus: v.subresources?.status !== undefined,
        isCustom: true,
        ...(crd.spec.names.shortNames ? { shortNames: crd.spec.names.shortNames } : {}),
        ...(crd.spec.names.categories ? { categories: crd.spec.names.categories } : {}),
        // The table adds Age itself.
        columns: ((v.additionalPrinterColumns ?? []) as Obj[])
          .filter((c) => c.jsonPath !== '.metadata.creationTimestamp')
          .map((c) => ({
            name: c.name,
            type: c.type,
            ...(c.description ? { description: c.description } : {}),
            value: (o: Obj) => crdColumnValue(c.jsonPath, o),
          })),
      })),
  );
}
