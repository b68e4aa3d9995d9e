/**
 * `npm run bench -- karmada-vs-ours [workloads rate]`: the same cluster failure on a real Karmada v1.18.2
 * control plane (test/helpers/realKarmada.ts), handled once by Karmada's own failover controllers (Failover
 * feature gate, taint manager with NoExecute eviction, --resource-eviction-rate) and once by the app in
 * Karmada mode (Karmada's failover controllers off), with the same timing flags, the same Karmada-shape
 * ClusterTaintPolicy and PropagationPolicy, and the same N Deployments on member1. member1 is killed and
 * everything is measured from the kill, from a watch of Karmada's Clusters and ResourceBindings.
 *
 * An eviction, on both sides, is the first version of a binding in which spec.clusters no longer lists
 * member1 and a graceful-eviction task from member1 is present (both write the two in one update).
 * Requests are counted on the client side: karmada-controller-manager's rest_client_requests_total, and for
 * the app a counting TLS proxy between it and the karmada-apiserver. CPU is utime+stime from /proc.
 *
 * Default: 30 workloads at 2/s, then 300 at 10/s. Prints a Markdown table and one JSON line, and writes the
 * JSON under the OS temp dir. Nothing is asserted: a side that fails is reported with its error.
 */
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { Agent, createServer as createHttpsServer, request as httpsRequest, Server } from 'node:https';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { HostProcess, startHostProcess } from '../test/helpers/hostProcess';
import {
  appGet,
  applyYaml,
  Binding,
  departures,
  hasNotReadyNoExecute,
  healthyWhereScheduled,
  karmadaHostEnv,
  karmadaTaintPolicy,
  KarmadaWatch,
  placedOn,
  placeGroupOn,
  propagationPolicy,
  readyOf,
  taskFrom,
  writersOf,
} from '../test/helpers/karmadaScenario';
import { ensureKarmadaBuilt, httpGet, RealKarmada, startRealKarmada } from '../test/helpers/realKarmada';

const ROOT = join(__dirname, '..');
const POLICY = 'bench-cluster-not-ready';
const GROUP = 'bench';
const FAILED = 'member1';
/** Deployments placed per placeGroupOn call: its wait is bounded (90 s), and a busy 2-core machine is slow to start hundreds of Pods. */
const PLACE_CHUNK = 100;
/** The idle baseline measured before the kill. */
const IDLE_MS = 6000;
/** The failover wait gives up when no binding left member1, became Healthy or had its task cleared for this long. */
const STALL_MS = 60_000;
/** Linux reports utime and stime in clock ticks; 100 on every common kernel configuration. */
const CLOCK_TICKS = 100;

type Side = 'karmada' | 'app';

/**
 * A count over the failover window, and the same beyond what the idle baseline (measured just before the kill,
 * with everything Healthy) would have added over the window's length anyway.
 */
export interface Counted {
  window: number;
  beyondIdle: number;
  idlePerSecond: number;
  /** Per eviction (requests only). */
  perEviction?: number;
  beyondIdlePerEviction?: number;
}

export interface SideResult {
  side: Side;
  workloads: number;
  rate: number;
  controlPlaneStartS?: number;
  placeS?: number;
  /** Waited after placing for the control plane to go quiet (see settle). */
  settleS?: number;
  /** Seconds from the kill of member1. */
  fromKillS: {
    readyFalse?: number;
    taint?: number;
    firstEviction?: number;
    lastEviction?: number;
    everyWorkloadElsewhere?: number;
    tasksCleared?: number;
  };
  evicted: number;
  /** When the wait ended: workloads Healthy on another cluster, and those whose task from member1 is gone too. */
  healthyElsewhereAtEnd?: number;
  tasksClearedAtEnd?: number;
  /** Bindings that left member1 more than once (should be none). */
  evictedTwice: number;
  achievedRate?: number;
  /** achievedRate ÷ rate. */
  rateRatio?: number;
  /** Every workload Healthy elsewhere, minus (taint + workloads / rate). */
  completionMinusIdealS?: number;
  windowS?: number;
  readyFalseWrittenBy?: string[];
  /** Requests to the karmada-apiserver. */
  requests: {
    /** By the side doing failover (Karmada: karmada-controller-manager; the app: the app). */
    failoverSide?: Counted;
    /** By karmada-controller-manager (all its controllers). */
    controllerManager?: Counted;
    /** karmada-controller-manager's requests to the member API servers in the window. */
    controllerManagerToMembers?: number;
    /** The app's requests in the window by verb and resource, and in the idle baseline. */
    appByKind?: Record<string, number>;
    appIdleByKind?: Record<string, number>;
    /** The karmada-apiserver's count in the window from every client, by kind (the busiest). */
    apiserverByKind?: Record<string, number>;
  };
  cpuSeconds: {
    controllerManager?: Counted;
    karmadaApiserver?: Counted;
    karmadaScheduler?: Counted;
    /** The app's host process, its Azurite worker thread excluded. */
    appHost?: Counted;
    /** The app's embedded Azurite (a worker thread of the host process). */
    appAzurite?: Counted;
  };
  /** Each eviction, seconds after the first (how the pacing actually spaced them). */
  evictionOffsetsS?: number[];
  error?: string;
}

