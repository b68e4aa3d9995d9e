/**
 * `npm run bench -- whatif [clusters] [bindings]`: the latency of POST /api/whatif on a fleet of
 * realistic size (1,000 clusters, 100,000 bindings by default), seeded straight into storage in bulk as the
 * scale bench does, with a policy that taints NoExecute 60 s after Ready turns False. One, ten and a hundred
 * clusters are asked about, five times each (medians); the storage is checked unchanged after each run. Also
 * the console bundle's size, as `npm run build:console` left it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { decodeApplyDocuments } from '../shared/api/decode';
import { applyObjects } from '../shared/controllers/apply';
import { placementsOf } from '../shared/controllers/state/bindingWrites';
import { whatIfFailure } from '../shared/controllers/whatIf';
import { startTestStorage } from '../test/helpers/azurite';
import { api, startHostProcess } from '../test/helpers/hostProcess';
import { memoryPlane } from '../test/helpers/memoryPlane';
import { storageSnapshot } from '../test/helpers/storageSnapshot';
import { bindingRecord, clusterRecord, seedFleet } from './benchScale';

const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** The bundle in dist/console: bytes raw and gzipped, per file and in all. */
export function consoleBundleSize(): { files: Record<string, { bytes: number; gzipBytes: number }>; bytes: number; gzipBytes: number } | undefined {
  const dir = join(__dirname, '..', 'dist', 'console');
  if (!existsSync(join(dir, 'index.html'))) return undefined;
  const files: Record<string, { bytes: number; gzipBytes: number }> = {};
  for (const name of ['index.html', 'app.js', 'app.css']) {
    const content = readFileSync(join(dir, name));
    files[name] = { bytes: content.length, gzipBytes: gzipSync(content, { level: 9 }).length };
  }
  const all = Object.values(files);
  return { files, bytes: all.reduce((n, f) => n + f.bytes, 0), gzipBytes: all.reduce((n, f) => n + f.gzipBytes, 0) };
}

/** NoExecute 60 s after Ready turns False or Unknown. */
const NOT_READY_POLICY = {
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind: 'ClusterTaintPolicy',
  metadata: { name: 'not-ready' },
  spec: {
    matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False', 'Unknown'] }],
    taintsToAdd: [{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', addOnMatchSeconds: 60, removeOnMismatchSeconds: 60 }],
  },
};

export async function whatIfRun(clusters = 1000, bindings = 100_000, runs = 5) {
  const env = await startTestStorage();
  const now = new Date();
  try {
    const { names, seedSeconds } = await seedFleet(env.storage, clusters, bindings, now);
    const host = await startHostProcess({
      AzureWebJobsStorage: env.azurite.connectionString,
      FAILOVER_ENABLED: 'true',
      RESOURCE_EVICTION_RATE: '50',
      CLUSTER_MONITOR_GRACE_PERIOD_SECONDS: '86400',
      CLUSTER_STARTUP_GRACE_PERIOD_SECONDS: '86400',
    });
    try {
      const applied = await api(host.url, 'POST', 'apply', [NOT_READY_POLICY]);
      if (applied.status !== 200) throw new Error(`apply failed: ${applied.status} ${JSON.stringify(applied.body)}`);
      // The policy change re-evaluates every cluster: wait for the queue to drain before measuring.
      await new Promise((r) => setTimeout(r, 15_000));
      const results = [];
      for (const failing of [1, 10, 100].filter((n) => n <= clusters)) {
        const times: number[] = [];
        let answer: { counts: Record<string, number>; eta: string | null; fleet: { tier: string } } | undefined;
        let unchanged = true;
        for (let i = 0; i < runs; i++) {
          const before = i === 0 ? await storageSnapshot(env.storage) : undefined;
          const started = performance.now();
          const res = await api(host.url, 'POST', 'whatif', { failClusters: names.slice(0, failing) });
          times.push(performance.now() - started);
          if (res.status !== 200) throw new Error(`whatif failed: ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
          answer = res.body;
          if (before !== undefined) unchanged = (await storageSnapshot(env.storage)) === before;
        }
        results.push({
          failing,
          evictions: answer!.counts.evictions,
          blocked: answer!.counts.blocked,
          tier: answer!.fleet.tier,
          medianMs: round(median(times)),
          worstMs: round(Math.max(...times)),
          storageUnchanged: unchanged,
        });
      }
      return { clusters, bindings, seedSeconds, runs, results };
    } finally {
      await host.stop();
    }
  } finally {
    await env.close();
  }
}

/**
 * The same what-if on the in-memory ports (`npm run bench -- whatif [clusters] [bindings] --memory`): the
 * app's own cost, the simulation and the controller's reads without Azurite, at any fleet size in seconds.
 */
export async function whatIfMemoryRun(clusters = 1000, bindings = 100_000, runs = 5) {
  const m = memoryPlane({ FAILOVER_ENABLED: 'true', RESOURCE_EVICTION_RATE: '50' });
  const now = m.clock.now();
  const names = Array.from({ length: clusters }, (_, c) => `c${c}`);
  for (const name of names) await m.clusters.create(name, clusterRecord(name, now));
  const records = Array.from({ length: bindings }, (_, i) => bindingRecord(i, names[i % clusters], names[(i + Math.floor(clusters / 2)) % clusters], now));
  for (const record of records) await m.bindings.create(`rb:default:${record.name}`, record);
  await m.ledger.upsertPlacements(records.flatMap(placementsOf));
  await applyObjects(m.plane, decodeApplyDocuments([NOT_READY_POLICY]));
  const results = [];
  for (const failing of [1, 10, 100].filter((n) => n <= clusters)) {
    const times: number[] = [];
    let evictions = 0;
    for (let i = 0; i < runs; i++) {
      const started = performance.now();
      evictions = (await whatIfFailure(m.plane, { failClusters: names.slice(0, failing) })).counts.evictions;
      times.push(performance.now() - started);
    }
    results.push({ failing, evictions, medianMs: round(median(times)), worstMs: round(Math.max(...times)) });
  }
  return { clusters, bindings, storage: 'memory', runs, results };
}
