/**
 * `npm run bench`: measures what the issues set targets for, prints a table and writes bench-results.json.
 * Everything runs against local hosts on loopback; nothing here is asserted (machines are noisy).
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { api, startHostProcess } from '../test/helpers/hostProcess';

const ROOT = join(__dirname, '..');

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(q * xs.length) - 1)];
const round = (x: number) => Math.round(x * 10) / 10;
const summary = (xs: number[]) => ({ runs: xs.length, medianMs: round(median(xs)), p95Ms: round(quantile(xs, 0.95)), worstMs: round(Math.max(...xs)), bestMs: round(Math.min(...xs)) });

/** Time from spawning `npm start` to the first successful GET /api/healthz. */
async function startupTime(runs: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const port = 17100 + i;
    const started = performance.now();
    const child = spawn('npm', ['start', '--silent'], { cwd: ROOT, env: { ...process.env, PORT: String(port) }, stdio: 'ignore', detached: true });
    for (;;) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/api/healthz`);
        if (res.ok) break;
      } catch {
        // not listening yet
      }
      if (performance.now() - started > 20_000) throw new Error('npm start did not serve within 20 s');
      await new Promise((r) => setTimeout(r, 10));
    }
    times.push(performance.now() - started);
    process.kill(-child.pid!, 'SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
  return times;
}

/**
 * Taint latency beyond the window: for each run a cluster reports Ready=False; the taint's `timeAdded`
 * minus (lastTransitionTime + addOnMatchSeconds) is the recorded latency, and the moment a poller (every
 * 10 ms) first sees it gives the observed latency. Then Ready=True and the same for removal.
 */
async function taintLatency(runs: number, windowSeconds: number, parallel: number) {
  const host = await startHostProcess();
  try {
    await api(host.url, 'POST', 'apply', {
      apiVersion: 'policy.karmada.io/v1alpha1',
      kind: 'ClusterTaintPolicy',
      metadata: { name: 'bench-latency' },
      spec: {
        targetCluster: { labelSelector: { matchLabels: { bench: 'latency' } } },
        matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False'] }],
        taintsToAdd: [{ key: 'bench/not-ready', effect: 'NoExecute', addOnMatchSeconds: windowSeconds, removeOnMismatchSeconds: windowSeconds }],
      },
    });
    const addRecorded: number[] = [];
    const addObserved: number[] = [];
    const removeObserved: number[] = [];
    const one = async (i: number) => {
      const name = `latency-${i}`;
      await api(host.url, 'POST', 'apply', { apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name, labels: { bench: 'latency' } } });
      const down = await api(host.url, 'POST', `clusters/${name}/status`, { conditions: [{ type: 'Ready', status: 'False' }] });
      const deadline = Date.parse(down.body.status.conditions[0].lastTransitionTime) + windowSeconds * 1000;
      for (;;) {
        const cluster = (await api(host.url, 'GET', `clusters/${name}`)).body;
        if (cluster.spec.taints.length > 0) {
          addObserved.push(Date.now() - deadline);
          addRecorded.push(Date.parse(cluster.spec.taints[0].timeAdded) - deadline);
          break;
        }
        await new Promise((r) => setTimeout(r, 10));
      }
      const up = await api(host.url, 'POST', `clusters/${name}/status`, { conditions: [{ type: 'Ready', status: 'True' }] });
      const removeAt = Date.parse(up.body.status.conditions[0].lastTransitionTime) + windowSeconds * 1000;
      for (;;) {
        const cluster = (await api(host.url, 'GET', `clusters/${name}`)).body;
        if (cluster.spec.taints.length === 0) {
          removeObserved.push(Date.now() - removeAt);
          break;
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    for (let i = 0; i < runs; i += parallel) {
      await Promise.all(Array.from({ length: Math.min(parallel, runs - i) }, (_, k) => new Promise((r) => setTimeout(r, k * 300)).then(() => one(i + k))));
    }
    return { addRecorded, addObserved, removeObserved };
  } finally {
    await host.stop();
  }
}

async function main() {
  const startup = await startupTime(5);
  const latency = await taintLatency(20, 3, 4);
  const results = {
    machine: { node: process.version, cpus: (await import('node:os')).cpus().length },
    startup: { command: 'npm start → first 200 from GET /api/healthz', ...summary(startup) },
    taintLatency: {
      windowSeconds: 3,
      add: { recorded: summary(latency.addRecorded), observed: summary(latency.addObserved) },
      remove: { observed: summary(latency.removeObserved) },
    },
  };
  writeFileSync(join(ROOT, 'bench-results.json'), JSON.stringify(results, null, 2) + '\n');
  const rows: Array<[string, string, string, string]> = [
    ['startup (npm start → serving)', `${results.startup.medianMs} ms`, `${results.startup.worstMs} ms`, '≤ 3000 ms'],
    ['taint add, beyond window (timeAdded)', `${results.taintLatency.add.recorded.medianMs} ms`, `${results.taintLatency.add.recorded.worstMs} ms`, 'median ≤ 300, worst ≤ 1000'],
    ['taint add, beyond window (seen by poller)', `${results.taintLatency.add.observed.medianMs} ms`, `${results.taintLatency.add.observed.worstMs} ms`, 'median ≤ 300, worst ≤ 1000'],
    ['taint remove, beyond window (seen)', `${results.taintLatency.remove.observed.medianMs} ms`, `${results.taintLatency.remove.observed.worstMs} ms`, 'median ≤ 300, worst ≤ 1000'],
  ];
  const widths = [0, 1, 2, 3].map((c) => Math.max(...[['measure', 'median', 'worst', 'target'], ...rows].map((r) => r[c].length)));
  const line = (r: string[]) => r.map((cell, c) => cell.padEnd(widths[c])).join(' | ');
  console.log(line(['measure', 'median', 'worst', 'target']));
  console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
  for (const row of rows) console.log(line(row));
  console.log(`\nruns: startup ${startup.length}, taint latency ${latency.addRecorded.length}; wrote bench-results.json`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