// ---------------------------------------------------------------------------------------------- /proc

/** Pid of the first process whose argv matches. */
export function findPid(match: (argv: string[]) => boolean): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean);
    } catch {
      continue;
    }
    if (argv.length > 0 && match(argv)) return Number(entry);
  }
  return undefined;
}

function argvOf(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
}

/** utime + stime of a process (all its threads) or of one of its threads, in seconds. */
function cpuSeconds(pid: number, tid?: number): number {
  const stat = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
  // The command name may hold spaces: fields are counted after its closing parenthesis (field 3 on).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

const tryCpu = (pid: number | undefined, tid?: number) => {
  if (pid === undefined) return undefined;
  try {
    return cpuSeconds(pid, tid);
  } catch {
    return undefined;
  }
};

/** TCP ports a process listens on (its socket inodes matched in /proc/net/tcp*). */
function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch {
      // closed meanwhile
    }
  }
  const ports = new Set<number>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[3] === '0A' && inodes.has(cols[9])) ports.add(parseInt(cols[1].split(':')[1], 16));
    }
  }
  return [...ports];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The Azurite worker thread of the app's host process: the embedded Azurite runs on a worker thread, not in
 * a child process, and every thread is named "node". Requests sent straight to the host's other listening
 * ports (Azurite's Queue and Table services) burn CPU on that thread alone, so the thread that gains the
 * most during such a burst is it.
 */
async function azuriteThread(host: HostProcess): Promise<number | undefined> {
  const pid = host.child.pid!;
  const httpPort = Number(new URL(host.url).port);
  const ports = listeningPorts(pid).filter((p) => p !== httpPort);
  if (ports.length === 0) return undefined;
  const threads = () => new Map(readdirSync(`/proc/${pid}/task`).map((t) => [Number(t), tryCpu(pid, Number(t)) ?? 0]));
  const before = threads();
  const until = Date.now() + 2000;
  const burst = ports.flatMap((p) => Array.from({ length: 4 }, () => p));
  while (Date.now() < until) await Promise.all(burst.map((p) => httpGet(`http://127.0.0.1:${p}/devstoreaccount1?comp=list`).catch(() => undefined)));
  const gains = [...threads()].map(([tid, cpu]) => ({ tid, gain: cpu - (before.get(tid) ?? cpu) })).sort((a, b) => b.gain - a.gain);
  // Unambiguous only when one thread took clearly more than any other.
  if (gains.length === 0 || gains[0].gain < 0.05 || (gains[1] && gains[1].gain > gains[0].gain / 2)) return undefined;
  return gains[0].tid;
}

/**
 * Waits until the control plane is quiet: `sample`'s CPU seconds grow by less than `cores` per second and its
 * request count by less than `requestsPerSecond`, over two seconds. CPU alone is not enough: after placing
 * hundreds of workloads karmada-controller-manager keeps posting their Events for a minute or more through a
 * client held to 40 requests/s (its --kube-api-qps), using little CPU, and that backlog would delay the
 * failover's own requests and be counted as the failover's.
 */
async function settle(
  sample: () => Promise<{ cpu: number; requests: number }>,
  limits: { cores: number; requestsPerSecond: number },
  maxMs: number,
): Promise<{ seconds: number; settled: boolean }> {
  const started = Date.now();
  let last = await sample();
  while (Date.now() - started < maxMs) {
    await sleep(2000);
    const now = await sample();
    const quiet = now.cpu - last.cpu < 2 * limits.cores && now.requests - last.requests < 2 * limits.requestsPerSecond;
    last = now;
    if (quiet) return { seconds: round((Date.now() - started) / 1000, 1) ?? 0, settled: true };
  }
  return { seconds: round((Date.now() - started) / 1000, 1) ?? 0, settled: false };
}

// ---------------------------------------------------------------------------------------------- counters

interface ClientRequests {
  karmada: number;
  members: number;
}

/** karmada-controller-manager's client-go request counter, split by the host asked (the karmada-apiserver or a member). */
async function controllerManagerRequests(metricsUrl: string, apiHost: string): Promise<ClientRequests> {
  const res = await httpGet(metricsUrl);
  if (res.status !== 200) throw new Error(`GET ${metricsUrl}: ${res.status}`);
  const counts: ClientRequests = { karmada: 0, members: 0 };
  for (const line of res.body.split('\n')) {
    const m = /^rest_client_requests_total\{([^}]*)\} (\S+)$/.exec(line);
    if (!m) continue;
    const host = /host="([^"]*)"/.exec(m[1])?.[1] ?? '';
    if (host === apiHost) counts.karmada += Number(m[2]);
    else counts.members += Number(m[2]);
  }
  return counts;
}

