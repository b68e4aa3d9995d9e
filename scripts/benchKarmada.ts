/**
 * Karmada mode figures for `npm run bench`: condition change → evaluation start, the start-up sync of 1,000
 * clusters and 10,000 bindings, one probe round over 1,000 clusters, and Kubernetes API requests per
 * eviction. The Karmada API server is the test server of test/helpers (no kube-apiserver can be installed
 * here); storage is a real Azurite.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep } from '../shared/clock';
import { loadConfig } from '../shared/config';
import { syncKarmada } from '../shared/controllers/karmadaSync';
import { probeClusters } from '../shared/controllers/probes';
import { createControlPlane } from '../shared/runtime';
import { TableDocumentStore, TABLES } from '../shared/store/tableStorage';
import { silentLogger } from '../shared/telemetry/log';
import { startTestStorage } from '../test/helpers/azurite';
import { api, startHostProcess } from '../test/helpers/hostProcess';
import { KubeApiServer, startKubeApiServer } from '../test/helpers/kubeApiServer';
import { makeCa, startMemberEndpoint } from '../test/helpers/memberEndpoints';

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const round = (x: number) => Math.round(x * 10) / 10;

const clusterObject = (name: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'cluster.karmada.io/v1alpha1',
  kind: 'Cluster',
  metadata: { name, labels: { bench: 'karmada' } },
  spec: { syncMode: 'Push', ...extra },
  status: { conditions: [{ type: 'Ready', status: 'True', reason: 'ClusterReady', message: '', lastTransitionTime: new Date().toISOString() }] },
});

const bindingObject = (i: number, cluster: string, tolerationSeconds = 0) => ({
  apiVersion: 'work.karmada.io/v1alpha2',
  kind: 'ResourceBinding',
  metadata: { name: `app-${i}`, namespace: 'default', generation: 1 },
  spec: {
    resource: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: `app-${i}` },
    replicas: 1,
    clusters: [{ name: cluster, replicas: 1 }],
    failover: { cluster: { purgeMode: 'Gracefully', tolerationSeconds } },
  },
  status: { schedulerObservedGeneration: 1 },
});

const policy = (windowSeconds: number) => ({
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind: 'ClusterTaintPolicy',
  metadata: { name: 'bench-not-ready' },
  spec: {
    targetCluster: { labelSelector: { matchLabels: { bench: 'karmada' } } },
    matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False'] }],
    taintsToAdd: [{ key: 'bench/not-ready', effect: 'NoExecute', addOnMatchSeconds: windowSeconds, removeOnMismatchSeconds: 1 }],
  },
});

const setReady = (server: KubeApiServer, name: string, status: 'True' | 'False') => {
  const current = server.get('clusters', name)!;
  server.upsert({
    ...current,
    status: {
      conditions: [
        {
          type: 'Ready',
          status,
          reason: status === 'True' ? 'ClusterReady' : 'ClusterNotReachable',
          message: '',
          lastTransitionTime: new Date().toISOString(),
        },
      ],
    },
  });
};

/**
 * A condition patched in Karmada → the evaluation of that cluster has started: the moment the app's
 * overlay row for it changes (its taint window opens), seen by a poller every 5 ms. The host runs with a
 * real sync timer, so the figure includes the watch, the queue hop and the evaluation.
 */
