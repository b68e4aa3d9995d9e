import { ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';

/**
 * `npm run karmada:sandbox` as a newcomer runs it: the real command as a child process (its own process group,
 * like a terminal's foreground job), what it prints parsed, the printed fail and recover commands run as
 * printed, the outcome read with kubectl through the printed kubeconfig, then Ctrl-C (SIGINT to the group).
 * The state directory is a temporary one, so a sandbox someone runs meanwhile is not touched.
 */

const ROOT = join(__dirname, '..', '..');
const KUBECTL = process.env.KUBECTL ?? '/usr/bin/kubectl';
const NOT_READY = 'cluster.karmada.io/not-ready';

type Cluster = {
  metadata: { name: string };
  spec?: { taints?: Array<{ key: string; effect: string }> };
  status?: { conditions?: Array<{ type: string; status: string }> };
};
type Binding = { metadata: { name: string }; spec: { clusters?: Array<{ name: string }> } };

interface Printed {
  kubeconfig: string;
  consoleUrl: string;
  apiUrl: string;
  fail: string;
  recover: string;
  status: string;
  readyInS: number;
}

const stateDir = mkdtempSync(join(tmpdir(), 'sandbox-test-'));
const env = { ...process.env, KARMADA_SANDBOX_DIR: stateDir };
let sandbox: ChildProcess | undefined;
let output = '';
let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
let printed: Printed;
let apiServerUrl: string;
const report: Record<string, unknown> = {};

function sh(command: string, timeoutMs = 180_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('sh', ['-c', command], { cwd: ROOT, env, timeout: timeoutMs }, (error, stdout, stderr) => {
      const code = (error as { code?: unknown } | null)?.code;
      resolve({ code: error ? (typeof code === 'number' ? code : 1) : 0, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

async function kubectl<T>(args: string[]): Promise<T> {
  const result = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      KUBECTL,
      [...args, '-o', 'json', `--cache-dir=${join(stateDir, 'kubectl-cache')}`],
      { env: { ...env, KUBECONFIG: printed.kubeconfig }, timeout: 30_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => resolve({ code: error ? 1 : 0, stdout: String(stdout), stderr: String(stderr) }),
    );
  });
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

const cluster = (name: string) => kubectl<Cluster>(['get', 'cluster', name]);
const bindings = async () => (await kubectl<{ items: Binding[] }>(['get', 'resourcebindings', '-n', 'default'])).items;
const readyOf = (c: Cluster) => c.status?.conditions?.find((x) => x.type === 'Ready')?.status;
const tainted = (c: Cluster) => (c.spec?.taints ?? []).some((t) => t.key === NOT_READY && t.effect === 'NoExecute');
const placed = (b: Binding) => (b.spec.clusters ?? []).map((c) => c.name);

async function until<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n--- sandbox output (tail):\n${output.slice(-4000)}${appLog()}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

function appLog(): string {
  const path = join(stateDir, 'app.log');
  if (!existsSync(path)) return '';
  const lines = readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => !l.includes('"msg":"invocation"'));
  return `\n--- app log (tail, no invocation lines):\n${lines.slice(-25).join('\n').slice(-5000)}`;
}

/** Whether something accepts TCP connections on the URL's port. */
function listening(url: string): Promise<boolean> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: u.hostname, port: Number(u.port) });
    socket.setTimeout(2000);
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
  });
}

function match(pattern: RegExp, what: string): string {
  const found = pattern.exec(output);
  if (!found) throw new Error(`the sandbox did not print ${what}:\n${output}`);
  return found[1].trim();
}