type CpuKey = 'controllerManager' | 'karmadaApiserver' | 'karmadaScheduler' | 'appHost' | 'appAzurite';

interface Snapshot {
  at: number;
  cpu: Record<CpuKey, number | undefined>;
  /** karmada-controller-manager's requests so far. */
  cm?: ClientRequests;
  /** The app's requests so far, by kind. */
  app?: Map<string, number>;
  /** The karmada-apiserver's requests so far from every client, by kind. */
  api?: Map<string, number>;
}

/** The karmada-apiserver's own request counter (every client, the bench's watches included), by verb and resource. */
async function apiserverRequests(karmada: RealKarmada): Promise<Map<string, number>> {
  const res = await karmada.get('/metrics');
  if (res.status !== 200 || typeof res.body !== 'string') throw new Error(`GET /metrics: ${res.status}`);
  const counts = new Map<string, number>();
  for (const line of res.body.split('\n')) {
    const m = /^apiserver_request_total\{([^}]*)\} (\S+)$/.exec(line);
    if (!m) continue;
    const label = (name: string) => new RegExp(`${name}="([^"]*)"`).exec(m[1])?.[1] ?? '';
    const kind = `${label('verb')} ${label('resource')}${label('subresource') ? `/${label('subresource')}` : ''}`;
    counts.set(kind, (counts.get(kind) ?? 0) + Number(m[2]));
  }
  return counts;
}

interface CountingTlsProxy {
  url: string;
  byKind: () => Map<string, number>;
  close(): Promise<void>;
}

/**
 * A TLS proxy in front of the karmada-apiserver that counts what the app asks: the app has no request counter
 * of its own, and the karmada-apiserver's counters are not by user. It serves with the control plane's own
 * serving certificate (its SANs cover 127.0.0.1), so the app's kubeconfig differs only in the port.
 */
async function startCountingTlsProxy(karmada: RealKarmada): Promise<CountingTlsProxy> {
  const upstream = new URL(karmada.apiServerUrl);
  const agent = new Agent({ keepAlive: true, ca: karmada.caPem });
  let counts = new Map<string, number>();
  const server: Server = createHttpsServer(
    { cert: readFileSync(join(karmada.dir, 'pki', 'serving.crt')), key: readFileSync(join(karmada.dir, 'pki', 'serving.key')) },
    (req, res) => {
      const url = new URL(req.url ?? '/', 'https://x');
      // Resource, not object: /apis/<group>/<version>/[namespaces/<ns>/]<plural>[/<name>[/<sub>]].
      const parts = url.pathname.split('/').filter(Boolean);
      const start = parts[0] === 'api' ? 2 : 3;
      const rest = parts.slice(start);
      const resource = rest[0] === 'namespaces' && rest.length > 2 ? rest.slice(2) : rest;
      const verb = url.searchParams.get('watch') ? 'WATCH' : req.method === 'GET' && resource.length === 1 ? 'LIST' : (req.method ?? '?');
      const kind = `${verb} ${[resource[0], resource[2]].filter(Boolean).join('/')}`;
      counts.set(kind, (counts.get(kind) ?? 0) + 1);
      const forward = httpsRequest(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host }, agent },
        (reply) => {
          res.writeHead(reply.statusCode ?? 502, reply.headers);
          reply.on('end', () => (answered = true));
          reply.pipe(res);
        },
      );
      let answered = false;
      forward.on('error', () => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      });
      // The app ending a watch early must end the upstream watch too; a finished answer's socket is back in the pool.
      res.on('close', () => {
        if (!answered) forward.destroy();
      });
      req.pipe(forward);
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `https://127.0.0.1:${port}`,
    byKind: () => new Map(counts),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
        agent.destroy();
        counts = new Map();
      }),
  };
}

