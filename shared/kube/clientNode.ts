import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import type { Agent } from 'node:http';
import type * as k8s from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { jsonLogger, Logger } from '../telemetry/log';
import {
  KubeAccess,
  KubeApi,
  KubeApiError,
  KubeList,
  KubeObject,
  KubeResource,
  KubeVerb,
  ListOptions,
  MemberEndpoint,
  MemberProber,
  PatchType,
  ProbeResult,
  resourceName,
  WatchEvent,
  WatchOptions,
  withAccessTracking,
} from './api';

/**
 * The one adapter of the Kubernetes API port, on @kubernetes/client-node. The library is an ES module and
 * this app is CommonJS, so it is loaded with a dynamic import, once, and only when Karmada mode or member
 * probes are configured (standalone start-up never pays for it).
 */
type ClientNode = typeof k8s;
let loading: Promise<ClientNode> | undefined;
export function loadClientNode(): Promise<ClientNode> {
  loading ??= import('@kubernetes/client-node');
  return loading;
}

/** A kubeconfig given as YAML text, or as the path of a file holding it. */
export function kubeconfigText(setting: string): string {
  const value = setting.trim();
  if (value.includes('\n') || value.startsWith('{') || value.startsWith('apiVersion')) return setting;
  if (!existsSync(value)) throw new Error(`kubeconfig: no such file "${value}" (give the kubeconfig's YAML text or a file path)`);
  return readFileSync(value, 'utf8');
}

export async function kubeConfigFrom(setting: string, context?: string): Promise<k8s.KubeConfig> {
  const { KubeConfig } = await loadClientNode();
  const config = new KubeConfig();
  config.loadFromString(kubeconfigText(setting));
  if (context) config.setCurrentContext(context);
  if (!config.getCurrentCluster()) throw new Error('kubeconfig: its current context names no cluster');
  return config;
}

/** Agents kept per KubeConfig: a few sets of options at most (a rotated client certificate makes a new one). */
const MAX_AGENTS = 4;

/**
 * client-node (1.4) builds a new https.Agent for every request, so every request opened a TCP connection and
 * paid a TLS handshake (about a third of the host's CPU while it evicted, and tens of milliseconds of latency
 * per request). One keep-alive agent per set of connection options instead: requests share connections as
 * Kubernetes' own clients do. The options are the cluster's and user's TLS material, so a changed certificate
 * gets its own agent.
 */
function reuseConnections(config: k8s.KubeConfig): void {
  type AgentFactory = (cluster: k8s.Cluster | null, options: Record<string, unknown>) => Agent;
  const target = config as unknown as { createAgent: AgentFactory };
  const create = target.createAgent.bind(config);
  const agents = new Map<string, Agent>();
  target.createAgent = (cluster, options) => {
    const key = createHash('sha256')
      .update(JSON.stringify([cluster?.server, cluster?.proxyUrl, options]))
      .digest('hex');
    let agent = agents.get(key);
    if (!agent) {
      if (agents.size >= MAX_AGENTS) {
        for (const old of agents.values()) old.destroy();
        agents.clear();
      }
      agent = create(cluster, { ...options, keepAlive: true });
      agents.set(key, agent);
    }
    return agent;
  };
}

const MERGE_PATCH = 'application/merge-patch+json';
const JSON_PATCH = 'application/json-patch+json';