beforeAll(async () => {
  const started = Date.now();
  // What `npm run karmada:sandbox` runs (package.json's script, node_modules/.bin on PATH), in its own process
  // group as a terminal's foreground job is. `exec`, and not npm itself: npm and sh report a job that got
  // Ctrl-C as interrupted (130, or killed by SIGINT) once it has exited, whatever its exit code was.
  const script = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts['karmada:sandbox'];
  expect(script).toBe('tsx scripts/karmada/sandbox.ts');
  sandbox = spawn('sh', ['-c', `exec ${script}`], {
    cwd: ROOT,
    env: { ...env, PATH: `${join(ROOT, 'node_modules', '.bin')}:${process.env.PATH}` },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  sandbox.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  sandbox.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  exited = new Promise((resolve) => sandbox!.once('exit', (code, signal) => resolve({ code, signal })));
  await Promise.race([
    until('the sandbox to say it is ready', async () => output.includes('Ctrl-C stops everything'), 6 * 60_000),
    exited.then(({ code, signal }) => {
      throw new Error(`the sandbox exited (${signal ?? code}) before it was ready:\n${output}${appLog()}`);
    }),
  ]);
  report.readyAfterS = (Date.now() - started) / 1000;
  printed = {
    kubeconfig: match(/export KUBECONFIG=(\S+)/, 'an export KUBECONFIG line'),
    consoleUrl: match(/Console:\s+(\S+)/, 'the console URL'),
    apiUrl: match(/API base URL:\s+(\S+)/, "the app's API base URL"),
    fail: match(/Fail a member:\s+(.+)/, 'the fail command'),
    recover: match(/Bring it back:\s+(.+)/, 'the recover command'),
    status: match(/Status:\s+(.+)/, 'the status command'),
    readyInS: Number(match(/Sandbox ready in ([\d.]+) s/, 'its start-up time')),
  };
  const kubeconfig = parse(readFileSync(printed.kubeconfig, 'utf8')) as { clusters: Array<{ cluster: { server: string } }> };
  apiServerUrl = kubeconfig.clusters[0].cluster.server;
  report.printedStartupS = printed.readyInS;
  report.startupLine = match(/(Sandbox ready in .+)/, 'its start-up timings');
}, 7 * 60_000);

afterAll(async () => {
  console.log(JSON.stringify({ scenario: 'karmada-sandbox', ...report }));
  // Only if a test failed before Ctrl-C: stop it the way it stops (SIGTERM), SIGKILL as a last resort.
  if (sandbox?.pid && sandbox.exitCode === null && sandbox.signalCode === null) {
    try {
      process.kill(-sandbox.pid, 'SIGTERM');
    } catch {
      // gone
    }
    const done = await Promise.race([exited.then(() => true), new Promise((r) => setTimeout(() => r(false), 60_000))]);
    if (!done) process.kill(-sandbox.pid, 'SIGKILL');
  }
  rmSync(stateDir, { recursive: true, force: true });
}, 90_000);

describe('npm run karmada:sandbox', () => {
  it('prints a working kubeconfig, the console and API URLs of the app in Karmada mode, and the commands to try', async () => {
    expect(printed.readyInS).toBeGreaterThan(0);
    expect(printed.fail).toMatch(/npm run karmada:sandbox -- fail member1$/);
    expect(printed.recover).toMatch(/npm run karmada:sandbox -- recover member1$/);
    expect(output).toMatch(/kubectl get clusters/);
    expect(output).toMatch(/kubectl get resourcebindings -o wide/);

    const clusters = (await kubectl<{ items: Cluster[] }>(['get', 'clusters'])).items;
    expect(clusters.map((c) => c.metadata.name).sort()).toEqual(['member1', 'member2', 'member3']);
    expect(clusters.every((c) => readyOf(c) === 'True' && !tainted(c))).toBe(true);
    const placements = (await bindings()).map((b) => placed(b).join());
    expect(placements.sort()).toEqual(['member1', 'member1', 'member2', 'member2', 'member3', 'member3']);

    const healthz = await fetch(`${printed.apiUrl}healthz`);
    expect(healthz.status).toBe(200);
    expect(await healthz.json()).toMatchObject({ status: 'ok', mode: 'karmada' });
    const page = await fetch(printed.consoleUrl);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);

    // A second start with the same state directory refuses at once, starting nothing.
    const second = await sh('npm run -s karmada:sandbox', 60_000);
    expect(second.code, second.stdout + second.stderr).toBe(2);
    expect(second.stderr).toMatch(/a sandbox is already running/);
  });

  let movedKeys: string[] = [];
  it('the printed fail command kills member1: Karmada marks it Ready=False, the app taints it, its workloads move', async () => {
    const onIt = (await bindings()).filter((b) => placed(b).includes('member1')).map((b) => b.metadata.name);
    expect(onIt).toHaveLength(2);
    const failedAt = Date.now();
    const fail = await sh(printed.fail);
    expect(fail.code, fail.stderr).toBe(0);
    expect(fail.stdout).toMatch(/member1 is down/);

    await until('member1 Ready=False', async () => readyOf(await cluster('member1')) === 'False', 60_000);
    const readyFalseS = (Date.now() - failedAt) / 1000;
    await until(`the ${NOT_READY}:NoExecute taint on member1`, async () => tainted(await cluster('member1')), 60_000);
    const taintS = (Date.now() - failedAt) / 1000;
    const status = await sh(printed.status, 60_000);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/member1\s+down\s+False/);
    await until(
      `${onIt.join(', ')} moved off member1`,
      async () => {
        const now = await bindings();
        return onIt.every((name) => {
          const b = now.find((x) => x.metadata.name === name);
          return b !== undefined && placed(b).length > 0 && !placed(b).includes('member1');
        });
      },
      120_000,
    );
    movedKeys = onIt;
    report.fromFailCommandS = { readyFalse: readyFalseS, taint: taintS, workloadsMoved: (Date.now() - failedAt) / 1000 };
  }, 240_000);

  it('the printed recover command brings member1 back: Ready=True and the taint gone', async () => {
    expect(movedKeys).toHaveLength(2);
    const recoveredAt = Date.now();
    const recover = await sh(printed.recover);
    expect(recover.code, recover.stderr).toBe(0);
    expect(recover.stdout).toMatch(/member1 is back/);
    await until('member1 Ready=True', async () => readyOf(await cluster('member1')) === 'True', 60_000);
    const readyTrueS = (Date.now() - recoveredAt) / 1000;
    await until(`the ${NOT_READY}:NoExecute taint gone from member1`, async () => !tainted(await cluster('member1')), 60_000);
    report.fromRecoverCommandS = { readyTrue: readyTrueS, untainted: (Date.now() - recoveredAt) / 1000 };
    const status = await sh(printed.status, 60_000);
    expect(status.stdout).toMatch(/member1\s+up\s+True/);
  }, 180_000);

  it('Ctrl-C stops everything it started: exit 0, the app and Karmada ports free, no sandbox left to reach', async () => {
    expect(await listening(printed.apiUrl)).toBe(true);
    expect(await listening(apiServerUrl)).toBe(true);
    const stoppedAt = Date.now();
    process.kill(-sandbox!.pid!, 'SIGINT');
    const exit = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 60_000))]);
    expect(exit, output.slice(-3000)).toEqual({ code: 0, signal: null });
    report.stopS = (Date.now() - stoppedAt) / 1000;
    expect(output).toMatch(/stopped in/);
    expect(await listening(printed.apiUrl), 'the app still listens').toBe(false);
    expect(await listening(apiServerUrl), 'the karmada-apiserver still listens').toBe(false);
    expect(existsSync(printed.kubeconfig), "Karmada's scratch directory is removed").toBe(false);
    expect(existsSync(join(stateDir, 'state.json'))).toBe(false);
    const status = await sh(printed.status, 60_000);
    expect(status.code).toBe(1);
    expect(status.stderr).toMatch(/no sandbox is running/);
  }, 120_000);
});
