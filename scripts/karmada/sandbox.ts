/**
 * `npm run karmada:sandbox`: a real Karmada control plane with kwok-backed members, the app beside it in
 * Karmada mode (the local host, as `npm start` runs it) and a small sample fleet, in one command; it stays up
 * until Ctrl-C and then stops everything it started.
 *
 *   npm run karmada:sandbox [-- --members N] [-- --port P]   start (members 2-10, default 3; app port default 7071)
 *   npm run karmada:sandbox -- fail member1                    kill member1's API server and its other processes
 *   npm run karmada:sandbox -- recover member1                 start them again
 *   npm run karmada:sandbox -- status [--json]                 members, their processes, Ready, taints, workloads
 *
 * The member processes belong to the sandbox process, so fail/recover/status reach it through a small HTTP
 * endpoint on 127.0.0.1 whose port and token are in a state file (default
 * ~/.cache/cluster-failover/sandbox/state.json; KARMADA_SANDBOX_DIR moves it, e.g. to run two sandboxes).
 */
import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { localHostArgs } from '../../shared/local/nodeFlags';
import {
  Binding,
  deployments,
  healthyWhereScheduled,
  karmadaHostEnv,
  karmadaTaintPolicy,
  KubeObject,
  NOT_READY,
  placedOn,
  propagationPolicy,
  readyOf,
  taintsOf,
} from '../../test/helpers/karmadaScenario';
import { ensureKarmadaBuilt, RealKarmada, startRealKarmada } from '../../test/helpers/realKarmada';

const ROOT = join(__dirname, '..', '..');
const DEFAULT_PORT = 7071;
/** Karmada's own default --resource-eviction-rate. */
const RATE = 0.5;
/** Long enough to see the taint before anything moves, short enough that a failover shows within a minute. */
const TOLERATION_SECONDS = 10;
const FAILBACK_AFTER_SECONDS = 15;
const PER_MEMBER = 2;
const TAINT_POLICY = 'detect-cluster-not-ready';
const PROPAGATION_POLICY = 'sandbox';
const GROUP = 'sandbox';
const PREFIX = 'web';
/** Steers Karmada's scheduler during the setup only (it picks among equal clusters at random). */
const PLACING_TAINT = 'sandbox.failover.io/placing';
const CLUSTERS_PATH = '/apis/cluster.karmada.io/v1alpha1/clusters';
const BINDINGS_PATH = '/apis/work.karmada.io/v1alpha2/resourcebindings';

const DEFAULT_STATE_DIR = join(homedir(), '.cache', 'cluster-failover', 'sandbox');
const stateDir = () => process.env.KARMADA_SANDBOX_DIR || DEFAULT_STATE_DIR;
const statePath = () => join(stateDir(), 'state.json');

interface SandboxState {
  pid: number;
  controlPort: number;
  token: string;
  startedAt: string;
  phase: 'starting' | 'ready' | 'stopping';
  appUrl?: string;
  kubeconfig?: string;
  members?: string[];
}

interface MemberStatus {
  name: string;
  processes: 'up' | 'down';
  ready?: string;
  reason?: string;
  taints: string[];
  workloads: string[];
  evictingFrom: string[];
}

