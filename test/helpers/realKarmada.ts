import { ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';

/**
 * A real Karmada control plane on 127.0.0.1 for tests: the binaries scripts/karmada/build.sh builds (Karmada
 * v1.18.2 on Kubernetes v1.35.4, etcd, kwok), started as child processes with free ports and a throwaway
 * PKI, with N kwok-backed member clusters registered as Push clusters.
 *
 *   etcd (one, a prefix per API server)
 *   karmada-apiserver (kube-apiserver: RBAC, token file, aggregation layer) + Karmada's CRDs as shipped
 *   karmada-aggregated-apiserver (cluster.karmada.io) behind an ExternalName Service and its APIService
 *   karmada-webhook + Karmada's webhook configurations (URL → 127.0.0.1, caBundle → our CA)
 *   kube-controller-manager (namespace, garbagecollector)
 *   karmada-controller-manager (its failover controllers off unless karmadaOwnFailover) + karmada-scheduler
 *   per member: kube-apiserver, kube-controller-manager (deployment, replicaset, garbagecollector,
 *   namespace), kube-scheduler (so Pods land on the node and Karmada sees workloads Healthy), kwok with its
 *   "fast" stages and one fake Node
 *
 * The app's user is a token user bound only to what infra/karmada-rbac.yaml grants. Every process runs in its
 * own process group; stop() kills them all and removes the scratch directory (set REAL_KARMADA_KEEP=1 to keep
 * it, logs included, for a post-mortem). Processes left behind by a crashed test process are killed on exit.
 */

const ROOT = join(__dirname, '..', '..');
export const BUILD_SCRIPT = join(ROOT, 'scripts', 'karmada', 'build.sh');

export interface RealKarmadaTiming {
  /** How often karmada-controller-manager posts cluster status (--cluster-status-update-frequency). */
  clusterStatusUpdateFrequency?: string;
  clusterFailureThreshold?: string;
  clusterSuccessThreshold?: string;
  clusterMonitorPeriod?: string;
}

export interface RealKarmadaOptions {
  /** Number of kwok-backed member clusters, named member1..memberN (default 3). */
  members?: number;
  /** Karmada's own failover (taint manager, graceful eviction, application failover) instead of the app's. */
  karmadaOwnFailover?: boolean;
  /** --resource-eviction-rate when karmadaOwnFailover (default 0.5, Karmada's default). */
  resourceEvictionRate?: number;
  timing?: RealKarmadaTiming;
  /** Extra karmada-controller-manager flags (appended last, so they win). */
  controllerManagerArgs?: string[];
  /**
   * Run kube-scheduler on each member (default true). Without it Pods stay Pending, so every propagated
   * workload is Unhealthy in Karmada's aggregated status.
   */
  memberScheduler?: boolean;
  /** Labels put on every Cluster object. */
  clusterLabels?: Record<string, string>;
  /** The app's user name (default cluster-failover, the subject infra/karmada-rbac.yaml binds). */
  appUser?: string;
  /** The RBAC file the app's user is bound by (default infra/karmada-rbac.yaml). */
  rbacFile?: string;
  /** Where the binaries are; default: run scripts/karmada/build.sh (instant when the cache is complete). */
  binDir?: string;
  /** kubectl to use (default $KUBECTL or /usr/bin/kubectl). */
  kubectl?: string;
  /** Wait for every Cluster to be Ready=True before returning (default true). */
  waitReady?: boolean;
  /** Start-up deadline (default 120 s). */
  timeoutMs?: number;
  /** Keep the scratch directory after stop() (default: $REAL_KARMADA_KEEP === '1'). */
  keepDir?: boolean;
  /** Progress lines (default: none; REAL_KARMADA_VERBOSE=1 prints to stderr). */
  log?: (line: string) => void;
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface KubectlOptions {
  /** Kubeconfig to use (default the admin's). */
  kubeconfig?: string;
  /** Text for stdin (e.g. with `-f -`). */
  input?: string;
  /** Resolve on a non-zero exit instead of throwing. */
  allowFailure?: boolean;
  timeoutMs?: number;
}

export interface RealMember {
  name: string;
  /** The member's kube-apiserver (the Cluster's apiEndpoint). */
  url: string;
  /** Admin kubeconfig of the member's own API server. */
  kubeconfigPath: string;
  /** The token in the member's Secret in karmada-cluster (system:masters on the member). */
  token: string;
  running(): boolean;
  /** SIGKILLs the member's kube-apiserver, kube-controller-manager, kube-scheduler and kwok. */
  kill(): Promise<void>;
  /** Starts the same command lines again and waits for the member's API server to be ready. */
  restart(): Promise<void>;
  kubectl(args: string[], options?: Omit<KubectlOptions, 'kubeconfig'>): Promise<KubectlResult>;
}

export interface RealKarmada {
  /** Scratch directory (PKI, kubeconfigs, logs/, etcd data). */
  dir: string;
  binDir: string;
  /** https://127.0.0.1:PORT of the karmada-apiserver. */
  apiServerUrl: string;
  /** PEM of the CA that signed every serving certificate. */
  caPem: string;
  /** system:masters on the karmada-apiserver. */
  kubeconfigPath: string;
  adminToken: string;
  /** The app's user: exactly what the RBAC file grants. */
  appKubeconfigPath: string;
  appUser: string;
  appToken: string;
  members: RealMember[];
  /** Milliseconds from the call to each start-up milestone. */
  timings: Record<string, number>;
  kubectl(args: string[], options?: KubectlOptions): Promise<KubectlResult>;
  /** Authenticated GET (admin token by default) against the karmada-apiserver; JSON-decoded body. */
  get(path: string, token?: string): Promise<{ status: number; body: any }>;
  /** Kills (SIGKILL by default) and restarts the karmada-apiserver on the same port; waits for /readyz. */
  restartApiServer(signal?: NodeJS.Signals): Promise<void>;
  /** Kills (SIGKILL by default) and restarts etcd on the same ports and data; waits for the API server. */
  restartEtcd(signal?: NodeJS.Signals): Promise<void>;
  /** Stops karmada-webhook: writes its configurations cover are then refused (failurePolicy Fail). */
  stopWebhook(): Promise<void>;
  startWebhook(): Promise<void>;
  /** The tail of a component's log (names: etcd, karmada-apiserver, karmada-controller-manager, member1-kwok, …). */
  logTail(component: string, bytes?: number): string;
  stop(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------------
// Build

/** Runs scripts/karmada/build.sh (a no-op when the cache is complete) and resolves with its bin directory. */
export function ensureKarmadaBuilt(options: { onOutput?: (chunk: string) => void } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [BUILD_SCRIPT], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (stderr.length > 200_000) stderr = stderr.slice(-100_000);
      options.onOutput?.(chunk.toString());
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      const bin = stdout.trim().split('\n').pop() ?? '';
      if (code === 0 && bin && existsSync(bin)) resolve(bin);
      else reject(new Error(`${BUILD_SCRIPT} exited with ${code}:\n${stderr.slice(-4000)}`));
    });
  });
}

