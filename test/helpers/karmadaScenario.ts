import { request as httpsRequest } from 'node:https';
import { stringify } from 'yaml';
import type { HostProcess } from './hostProcess';
import type { RealKarmada } from './realKarmada';

/**
 * Shared pieces of the end-to-end scenarios on a real Karmada control plane (test/karmada/failover.test.ts,
 * test/karmada/faults.test.ts): the Karmada-shape objects they apply, a watch of Karmada's objects that
 * records when each change arrived (the timings are read from it), and what the app's log says.
 */

export type Condition = { type: string; status: string; reason?: string; message?: string; lastTransitionTime?: string };
export type Taint = { key: string; effect: string; value?: string; timeAdded?: string };
export type Task = {
  fromCluster: string;
  reason?: string;
  producer?: string;
  purgeMode?: string;
  replicas?: number;
  creationTimestamp?: string;
  gracePeriodSeconds?: number;
  suppressDeletion?: boolean;
};
export type KubeObject = {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    resourceVersion?: string;
    generation?: number;
    uid?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: any;
  status?: any;
};
export type Binding = Omit<KubeObject, 'spec' | 'status'> & {
  spec: {
    resource: { kind: string; name: string; namespace?: string };
    replicas?: number;
    clusters?: Array<{ name: string; replicas?: number }>;
    gracefulEvictionTasks?: Task[];
    placement?: any;
    failover?: any;
  };
  status?: {
    schedulerObservedGeneration?: number;
    aggregatedStatus?: Array<{ clusterName: string; applied?: boolean; health?: string }>;
    conditions?: Condition[];
  };
};

export const NOT_READY = 'cluster.karmada.io/not-ready';

// --------------------------------------------------------------------------------------------- objects

/** Karmada's own ClusterTaintPolicy shape (v1.14+), as its CRD declares it: no windows. */
export function karmadaTaintPolicy(name: string, clusterNames?: string[]): string {
  return stringify({
    apiVersion: 'policy.karmada.io/v1alpha1',
    kind: 'ClusterTaintPolicy',
    metadata: { name },
    spec: {
      ...(clusterNames ? { targetClusters: { clusterNames } } : {}),
      addOnConditions: [{ conditionType: 'Ready', operator: 'NotIn', statusValues: ['True'] }],
      removeOnConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['True'] }],
      taints: [{ key: NOT_READY, effect: 'NoExecute' }],
    },
  });
}

export interface PolicyOptions {
  name: string;
  namespace?: string;
  /** Deployments labelled `group: <group>` are selected. */
  group: string;
  clusters: string[];
  /** tolerationSeconds of a toleration of the not-ready NoExecute taint (none: no toleration). */
  tolerationSeconds?: number;
  /** The app's failback opt-in (annotation failover.io/failback-after-seconds). */
  failbackAfterSeconds?: number;
  /** failover.application (the webhook then requires propagateDeps: true, which is set). */
  application?: { tolerationSeconds: number; purgeMode?: 'Directly' | 'Gracefully' | 'Never'; gracePeriodSeconds?: number };
}

/** A PropagationPolicy: Duplicated, one cluster each (spread over clusters, maxGroups 1), cluster failover Gracefully. */
export function propagationPolicy(o: PolicyOptions): string {
  return stringify({
    apiVersion: 'policy.karmada.io/v1alpha1',
    kind: 'PropagationPolicy',
    metadata: {
      name: o.name,
      namespace: o.namespace ?? 'default',
      ...(o.failbackAfterSeconds !== undefined ? { annotations: { 'failover.io/failback-after-seconds': String(o.failbackAfterSeconds) } } : {}),
    },
    spec: {
      resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment', labelSelector: { matchLabels: { group: o.group } } }],
      ...(o.application ? { propagateDeps: true } : {}),
      placement: {
        clusterAffinity: { clusterNames: o.clusters },
        ...(o.tolerationSeconds !== undefined
          ? { clusterTolerations: [{ key: NOT_READY, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: o.tolerationSeconds }] }
          : {}),
        replicaScheduling: { replicaSchedulingType: 'Duplicated' },
        spreadConstraints: [{ spreadByField: 'cluster', maxGroups: 1, minGroups: 1 }],
      },
      failover: {
        cluster: { purgeMode: 'Gracefully' },
        ...(o.application
          ? {
              application: {
                decisionConditions: { tolerationSeconds: o.application.tolerationSeconds },
                purgeMode: o.application.purgeMode ?? 'Gracefully',
                ...(o.application.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: o.application.gracePeriodSeconds } : {}),
              },
            }
          : {}),
      },
    },
  });
}