interface StatusBody {
  pid: number;
  phase: SandboxState['phase'];
  startedAt: string;
  readyAt?: string;
  app?: { url: string; running: boolean; healthz?: number; mode?: string; log: string };
  kubeconfig?: string;
  members: MemberStatus[];
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const say = (line = '') => process.stdout.write(`${line}\n`);

class UsageError extends Error {}
/** No sandbox answers: exit code 1, like any failed command, not 2 (a usage mistake). */
class NotRunningError extends UsageError {}

// ---------------------------------------------------------------------------------------------------------
// The client side: fail, recover, status

function readState(): SandboxState | undefined {
  try {
    return JSON.parse(readFileSync(statePath(), 'utf8')) as SandboxState;
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The running sandbox's state, or a UsageError saying there is none (a stale state file is removed). */
function runningSandbox(): SandboxState {
  const state = readState();
  if (!state) throw new NotRunningError(`no sandbox is running (no ${statePath()}); start one with: npm run karmada:sandbox`);
  if (!alive(state.pid)) {
    rmSync(statePath(), { force: true });
    throw new NotRunningError(
      `no sandbox is running (the one started ${state.startedAt} as pid ${state.pid} is gone); start one with: npm run karmada:sandbox`,
    );
  }
  return state;
}

async function control(state: SandboxState, method: 'GET' | 'POST', path: string, timeoutMs = 180_000): Promise<{ status: number; body: any }> {
  let res: Response;
  try {
    res = await fetch(`http://127.0.0.1:${state.controlPort}${path}`, {
      method,
      headers: { authorization: `Bearer ${state.token}` },
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    const code = ((error as { cause?: { code?: string } }).cause ?? {}).code;
    if (code === 'ECONNREFUSED') throw new NotRunningError(`no sandbox is running (pid ${state.pid} does not answer on 127.0.0.1:${state.controlPort})`);
    throw error;
  }
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, body };
}

async function memberCommand(action: 'fail' | 'recover', member: string | undefined): Promise<number> {
  if (!member) throw new UsageError(`usage: npm run karmada:sandbox -- ${action} <member>   (e.g. member1)`);
  const state = runningSandbox();
  const res = await control(state, 'POST', `/members/${encodeURIComponent(member)}/${action}`);
  if (res.status !== 200) {
    process.stderr.write(`${typeof res.body === 'object' ? res.body.error : res.body}\n`);
    return 1;
  }
  say(res.body.message as string);
  return 0;
}

function pad(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]))).join('  ')).join('\n');
}

async function statusCommand(json: boolean): Promise<number> {
  const state = runningSandbox();
  const res = await control(state, 'GET', '/status', 30_000);
  if (res.status !== 200) {
    process.stderr.write(`${typeof res.body === 'object' ? res.body.error : res.body}\n`);
    return 1;
  }
  const status = res.body as StatusBody;
  if (json) {
    say(JSON.stringify(status, null, 2));
    return 0;
  }
  const up = seconds(Date.now() - Date.parse(status.startedAt)).replace(' ', '');
  say(`sandbox pid ${status.pid}, ${status.phase}, up ${up}`);
  if (status.kubeconfig) say(`export KUBECONFIG=${status.kubeconfig}`);
  if (status.app) {
    const health = status.app.running ? `healthz ${status.app.healthz ?? 'no answer'}${status.app.mode ? `, ${status.app.mode} mode` : ''}` : 'not running';
    say(`app ${status.app.url} (${health}); log ${status.app.log}`);
  }
  if (status.members.length > 0) {
    say();
    const rows = [['MEMBER', 'PROCESSES', 'READY', 'TAINTS', 'WORKLOADS']];
    for (const m of status.members) {
      const workloads = [...m.workloads, ...m.evictingFrom.map((w) => `(${w} leaving)`)];
      rows.push([m.name, m.processes, m.ready ?? '?', m.taints.join(',') || '-', workloads.join(' ') || '-']);
    }
    say(pad(rows));
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------------------
// The sandbox: start, serve fail/recover/status, stop on Ctrl-C

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createTcpServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** The requested port if free, else the next free one above it (said on the output). */
async function choosePort(wanted: number, explicit: boolean): Promise<number> {
  if (await portFree(wanted)) return wanted;
  if (explicit) throw new UsageError(`port ${wanted} is in use; pick another with --port`);
  for (let port = wanted + 1; port < wanted + 100; port++) {
    if (await portFree(port)) {
      say(`  port ${wanted} is in use: the app listens on ${port} instead`);
      return port;
    }
  }
  throw new UsageError(`ports ${wanted}-${wanted + 99} are all in use; pick one with --port`);
}

interface App {
  url: string;
  child: ChildProcess;
  running(): boolean;
  stop(): Promise<void>;
}

/**
 * The local host as `npm start` runs it (shared/local/main.ts under tsx), in its own process group so the
 * sandbox stops it after everything else it asked of it, with its output in a log file: a sandbox may run
 * for hours, and the JSON log is for `tail -f`, not for this terminal.
 */
async function startApp(env: Record<string, string>, port: number, logPath: string): Promise<App> {
  const fd = openSync(logPath, 'w');
  // A sandbox keeps its state in the embedded Azurite (in memory), whatever storage this shell points at.
  const inherited = { ...process.env };
  delete inherited.AzureWebJobsStorage;
  delete inherited.AZURITE_LOCATION;
  const child = spawn(process.execPath, localHostArgs(), {
    cwd: ROOT,
    env: { ...inherited, ...env, PORT: String(port) },
    stdio: ['ignore', fd, fd],
    detached: true,
  });
  closeSync(fd);
  const pid = child.pid;
  if (pid === undefined) throw new Error('could not start the app');
  let exited = false;
  const exit = new Promise<void>((resolve) => child.once('exit', () => ((exited = true), resolve())));
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-pid, signal);
    } catch {
      // already gone
    }
  };
  process.once('exit', () => {
    if (!exited) killGroup('SIGKILL');
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (exited) throw new Error(`the app exited before it served (${child.exitCode ?? child.signalCode}):\n${tail(logPath)}`);
    const res = await fetch(`${url}/api/healthz`, { signal: AbortSignal.timeout(2000) }).catch(() => undefined);
    if (res?.status === 200) break;
    if (Date.now() > deadline) {
      killGroup('SIGKILL');
      throw new Error(`the app did not become healthy within 90 s (healthz ${res?.status ?? 'no answer'}):\n${tail(logPath)}`);
    }
    await sleep(200);
  }
  return {
    url,
    child,
    running: () => !exited,
    async stop() {
      if (exited) return;
      killGroup('SIGTERM');
      const timedOut = await Promise.race([exit.then(() => false), sleep(20_000).then(() => true)]);
      if (timedOut) {
        killGroup('SIGKILL');
        await exit;
      }
    },
  };
}