/** The app's kubeconfig with the proxy as its server. */
function proxiedKubeconfig(karmada: RealKarmada, proxyUrl: string): string {
  const config = parse(readFileSync(karmada.appKubeconfigPath, 'utf8')) as { clusters: Array<{ cluster: { server: string } }> };
  for (const c of config.clusters) c.cluster.server = proxyUrl;
  const path = join(karmada.dir, 'bench-app-via-proxy.kubeconfig');
  writeFileSync(path, stringify(config));
  return path;
}

const diff = (after: Map<string, number>, before: Map<string, number>) =>
  Object.fromEntries(
    [...after]
      .map(([k, v]) => [k, v - (before.get(k) ?? 0)] as const)
      .filter(([, v]) => v > 0)
      .sort((a, b) => b[1] - a[1]),
  );

// ---------------------------------------------------------------------------------------------- one side

const round = (x: number | undefined, digits = 2) => (x === undefined || !Number.isFinite(x) ? undefined : Math.round(x * 10 ** digits) / 10 ** digits);
const secondsAfter = (t: number | undefined, t0: number) => (t === undefined ? undefined : round((t - t0) / 1000));
const maxOrUndefined = (xs: Array<number | undefined>) => (xs.length === 0 || xs.some((x) => x === undefined) ? undefined : Math.max(...(xs as number[])));

const emptySide = (side: 'karmada' | 'app', workloads: number, rate: number): SideResult => ({
  side,
  workloads,
  rate,
  fromKillS: {},
  evicted: 0,
  evictedTwice: 0,
  requests: {},
  cpuSeconds: {},
});

/** Healthy once its first sync reached the API server and it sees every binding (its policy status written too). */
async function waitAppReady(karmada: RealKarmada, host: HostProcess, bindingCount: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const health = await appGet(host, 'healthz');
    const listed = await appGet<{ items?: unknown[] }>(host, 'resourcebindings');
    const count = Array.isArray(listed.body?.items) ? listed.body.items.length : -1;
    if (health.status === 200 && count >= bindingCount) break;
    if (Date.now() > deadline) throw new Error(`the app did not come up: healthz ${health.status} ${JSON.stringify(health.body)}, bindings ${count}`);
    await sleep(250);
  }
  const created = await karmada.kubectl(['wait', '--for=create', `taintpolicystatus/${POLICY}`, '--timeout=30s'], { allowFailure: true });
  if (created.code !== 0) throw new Error(`the app wrote no TaintPolicyStatus ${POLICY}: ${created.stderr}`);
}