/** Turns whatever client-node threw into a KubeApiError naming the verb and resource. */
function apiError(verb: KubeVerb, what: string, error: unknown): KubeApiError {
  if (error instanceof KubeApiError) return error;
  const e = error as { code?: unknown; statusCode?: unknown; body?: unknown; message?: string; name?: string };
  const status = typeof e.code === 'number' ? e.code : typeof e.statusCode === 'number' ? e.statusCode : 0;
  let reason = '';
  let detail = '';
  const body = typeof e.body === 'string' ? safeJson(e.body) : e.body;
  if (body && typeof body === 'object') {
    const s = body as { reason?: unknown; message?: unknown };
    if (typeof s.reason === 'string') reason = s.reason;
    if (typeof s.message === 'string') detail = s.message;
  }
  if (status === 0) detail = e.name === 'AbortError' || e.name === 'TimeoutError' ? 'timed out' : (e.message ?? String(error));
  return new KubeApiError(verb, what, status, reason || (status ? 'Error' : ''), detail);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The Karmada API server through client-node: CustomObjectsApi for Karmada's kinds and events, CoreV1Api for Secrets. */
/** Who the API server records in managedFields for our writes (kubectl shows it; without it, "node-fetch"). */
export const FIELD_MANAGER = 'cluster-failover';

export class ClientNodeKubeApi implements KubeApi {
  private constructor(
    private readonly lib: ClientNode,
    private readonly config: k8s.KubeConfig,
    private readonly custom: k8s.CustomObjectsApi,
    private readonly core: k8s.CoreV1Api,
    private readonly requestTimeoutMs: number,
  ) {}

  static async connect(kubeconfig: string, requestTimeoutMs = 10_000): Promise<ClientNodeKubeApi> {
    const lib = await loadClientNode();
    const config = await kubeConfigFrom(kubeconfig);
    reuseConnections(config);
    return new ClientNodeKubeApi(lib, config, config.makeApiClient(lib.CustomObjectsApi), config.makeApiClient(lib.CoreV1Api), requestTimeoutMs);
  }

  private async call<T>(verb: KubeVerb, what: string, run: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    try {
      // client-node's generated APIs take no timeout: bound each request so a stalled server fails it.
      return await Promise.race([
        run(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new KubeApiError(verb, what, 0, '', `no answer in ${this.requestTimeoutMs} ms`)), this.requestTimeoutMs);
        }),
      ]);
    } catch (error) {
      throw apiError(verb, what, error);
    } finally {
      clearTimeout(timer);
    }
  }

  async get(resource: KubeResource, name: string, namespace?: string): Promise<KubeObject | undefined> {
    const what = resourceName(resource, name, namespace);
    try {
      if (resource.group === '') {
        return (await this.call('get', what, () => this.core.readNamespacedSecret({ name, namespace: namespace ?? 'default' }))) as unknown as KubeObject;
      }
      const { group, version, plural } = resource;
      return (await this.call('get', what, () =>
        namespace
          ? this.custom.getNamespacedCustomObject({ group, version, plural, namespace, name })
          : this.custom.getClusterCustomObject({ group, version, plural, name }),
      )) as KubeObject;
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) return undefined;
      throw error;
    }
  }

  async list(resource: KubeResource, options: ListOptions = {}): Promise<KubeList> {
    const { group, version, plural } = resource;
    const what = resourceName(resource, undefined, options.namespace);
    const query = {
      group,
      version,
      plural,
      ...(options.labelSelector ? { labelSelector: options.labelSelector } : {}),
      ...(options.limit ? { limit: options.limit } : {}),
      ...(options.continue ? { _continue: options.continue } : {}),
    };
    const list = (await this.call('list', what, () =>
      options.namespace ? this.custom.listNamespacedCustomObject({ ...query, namespace: options.namespace }) : this.custom.listClusterCustomObject(query),
    )) as { items?: KubeObject[]; metadata?: { resourceVersion?: string; continue?: string } };
    return {
      items: list.items ?? [],
      resourceVersion: list.metadata?.resourceVersion ?? '',
      ...(list.metadata?.continue ? { continue: list.metadata.continue } : {}),
    };
  }

  async watch(resource: KubeResource, options: WatchOptions, onEvent: (event: WatchEvent) => Promise<void>): Promise<void> {
    const what = resourceName(resource);
    const path = `/apis/${resource.group}/${resource.version}/${resource.plural}`;
    const watcher = new this.lib.Watch(this.config);
    // client-node calls back synchronously per line; the events are handled one at a time, in order.
    // A handler that fails ends the watch with its error; the chain itself never rejects, so a failure
    // between two events is never an unhandled rejection (which would end the host process).
    let chain: Promise<void> = Promise.resolve();
    let failure: KubeApiError | undefined;
    let handlerFailure: Error | undefined;
    let controller: AbortController | undefined;
    const stop = () => controller?.abort();
    await new Promise<void>((resolve, reject) => {
      const finish = (error: unknown) => {
        options.signal?.removeEventListener('abort', stop);
        void chain.then(() => {
          if (handlerFailure) reject(handlerFailure);
          else if (failure) reject(failure);
          else if (error && !options.signal?.aborted) reject(apiError('watch', what, error));
          else resolve();
        });
      };
      watcher
        .watch(
          path,
          { resourceVersion: options.resourceVersion, allowWatchBookmarks: true, timeoutSeconds: options.timeoutSeconds },
          (type: string, object: unknown) => {
            if (failure || handlerFailure) return;
            if (type === 'ERROR') {
              // The server ends a watch whose resourceVersion is too old with an ERROR event carrying a Status (410).
              const status = object as { code?: number; reason?: string; message?: string };
              failure = new KubeApiError('watch', what, status.code ?? 500, status.reason ?? 'Error', status.message ?? '');
              stop();
              return;
            }
            const event: WatchEvent | undefined =
              type === 'BOOKMARK'
                ? { type, resourceVersion: (object as KubeObject).metadata?.resourceVersion ?? '' }
                : type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED'
                  ? { type, object: object as KubeObject }
                  : undefined;
            // Events still waiting when the watch is stopped are left to the next watch (the caller's
            // cursor has not passed them): a long backlog would otherwise hold the caller past its end.
            if (event)
              chain = chain
                .then(() => (handlerFailure || options.signal?.aborted ? undefined : onEvent(event)))
                .catch((error: unknown) => {
                  handlerFailure = error instanceof Error ? error : new Error(String(error));
                  stop();
                });
          },
          finish,
        )
        .then(
          (c) => {
            controller = c;
            if (options.signal?.aborted) stop();
            else options.signal?.addEventListener('abort', stop, { once: true });
          },
          (error: unknown) => finish(error),
        );
    });
  }

  async patch(
    resource: KubeResource,
    name: string,
    namespace: string | undefined,
    patch: unknown,
    type: PatchType,
    subresource?: 'status',
  ): Promise<KubeObject> {
    const { group, version, plural } = resource;
    const what = resourceName(resource, name, namespace, subresource);
    const headers = this.lib.setHeaderOptions('Content-Type', type === 'merge' ? MERGE_PATCH : JSON_PATCH);
    const body = patch as object;
    return (await this.call('patch', what, () => {
      if (namespace) {
        const param = { group, version, plural, namespace, name, body, fieldManager: FIELD_MANAGER };
        return subresource ? this.custom.patchNamespacedCustomObjectStatus(param, headers) : this.custom.patchNamespacedCustomObject(param, headers);
      }
      const param = { group, version, plural, name, body, fieldManager: FIELD_MANAGER };
      return subresource ? this.custom.patchClusterCustomObjectStatus(param, headers) : this.custom.patchClusterCustomObject(param, headers);
    })) as KubeObject;
  }

  async create(resource: KubeResource, namespace: string | undefined, body: KubeObject): Promise<KubeObject> {
    const { group, version, plural } = resource;
    const what = resourceName(resource, body.metadata.name, namespace);
    return (await this.call('create', what, () =>
      namespace
        ? this.custom.createNamespacedCustomObject({ group, version, plural, namespace, body, fieldManager: FIELD_MANAGER })
        : this.custom.createClusterCustomObject({ group, version, plural, body, fieldManager: FIELD_MANAGER }),
    )) as KubeObject;
  }
}