function tail(path: string, bytes = 3000): string {
  try {
    return readFileSync(path, 'utf8').slice(-bytes);
  } catch {
    return '';
  }
}

async function list<T extends KubeObject>(karmada: RealKarmada, path: string): Promise<T[]> {
  const res = await karmada.get(path);
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  return res.body.items as T[];
}

async function until<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${seconds(timeoutMs)} waiting for ${what}`);
    await sleep(250);
  }
}

const bindingName = (deployment: string) => `${deployment}-deployment`;

/**
 * The sample fleet: the app's status CRDs, Karmada's ClusterTaintPolicy shape for Ready≠True, one
 * PropagationPolicy (one cluster per Deployment, the taint tolerated TOLERATION_SECONDS, failback after
 * FAILBACK_AFTER_SECONDS) and PER_MEMBER Deployments placed on each member. Resolves with them by member.
 */
async function applyFleet(karmada: RealKarmada): Promise<Map<string, string[]>> {
  const names = karmada.members.map((m) => m.name);
  const apply = (yaml: string) => karmada.kubectl(['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: yaml });
  const crds = ['taintpolicystatus-crd.yaml', 'clustertaintpolicy-crd.yaml', 'failoverbudget-crd.yaml'].map((f) => join(ROOT, 'infra', f));
  await karmada.kubectl(['apply', '--server-side', ...crds.flatMap((f) => ['-f', f])]);
  await karmada.kubectl(['wait', '--for=condition=Established', 'crd/taintpolicystatuses.failover.io', '--timeout=60s']);
  await apply(karmadaTaintPolicy(TAINT_POLICY));
  await apply(
    propagationPolicy({
      name: PROPAGATION_POLICY,
      group: GROUP,
      clusters: names,
      tolerationSeconds: TOLERATION_SECONDS,
      failbackAfterSeconds: FAILBACK_AFTER_SECONDS,
    }),
  );

  const docs = deployments(PREFIX, GROUP, PER_MEMBER * names.length).split('---\n');
  const byMember = new Map(names.map((n, i) => [n, Array.from({ length: PER_MEMBER }, (_, j) => `${PREFIX}-${i * PER_MEMBER + j}`)]));
  const cordoned = new Set<string>();
  const cordon = async (want: Set<string>) => {
    const changes = names.filter((n) => want.has(n) !== cordoned.has(n));
    await Promise.all(
      changes.map((n) =>
        karmada.kubectl([
          'patch',
          'cluster',
          n,
          '--type=merge',
          '-p',
          JSON.stringify({ spec: { taints: want.has(n) ? [{ key: PLACING_TAINT, effect: 'NoSchedule' }] : null } }),
        ]),
      ),
    );
    for (const n of changes)
      if (want.has(n)) cordoned.add(n);
      else cordoned.delete(n);
  };
  try {
    for (const [i, member] of names.entries()) {
      await cordon(new Set(names.filter((n) => n !== member)));
      await apply(docs.slice(i * PER_MEMBER, (i + 1) * PER_MEMBER).join('---\n'));
      const wanted = byMember.get(member)!.map(bindingName);
      await until(
        `${wanted.join(', ')} placed on ${member}`,
        async () => {
          const bindings = await list<Binding>(karmada, `/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings`);
          return wanted.every((w) => placedOn(bindings.find((b) => b.metadata.name === w)).join() === member);
        },
        90_000,
      );
    }
  } finally {
    await cordon(new Set());
  }
  const all = [...byMember.values()].flat().map(bindingName);
  await until(
    'every sample workload Healthy where Karmada placed it',
    async () => {
      const bindings = await list<Binding>(karmada, BINDINGS_PATH);
      return all.every((w) => healthyWhereScheduled(bindings.find((b) => b.metadata.name === w)));
    },
    120_000,
  );
  return byMember;
}

/** Prints what changes in Karmada (Ready, taints, placements, eviction tasks), timed from the last fail/recover. */
class Narrator {
  private clusters = new Map<string, { ready: string; taints: string[] }>();
  private bindings = new Map<string, { clusters: string; tasks: string }>();
  private timer: NodeJS.Timeout | undefined;
  private since = 0;
  private busy = false;

  constructor(private readonly karmada: RealKarmada) {}

  mark(what: string) {
    this.since = Date.now();
    this.line(what);
  }

  async start() {
    await this.poll(false);
    this.timer = setInterval(() => void this.poll(true), 1000);
  }

  stop() {
    clearInterval(this.timer);
  }

  private line(text: string) {
    const clock = new Date().toTimeString().slice(0, 8);
    const rel = this.since ? ` +${((Date.now() - this.since) / 1000).toFixed(1).padStart(4)}s` : '';
    say(`[${clock}${rel}] ${text}`);
  }

  private async poll(print: boolean) {
    if (this.busy) return;
    this.busy = true;
    try {
      const [clusters, bindings] = await Promise.all([list(this.karmada, CLUSTERS_PATH), list<Binding>(this.karmada, BINDINGS_PATH)]);
      for (const c of clusters) {
        const ready = readyOf(c);
        const now = { ready: ready?.status ?? '?', taints: taintsOf(c).map((t) => `${t.key}:${t.effect}`) };
        const before = this.clusters.get(c.metadata.name);
        this.clusters.set(c.metadata.name, now);
        if (!print || !before) continue;
        if (before.ready !== now.ready) this.line(`${c.metadata.name}: Ready=${now.ready}${ready?.reason ? ` (${ready.reason})` : ''}`);
        // The app records the taints it holds in this annotation; Karmada's cluster controller adds the NoSchedule ones.
        const owners = c.metadata.annotations?.['failover.io/taint-owners'] ?? '';
        const by = (taint: string) => (owners.includes(`"${taint}"`) ? 'the app' : taint.endsWith(':NoSchedule') ? "Karmada's cluster controller" : undefined);
        for (const t of now.taints.filter((x) => !before.taints.includes(x))) this.line(`${c.metadata.name}: taint ${t} added${by(t) ? ` by ${by(t)}` : ''}`);
        for (const t of before.taints.filter((x) => !now.taints.includes(x))) this.line(`${c.metadata.name}: taint ${t} removed`);
      }
      for (const b of bindings) {
        const key = b.metadata.name;
        const now = { clusters: placedOn(b).join(',') || 'nowhere', tasks: (b.spec.gracefulEvictionTasks ?? []).map((t) => t.fromCluster).join(',') };
        const before = this.bindings.get(key);
        this.bindings.set(key, now);
        if (!print || !before) continue;
        if (before.clusters !== now.clusters) this.line(`${key}: ${before.clusters} → ${now.clusters}`);
        if (before.tasks !== now.tasks)
          this.line(
            now.tasks ? `${key}: graceful eviction from ${now.tasks} (its old copy stays until the new one is Healthy)` : `${key}: eviction task cleared`,
          );
      }
    } catch {
      // the API server may be busy or restarting: the next poll tells
    } finally {
      this.busy = false;
    }
  }
}

async function memberStatuses(karmada: RealKarmada): Promise<MemberStatus[]> {
  const [clusters, bindings] = await Promise.all([
    list(karmada, CLUSTERS_PATH).catch(() => [] as KubeObject[]),
    list<Binding>(karmada, BINDINGS_PATH).catch(() => [] as Binding[]),
  ]);
  return karmada.members.map((m) => {
    const cluster = clusters.find((c) => c.metadata.name === m.name);
    const ready = readyOf(cluster);
    return {
      name: m.name,
      processes: m.running() ? 'up' : 'down',
      ready: ready?.status,
      reason: ready?.reason,
      taints: taintsOf(cluster).map((t) => `${t.key}:${t.effect}`),
      workloads: bindings.filter((b) => placedOn(b).includes(m.name)).map((b) => b.metadata.name),
      evictingFrom: bindings.filter((b) => (b.spec.gracefulEvictionTasks ?? []).some((t) => t.fromCluster === m.name)).map((b) => b.metadata.name),
    };
  });
}

function writeState(state: SandboxState) {
  mkdirSync(stateDir(), { recursive: true, mode: 0o700 });
  // Written whole then renamed: a fail command never reads half a file.
  const temp = `${statePath()}.${process.pid}`;
  writeFileSync(temp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  renameSync(temp, statePath());
}

function removeState(pid: number) {
  if (readState()?.pid === pid) rmSync(statePath(), { force: true });
}

async function startSandbox(memberCount: number, wantedPort: number, explicitPort: boolean): Promise<void> {
  const t0 = Date.now();
  const existing = readState();
  if (existing && alive(existing.pid)) {
    const answer = await control(existing, 'GET', '/status', 5000).catch(() => undefined);
    if (answer?.status === 200)
      throw new UsageError(
        `a sandbox is already running (pid ${existing.pid}, started ${existing.startedAt}${existing.appUrl ? `, app ${existing.appUrl}` : ''}).\n` +
          `Stop it with Ctrl-C in its terminal, or set KARMADA_SANDBOX_DIR to another directory to run a second one.`,
      );
  }

  const token = randomBytes(24).toString('hex');
  const state: SandboxState = { pid: process.pid, controlPort: 0, token, startedAt: new Date(t0).toISOString(), phase: 'starting' };
  let karmada: RealKarmada | undefined;
  let app: App | undefined;
  let narrator: Narrator | undefined;
  let readyAt: string | undefined;
  const logPath = join(stateDir(), 'app.log');
  const busy = new Set<string>();

  // --- the control endpoint, first: a second start and the fail/recover commands see this sandbox at once
  const reply = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (req.headers.authorization !== `Bearer ${token}`) return reply(res, 401, { error: 'wrong token (is the state file from another sandbox?)' });
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method === 'GET' && url.pathname === '/status') {
      const healthz = app?.running() ? await fetch(`${app.url}/api/healthz`, { signal: AbortSignal.timeout(3000) }).catch(() => undefined) : undefined;
      const health = healthz ? ((await healthz.json().catch(() => ({}))) as { mode?: string }) : undefined;
      const body: StatusBody = {
        pid: process.pid,
        phase: state.phase,
        startedAt: state.startedAt,
        readyAt,
        app: app ? { url: app.url, running: app.running(), healthz: healthz?.status, mode: health?.mode, log: logPath } : undefined,
        kubeconfig: karmada?.kubeconfigPath,
        members: karmada && state.phase === 'ready' ? await memberStatuses(karmada) : [],
      };
      return reply(res, 200, body);
    }
    const action = /^\/members\/([^/]+)\/(fail|recover)$/.exec(url.pathname);
    if (req.method !== 'POST' || !action) return reply(res, 404, { error: `no such command: ${req.method} ${url.pathname}` });
    if (state.phase !== 'ready' || !karmada) return reply(res, 503, { error: `the sandbox is ${state.phase === 'starting' ? 'still starting' : 'stopping'}` });
    const name = decodeURIComponent(action[1]);
    const member = karmada.members.find((m) => m.name === name);
    if (!member) return reply(res, 404, { error: `no member ${JSON.stringify(name)}; the members are ${karmada.members.map((m) => m.name).join(', ')}` });
    if (busy.has(name)) return reply(res, 409, { error: `${name} is being failed or recovered already` });
    busy.add(name);
    try {
      const onIt = (await memberStatuses(karmada)).find((m) => m.name === name)?.workloads ?? [];
      if (action[2] === 'fail') {
        if (!member.running()) return reply(res, 409, { error: `${name} is already down; bring it back with: ${command(`recover ${name}`)}` });
        await member.kill();
        narrator?.mark(`${name} failed: its kube-apiserver, kube-controller-manager, kube-scheduler and kwok killed (SIGKILL)`);
        const message = [
          `${name} is down: its kube-apiserver, kube-controller-manager, kube-scheduler and kwok were killed (SIGKILL).`,
          `Next: Karmada marks it Ready=False (about 6-10 s), the app taints it ${NOT_READY}:NoExecute,`,
          `and ${TOLERATION_SECONDS} s later evicts ${onIt.length ? onIt.join(', ') : 'what runs there'} at ${RATE}/s; Karmada's scheduler places them on the other members.`,
          `Bring it back with: ${command(`recover ${name}`)}`,
        ].join('\n');
        return reply(res, 200, { member: name, action: 'fail', workloads: onIt, message });
      }
      if (member.running()) return reply(res, 409, { error: `${name} is up; nothing to recover` });
      await member.restart();
      narrator?.mark(`${name} recovered: its processes started again, its API server answers`);
      const message = [
        `${name} is back: its processes run again and its API server answers.`,
        `Next: Karmada marks it Ready=True (about 6-10 s), the app removes the ${NOT_READY} taint,`,
        `and the workloads that left it fail back ${FAILBACK_AFTER_SECONDS} s later.`,
      ].join('\n');
      return reply(res, 200, { member: name, action: 'recover', message });
    } finally {
      busy.delete(name);
    }
  };
  const server = createHttpServer((req, res) => {
    handle(req, res).catch((error: unknown) => reply(res, 500, { error: String((error as Error)?.message ?? error) }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  state.controlPort = typeof address === 'object' && address ? address.port : 0;
  writeState(state);

  // --- stopping: Ctrl-C (SIGINT) or SIGTERM, once ready or part-way through the start
  let stopping = false;
  let stoppingSince = 0;
  const stop = async (why: string, code: number) => {
    if (stopping) return;
    stopping = true;
    stoppingSince = Date.now();
    const wasReady = state.phase === 'ready';
    state.phase = 'stopping';
    const started = Date.now();
    say();
    say(`${why}: stopping the app and the control plane…`);
    narrator?.stop();
    server.close();
    server.closeAllConnections();
    try {
      await app?.stop();
      // Mid-start the control plane's handle does not exist yet; its processes are killed when this one
      // exits (test/helpers/realKarmada.ts), its scratch directory under the temp directory stays.
      await karmada?.stop();
    } finally {
      removeState(process.pid);
    }
    const appPort = app ? Number(new URL(app.url).port) : undefined;
    const freed = appPort === undefined ? '' : (await portFree(appPort)) ? `; port ${appPort} is free` : `; port ${appPort} is still in use`;
    say(`stopped in ${seconds(Date.now() - started)}${freed}`);
    process.exit(wasReady ? code : code || 130);
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      // tsx passes on the Ctrl-C this process already got from the terminal: only a later one is news.
      if (stopping && Date.now() - stoppingSince > 1000) say(`(${signal}: already stopping)`);
      void stop(signal, 0);
    });
  }

  const relative = () => `[${seconds(Date.now() - t0).padStart(7)}]`;
  try {
    say(`cluster-failover sandbox: a real Karmada with ${memberCount} kwok members, the app beside it in Karmada mode`);
    say(`${relative()} checking the Karmada build (scripts/karmada/build.sh; minutes only the first time)…`);
    const tBuild = Date.now();
    const binDir = await ensureKarmadaBuilt({ onOutput: (chunk) => process.stderr.write(chunk) });
    const buildMs = Date.now() - tBuild;
    say(`${relative()} Karmada binaries ready in ${seconds(buildMs)}: ${binDir}`);

    const port = await choosePort(wantedPort, explicitPort);
    // The console bundle `npm start` builds first (prestart); built here only when missing, so a sandbox
    // never rewrites dist/console under a host that serves it.
    const consoleBuilt = existsSync(join(ROOT, 'dist', 'console', 'index.html'));
    const consoleBuild = consoleBuilt
      ? Promise.resolve()
      : new Promise<void>((resolve, reject) => {
          const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'buildConsole.ts')], {
            cwd: ROOT,
            stdio: ['ignore', 'ignore', 'inherit'],
          });
          child.once('error', reject);
          child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`npm run build:console exited with ${code}`))));
        });
    consoleBuild.catch(() => {}); // awaited below

    say(`${relative()} starting the control plane (etcd, karmada-apiserver, webhook, controllers, ${memberCount} members)…`);
    const tPlane = Date.now();
    karmada = await startRealKarmada({
      members: memberCount,
      binDir,
      timeoutMs: 240_000,
      log: (line) => say(`${relative()}   ${line}`),
    });
    const planeMs = Date.now() - tPlane;
    say(`${relative()} control plane up in ${seconds(planeMs)}: ${karmada.members.map((m) => m.name).join(', ')} Ready`);
    if (stopping) return;

    say(`${relative()} starting the app on port ${port} and applying the sample fleet…`);
    const tApp = Date.now();
    const appStarted = consoleBuild.then(() =>
      startApp(karmadaHostEnv(karmada!, RATE), port, logPath).then((started) => {
        app = started;
        return Date.now() - tApp;
      }),
    );
    appStarted.catch(() => {}); // awaited below
    const tFleet = Date.now();
    const byMember = await applyFleet(karmada);
    const fleetMs = Date.now() - tFleet;
    say(`${relative()} sample fleet Healthy in ${seconds(fleetMs)}`);
    const appMs = await appStarted;
    say(`${relative()} app healthy in ${seconds(appMs)} (${app!.url}, log ${logPath})`);
    const workloads = PER_MEMBER * memberCount;
    await until(
      'the app to see every sample binding',
      async () => {
        const res = await fetch(`${app!.url}/api/resourcebindings`, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
        const body = (await res?.json().catch(() => undefined)) as { items?: unknown[] } | undefined;
        return (body?.items?.length ?? 0) >= workloads;
      },
      60_000,
    );
    if (stopping) return;

    app!.child.once('exit', (code, signal) => {
      if (!stopping) say(`the app exited unexpectedly (${signal ?? `exit code ${code}`}); its log: ${logPath}. Ctrl-C stops the rest.`);
    });
    narrator = new Narrator(karmada);
    await narrator.start();
    state.phase = 'ready';
    state.appUrl = app!.url;
    state.kubeconfig = karmada.kubeconfigPath;
    state.members = karmada.members.map((m) => m.name);
    readyAt = new Date().toISOString();
    writeState(state);

    const first = karmada.members[0].name;
    const totalMs = Date.now() - t0;
    say();
    say(
      `Sandbox ready in ${seconds(totalMs)} (build check ${seconds(buildMs)}, control plane ${seconds(planeMs)}, ` +
        `app ${seconds(appMs)} and sample fleet ${seconds(fleetMs)} side by side)`,
    );
    say();
    say('Karmada (kubectl talks to the karmada-apiserver; the members are kwok clusters)');
    say(`  Admin kubeconfig:  ${karmada.kubeconfigPath}`);
    say(`  export KUBECONFIG=${karmada.kubeconfigPath}`);
    say(`  Member kubeconfigs: ${karmada.members.map((m) => m.kubeconfigPath).join(' ')}`);
    say(`  Component logs:    ${join(karmada.dir, 'logs')}`);
    say("The app (Karmada mode: it is Karmada's failover controllers; Karmada's own are off)");
    say(`  Console:           ${app!.url}/api/console/`);
    say(`  API base URL:      ${app!.url}/api/`);
    say(`  Log:               ${logPath}`);
    say('Sample fleet');
    say(`  ClusterTaintPolicy ${TAINT_POLICY}: Ready≠True → ${NOT_READY}:NoExecute (Karmada's shape)`);
    say(
      `  PropagationPolicy ${PROPAGATION_POLICY}: one member per Deployment, that taint tolerated ${TOLERATION_SECONDS} s, ` +
        `failback ${FAILBACK_AFTER_SECONDS} s after recovery; evictions at ${RATE}/s`,
    );
    say(`  Deployments: ${[...byMember].map(([m, ds]) => `${ds.join(', ')} on ${m}`).join('; ')}`);
    say();
    say(`In another terminal, in ${ROOT}:`);
    say(`  Fail a member:     ${command(`fail ${first}`)}`);
    say(`  Bring it back:     ${command(`recover ${first}`)}`);
    say(`  Status:            ${command('status')}`);
    say(`  Watch:             export KUBECONFIG=${karmada.kubeconfigPath}`);
    say('                     kubectl get clusters -w');
    say('                     kubectl get resourcebindings -o wide -w');
    say(
      '                     kubectl get clusters -w -o custom-columns=\'NAME:.metadata.name,READY:.status.conditions[?(@.type=="Ready")].status,TAINT:.spec.taints[*].key,EFFECT:.spec.taints[*].effect\'',
    );
    say(
      "                     kubectl get rb -w -o custom-columns='NAME:.metadata.name,CLUSTERS:.spec.clusters[*].name,EVICTING-FROM:.spec.gracefulEvictionTasks[*].fromCluster'",
    );
    say(`                     kubectl describe cluster ${first}     (the app's Events: why it tainted, what it evicted)`);
    say();
    say('Ctrl-C stops everything. What happens in Karmada shows below.');
    say();
  } catch (error) {
    if (stopping) return;
    const detail = error instanceof UsageError ? error.message : ((error as Error)?.stack ?? String(error));
    process.stderr.write(`\nthe sandbox could not start: ${detail}\n`);
    await stop('start-up failed', 1);
  }
}