async function runSide(side: Side, workloads: number, rate: number, binDir: string, log: (line: string) => void): Promise<SideResult> {
  const result: SideResult = emptySide(side, workloads, rate);
  let karmada: RealKarmada | undefined;
  let host: HostProcess | undefined;
  let proxy: CountingTlsProxy | undefined;
  let clusters: KarmadaWatch | undefined;
  let bindings: KarmadaWatch<Binding> | undefined;
  try {
    const started = Date.now();
    karmada = await startRealKarmada(
      side === 'karmada' ? { members: 3, binDir, karmadaOwnFailover: true, resourceEvictionRate: rate } : { members: 3, binDir },
    );
    result.controlPlaneStartS = round((Date.now() - started) / 1000, 1);
    log(`${side} ${workloads}@${rate}/s: control plane up in ${result.controlPlaneStartS} s`);
    const k = karmada;

    const cmPid = findPid((a) => a[0].endsWith('/karmada-controller-manager') && a.includes(`--kubeconfig=${k.kubeconfigPath}`));
    const apiPid = findPid(
      (a) => a[0].endsWith('/kube-apiserver') && a.includes('--etcd-prefix=/karmada') && a.some((x) => x.startsWith(`--token-auth-file=${k.dir}`)),
    );
    const schedPid = findPid((a) => a[0].endsWith('/karmada-scheduler') && a.includes(`--kubeconfig=${k.kubeconfigPath}`));
    if (cmPid === undefined) throw new Error('karmada-controller-manager not found in /proc');
    const metricsAddress = argvOf(cmPid)
      .filter((a) => a.startsWith('--metrics-bind-address='))
      .pop()
      ?.split('=')[1];
    const metricsUrl = `http://${metricsAddress}/metrics`;
    const apiHost = new URL(k.apiServerUrl).host;

    clusters = new KarmadaWatch(k, '/apis/cluster.karmada.io/v1alpha1/clusters');
    bindings = new KarmadaWatch<Binding>(k, '/apis/work.karmada.io/v1alpha2/resourcebindings');
    await Promise.all([clusters.start(), bindings.start()]);

    // One kwok node per member holds 110 Pods as the harness creates it; N workloads all start on member1.
    await Promise.all(
      k.members.map((m) =>
        m.kubectl([
          'patch',
          'node',
          'kwok-node-0',
          '--subresource=status',
          '--type=merge',
          '-p',
          JSON.stringify({ status: { capacity: { pods: '2000' }, allocatable: { pods: '2000' } } }),
        ]),
      ),
    );
    if (side === 'app') {
      await k.kubectl(['apply', '--server-side', '-f', join(ROOT, 'infra', 'taintpolicystatus-crd.yaml')]);
      await k.kubectl(['wait', '--for=condition=Established', 'crd/taintpolicystatuses.failover.io', '--timeout=30s']);
    }
    await applyYaml(k, karmadaTaintPolicy(POLICY));
    await applyYaml(k, propagationPolicy({ name: GROUP, group: GROUP, clusters: k.members.map((m) => m.name), tolerationSeconds: 0 }));

    const placeStarted = Date.now();
    const keys: string[] = [];
    for (let chunk = 0; chunk * PLACE_CHUNK < workloads; chunk++) {
      const count = Math.min(PLACE_CHUNK, workloads - chunk * PLACE_CHUNK);
      keys.push(...(await placeGroupOn(k, clusters, bindings, { prefix: `w${chunk}`, group: GROUP, count, cluster: FAILED })));
    }
    result.placeS = round((Date.now() - placeStarted) / 1000, 1);
    log(`${side} ${workloads}@${rate}/s: ${keys.length} workloads Healthy on ${FAILED} after ${result.placeS} s`);

    let azuriteTid: number | undefined;
    if (side === 'app') {
      proxy = await startCountingTlsProxy(k);
      host = await startHostProcess(karmadaHostEnv(k, rate, { KARMADA_KUBECONFIG: proxiedKubeconfig(k, proxy.url) }));
      await waitAppReady(k, host, workloads);
    }
    const appPid = host?.child.pid;
    // Start-up and placement work (the app's first sync, Karmada's Events) is not the failover's.
    const settled = await settle(
      async () => ({
        cpu: (tryCpu(cmPid) ?? 0) + (tryCpu(appPid) ?? 0),
        requests: (await controllerManagerRequests(metricsUrl, apiHost).catch(() => undefined))?.karmada ?? 0,
      }),
      { cores: 0.35, requestsPerSecond: 8 },
      120_000,
    );
    result.settleS = settled.seconds;
    if (!settled.settled) log(`${side} ${workloads}@${rate}/s: the control plane was still busy after ${settled.seconds} s; measuring anyway`);
    // Once quiet: the app's own work would blur which thread the burst to Azurite lands on.
    if (host) {
      azuriteTid = await azuriteThread(host);
      if (azuriteTid === undefined) log('app: could not tell the Azurite worker thread apart; its CPU is counted in the host figure');
    }

    const bw = bindings;
    const cw = clusters;
    const snapshot = async (): Promise<Snapshot> => {
      const appAll = tryCpu(appPid);
      const azurite = azuriteTid === undefined ? undefined : tryCpu(appPid, azuriteTid);
      return {
        at: Date.now(),
        cpu: {
          controllerManager: tryCpu(cmPid),
          karmadaApiserver: tryCpu(apiPid),
          karmadaScheduler: tryCpu(schedPid),
          appHost: appAll === undefined ? undefined : appAll - (azurite ?? 0),
          appAzurite: azurite,
        },
        cm: await controllerManagerRequests(metricsUrl, apiHost).catch(() => undefined),
        app: proxy?.byKind(),
        api: await apiserverRequests(k).catch(() => undefined),
      };
    };
    const idleStart = await snapshot();
    await sleep(IDLE_MS);
    const before = await snapshot();
    const t0 = Date.now();
    await k.members[0].kill();
    log(`${side} ${workloads}@${rate}/s: ${FAILED} killed`);

    const done = (key: string) => {
      const b = bw.get(key);
      return healthyWhereScheduled(b) && !placedOn(b).includes(FAILED) && !taskFrom(b, FAILED);
    };
    const left = (key: string) => !placedOn(bw.get(key)).includes(FAILED);
    const progress = () => keys.reduce((n, key) => n + (left(key) ? 1 : 0) + (done(key) ? 1 : 0), 0);
    // Detection and the taint take ~10 s with these timings, then the pacing and the re-placement; a side
    // slower than its rate gets room up to the cap, as long as something still moves.
    const capMs = 60_000 + (6 * workloads * 1000) / rate;
    let waitError: Error | undefined;
    for (let last = progress(), lastAt = Date.now(); ;) {
      const finished = await bw
        .until('every workload done', () => keys.every(done), 5000)
        .then(
          () => true,
          () => false,
        );
      if (finished) break;
      const now = progress();
      if (now !== last) [last, lastAt] = [now, Date.now()];
      const stalled = Date.now() - lastAt > STALL_MS;
      if (stalled || Date.now() - t0 > capMs) {
        const healthy = keys.filter((key) => left(key) && healthyWhereScheduled(bw.get(key))).length;
        waitError = new Error(
          `${stalled ? `nothing moved for ${STALL_MS / 1000} s` : `stopped at the cap of ${capMs / 1000} s`}: ${keys.filter(left).length}/${workloads} evicted, ${healthy} Healthy elsewhere, ${keys.filter(done).length} with their task cleared`,
        );
        break;
      }
    }
    const after = await snapshot();

    // --- figures, from what the watches recorded --------------------------------------------------------
    const member1History = cw.history(FAILED).filter((r) => r.at >= t0);
    const readyRecord = member1History.find((r) => readyOf(r.object)?.status === 'False');
    const taintRecord = member1History.find((r) => hasNotReadyNoExecute(r.object));
    const leaving = keys.map((key) => departures(bw, key, FAILED, t0));
    const evictionTimes = leaving
      .filter((t) => t.length > 0)
      .map((t) => t[0])
      .sort((a, b) => a - b);
    const elsewhere = keys.map((key) => bw.history(key).find((r) => r.at >= t0 && healthyWhereScheduled(r.object) && !placedOn(r.object).includes(FAILED))?.at);
    const cleared = keys.map((key, i) => {
      const left = leaving[i][0];
      return left === undefined ? undefined : bw.history(key).find((r) => r.at > left && !taskFrom(r.object, FAILED))?.at;
    });
    const first = evictionTimes[0];
    const last = evictionTimes[evictionTimes.length - 1];
    const achieved = evictionTimes.length > 1 ? (evictionTimes.length - 1) / ((last - first) / 1000) : undefined;
    const everyElsewhere = maxOrUndefined(elsewhere);

    result.evicted = evictionTimes.length;
    result.healthyElsewhereAtEnd = keys.filter((key) => left(key) && healthyWhereScheduled(bw.get(key))).length;
    result.tasksClearedAtEnd = keys.filter(done).length;
    result.evictedTwice = leaving.filter((t) => t.length > 1).length;
    result.fromKillS = {
      readyFalse: secondsAfter(readyRecord?.at, t0),
      taint: secondsAfter(taintRecord?.at, t0),
      firstEviction: secondsAfter(first, t0),
      lastEviction: secondsAfter(last, t0),
      everyWorkloadElsewhere: secondsAfter(everyElsewhere, t0),
      tasksCleared: secondsAfter(maxOrUndefined(cleared), t0),
    };
    result.achievedRate = round(achieved, 3);
    result.rateRatio = round(achieved === undefined ? undefined : achieved / rate, 2);
    result.completionMinusIdealS =
      everyElsewhere !== undefined && taintRecord ? round((everyElsewhere - (taintRecord.at + (workloads / rate) * 1000)) / 1000) : undefined;
    result.readyFalseWrittenBy = readyRecord ? writersOf(readyRecord.object, 'f:conditions') : undefined;

    result.windowS = round((after.at - t0) / 1000, 1);
    result.evictionOffsetsS = evictionTimes.map((t) => round((t - first) / 1000, 2) ?? 0);
    const counted = (get: (x: Snapshot) => number | undefined, perEviction: boolean): Counted | undefined => {
      const [a, b, c] = [get(idleStart), get(before), get(after)];
      if (a === undefined || b === undefined || c === undefined) return undefined;
      const idlePerSecond = (b - a) / ((before.at - idleStart.at) / 1000);
      const window = c - b;
      const beyondIdle = window - idlePerSecond * ((after.at - before.at) / 1000);
      const digits = perEviction ? 0 : 2;
      return {
        window: round(window, digits) ?? 0,
        beyondIdle: round(beyondIdle, digits) ?? 0,
        idlePerSecond: round(idlePerSecond, 2) ?? 0,
        ...(perEviction && result.evicted > 0
          ? { perEviction: round(window / result.evicted, 1), beyondIdlePerEviction: round(beyondIdle / result.evicted, 1) }
          : {}),
      };
    };
    const total = (m: Map<string, number> | undefined) => (m ? [...m.values()].reduce((x, y) => x + y, 0) : undefined);
    result.requests.controllerManager = counted((x) => x.cm?.karmada, true);
    if (after.api && before.api) result.requests.apiserverByKind = Object.fromEntries(Object.entries(diff(after.api, before.api)).slice(0, 15));
    if (after.cm && before.cm) result.requests.controllerManagerToMembers = after.cm.members - before.cm.members;
    if (side === 'karmada') result.requests.failoverSide = result.requests.controllerManager;
    else {
      result.requests.failoverSide = counted((x) => total(x.app), true);
      if (after.app && before.app && idleStart.app) {
        result.requests.appByKind = diff(after.app, before.app);
        result.requests.appIdleByKind = diff(before.app, idleStart.app);
      }
    }
    for (const key of ['controllerManager', 'karmadaApiserver', 'karmadaScheduler', ...(side === 'app' ? (['appHost', 'appAzurite'] as const) : [])] as const) {
      result.cpuSeconds[key] = counted((x) => x.cpu[key], false);
    }
    if (waitError) throw waitError;
    log(`${side} ${workloads}@${rate}/s: done in ${result.windowS} s`);
  } catch (error) {
    result.error = error instanceof Error ? error.message.split('\n')[0] : String(error);
    log(`${side} ${workloads}@${rate}/s: ${result.error}`);
    if (side === 'karmada' && karmada) log(`--- karmada-controller-manager log tail:\n${karmada.logTail('karmada-controller-manager', 3000)}`);
    if (host) log(`--- the app's last output:\n${host.output().split('\n').slice(-20).join('\n').slice(-4000)}`);
  } finally {
    clusters?.stop();
    bindings?.stop();
    // For a post-mortem of the app's side: its whole log.
    if (host && process.env.BENCH_APP_LOG) writeFileSync(`${process.env.BENCH_APP_LOG}-${workloads}`, host.output());
    await host?.stop();
    await proxy?.close();
    await karmada?.stop();
  }
  return result;
}