// ---------------------------------------------------------------------------------------------------------
// Processes

/** Process groups still running, killed if the test process exits without stop(). */
const LIVE = new Set<number>();
let exitHookInstalled = false;
function installExitHook() {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const pid of LIVE) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });
}

class Component {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  lastExit = '';

  constructor(
    readonly name: string,
    readonly bin: string,
    readonly args: string[],
    readonly logFile: string,
    readonly env: Record<string, string> = {},
  ) {}

  running() {
    return this.child !== undefined;
  }

  start() {
    if (this.child) throw new Error(`${this.name} is already running`);
    const fd = openSync(this.logFile, 'a');
    writeSync(fd, `\n===== ${new Date().toISOString()} ${this.bin} ${this.args.join(' ')}\n`);
    const child = spawn(this.bin, this.args, { detached: true, stdio: ['ignore', fd, fd], env: { ...process.env, ...this.env } });
    closeSync(fd);
    const pid = child.pid;
    if (pid === undefined) throw new Error(`could not start ${this.bin}`);
    LIVE.add(pid);
    child.unref();
    this.child = child;
    this.lastExit = '';
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        LIVE.delete(pid);
        this.lastExit = signal ?? `exit code ${code}`;
        if (this.child === child) this.child = undefined;
        resolve();
      });
    });
  }

  /** Signals the whole process group and waits for the process to exit. */
  async kill(signal: NodeJS.Signals = 'SIGKILL') {
    const child = this.child;
    if (!child?.pid) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
    const done = this.exited;
    // A referenced timer: the children are unref'd, so this keeps a plain script alive until the exit.
    let timeout: NodeJS.Timeout | undefined;
    const timer = new Promise<'timeout'>((resolve) => (timeout = setTimeout(() => resolve('timeout'), 15_000)));
    const outcome = await Promise.race([done, timer]);
    clearTimeout(timeout);
    if (outcome === 'timeout') {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      await done;
    }
  }

  tail(bytes = 3000) {
    try {
      const text = readFileSync(this.logFile, 'utf8');
      return text.slice(-bytes);
    } catch {
      return '';
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// Small utilities

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function run(cmd: string, args: string[], options: { input?: string; timeoutMs?: number; env?: Record<string, string> } = {}): Promise<KubectlResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      cmd,
      args,
      { timeout: options.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, ...options.env } },
      (error, stdout, stderr) => {
        const code = (error as { code?: unknown } | null)?.code;
        if (code === 'ENOENT') return reject(new Error(`${cmd} not found`));
        resolve({ code: error ? (typeof code === 'number' ? code : 1) : 0, stdout: String(stdout), stderr: String(stderr) });
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
    else child.stdin?.end();
  });
}

/**
 * Distinct free TCP ports on 127.0.0.1, all held open until every one is chosen. They are picked at random
 * BELOW the kernel's ephemeral range: a port from listen(0) is an ephemeral one, and once a member is killed an
 * outgoing connection of any process on the machine may take it as its local port, so that the member's
 * restart could not bind it again.
 */
