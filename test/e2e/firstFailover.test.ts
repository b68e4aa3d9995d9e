import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';

/**
 * The README's "first failover", as a newcomer runs it: every command of its `sh` blocks, in order. The
 * `npm start` line starts a local host with its settings and arguments; each other line runs in a shell
 * with the CLI pointed at that host. A watch (`--watch`) runs for a few seconds and is stopped, as a reader
 * would with Ctrl-C. After a report the test waits for what the README says happens next.
 */
const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

function firstFailoverCommands(): string[] {
  const start = README.search(/^##+ .*first failover/im);
  if (start < 0) throw new Error('README has no "first failover" section');
  const rest = README.slice(start + 1);
  const end = rest.search(/^## /m);
  const section = end < 0 ? rest : rest.slice(0, end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)]
    .flatMap((m) => m[1].split('\n'))
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

let host: HostProcess | undefined;
afterAll(async () => host?.stop());

const api = async (path: string) => (await fetch(`${host!.url}/api/${path}`)).json() as Promise<any>;
const placed = async () => ((await api('resourcebindings/default/web-deployment')).spec?.clusters ?? []).map((c: { name: string }) => c.name);
const tainted = async (cluster: string) => ((await api(`clusters/${cluster}`)).spec?.taints ?? []).some((t: { effect: string }) => t.effect === 'NoExecute');

describe("README's first failover", () => {
  it('fails member1 over and brings it back with the commands as written', async () => {
    const commands = firstFailoverCommands();
    expect(commands.length).toBeGreaterThanOrEqual(5);
    const outputs: string[] = [];
    let failedOver = false;
    for (const command of commands) {
      const startLine = /^((?:[A-Z_]+=\S+\s+)*)npm start(?:\s+--\s+(.*))?$/.exec(command);
      if (startLine) {
        const env = Object.fromEntries(
          startLine[1]
            .trim()
            .split(/\s+/)
            .filter(Boolean)
            .map((pair) => pair.split('=') as [string, string]),
        );
        host = await startHostProcess(env, (startLine[2] ?? '').split(/\s+/).filter(Boolean));
        continue;
      }
      expect(host, `"${command}" comes after npm start`).toBeDefined();
      const env = { ...process.env, CLUSTER_FAILOVER_SERVER: host!.url };
      if (/\s(--watch|-w)(\s|$)/.test(command)) {
        // Its own process group: Ctrl-C reaches npx and the CLI under the shell, as in a terminal.
        const child = spawn('bash', ['-c', command], { cwd: ROOT, env, detached: true });
        let text = '';
        child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
        const exited = new Promise((r) => child.once('exit', r));
        await new Promise((r) => setTimeout(r, 8000));
        process.kill(-child.pid!, 'SIGINT');
        await exited;
        outputs.push(text);
        continue;
      }
      const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', command], { cwd: ROOT, env });
      outputs.push(stdout);
      const report = /report (\S+) Ready=(True|False)/.exec(command);
      if (report?.[2] === 'False') {
        // The policy's 5 s window, then the eviction at the configured rate.
        await waitFor(async () => ((await placed()).length > 0 && !(await placed()).includes(report[1]) ? true : undefined), 30_000, 250);
        failedOver = true;
      }
      if (report?.[2] === 'True') await waitFor(async () => (!(await tainted(report[1])) ? true : undefined), 30_000, 250);
    }
    expect(failedOver).toBe(true);
    const text = outputs.join('\n');
    expect(text).toContain('TaintAdded');
    expect(text).toContain('Evicted');
    expect(await tainted('member1')).toBe(false);
    expect(await placed()).not.toContain('member1');
  }, 120_000);
});