// ---------------------------------------------------------------------------------------------- report

const cell = (x: number | undefined) => (x === undefined ? '—' : String(x));
/** A time, or how many got there before the wait ended. */
const partial = (x: number | undefined, reached: number | undefined, of: number) =>
  x !== undefined ? String(x) : reached === undefined ? '—' : `— (${reached}/${of})`;
const perEviction = (c: Counted | undefined) => (c?.perEviction === undefined ? '—' : `${c.perEviction} (${c.beyondIdlePerEviction})`);
const cpu = (c: Counted | undefined) => (c === undefined ? '—' : `${c.window} (${c.beyondIdle})`);

function table(runs: Array<{ karmada: SideResult; app: SideResult }>): string {
  const rows: Array<[string, (r: SideResult) => string]> = [
    ['Ready=False written (s after kill)', (r) => cell(r.fromKillS.readyFalse)],
    ['NoExecute taint on member1 (s)', (r) => cell(r.fromKillS.taint)],
    ['first eviction (s)', (r) => cell(r.fromKillS.firstEviction)],
    ['last eviction (s)', (r) => cell(r.fromKillS.lastEviction)],
    ['evicted / on member1', (r) => `${r.evicted}/${r.workloads}${r.evictedTwice ? ` (${r.evictedTwice} twice)` : ''}`],
    ['achieved rate ÷ configured', (r) => (r.achievedRate === undefined ? '—' : `${r.rateRatio}× (${r.achievedRate}/s)`)],
    ['every workload Healthy elsewhere (s)', (r) => partial(r.fromKillS.everyWorkloadElsewhere, r.healthyElsewhereAtEnd, r.workloads)],
    ['all graceful-eviction tasks cleared (s)', (r) => partial(r.fromKillS.tasksCleared, r.tasksClearedAtEnd, r.workloads)],
    ['completion − ideal (s)', (r) => cell(r.completionMinusIdealS)],
    ['requests/eviction, failover side: all (beyond idle)', (r) => perEviction(r.requests.failoverSide)],
    ['requests/eviction, karmada-controller-manager', (r) => perEviction(r.requests.controllerManager)],
    ['CPU s, failover side: all (beyond idle)', (r) => cpu(r.side === 'karmada' ? r.cpuSeconds.controllerManager : r.cpuSeconds.appHost)],
    ['CPU s, app’s Azurite', (r) => (r.side === 'karmada' ? 'n/a' : cpu(r.cpuSeconds.appAzurite))],
    ['CPU s, karmada-controller-manager', (r) => cpu(r.cpuSeconds.controllerManager)],
    ['CPU s, karmada-apiserver', (r) => cpu(r.cpuSeconds.karmadaApiserver)],
    ['CPU s, karmada-scheduler', (r) => cpu(r.cpuSeconds.karmadaScheduler)],
  ];
  const header = ['', ...runs.flatMap((r) => [`${r.karmada.workloads} @ ${r.karmada.rate}/s: Karmada's own`, `${r.app.workloads} @ ${r.app.rate}/s: the app`])];
  const lines = [`| ${header.join(' | ')} |`, `|${header.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`];
  for (const [name, value] of rows) lines.push(`| ${[name, ...runs.flatMap((r) => [value(r.karmada), value(r.app)])].join(' | ')} |`);
  for (const r of runs)
    for (const s of [r.karmada, r.app])
      if (s.error) lines.push(`\n${s.workloads} @ ${s.rate}/s, ${s.side === 'karmada' ? "Karmada's own" : 'the app'}: ${s.error}`);
  return lines.join('\n');
}