/** Deployments `<prefix>-<i>` of one replica, labelled `group: <group>`. */
export function deployments(prefix: string, group: string, count: number, namespace = 'default'): string {
  return Array.from({ length: count }, (_, i) =>
    stringify({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: `${prefix}-${i}`, namespace, labels: { group } },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: `${prefix}-${i}` } },
        template: { metadata: { labels: { app: `${prefix}-${i}` } }, spec: { containers: [{ name: 'app', image: 'nginx' }] } },
      },
    }),
  ).join('---\n');
}

// --------------------------------------------------------------------------------------------- reading objects

export const readyOf = (cluster: KubeObject | undefined): Condition | undefined =>
  (cluster?.status?.conditions as Condition[] | undefined)?.find((c) => c.type === 'Ready');
export const taintsOf = (cluster: KubeObject | undefined): Taint[] => (cluster?.spec?.taints as Taint[] | undefined) ?? [];
export const hasNotReadyNoExecute = (cluster: KubeObject | undefined) => taintsOf(cluster).some((t) => t.key === NOT_READY && t.effect === 'NoExecute');
export const placedOn = (b: Binding | undefined): string[] => (b?.spec.clusters ?? []).map((c) => c.name);
export const tasksOf = (b: Binding | undefined): Task[] => b?.spec.gracefulEvictionTasks ?? [];
export const taskFrom = (b: Binding | undefined, cluster: string) => tasksOf(b).find((t) => t.fromCluster === cluster);

/** Karmada's scheduler has placed the binding's current generation and every placed cluster reports the workload Healthy. */
export function healthyWhereScheduled(b: Binding | undefined): boolean {
  if (!b) return false;
  const clusters = placedOn(b);
  if (clusters.length === 0) return false;
  if (b.status?.schedulerObservedGeneration !== b.metadata.generation) return false;
  const health = new Map((b.status?.aggregatedStatus ?? []).map((s) => [s.clusterName, s.health]));
  return clusters.every((c) => health.get(c) === 'Healthy');
}

// --------------------------------------------------------------------------------------------- watch

export interface WatchRecord<T extends KubeObject> {
  /** Date.now() when the event arrived here. */
  at: number;
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'LISTED';
  key: string;
  object: T;
}

/**
 * A list-then-watch of one Karmada collection with the admin token, recording when every change arrived
 * (within milliseconds of its write). It follows a restarted API server (re-watch from the last
 * resourceVersion) and relists on 410 Gone, counting both.
 */
export class KarmadaWatch<T extends KubeObject = KubeObject> {
  readonly objects = new Map<string, T>();
  readonly records: WatchRecord<T>[] = [];
  relists = 0;
  reconnects = 0;
  gone = 0;
  private resourceVersion = '';
  private stopped = false;
  private current: { destroy(): void } | undefined;
  private waiters = new Set<() => void>();

  constructor(
    private readonly karmada: RealKarmada,
    private readonly path: string,
  ) {}

  static key(o: KubeObject) {
    return o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;
  }

  get(key: string): T | undefined {
    return this.objects.get(key);
  }

  /** Every recorded version of one object, oldest first. */
  history(key: string): WatchRecord<T>[] {
    return this.records.filter((r) => r.key === key);
  }

  async start(): Promise<void> {
    await this.list();
    void this.loop();
  }

  stop() {
    this.stopped = true;
    this.current?.destroy();
    this.notify();
  }