/** The command that reaches this sandbox from another terminal (naming its state directory if not the default). */
function command(args: string): string {
  const dir = process.env.KARMADA_SANDBOX_DIR;
  return `${dir && dir !== DEFAULT_STATE_DIR ? `KARMADA_SANDBOX_DIR=${dir} ` : ''}npm run karmada:sandbox -- ${args}`;
}

// ---------------------------------------------------------------------------------------------------------

const HELP = `npm run karmada:sandbox [-- options]        start Karmada, the app and a sample fleet; Ctrl-C stops them
npm run karmada:sandbox -- fail <member>      kill a member's processes (Karmada then marks it Ready=False)
npm run karmada:sandbox -- recover <member>   start them again
npm run karmada:sandbox -- status [--json]    the running sandbox's members, Ready, taints and workloads

options (start):
  --members N   kwok member clusters, 2-10 (default 3)
  --port P      the app's port (default 7071; without --port a busy 7071 means the next free one)

The state file is ${statePath()} (KARMADA_SANDBOX_DIR moves it).`;

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      members: { type: 'string' },
      port: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    say(HELP);
    return 0;
  }
  const [cmd = 'start', arg, ...rest] = positionals;
  if (rest.length > 0) throw new UsageError(`unexpected arguments: ${rest.join(' ')}\n\n${HELP}`);
  switch (cmd) {
    case 'fail':
    case 'recover':
      return memberCommand(cmd, arg);
    case 'status':
      return statusCommand(values.json === true);
    case 'start': {
      const members = values.members === undefined ? 3 : Number(values.members);
      if (!Number.isInteger(members) || members < 2 || members > 10) throw new UsageError('--members must be a whole number from 2 to 10');
      const port = values.port === undefined ? DEFAULT_PORT : Number(values.port);
      if (!Number.isInteger(port) || port < 1 || port > 65535) throw new UsageError('--port must be a port number');
      await startSandbox(members, port, values.port !== undefined);
      // Stays up: the control server and the narrator keep the event loop alive until a signal stops it.
      return -1;
    }
    default:
      throw new UsageError(`unknown command ${JSON.stringify(cmd)}\n\n${HELP}`);
  }
}

main().then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    if (error instanceof UsageError) process.stderr.write(`${error.message}\n`);
    else process.stderr.write(`${(error as Error)?.stack ?? String(error)}\n`);
    process.exit(error instanceof UsageError && !(error instanceof NotRunningError) ? 2 : 1);
  },
);