export async function karmadaVsOursBench(args: string[]): Promise<void> {
  const sizes: Array<[number, number]> = args[0]
    ? [[Number(args[0]), Number(args[1] ?? 2)]]
    : [
        [30, 2],
        [300, 10],
      ];
  for (const [n, r] of sizes) if (!(n >= 2 && r > 0)) throw new Error(`usage: npm run bench -- karmada-vs-ours [workloads ≥ 2] [rate > 0]`);
  const log = (line: string) => process.stderr.write(`[karmada-vs-ours ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
  const started = Date.now();
  const loadBefore = loadavg();
  const binDir = await ensureKarmadaBuilt({ onOutput: (chunk) => process.stderr.write(chunk) });
  const runs: Array<{ karmada: SideResult; app: SideResult }> = [];
  // BENCH_SIDES=app (or karmada) runs one side only: the other is reported as skipped.
  const sides = (process.env.BENCH_SIDES ?? 'karmada,app').split(',');
  const skipped = (side: 'karmada' | 'app', n: number, r: number): SideResult => ({ ...emptySide(side, n, r), error: 'skipped (BENCH_SIDES)' });
  for (const [n, r] of sizes) {
    const karmada = sides.includes('karmada') ? await runSide('karmada', n, r, binDir, log) : skipped('karmada', n, r);
    const app = sides.includes('app') ? await runSide('app', n, r, binDir, log) : skipped('app', n, r);
    runs.push({ karmada, app });
  }
  const report = {
    bench: 'karmada-vs-ours',
    date: new Date().toISOString(),
    karmada: 'v1.18.2',
    timing: { clusterStatusUpdateFrequency: '2s', clusterFailureThreshold: '6s', clusterMonitorPeriod: '1s' },
    eviction: 'first binding version without member1 in spec.clusters and with a graceful-eviction task from member1',
    ideal: 'NoExecute taint time + workloads / rate',
    machine: { cpus: cpus().length, node: process.version, loadavgBefore: loadBefore.map((x) => round(x)), loadavgAfter: loadavg().map((x) => round(x)) },
    durationS: round((Date.now() - started) / 1000, 0),
    runs,
  };
  const file = join(tmpdir(), `karmada-vs-ours-${report.date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
  console.log(table(runs));
  console.log(
    `\nload average ${report.machine.loadavgBefore.join(' ')} before, ${report.machine.loadavgAfter.join(' ')} after; ${report.machine.cpus} CPUs; ${report.durationS} s in all`,
  );
  console.log(JSON.stringify(report));
  console.log(`wrote ${file}`);
}