/**
 * The Karmada API, connected at its first use: the app's wiring is synchronous, client-node loads
 * asynchronously (an ES module), and a bad kubeconfig should fail the first request, naming the setting.
 * Every request's outcome is noted in its `access` (unreachable, forbidden), which logs the changes to `log`.
 */
export function lazyKubeApi(kubeconfig: string, log: Logger = jsonLogger()): KubeApi {
  let connecting: Promise<KubeApi> | undefined;
  const api = () =>
    (connecting ??= ClientNodeKubeApi.connect(kubeconfig).catch((error: unknown) => {
      connecting = undefined;
      throw new Error(`KARMADA_KUBECONFIG: ${error instanceof Error ? error.message : String(error)}`);
    }));
  const connected: KubeApi = {
    get: async (...args) => (await api()).get(...args),
    list: async (...args) => (await api()).list(...args),
    watch: async (...args) => (await api()).watch(...args),
    patch: async (...args) => (await api()).patch(...args),
    create: async (...args) => (await api()).create(...args),
  };
  return withAccessTracking(connected, new KubeAccess(log));
}

/**
 * Member-cluster health through client-node's Health check: GET /readyz, and /healthz where /readyz is
 * 404, with real TLS (the cluster's CA bundle) and its bearer token.
 */
export class ClientNodeProber implements MemberProber {
  /**
   * One KubeConfig (and so one keep-alive agent) per endpoint as given: a probe every few seconds per member
   * reuses its connection instead of a TLS handshake each time. A changed token or CA bundle is a new entry.
   */
  private readonly configs = new Map<string, k8s.KubeConfig>();