  /** Resolves with the first value `check` yields, re-checked on every change (and every 200 ms). */
  async until<V>(what: string, check: () => V | undefined | false, timeoutMs: number): Promise<V> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = check();
      if (value !== undefined && value !== false) return value;
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.min(200, Math.max(1, deadline - Date.now())));
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.waiters.add(() => done());
      });
      this.waiters.clear();
    }
  }

  private notify() {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const w of waiters) w();
  }

  private async list(): Promise<void> {
    for (;;) {
      try {
        const res = await this.karmada.get(this.path);
        if (res.status !== 200) throw new Error(`list ${this.path}: ${res.status}`);
        const at = Date.now();
        const seen = new Set<string>();
        for (const item of res.body.items as T[]) {
          const key = KarmadaWatch.key(item);
          seen.add(key);
          const before = this.objects.get(key);
          this.objects.set(key, item);
          if (before?.metadata.resourceVersion !== item.metadata.resourceVersion) this.records.push({ at, type: 'LISTED', key, object: item });
        }
        for (const key of [...this.objects.keys()]) if (!seen.has(key)) this.objects.delete(key);
        this.resourceVersion = res.body.metadata.resourceVersion;
        this.relists++;
        this.notify();
        return;
      } catch {
        if (this.stopped) return;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      const outcome = await this.watchOnce().catch(() => 'error' as const);
      if (this.stopped) return;
      if (outcome === 'gone') {
        this.gone++;
        await this.list();
      } else {
        this.reconnects++;
        if (outcome === 'error') await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  private watchOnce(): Promise<'ended' | 'gone' | 'error'> {
    return new Promise((resolve) => {
      const url = new URL(`${this.karmada.apiServerUrl}${this.path}`);
      url.searchParams.set('watch', '1');
      url.searchParams.set('allowWatchBookmarks', 'true');
      url.searchParams.set('resourceVersion', this.resourceVersion);
      url.searchParams.set('timeoutSeconds', '600');
      const req = httpsRequest(
        url,
        { method: 'GET', headers: { authorization: `Bearer ${this.karmada.adminToken}`, accept: 'application/json' }, ca: this.karmada.caPem, agent: false },
        (res) => {
          if (res.statusCode === 410) {
            res.resume();
            return resolve('gone');
          }
          if (res.statusCode !== 200) {
            res.resume();
            return resolve('error');
          }
          let buffer = '';
          let gone = false;
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            buffer += chunk;
            let nl: number;
            while ((nl = buffer.indexOf('\n')) >= 0) {
              const line = buffer.slice(0, nl).trim();
              buffer = buffer.slice(nl + 1);
              if (!line) continue;
              let event: { type: string; object: any };
              try {
                event = JSON.parse(line);
              } catch {
                continue;
              }
              if (event.type === 'ERROR') {
                if (event.object?.code === 410) gone = true;
                req.destroy();
                return;
              }
              const object = event.object as T;
              if (object?.metadata?.resourceVersion) this.resourceVersion = object.metadata.resourceVersion;
              if (event.type === 'BOOKMARK') continue;
              const key = KarmadaWatch.key(object);
              if (event.type === 'DELETED') this.objects.delete(key);
              else this.objects.set(key, object);
              this.records.push({ at: Date.now(), type: event.type as WatchRecord<T>['type'], key, object });
              this.notify();
            }
          });
          res.on('end', () => resolve(gone ? 'gone' : 'ended'));
          res.on('error', () => resolve(gone ? 'gone' : 'error'));
          res.on('close', () => resolve(gone ? 'gone' : 'ended'));
        },
      );
      this.current = req;
      req.on('error', () => resolve('error'));
      req.end();
    });
  }
}

// --------------------------------------------------------------------------------------------- the app

/** The app in Karmada mode as a local host process (its own Azurite inside), with Karmada's status timing for its probes. */
export function karmadaHostEnv(karmada: RealKarmada, rate: number, extra: Record<string, string> = {}): Record<string, string> {
  return {
    KARMADA_KUBECONFIG: karmada.appKubeconfigPath,
    FAILOVER_ENABLED: 'true',
    RESOURCE_EVICTION_RATE: String(rate),
    // The app's own probes (it may read the members' Secrets) with the thresholds Karmada was started with.
    CLUSTER_STATUS_UPDATE_FREQUENCY_SECONDS: '2',
    CLUSTER_FAILURE_THRESHOLD_SECONDS: '6',
    CLUSTER_PROBE_TIMEOUT_SECONDS: '1',
    ...extra,
  };
}

export type LogLine = { time: string; t: number; level: string; msg: string; [key: string]: unknown };

/** The host's JSON log lines (anything else skipped), each with `t` = its time in ms since the epoch. */
export function logLines(host: HostProcess): LogLine[] {
  const lines: LogLine[] = [];
  for (const raw of host.output().split('\n')) {
    if (!raw.startsWith('{')) continue;
    try {
      const line = JSON.parse(raw) as LogLine;
      if (typeof line.time !== 'string' || typeof line.msg !== 'string') continue;
      line.t = Date.parse(line.time);
      lines.push(line);
    } catch {
      // not a log line
    }
  }
  return lines;
}

/** Compact rendering of log lines relative to t0 (ms), for the test output. */
export function renderLog(lines: LogLine[], t0: number, max = 80): string {
  return lines
    .slice(0, max)
    .map((l) => {
      const { time: _time, t, level, msg, ...rest } = l;
      const fields = JSON.stringify(rest);
      return `+${((t - t0) / 1000).toFixed(3)}s ${level} ${msg} ${fields.length > 300 ? `${fields.slice(0, 300)}…` : fields}`;
    })
    .join('\n');
}

export interface EvictionRow {
  cluster: string;
  binding: { kind: string; namespace?: string; name: string };
  state: string;
  reason?: string;
  decidedAt?: string;
  dueAt?: string;
  scheduledFor?: string;
  executedAt?: string;
  attempts?: number;
  message?: string;
}

export async function appGet<T = any>(host: HostProcess, path: string): Promise<{ status: number; body: T }> {
  const res = await fetch(`${host.url}/api/${path}`);
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, body };
}