async function conditionToEvaluation(runs: number) {
  const storage = await startTestStorage();
  const server = await startKubeApiServer({ tokens: { 'bench-token-0123456789': 'bench' }, bookmarkIntervalMs: 1000 });
  const dir = mkdtempSync(join(tmpdir(), 'bench-karmada-'));
  const names = Array.from({ length: runs }, (_, i) => `c${i}`);
  for (const name of names) server.upsert(clusterObject(name));
  server.upsert(policy(3600));
  const host = await startHostProcess({
    AzureWebJobsStorage: storage.azurite.connectionString,
    KARMADA_KUBECONFIG: server.writeKubeconfig(dir, { token: 'bench-token-0123456789' }),
  });
  const overlays = new TableDocumentStore<{ policyWindows: Record<string, unknown> }>(storage.storage.table(TABLES.karmada), 'cluster');
  try {
    for (let i = 0; i < 30 && (await api(host.url, 'GET', 'healthz')).status !== 200; i++) await sleep(500);
    // Let the first sync's start-up evaluations settle.
    await sleep(3000);
    const latencies: number[] = [];
    for (const name of names) {
      const before = (await overlays.get(name))?.etag;
      const changedAt = performance.now();
      setReady(server, name, 'False');
      for (;;) {
        const now = await overlays.get(name);
        if (now && now.etag !== before && Object.keys(now.value.policyWindows).length > 0) break;
        if (performance.now() - changedAt > 30_000) throw new Error(`no evaluation of ${name} within 30 s`);
        await sleep(5);
      }
      latencies.push(performance.now() - changedAt);
      // Spread the changes over the sync period (they land at every phase of the watch invocation).
      await sleep(700 + Math.random() * 600);
    }
    return { runs, medianMs: round(median(latencies)), worstMs: round(Math.max(...latencies)), bestMs: round(Math.min(...latencies)) };
  } finally {
    await host.stop();
    await server.close();
    await storage.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The first sync of a fresh app against 1,000 clusters and 10,000 bindings: list, index, queue evaluations. */
async function startupSync(clusters: number, bindings: number) {
  const storage = await startTestStorage();
  const server = await startKubeApiServer({ tokens: { 'bench-token-0123456789': 'bench' }, historyLimit: 100_000 });
  const dir = mkdtempSync(join(tmpdir(), 'bench-karmada-'));
  try {
    for (let c = 0; c < clusters; c++) server.upsert(clusterObject(`c${c}`));
    for (let b = 0; b < bindings; b++) server.upsert(bindingObject(b, `c${b % clusters}`));
    server.upsert(policy(3600));
    const config = { ...loadConfig({}), karmadaKubeconfig: server.writeKubeconfig(dir, { token: 'bench-token-0123456789' }) };
    const plane = createControlPlane(storage.storage, config, { log: silentLogger });
    server.resetRequests();
    const started = performance.now();
    const report = await syncKarmada(plane, 0);
    const seconds = (performance.now() - started) / 1000;
    const placements = (await plane.ledger.listPlacements('c0')).length;
    return {
      clusters,
      bindings,
      seconds: round(seconds),
      apiRequests: server.requests.length,
      relisted: Object.values(report.kinds).every((k) => k.relisted),
      placementRowsOfOneCluster: placements,
    };
  } finally {
    await server.close();
    await storage.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One probe round over `count` clusters on one host: real TLS to one member endpoint that all of them name. */
async function probeRound(count: number) {
  const storage = await startTestStorage();
  const server = await startKubeApiServer({ tokens: { 'bench-token-0123456789': 'bench' }, historyLimit: 100_000 });
  const ca = makeCa();
  const member = await startMemberEndpoint(ca, 'bench-member');
  const dir = mkdtempSync(join(tmpdir(), 'bench-karmada-'));
  try {
    server.upsert({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'karmada-cluster' } });
    for (let c = 0; c < count; c++) {
      server.upsert({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: `c${c}`, namespace: 'karmada-cluster' },
        data: { token: Buffer.from(member.token).toString('base64'), caBundle: Buffer.from(ca.caCert).toString('base64') },
      });
      server.upsert(clusterObject(`c${c}`, { apiEndpoint: member.url, secretRef: { namespace: 'karmada-cluster', name: `c${c}` } }));
    }
    const config = { ...loadConfig({}), karmadaKubeconfig: server.writeKubeconfig(dir, { token: 'bench-token-0123456789' }) };
    const plane = createControlPlane(storage.storage, config, { log: silentLogger });
    const first = await probeClusters(plane);
    const second = await probeClusters(plane);
    return {
      clusters: count,
      firstRoundMs: first.durationMs,
      steadyRoundMs: second.durationMs,
      probedOk: second.ok,
      periodMs: config.probes.updateFrequencySeconds * 1000,
      concurrency: config.probes.probeConcurrency,
      note: 'first round reads every secretRef Secret and writes Ready where it changed; the steady round only probes',
    };
  } finally {
    await member.close();
    await server.close();
    await storage.close();
    ca.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Kubernetes API requests per eviction: everything the app asked the API server from the failure to the last eviction. */
async function requestsPerEviction(bindings: number, rate: number) {
  const storage = await startTestStorage();
  const server = await startKubeApiServer({ tokens: { 'bench-token-0123456789': 'bench' }, historyLimit: 100_000 });
  const dir = mkdtempSync(join(tmpdir(), 'bench-karmada-'));
  const clusters = Array.from({ length: 10 }, (_, i) => `c${i}`);
  for (const name of clusters) server.upsert(clusterObject(name));
  for (let b = 0; b < bindings; b++) server.upsert(bindingObject(b, 'c0'));
  server.upsert(policy(1));
  const host = await startHostProcess({
    AzureWebJobsStorage: storage.azurite.connectionString,
    KARMADA_KUBECONFIG: server.writeKubeconfig(dir, { token: 'bench-token-0123456789' }),
    FAILOVER_ENABLED: 'true',
    RESOURCE_EVICTION_RATE: String(rate),
  });
  try {
    for (let i = 0; i < 30 && (await api(host.url, 'GET', 'healthz')).status !== 200; i++) await sleep(500);
    await sleep(3000);
    // Idle first: what the timers ask of the API server with nothing failing.
    server.resetRequests();
    await sleep(10_000);
    const idlePerSecond = server.requests.length / 10;
    server.resetRequests();
    const started = performance.now();
    setReady(server, 'c0', 'False');
    for (;;) {
      const done = ((await api(host.url, 'GET', 'evictions?cluster=c0&state=done')).body.items as unknown[]).length;
      if (done >= bindings) break;
      if (performance.now() - started > 120_000) throw new Error(`only ${done} of ${bindings} evictions in 120 s`);
      await sleep(200);
    }
    const seconds = (performance.now() - started) / 1000;
    const byVerb: Record<string, number> = {};
    for (const r of server.requests)
      byVerb[`${r.verb} ${r.resource ?? ''}${r.subresource ? `/${r.subresource}` : ''}`] = (byVerb[`${r.verb} ${r.resource ?? ''}`] ?? 0) + 1;
    const total = server.requests.length;
    return {
      evictions: bindings,
      rate,
      seconds: round(seconds),
      requestsPerEviction: round(total / bindings),
      marginalRequestsPerEviction: round((total - idlePerSecond * seconds) / bindings),
      idleRequestsPerSecond: round(idlePerSecond),
      byVerb,
    };
  } finally {
    await host.stop();
    await server.close();
    await storage.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function karmadaRun() {
  const latency = await conditionToEvaluation(20);
  const startup = await startupSync(1000, 10_000);
  const probes = await probeRound(1000);
  const evictions = await requestsPerEviction(100, 20);
  return { conditionToEvaluation: latency, startupSync: startup, probeRound: probes, evictions };
}

if (require.main === module) {
  const part = process.argv[2];
  const run =
    part === 'latency'
      ? conditionToEvaluation(20)
      : part === 'startup'
        ? startupSync(Number(process.argv[3] ?? 1000), Number(process.argv[4] ?? 10_000))
        : part === 'probes'
          ? probeRound(Number(process.argv[3] ?? 1000))
          : part === 'evictions'
            ? requestsPerEviction(100, 20)
            : karmadaRun();
  run.then(
    (result) => console.log(JSON.stringify(result, null, 2)),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