  async probe(endpoint: MemberEndpoint, timeoutMs: number): Promise<ProbeResult> {
    const config = await this.configFor(endpoint);
    try {
      const ok = await new (await loadClientNode()).Health(config).readyz({ signal: AbortSignal.timeout(timeoutMs) });
      return ok ? { outcome: 'ok' } : { outcome: 'notOk', detail: `${endpoint.server}/readyz did not answer ok` };
    } catch (error) {
      const e = error as { name?: string; message?: string };
      const detail =
        e.name === 'AbortError' || e.name === 'TimeoutError'
          ? `no answer from ${endpoint.server} in ${timeoutMs} ms`
          : `${endpoint.server}: ${e.message ?? 'unreachable'}`;
      return { outcome: 'unreachable', detail };
    }
  }

  private async configFor(endpoint: MemberEndpoint): Promise<k8s.KubeConfig> {
    const key = createHash('sha256').update(JSON.stringify(endpoint)).digest('hex');
    const known = this.configs.get(key);
    if (known) return known;
    const lib = await loadClientNode();
    const config = new lib.KubeConfig();
    config.loadFromOptions({
      clusters: [
        {
          name: endpoint.cluster,
          server: endpoint.server,
          skipTLSVerify: endpoint.insecureSkipTLSVerification ?? false,
          ...(endpoint.caBundle ? { caData: Buffer.from(endpoint.caBundle).toString('base64') } : {}),
        },
      ],
      users: [
        {
          name: endpoint.cluster,
          ...(endpoint.token ? { token: endpoint.token } : {}),
          ...(endpoint.clientCertificate ? { certData: Buffer.from(endpoint.clientCertificate).toString('base64') } : {}),
          ...(endpoint.clientKey ? { keyData: Buffer.from(endpoint.clientKey).toString('base64') } : {}),
        },
      ],
      contexts: [{ name: endpoint.cluster, cluster: endpoint.cluster, user: endpoint.cluster }],
      currentContext: endpoint.cluster,
    });
    reuseConnections(config);
    // Bounded: the oldest endpoints (clusters gone, rotated credentials) go first.
    if (this.configs.size >= MAX_PROBED_ENDPOINTS) this.configs.delete(this.configs.keys().next().value!);
    this.configs.set(key, config);
    return config;
  }
}

/** Endpoints whose connections the prober keeps: a fleet's members, with room for rotated credentials. */
const MAX_PROBED_ENDPOINTS = 20_000;

/** Member endpoints from a kubeconfig whose context names are the cluster names (standalone probes). */
export async function membersFromKubeconfig(setting: string): Promise<MemberEndpoint[]> {
  const lib = await loadClientNode();
  const config = new lib.KubeConfig();
  config.loadFromString(kubeconfigText(setting));
  return config.getContexts().flatMap((context) => {
    const cluster = config.getCluster(context.cluster);
    const user = context.user ? config.getUser(context.user) : null;
    if (!cluster) return [];
    const pem = (data?: string, file?: string) => (data ? Buffer.from(data, 'base64').toString('utf8') : file ? readFileSync(file, 'utf8') : undefined);
    const caBundle = pem(cluster.caData, cluster.caFile);
    const clientCertificate = pem(user?.certData ?? undefined, user?.certFile ?? undefined);
    const clientKey = pem(user?.keyData ?? undefined, user?.keyFile ?? undefined);
    return [
      {
        cluster: context.name,
        server: cluster.server,
        ...(user?.token ? { token: user.token } : {}),
        ...(caBundle ? { caBundle } : {}),
        ...(cluster.skipTLSVerify ? { insecureSkipTLSVerification: true } : {}),
        ...(clientCertificate ? { clientCertificate } : {}),
        ...(clientKey ? { clientKey } : {}),
      },
    ];
  });
}