export async function evictionRows(host: HostProcess, query = ''): Promise<EvictionRow[]> {
  const res = await appGet<{ items: EvictionRow[] }>(host, `evictions${query ? `?${query}` : ''}`);
  if (res.status !== 200) throw new Error(`GET /api/evictions: ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
  return res.body.items;
}

export const seconds = (ms: number | undefined) => (ms === undefined ? null : Math.round(ms) / 1000);

// --------------------------------------------------------------------------------------------- scenario steps

export async function applyYaml(karmada: RealKarmada, yaml: string): Promise<void> {
  await karmada.kubectl(['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: yaml });
}

/** Sets (or clears) a NoSchedule taint of the test's own on a Cluster, to steer Karmada's scheduler while placing. */
export async function setupCordon(karmada: RealKarmada, cluster: string, on: boolean): Promise<void> {
  const taints = on ? [{ key: 'test.failover.io/setup', effect: 'NoSchedule' }] : null;
  await karmada.kubectl(['patch', 'cluster', cluster, '--type=merge', '-p', JSON.stringify({ spec: { taints } })]);
}

/**
 * Creates `count` Deployments of `group` (already selected by a PropagationPolicy) and has Karmada place them
 * all on `cluster`: the other members carry a NoSchedule taint of the test's own meanwhile (Karmada's
 * scheduler picks among equal clusters at random). Resolves with their binding keys once each runs Healthy.
 */
export async function placeGroupOn(
  karmada: RealKarmada,
  clusters: KarmadaWatch,
  bindings: KarmadaWatch<Binding>,
  o: { prefix: string; group: string; count: number; cluster: string; namespace?: string },
): Promise<string[]> {
  const others = karmada.members.map((m) => m.name).filter((n) => n !== o.cluster);
  await Promise.all(others.map((n) => setupCordon(karmada, n, true)));
  const namespace = o.namespace ?? 'default';
  const keys = Array.from({ length: o.count }, (_, i) => `${namespace}/${o.prefix}-${i}-deployment`);
  try {
    await applyYaml(karmada, deployments(o.prefix, o.group, o.count, namespace));
    await bindings.until(
      `${o.prefix} placed on ${o.cluster} and Healthy`,
      () => keys.every((k) => placedOn(bindings.get(k)).join() === o.cluster && healthyWhereScheduled(bindings.get(k))),
      90_000,
    );
  } finally {
    await Promise.all(others.map((n) => setupCordon(karmada, n, false)));
  }
  await clusters.until('the setup taints gone', () => others.every((n) => !taintsOf(clusters.get(n)).some((t) => t.key === 'test.failover.io/setup')), 20_000);
  return keys;
}

/** The moments a binding left `cluster` (on it in one recorded version, off it with a task from it in the next), after `since`. */
export function departures(bindings: KarmadaWatch<Binding>, key: string, cluster: string, since: number): number[] {
  const out: number[] = [];
  let on = false;
  for (const r of bindings.history(key)) {
    const isOn = placedOn(r.object).includes(cluster);
    if (r.at >= since && on && !isOn && taskFrom(r.object, cluster)) out.push(r.at);
    on = isOn;
  }
  return out;
}

/** The app's recorded events of one kind and reason for one object (GET /api/events). */
export async function appEvents(host: HostProcess, kind: string, name: string): Promise<Array<{ reason: string; message?: string; time?: string }>> {
  const res = await appGet<{ items?: Array<{ reason: string; message?: string; time?: string }> } | Array<{ reason: string }>>(
    host,
    `events?kind=${encodeURIComponent(kind)}&name=${encodeURIComponent(name)}&limit=1000`,
  );
  if (res.status !== 200) throw new Error(`GET /api/events: ${res.status}`);
  const body = res.body as any;
  return (Array.isArray(body) ? body : (body.items ?? body.events ?? [])) as Array<{ reason: string; message?: string; time?: string }>;
}

/** Who last wrote a field of an object, from its managedFields: `manager (operation[/subresource]) time` for each entry naming `field`. */
export function writersOf(object: KubeObject | undefined, field: 'f:conditions' | 'f:taints'): string[] {
  const entries = ((object?.metadata as { managedFields?: Array<Record<string, unknown>> } | undefined)?.managedFields ?? []).filter((e) =>
    JSON.stringify(e.fieldsV1 ?? {}).includes(`"${field}"`),
  );
  return entries.map((e) => `${String(e.manager)} (${String(e.operation)}${e.subresource ? `/${String(e.subresource)}` : ''}) ${String(e.time)}`);
}