async function freePorts(count: number): Promise<number[]> {
  let ephemeralStart = 32768;
  try {
    ephemeralStart = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || ephemeralStart;
  } catch {
    // not Linux: keep the IANA-ish default
  }
  const low = 10_000;
  const high = Math.max(low + 1000, ephemeralStart) - 1;
  const servers: Server[] = [];
  const ports: number[] = [];
  try {
    for (let attempts = 0; ports.length < count; attempts++) {
      if (attempts > count * 50) throw new Error(`could not find ${count} free ports in ${low}-${high}`);
      const port = low + Math.floor(Math.random() * (high - low + 1));
      if (ports.includes(port)) continue;
      const server = createServer();
      const ok = await new Promise<boolean>((resolve) => {
        server.once('error', () => resolve(false));
        server.listen(port, '127.0.0.1', () => resolve(true));
      });
      if (!ok) continue;
      servers.push(server);
      ports.push(port);
    }
  } finally {
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(() => resolve(undefined)))));
  }
  return ports;
}

export interface HttpResult {
  status: number;
  body: string;
}

/** A GET without connection reuse (a restarted server must not get an old socket); plain http or https with `ca`. */
export function httpGet(url: string, options: { ca?: string; token?: string; timeoutMs?: number } = {}): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const request = u.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = request(
      u,
      {
        method: 'GET',
        headers: { accept: 'application/json', ...(options.token ? { authorization: `Bearer ${options.token}` } : {}) },
        ...(u.protocol === 'https:' ? { ca: options.ca } : {}),
        timeout: options.timeoutMs ?? 3000,
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

async function tryGet(url: string, options: { ca?: string; token?: string; timeoutMs?: number } = {}): Promise<HttpResult | undefined> {
  try {
    return await httpGet(url, options);
  } catch {
    return undefined;
  }
}

function kubeconfig(server: string, caPem: string, token: string, user: string): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'real-karmada', cluster: { server, 'certificate-authority-data': Buffer.from(caPem).toString('base64') } }],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: user, context: { cluster: 'real-karmada', user } }],
    'current-context': user,
  });
}

// ---------------------------------------------------------------------------------------------------------
// PKI

interface Pki {
  caCrt: string;
  caKey: string;
  caPem: string;
  servingCrt: string;
  servingKey: string;
  frontProxyCaCrt: string;
  frontProxyClientCrt: string;
  frontProxyClientKey: string;
  saKey: string;
  saPub: string;
  webhookCertDir: string;
}

async function makePki(dir: string): Promise<Pki> {
  mkdirSync(dir, { recursive: true });
  const p = (name: string) => join(dir, name);
  const openssl = async (args: string[]) => {
    const result = await run('openssl', args);
    if (result.code !== 0) throw new Error(`openssl ${args.join(' ')}: ${result.stderr}`);
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const serial = () => `0x${randomBytes(8).toString('hex')}`;
  const selfSigned = (name: string, cn: string) =>
    openssl(['req', '-x509', ...ec, '-keyout', p(`${name}.key`), '-out', p(`${name}.crt`), '-days', '3650', '-subj', `/CN=${cn}`, '-set_serial', serial()]);
  const signed = async (name: string, cn: string, ca: string, extensions: string) => {
    writeFileSync(p(`${name}.ext`), extensions);
    await openssl(['req', '-new', ...ec, '-keyout', p(`${name}.key`), '-out', p(`${name}.csr`), '-subj', `/CN=${cn}`]);
    await openssl([
      'x509',
      '-req',
      '-in',
      p(`${name}.csr`),
      '-CA',
      p(`${ca}.crt`),
      '-CAkey',
      p(`${ca}.key`),
      '-set_serial',
      serial(),
      '-days',
      '3650',
      '-out',
      p(`${name}.crt`),
      '-extfile',
      p(`${name}.ext`),
    ]);
  };
  // The serving certificate is shared by every server here: the SANs cover loopback and the in-cluster
  // names Karmada's manifests use for its webhook and aggregated API server.
  const sans = [
    'IP:127.0.0.1',
    'DNS:localhost',
    'DNS:karmada-apiserver',
    'DNS:kubernetes.default.svc',
    'DNS:karmada-webhook.karmada-system.svc',
    'DNS:karmada-aggregated-apiserver.karmada-system.svc',
  ].join(',');
  await Promise.all([
    selfSigned('ca', 'real-karmada-ca').then(() =>
      signed('serving', 'real-karmada-serving', 'ca', `subjectAltName=${sans}\nextendedKeyUsage=serverAuth,clientAuth\nkeyUsage=critical,digitalSignature\n`),
    ),
    selfSigned('front-proxy-ca', 'real-karmada-front-proxy-ca').then(() =>
      signed('front-proxy-client', 'front-proxy-client', 'front-proxy-ca', 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n'),
    ),
    openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', p('sa.key')]).then(() =>
      openssl(['ec', '-in', p('sa.key'), '-pubout', '-out', p('sa.pub')]),
    ),
  ]);
  const webhookCertDir = p('webhook');
  mkdirSync(webhookCertDir, { recursive: true });
  copyFileSync(p('serving.crt'), join(webhookCertDir, 'tls.crt'));
  copyFileSync(p('serving.key'), join(webhookCertDir, 'tls.key'));
  return {
    caCrt: p('ca.crt'),
    caKey: p('ca.key'),
    caPem: readFileSync(p('ca.crt'), 'utf8'),
    servingCrt: p('serving.crt'),
    servingKey: p('serving.key'),
    frontProxyCaCrt: p('front-proxy-ca.crt'),
    frontProxyClientCrt: p('front-proxy-client.crt'),
    frontProxyClientKey: p('front-proxy-client.key'),
    saKey: p('sa.key'),
    saPub: p('sa.pub'),
    webhookCertDir,
  };
}

// ---------------------------------------------------------------------------------------------------------
// The control plane

const TIMING_DEFAULTS: Required<RealKarmadaTiming> = {
  clusterStatusUpdateFrequency: '2s',
  clusterFailureThreshold: '6s',
  clusterSuccessThreshold: '6s',
  clusterMonitorPeriod: '1s',
};

type KubeDoc = {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string };
  roleRef?: { kind?: string; name?: string };
  subjects?: Array<{ kind?: string; name?: string }>;
};

