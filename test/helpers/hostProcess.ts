import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { localHostArgs } from '../../shared/local/nodeFlags';

const ROOT = join(__dirname, '..', '..');

export interface HostProcess {
  url: string;
  child: ChildProcess;
  output: () => string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `shared/local/main.ts` (what `npm start` runs) as a child process and waits until it serves. */
export async function startHostProcess(env: Record<string, string> = {}, args: string[] = []): Promise<HostProcess> {
  const profile = process.env.HOST_CPU_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.HOST_CPU_PROFILE_DIR}`] : [];
  const child = spawn(process.execPath, [...profile, ...localHostArgs(), ...args], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let starting = true;
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`host did not start in 20 s:\n${output}`)), 20_000);
    // One listener for the process's life: it keeps collecting after the start.
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (!starting) return;
      for (const line of output.split('\n')) {
        if (!line.includes('"host started"')) continue;
        try {
          const started = JSON.parse(line).url;
          clearTimeout(timer);
          starting = false;
          resolve(started);
        } catch {
          // partial line; wait for more
        }
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`host exited with ${code} before starting:\n${output}`));
    });
  });
  return {
    url,
    child,
    output: () => output,
    stop(signal: NodeJS.Signals = 'SIGTERM') {
      return new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
        child.once('exit', (code) => resolve(code));
        child.kill(signal);
      });
    },
  };
}

export async function api(base: string, method: string, path: string, body?: unknown, contentType = 'application/json') {
  const init: RequestInit = { method, headers: {} };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] = contentType;
  }
  const res = await fetch(`${base}/api/${path}`, init);
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, body: json, headers: res.headers };
}

/** Polls `check` every `everyMs` until it returns a value, or throws after `timeoutMs`. */
export async function waitFor<T>(check: () => Promise<T | undefined>, timeoutMs: number, everyMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