/** The app's bindings: the RBAC file as is, plus a ClusterRoleBinding to the app's user for each ClusterRole the file does not already bind to it. */
function appRbacDocuments(rbacYaml: string, appUser: string): string {
  const docs = parseAllDocuments(rbacYaml)
    .map((d) => d.toJS() as KubeDoc | null)
    .filter((d): d is KubeDoc => !!d?.kind);
  const extra: KubeDoc[] = [];
  for (const role of docs.filter((d) => d.kind === 'ClusterRole')) {
    const bound = docs.some(
      (d) =>
        d.kind === 'ClusterRoleBinding' &&
        d.roleRef?.kind === 'ClusterRole' &&
        d.roleRef.name === role.metadata?.name &&
        (d.subjects ?? []).some((s) => s.kind === 'User' && s.name === appUser),
    );
    if (bound) continue;
    extra.push({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `${role.metadata?.name}-real-karmada-app` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role.metadata?.name } as KubeDoc['roleRef'],
      subjects: [{ kind: 'User', name: appUser, apiGroup: 'rbac.authorization.k8s.io' } as { kind: string; name: string }],
    });
  }
  return [rbacYaml, ...extra.map((d) => stringify(d))].join('\n---\n');
}

export async function startRealKarmada(options: RealKarmadaOptions = {}): Promise<RealKarmada> {
  // Another process may bind one of the chosen ports between the choice and the start: try again then.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (error) {
      if (attempt >= 3 || !/address already in use/.test(String(error))) throw error;
    }
  }
}

async function startOnce(options: RealKarmadaOptions): Promise<RealKarmada> {
  const t0 = Date.now();
  const timings: Record<string, number> = {};
  const mark = (what: string) => {
    timings[what] = Date.now() - t0;
    log(`${what} at ${(timings[what] / 1000).toFixed(1)} s`);
  };
  const log = options.log ?? (process.env.REAL_KARMADA_VERBOSE === '1' ? (line: string) => process.stderr.write(`[real-karmada] ${line}\n`) : () => {});
  const memberCount = options.members ?? 3;
  const appUser = options.appUser ?? 'cluster-failover';
  const timing = { ...TIMING_DEFAULTS, ...options.timing };
  const kubectlBin = options.kubectl ?? process.env.KUBECTL ?? '/usr/bin/kubectl';
  const timeoutMs = options.timeoutMs ?? 120_000;
  const keepDir = options.keepDir ?? process.env.REAL_KARMADA_KEEP === '1';
  installExitHook();

  const binDir = options.binDir ?? (await ensureKarmadaBuilt());
  const cacheDir = dirname(binDir);
  const bin = (name: string) => join(binDir, name);
  for (const name of [
    'etcd',
    'kube-apiserver',
    'kube-controller-manager',
    'karmada-aggregated-apiserver',
    'karmada-controller-manager',
    'karmada-scheduler',
    'karmada-webhook',
    'kwok',
    ...(options.memberScheduler === false ? [] : ['kube-scheduler']),
  ]) {
    if (!existsSync(bin(name))) throw new Error(`${bin(name)} is missing: run ${BUILD_SCRIPT}`);
  }
  mark('binaries');

  const dir = mkdtempSync(join(tmpdir(), 'real-karmada-'));
  const logs = join(dir, 'logs');
  mkdirSync(logs);
  const components: Component[] = [];
  const component = (name: string, binary: string, args: string[], env: Record<string, string> = {}) => {
    const c = new Component(name, bin(binary), args, join(logs, `${name}.log`), env);
    components.push(c);
    return c;
  };
  let stopped = false;
  const stopAll = async () => {
    // Controllers first, API servers next, etcd last (all SIGKILL: nothing here needs a clean shutdown).
    const order = (c: Component) => (c.name === 'etcd' ? 2 : c.name.endsWith('apiserver') ? 1 : 0);
    for (const tier of [0, 1, 2]) await Promise.all(components.filter((c) => order(c) === tier).map((c) => c.kill('SIGKILL')));
  };

  try {
    // Ports: etcd client + peer, karmada-apiserver, aggregated apiserver, webhook (+ metrics, health),
    // controller manager (metrics, health), scheduler (metrics, health), and one per member API server.
    const ports = await freePorts(12 + memberCount);
    const [
      etcdPort,
      etcdPeerPort,
      apiPort,
      aggregatedPort,
      webhookPort,
      webhookMetricsPort,
      webhookHealthPort,
      cmMetricsPort,
      cmHealthPort,
      schedMetricsPort,
      schedHealthPort,
    ] = ports;
    const memberPorts = ports.slice(12);

    const pki = await makePki(join(dir, 'pki'));
    mark('pki');
    const adminToken = randomBytes(16).toString('hex');
    const appToken = randomBytes(16).toString('hex');
    const tokenFile = join(dir, 'tokens.csv');
    writeFileSync(tokenFile, `${adminToken},admin,admin,"system:masters"\n${appToken},${appUser},${appUser}\n`);
    const apiServerUrl = `https://127.0.0.1:${apiPort}`;
    const kubeconfigPath = join(dir, 'karmada-admin.kubeconfig');
    const appKubeconfigPath = join(dir, 'karmada-app.kubeconfig');
    writeFileSync(kubeconfigPath, kubeconfig(apiServerUrl, pki.caPem, adminToken, 'admin'));
    writeFileSync(appKubeconfigPath, kubeconfig(apiServerUrl, pki.caPem, appToken, appUser));
    const kubectlCache = join(dir, 'kubectl-cache');

    const kubectlWith = async (kubeconfigFile: string, args: string[], o: Omit<KubectlOptions, 'kubeconfig'> = {}) => {
      const result = await run(kubectlBin, [`--kubeconfig=${kubeconfigFile}`, `--cache-dir=${kubectlCache}`, ...args], {
        input: o.input,
        timeoutMs: o.timeoutMs ?? 120_000,
        env: { HOME: dir },
      });
      if (result.code !== 0 && !o.allowFailure) throw new Error(`kubectl ${args.join(' ')} exited with ${result.code}: ${result.stderr || result.stdout}`);
      return result;
    };
    const kubectl = (args: string[], o: KubectlOptions = {}) => kubectlWith(o.kubeconfig ?? kubeconfigPath, args, o);
    const apply = (yaml: string, kubeconfigFile = kubeconfigPath) =>
      kubectlWith(kubeconfigFile, ['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: yaml });

    /** Polls check until it yields a value; fails early with the log of any watched component that died. */
    const until = async <T>(what: string, check: () => Promise<T | undefined>, watch: Component[] = [], limitMs = timeoutMs, everyMs = 100): Promise<T> => {
      const deadline = Date.now() + limitMs;
      for (;;) {
        const value = await check();
        if (value !== undefined) return value;
        const dead = watch.find((c) => !c.running());
        if (dead) throw new Error(`${dead.name} exited (${dead.lastExit}) while waiting for ${what}:\n${dead.tail()}`);
        if (Date.now() > deadline)
          throw new Error(`timed out after ${limitMs} ms waiting for ${what}${watch.length ? `\n--- ${watch[0].name}:\n${watch[0].tail()}` : ''}`);
        await sleep(everyMs);
      }
    };
    const get = async (path: string, token = adminToken) => {
      const res = await httpGet(`${apiServerUrl}${path}`, { ca: pki.caPem, token });
      let body: any = res.body;
      try {
        body = JSON.parse(res.body);
      } catch {
        // not JSON
      }
      return { status: res.status, body };
    };
    const apiReady = (url: string, token: string, c: Component) =>
      until(`${c.name} /readyz`, async () => ((await tryGet(`${url}/readyz`, { ca: pki.caPem, token }))?.status === 200 ? true : undefined), [c]);

    // --- etcd -------------------------------------------------------------------------------------------
    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const etcd = component('etcd', 'etcd', [
      '--name=real-karmada',
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
      `--initial-cluster=real-karmada=http://127.0.0.1:${etcdPeerPort}`,
      '--unsafe-no-fsync',
      '--log-level=warn',
    ]);
    const etcdHealthy = () =>
      until(
        'etcd /health',
        async () => {
          const res = await tryGet(`${etcdUrl}/health`);
          return res?.status === 200 && res.body.includes('true') ? true : undefined;
        },
        [etcd],
      );

    // --- API servers ------------------------------------------------------------------------------------
    const apiServerArgs = (port: number, prefix: string, tokens: string) => [
      '--bind-address=127.0.0.1',
      `--secure-port=${port}`,
      '--advertise-address=127.0.0.1',
      `--etcd-servers=${etcdUrl}`,
      `--etcd-prefix=${prefix}`,
      `--tls-cert-file=${pki.servingCrt}`,
      `--tls-private-key-file=${pki.servingKey}`,
      `--client-ca-file=${pki.caCrt}`,
      `--token-auth-file=${tokens}`,
      '--authorization-mode=RBAC',
      '--service-account-issuer=https://kubernetes.default.svc',
      `--service-account-key-file=${pki.saPub}`,
      `--service-account-signing-key-file=${pki.saKey}`,
      '--service-cluster-ip-range=10.96.0.0/16',
      '--endpoint-reconciler-type=none',
      // No serviceaccount or pvc-protection controllers run here, so their admission plugins would only refuse;
      // and no node-lifecycle controller, which alone lifts the not-ready NoSchedule taint TaintNodesByCondition
      // puts on a new Node (the member's kube-scheduler would then place nothing).
      '--disable-admission-plugins=ServiceAccount,StorageObjectInUseProtection,TaintNodesByCondition',
      '--profiling=false',
    ];
    const karmadaApi = component('karmada-apiserver', 'kube-apiserver', [
      ...apiServerArgs(apiPort, '/karmada', tokenFile),
      `--requestheader-client-ca-file=${pki.frontProxyCaCrt}`,
      '--requestheader-allowed-names=front-proxy-client',
      '--requestheader-username-headers=X-Remote-User',
      '--requestheader-group-headers=X-Remote-Group',
      '--requestheader-extra-headers-prefix=X-Remote-Extra-',
      `--proxy-client-cert-file=${pki.frontProxyClientCrt}`,
      `--proxy-client-key-file=${pki.frontProxyClientKey}`,
    ]);

    // --- members (their processes; registration comes once the cluster API is served) -------------------
    const stagesDir = join(cacheDir, 'kwok-stages');
    const stageFiles = readdirSync(stagesDir)
      .filter((f) => f.endsWith('.yaml'))
      .map((f) => join(stagesDir, f));
    interface MemberParts {
      name: string;
      url: string;
      token: string;
      kubeconfigPath: string;
      api: Component;
      kcm: Component;
      scheduler?: Component;
      kwok: Component;
    }
    const memberParts: MemberParts[] = [];
    for (let i = 0; i < memberCount; i++) {
      const name = `member${i + 1}`;
      const token = randomBytes(16).toString('hex');
      const tokens = join(dir, `${name}-tokens.csv`);
      writeFileSync(tokens, `${token},admin,admin,"system:masters"\n`);
      const url = `https://127.0.0.1:${memberPorts[i]}`;
      const memberKubeconfig = join(dir, `${name}.kubeconfig`);
      writeFileSync(memberKubeconfig, kubeconfig(url, pki.caPem, token, 'admin'));
      const kwokHome = join(dir, `${name}-kwok-home`);
      mkdirSync(kwokHome);
      memberParts.push({
        name,
        url,
        token,
        kubeconfigPath: memberKubeconfig,
        api: component(`${name}-apiserver`, 'kube-apiserver', apiServerArgs(memberPorts[i], `/${name}`, tokens)),
        kcm: component(`${name}-controller-manager`, 'kube-controller-manager', [
          `--kubeconfig=${memberKubeconfig}`,
          '--controllers=deployment,replicaset,garbagecollector,namespace',
          '--leader-elect=false',
          '--secure-port=0',
          '--use-service-account-credentials=false',
        ]),
        scheduler:
          options.memberScheduler === false
            ? undefined
            : component(`${name}-scheduler`, 'kube-scheduler', [`--kubeconfig=${memberKubeconfig}`, '--leader-elect=false', '--secure-port=0']),
        kwok: component(
          `${name}-kwok`,
          'kwok',
          [
            `--kubeconfig=${memberKubeconfig}`,
            '--manage-all-nodes=false',
            '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
            '--cidr=10.0.0.1/24',
            '--node-ip=10.0.0.1',
            ...stageFiles.map((f) => `--config=${f}`),
          ],
          { HOME: kwokHome },
        ),
      });
    }

    etcd.start();
    await etcdHealthy();
    mark('etcd');
    karmadaApi.start();
    for (const m of memberParts) m.api.start();

    const nodeYaml = stringify({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: 'kwok-node-0',
        annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
        labels: { 'kubernetes.io/hostname': 'kwok-node-0', 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', type: 'kwok' },
      },
      status: {
        allocatable: { cpu: '32', memory: '256Gi', pods: '110' },
        capacity: { cpu: '32', memory: '256Gi', pods: '110' },
      },
    });
    const startMember = async (m: MemberParts) => {
      await apiReady(m.url, m.token, m.api);
      m.kcm.start();
      m.scheduler?.start();
      m.kwok.start();
    };
    const membersUp = Promise.all(
      memberParts.map(async (m) => {
        await startMember(m);
        await apply(nodeYaml, m.kubeconfigPath);
        mark(`${m.name} api`);
      }),
    );
    membersUp.catch(() => {}); // awaited below; avoid an unhandled rejection meanwhile

    await apiReady(apiServerUrl, adminToken, karmadaApi);
    mark('karmada-apiserver');

    // --- components that only need the API server ---------------------------------------------------------
    const kcm = component('karmada-kube-controller-manager', 'kube-controller-manager', [
      `--kubeconfig=${kubeconfigPath}`,
      '--controllers=namespace,garbagecollector',
      '--leader-elect=false',
      '--secure-port=0',
      '--use-service-account-credentials=false',
    ]);
    const aggregated = component('karmada-aggregated-apiserver', 'karmada-aggregated-apiserver', [
      `--kubeconfig=${kubeconfigPath}`,
      `--authentication-kubeconfig=${kubeconfigPath}`,
      `--authorization-kubeconfig=${kubeconfigPath}`,
      `--etcd-servers=${etcdUrl}`,
      '--etcd-prefix=/karmada-aggregated',
      '--bind-address=127.0.0.1',
      `--secure-port=${aggregatedPort}`,
      `--tls-cert-file=${pki.servingCrt}`,
      `--tls-private-key-file=${pki.servingKey}`,
    ]);
    const webhook = component('karmada-webhook', 'karmada-webhook', [
      `--kubeconfig=${kubeconfigPath}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${webhookPort}`,
      `--cert-dir=${pki.webhookCertDir}`,
      `--metrics-bind-address=127.0.0.1:${webhookMetricsPort}`,
      `--health-probe-bind-address=127.0.0.1:${webhookHealthPort}`,
      // Without it the webhook refuses every ClusterTaintPolicy with a NoExecute taint.
      '--allow-no-execute-taint-policy=true',
    ]);
    kcm.start();
    aggregated.start();
    webhook.start();

    const bootstrap = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'karmada-system' } },
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'karmada-cluster' } },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'karmada-aggregated-apiserver', namespace: 'karmada-system' },
        spec: { type: 'ExternalName', externalName: 'localhost' },
      },
      {
        apiVersion: 'apiregistration.k8s.io/v1',
        kind: 'APIService',
        metadata: { name: 'v1alpha1.cluster.karmada.io', labels: { app: 'karmada-aggregated-apiserver' } },
        spec: {
          group: 'cluster.karmada.io',
          version: 'v1alpha1',
          groupPriorityMinimum: 2000,
          versionPriority: 10,
          service: { namespace: 'karmada-system', name: 'karmada-aggregated-apiserver', port: aggregatedPort },
          caBundle: Buffer.from(pki.caPem).toString('base64'),
        },
      },
    ];
    const rbacFile = options.rbacFile ?? join(ROOT, 'infra', 'karmada-rbac.yaml');
    await Promise.all([
      // Karmada's CRDs exactly as shipped, server-side (some are too large for a client-side apply annotation).
      kubectl(['apply', '--server-side', '--force-conflicts', '-R', '-f', join(cacheDir, 'crds')]).then(() =>
        kubectl(['wait', '--for=condition=Established', 'crd', '--all', '--timeout=60s']),
      ),
      apply(bootstrap.map((d) => stringify(d)).join('---\n')),
      apply(appRbacDocuments(readFileSync(rbacFile, 'utf8'), appUser)),
    ]);
    mark('crds, rbac, apiservice');

    // --- webhook configurations, once the webhook serves -----------------------------------------------------
    const webhookUrl = `https://127.0.0.1:${webhookPort}`;
    const webhookServing = () =>
      until('karmada-webhook serving', async () => ((await tryGet(`${webhookUrl}/readyz`, { ca: pki.caPem })) ? true : undefined), [webhook]);
    const webhookConfig = readFileSync(join(cacheDir, 'webhook-configuration.yaml'), 'utf8')
      .split('https://karmada-webhook.karmada-system.svc:443')
      .join(webhookUrl)
      .split('{{caBundle}}')
      .join(Buffer.from(pki.caPem).toString('base64'));
    const webhookUp = webhookServing()
      .then(() => apply(webhookConfig))
      .then(() => mark('karmada-webhook'));
    webhookUp.catch(() => {});

    // --- the cluster API, then Karmada's controllers ---------------------------------------------------------
    await until(
      'the cluster.karmada.io API',
      async () =>
        (await tryGet(`${apiServerUrl}/apis/cluster.karmada.io/v1alpha1/clusters`, { ca: pki.caPem, token: adminToken }))?.status === 200 ? true : undefined,
      [aggregated, karmadaApi],
    );
    mark('karmada-aggregated-apiserver');

    const failoverArgs = options.karmadaOwnFailover
      ? ['--feature-gates=Failover=true', '--enable-no-execute-taint-eviction=true', `--resource-eviction-rate=${options.resourceEvictionRate ?? 0.5}`]
      : ['--controllers=*,-clustertaintpolicy,-gracefulEviction,-applicationFailover', '--enable-taint-manager=false'];
    const controllerManager = component('karmada-controller-manager', 'karmada-controller-manager', [
      `--kubeconfig=${kubeconfigPath}`,
      '--leader-elect=false',
      `--metrics-bind-address=127.0.0.1:${cmMetricsPort}`,
      `--health-probe-bind-address=127.0.0.1:${cmHealthPort}`,
      `--cluster-status-update-frequency=${timing.clusterStatusUpdateFrequency}`,
      `--cluster-failure-threshold=${timing.clusterFailureThreshold}`,
      `--cluster-success-threshold=${timing.clusterSuccessThreshold}`,
      `--cluster-monitor-period=${timing.clusterMonitorPeriod}`,
      ...failoverArgs,
      ...(options.controllerManagerArgs ?? []),
    ]);
    const scheduler = component('karmada-scheduler', 'karmada-scheduler', [
      `--kubeconfig=${kubeconfigPath}`,
      '--leader-elect=false',
      '--enable-scheduler-estimator=false',
      `--metrics-bind-address=127.0.0.1:${schedMetricsPort}`,
      `--health-probe-bind-address=127.0.0.1:${schedHealthPort}`,
    ]);
    controllerManager.start();
    scheduler.start();

    // --- register the members as Push clusters ---------------------------------------------------------------
    await membersUp;
    const registration = memberParts.flatMap((m) => {
      const secretData = { token: Buffer.from(m.token).toString('base64'), caBundle: Buffer.from(pki.caPem).toString('base64') };
      return [
        { apiVersion: 'v1', kind: 'Secret', metadata: { name: m.name, namespace: 'karmada-cluster' }, data: secretData },
        { apiVersion: 'v1', kind: 'Secret', metadata: { name: `${m.name}-impersonator`, namespace: 'karmada-cluster' }, data: { token: secretData.token } },
        {
          apiVersion: 'cluster.karmada.io/v1alpha1',
          kind: 'Cluster',
          metadata: { name: m.name, ...(options.clusterLabels ? { labels: options.clusterLabels } : {}) },
          spec: {
            syncMode: 'Push',
            apiEndpoint: m.url,
            secretRef: { namespace: 'karmada-cluster', name: m.name },
            impersonatorSecretRef: { namespace: 'karmada-cluster', name: `${m.name}-impersonator` },
          },
        },
      ];
    });
    await apply(registration.map((d) => stringify(d)).join('---\n'));
    mark('clusters registered');
    await webhookUp;

    const clusterReady = async (): Promise<true | undefined> => {
      const res = await tryGet(`${apiServerUrl}/apis/cluster.karmada.io/v1alpha1/clusters`, { ca: pki.caPem, token: adminToken });
      if (res?.status !== 200) return undefined;
      const items = (JSON.parse(res.body).items ?? []) as Array<{ status?: { conditions?: Array<{ type: string; status: string }> } }>;
      const ready = items.filter((c) => c.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True'));
      return ready.length === memberParts.length ? true : undefined;
    };
    if (options.waitReady !== false) {
      await until('every Cluster Ready=True', clusterReady, [controllerManager, scheduler, aggregated, karmadaApi, ...memberParts.map((m) => m.api)]);
      mark('clusters ready');
    }

    // --- the handle -----------------------------------------------------------------------------------------
    const members: RealMember[] = memberParts.map((m) => ({
      name: m.name,
      url: m.url,
      kubeconfigPath: m.kubeconfigPath,
      token: m.token,
      running: () => m.api.running(),
      async kill() {
        await Promise.all([m.api.kill('SIGKILL'), m.kcm.kill('SIGKILL'), m.scheduler?.kill('SIGKILL'), m.kwok.kill('SIGKILL')]);
      },
      async restart() {
        if (!m.api.running()) m.api.start();
        await apiReady(m.url, m.token, m.api);
        if (!m.kcm.running()) m.kcm.start();
        if (m.scheduler && !m.scheduler.running()) m.scheduler.start();
        if (!m.kwok.running()) m.kwok.start();
      },
      kubectl: (args, o = {}) => kubectlWith(m.kubeconfigPath, args, o),
    }));

    return {
      dir,
      binDir,
      apiServerUrl,
      caPem: pki.caPem,
      kubeconfigPath,
      adminToken,
      appKubeconfigPath,
      appUser,
      appToken,
      members,
      timings,
      kubectl,
      get,
      async restartApiServer(signal: NodeJS.Signals = 'SIGKILL') {
        await karmadaApi.kill(signal);
        karmadaApi.start();
        await apiReady(apiServerUrl, adminToken, karmadaApi);
      },
      async restartEtcd(signal: NodeJS.Signals = 'SIGKILL') {
        await etcd.kill(signal);
        etcd.start();
        await etcdHealthy();
        await apiReady(apiServerUrl, adminToken, karmadaApi);
      },
      async stopWebhook() {
        await webhook.kill('SIGKILL');
      },
      async startWebhook() {
        if (!webhook.running()) webhook.start();
        await webhookServing();
      },
      logTail(name: string, bytes?: number) {
        return components.find((c) => c.name === name)?.tail(bytes) ?? '';
      },
      async stop() {
        if (stopped) return;
        stopped = true;
        await stopAll();
        if (!keepDir) rmSync(dir, { recursive: true, force: true });
        else log(`kept ${dir}`);
      },
    };
  } catch (error) {
    stopped = true;
    await stopAll();
    if (!keepDir) rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
