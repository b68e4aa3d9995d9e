/**
 * `npm run bench`: measures what the issues set targets for, prints a table and writes bench-results.json.
 * Everything runs against local hosts on loopback; nothing here is asserted (machines are noisy).
 */
import { spawn } from 'node:child_process';
import diagnosticsChannel from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeApplyDocuments } from '../shared/api/decode';
import { clusterKey, signReport } from '../shared/auth/signing';
import { sleep } from '../shared/clock';
import { loadConfig } from '../shared/config';
import { applyObjects as applyDecoded } from '../shared/controllers/apply';
import { applyCluster } from '../shared/controllers/clusters';
import { manageCluster } from '../shared/controllers/taintManager';
import { createControlPlane } from '../shared/runtime';
import { TableLedger } from '../shared/store/ledgerTable';
import { TABLES } from '../shared/store/tableStorage';
import { silentLogger } from '../shared/telemetry/log';
import { startTestStorage } from '../test/helpers/azurite';
import { achievedRate, applyObjects, binding, cluster, LedgerItem } from '../test/helpers/fleet';
import { api, HostProcess, startHostProcess } from '../test/helpers/hostProcess';
import { applyBench } from './benchApply';
import { idleBench } from './benchIdle';
import { karmadaRun } from './benchKarmada';
import { karmadaFirstSyncBench } from './benchKarmadaFirstSync';
import { karmadaVsOursBench } from './benchKarmadaVsOurs';
import { policyBench } from './benchPolicies';
import { scaleRun } from './benchScale';
import { taintPolicyBench } from './benchTaintPolicies';
import { consoleBundleSize, whatIfMemoryRun, whatIfRun } from './benchWhatIf';
import { countedStorage } from './countingProxy';
import { keepAlivePost } from './loadClient';

const ROOT = join(__dirname, '..');

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(q * xs.length) - 1)];
const round = (x: number) => Math.round(x * 10) / 10;
const summary = (xs: number[]) => ({
  runs: xs.length,
  medianMs: round(median(xs)),
  p95Ms: round(quantile(xs, 0.95)),
  worstMs: round(Math.max(...xs)),
  bestMs: round(Math.min(...xs)),
});

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
    // A fleet around the clusters measured: with only the first few registered, the blast-radius guard
    // (MAX_FLEET_SHARE_TAINTED_BY_POLICY) would rightly hold back the third and fourth taint of the first
    // group, and the bench would measure the guard, not the latency.
    await api(
      host.url,
      'POST',
      'apply',
      Array.from({ length: 8 }, (_, i) => ({ apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name: `latency-fleet-${i}` } })),
    );
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

/**
 * One failed cluster in a 12-cluster fleet with `count + 1` bindings, evicted at `rate` by `hosts` local hosts
 * sharing one Azurite. Every Table and Queue request of the hosts goes through a counting proxy; the
 * bench's own polling reads Azurite directly and is not counted.
 */
async function evictionRun(hosts: number, rate: number, count: number) {
  const { env, tableProxy, queueProxy, connection } = await countedStorage();
  const running: HostProcess[] = await Promise.all(
    Array.from({ length: hosts }, () => startHostProcess({ AzureWebJobsStorage: connection, FAILOVER_ENABLED: 'true', RESOURCE_EVICTION_RATE: String(rate) })),
  );
  const ledger = new TableLedger(env.storage.table(TABLES.ledger), env.storage.table(TABLES.journal));
  const ops = () => tableProxy.count() + queueProxy.count();
  try {
    await applyObjects(
      running[0].url,
      Array.from({ length: 12 }, (_, i) => cluster(`m${i + 1}`)),
    );
    // Workloads pinned to m1 and m2 by affinity: the eviction's cost, plus the rescheduling that keeps m2
    // (without affinity the scheduler would spread each one over all 11 healthy clusters, ten placement
    // index writes per binding that belong to scheduling, not to eviction).
    await applyObjects(
      running[0].url,
      Array.from({ length: count + 1 }, (_, i) => binding(`b${i}`, ['m1', 'm2'], { placement: { clusterAffinity: { clusterNames: ['m1', 'm2'] } } })),
    );
    // Background cost (timers, polling) of these hosts, per second, measured idle.
    await sleep(2000);
    const idleStart = ops();
    const idleFrom = performance.now();
    await sleep(6000);
    const idlePerSecond = (ops() - idleStart) / ((performance.now() - idleFrom) / 1000);
    tableProxy.reset();
    queueProxy.reset();
    const started = performance.now();
    await applyObjects(running[0].url, [cluster('m1', true)]);
    let rows: LedgerItem[] = [];
    for (;;) {
      const all = await ledger.listEvictions('m1');
      if (all.length === count + 1 && all.every((r) => r.record.state === 'done')) {
        rows = all.map((r) => ({
          cluster: 'm1',
          binding: { name: r.record.name },
          state: r.record.state,
          dueAt: r.record.dueAt,
          scheduledFor: r.record.scheduledFor ?? null,
          executedAt: r.record.executedAt ?? null,
          message: null,
        }));
        break;
      }
      if (performance.now() - started > 10 * 60_000) throw new Error('evictions did not finish');
      await sleep(500);
    }
    const seconds = (performance.now() - started) / 1000;
    const total = ops();
    if (process.env.BENCH_VERBOSE) console.error(JSON.stringify({ hosts, seconds, tables: tableProxy.breakdown(), queues: queueProxy.breakdown() }));
    return {
      hosts,
      evictions: rows.length,
      achieved: Math.round(achievedRate(rows) * 1000) / 1000,
      operationsPerEviction: Math.round((total / rows.length) * 10) / 10,
      marginalOperationsPerEviction: Math.round(((total - idlePerSecond * seconds) / rows.length) * 10) / 10,
      idleOperationsPerSecond: Math.round(idlePerSecond * 10) / 10,
    };
  } finally {
    await Promise.all(running.map((h) => h.stop()));
    await Promise.all([tableProxy.close(), queueProxy.close()]);
    await env.close();
  }
}

/** 7 of 10 clusters failed (a small fleet): nothing may be evicted. */
async function haltedRun(seconds: number) {
  const host = await startHostProcess({ FAILOVER_ENABLED: 'true', RESOURCE_EVICTION_RATE: '5' });
  try {
    await applyObjects(
      host.url,
      Array.from({ length: 10 }, (_, i) => cluster(`h${i + 1}`, i < 7)),
    );
    await applyObjects(
      host.url,
      Array.from({ length: 20 }, (_, i) => binding(`w${i}`, ['h1', 'h9'])),
    );
    await sleep(seconds * 1000);
    const fleet = (await api(host.url, 'GET', 'fleet')).body;
    const done = (await api(host.url, 'GET', 'evictions?state=done')).body.items.length;
    return { seconds, tier: fleet.tier, pending: fleet.pending, evicted: done };
  } finally {
    await host.stop();
  }
}

/**
 * Planning: a failed cluster with `count` bindings, from the taint write to every ledger row recorded
 * (in-process against Azurite; the placement index is seeded in bulk as a binding import would).
 */
async function planningRun(count: number) {
  const env = await startTestStorage();
  try {
    const plane = createControlPlane(env.storage, loadConfig({}), { log: silentLogger });
    await applyCluster(plane, cluster('big') as never);
    await plane.ledger.upsertPlacements(
      Array.from({ length: count }, (_, i) => ({
        cluster: 'big',
        kind: 'ResourceBinding' as const,
        namespace: 'default',
        name: `app-${i}`,
        resourceKind: 'apps/v1/Deployment',
        replicas: 2,
        tolerations: [],
        rev: 1,
      })),
    );
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    await applyCluster(plane, cluster('big', true) as never);
    const outcome = await manageCluster(plane, 'big');
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    if (process.env.BENCH_VERBOSE) console.error(`planning cpu ${(cpu.user + cpu.system) / 1e6}s over ${seconds}s wall`);
    const recorded = (await plane.ledger.listEvictions('big')).length;
    return { bindings: count, planned: outcome.planned, recorded, seconds: Math.round(seconds * 100) / 100, bindingsPerSecond: Math.round(recorded / seconds) };
  } finally {
    await env.close();
  }
}

const SIGNING_ROOT = 'bench-signing-key-0123456789';
const BENCH_ADMIN = 'bench-admin-token-0123456789';

/**
 * Signed Ready=True reports from `names` against a host with every check on, `concurrency` in flight over
 * kept-alive connections on loopback: request `i` reports for `names[i % names.length]`, until `requests`
 * were sent or `maxSeconds` passed. Each carries a fresh observedAt (so each signature is new) and unchanged
 * conditions, as a steady fleet sends.
 */
async function signedReports(host: HostProcess, names: string[], requests: number, concurrency: number, maxSeconds: number) {
  const keys = names.map((n) => clusterKey(SIGNING_ROOT, n));
  const { post, close: closeClient } = keepAlivePost(host.url, concurrency);
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < requests && performance.now() - started < maxSeconds * 1000) {
      const c = next++ % names.length;
      const body = JSON.stringify({ conditions: [{ type: 'Ready', status: 'True', reason: 'ClusterReady' }], observedAt: new Date().toISOString() });
      const ts = String(Math.floor(Date.now() / 1000));
      const headers = { 'content-type': 'application/json', 'x-failover-timestamp': ts, 'x-failover-signature': signReport(keys[c], ts, body) };
      const t0 = performance.now();
      const status = await post(`/api/clusters/${names[c]}/status`, headers, body);
      latencies.push(performance.now() - t0);
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  closeClient();
  const ok = statuses['200'] ?? 0;
  return {
    sent: latencies.length,
    ok,
    statuses,
    seconds: Math.round(seconds * 100) / 100,
    perSecond: Math.round(ok / seconds),
    p50Ms: round(quantile(latencies, 0.5)),
    p99Ms: round(quantile(latencies, 0.99)),
  };
}

const signingHost = () => startHostProcess({ AUTH_MODE: 'required', REPORTER_SIGNING_KEY: SIGNING_ROOT, ADMIN_TOKEN: BENCH_ADMIN });

/** Signed health reports of `clusters` registered clusters, `concurrency` in flight, on one host. */
async function webhookLoad(clusters: number, requests: number, concurrency: number, maxSeconds: number) {
  const host = await signingHost();
  try {
    const names = Array.from({ length: clusters }, (_, i) => `load-${i}`);
    const res = await fetch(`${host.url}/api/apply`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${BENCH_ADMIN}` },
      body: JSON.stringify(names.map((n) => cluster(n))),
    });
    if (res.status !== 200) throw new Error(`apply failed: ${res.status}`);
    const { perSecond, ...run } = await signedReports(host, names, requests, concurrency, maxSeconds);
    return { clusters, concurrency, ...run, requestsPerSecond: perSecond };
  } finally {
    await host.stop();
  }
}

/** Clusters that register before the measured ones: the host has served requests, as a running host has. */
const REGISTRATION_WARM_UP = 300;

/**
 * New clusters registering by their first signed health report (AUTO_REGISTER_CLUSTERS, the default): each
 * of `clusters` reports once, `concurrency` in flight, on one host, after REGISTRATION_WARM_UP others have
 * registered the same way (unmeasured: a host just started runs its first requests unoptimised).
 */
async function registrationLoad(clusters: number, concurrency: number) {
  const host = await signingHost();
  try {
    const warmUp = Array.from({ length: REGISTRATION_WARM_UP }, (_, i) => `warm-${i}`);
    await signedReports(host, warmUp, warmUp.length, concurrency, Number.POSITIVE_INFINITY);
    const names = Array.from({ length: clusters }, (_, i) => `new-${i}`);
    const { perSecond, ...run } = await signedReports(host, names, clusters, concurrency, Number.POSITIVE_INFINITY);
    return { clusters, concurrency, warmUpClusters: warmUp.length, ...run, reportsPerSecond: perSecond };
  } finally {
    await host.stop();
  }
}

/**
 * Application failover delay: for each run a workload reports Unhealthy on its cluster; the delay is the
 * eviction (its activeEvictionHistory time) minus the stored start of the Unhealthy stretch, against
 * tolerationSeconds. Runs start 300 ms apart so their deadlines do not coincide.
 */
async function applicationFailoverDelay(runs: number, tolerationSeconds: number) {
  const host = await startHostProcess({ FAILOVER_ENABLED: 'true' });
  try {
    await applyObjects(host.url, [cluster('af-a'), cluster('af-b')]);
    const beyond: number[] = [];
    const one = async (i: number) => {
      const name = `af-${i}`;
      await applyObjects(host.url, [
        binding(name, ['af-a'], {
          placement: { clusterAffinity: { clusterNames: ['af-a', 'af-b'] } },
          failover: { application: { decisionConditions: { tolerationSeconds } } },
        }),
      ]);
      const reported = await api(host.url, 'POST', `resourcebindings/default/${name}/status`, {
        aggregatedStatus: [{ clusterName: 'af-a', health: 'Unhealthy' }],
      });
      const since = Date.parse(reported.body.status.aggregatedStatus[0].unhealthySince);
      for (;;) {
        const history = (await api(host.url, 'GET', `resourcebindings/default/${name}`)).body.spec.activeEvictionHistory;
        if (history?.length) {
          beyond.push(Date.parse(history[0].creationTimestamp) - since - tolerationSeconds * 1000);
          return;
        }
        await sleep(20);
      }
    };
    await Promise.all(Array.from({ length: runs }, (_, i) => sleep(i * 300).then(() => one(i))));
    return { tolerationSeconds, beyondToleration: summary(beyond) };
  } finally {
    await host.stop();
  }
}

/** A PropagationPolicy of every Deployment in `default`, onto `clusters`. */
const allDeploymentsPolicy = (clusters: string[]) => ({
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind: 'PropagationPolicy',
  metadata: { name: 'all-deployments', namespace: 'default' },
  spec: { resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment' }], placement: { clusterAffinity: { clusterNames: clusters } } },
});

/** `count` Deployments app-0, app-1, … in `default`. */
const bulkDeployments = (count: number) =>
  Array.from({ length: count }, (_, i) => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: `app-${i}`, labels: { app: `app-${i}` } },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: `app-${i}` } },
      template: { metadata: { labels: { app: `app-${i}` } }, spec: { containers: [{ name: 'app', image: 'nginx' }] } },
    },
  }));

/**
 * The detector at scale: `count` Deployments and their PropagationPolicy decoded and applied as one request
 * (below the HTTP layer, whose body limit a bulk import raises with MAX_REQUEST_BODY_BYTES), then a policy
 * change that derives every binding again.
 */
async function templatesRun(templateCount: number) {
  const env = await startTestStorage();
  // Counted in this process as the SDK sends them (Azurite answers from its own thread): a counting proxy
  // here would double the HTTP work of the thread being measured.
  let sent = 0;
  const count = () => void sent++;
  diagnosticsChannel.subscribe('http.client.request.start', count);
  try {
    const plane = createControlPlane(env.storage, loadConfig({}), { log: silentLogger });
    const deployments = bulkDeployments(templateCount);
    const requests = () => sent;
    let before = requests();
    let started = performance.now();
    await applyDecoded(plane, decodeApplyDocuments([allDeploymentsPolicy(['member1', 'member2']), ...deployments]));
    const applySeconds = (performance.now() - started) / 1000;
    const applyRequests = requests() - before;
    const bindings = (await plane.bindings.list()).length;
    before = requests();
    started = performance.now();
    await applyDecoded(plane, decodeApplyDocuments([allDeploymentsPolicy(['member1', 'member3'])]));
    const rederiveSeconds = (performance.now() - started) / 1000;
    const rederiveRequests = requests() - before;
    const moved = (await plane.bindings.list()).filter((b) => b.value.spec.placement?.clusterAffinity?.clusterNames?.includes('member3')).length;
    return {
      templates: templateCount,
      bindings,
      applySeconds: Math.round(applySeconds * 100) / 100,
      templatesPerSecond: Math.round(bindings / applySeconds),
      requestsPerTemplate: Math.round((applyRequests / templateCount) * 100) / 100,
      rederived: moved,
      rederiveSeconds: Math.round(rederiveSeconds * 100) / 100,
      bindingsPerSecond: Math.round(moved / rederiveSeconds),
      requestsPerRederivedBinding: Math.round((rederiveRequests / templateCount) * 100) / 100,
    };
  } finally {
    diagnosticsChannel.unsubscribe('http.client.request.start', count);
    await env.close();
  }
}

/**
 * A bulk import over HTTP on the local host: `count` Deployments and their PropagationPolicy in one POST
 * /api/apply, which goes to the background (more than APPLY_INLINE_MAX_OBJECTS objects). Measures the 202's
 * answer time (validated and stored, nothing applied yet) and the time until the operation says Succeeded.
 */
async function backgroundApplyRun(count: number) {
  const host = await startHostProcess({ MAX_REQUEST_BODY_BYTES: String(100 * 1024 * 1024) });
  try {
    const objects = [allDeploymentsPolicy(['member1', 'member2']), ...bulkDeployments(count)];
    const body = JSON.stringify(objects);
    const started = performance.now();
    const res = await fetch(`${host.url}/api/apply`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const acceptedSeconds = (performance.now() - started) / 1000;
    if (res.status !== 202) throw new Error(`expected 202, got ${res.status}: ${(await res.text()).slice(0, 300)}`);
    const location = res.headers.get('location')!;
    let polled: { state: string; applied: number; total: number };
    for (;;) {
      polled = (await (await fetch(`${host.url}${location}`)).json()) as typeof polled;
      if (polled.state !== 'Running') break;
      await sleep(200);
    }
    const doneSeconds = (performance.now() - started) / 1000;
    return {
      objects: objects.length,
      bodyBytes: Buffer.byteLength(body),
      state: polled.state,
      applied: polled.applied,
      acceptedSeconds: Math.round(acceptedSeconds * 100) / 100,
      doneSeconds: Math.round(doneSeconds * 100) / 100,
      objectsPerSecond: Math.round(polled.applied / doneSeconds),
    };
  } finally {
    await host.stop();
  }
}

async function main() {
  // `npm run bench -- evictions` measures only the eviction runs (a quick check while tuning); the full
  // run, with no argument, writes bench-results.json.
  if (process.argv[2] === 'evictions') {
    for (const hosts of (process.env.BENCH_HOSTS ?? '1,2,4').split(',').map(Number)) console.log(JSON.stringify(await evictionRun(hosts, 5, 60)));
    return;
  }
  if (process.argv[2] === 'webhook') {
    console.log(JSON.stringify(await webhookLoad(100, 20_000, Number(process.argv[3] ?? 8), 20)));
    return;
  }
  if (process.argv[2] === 'taints') {
    const latency = await taintLatency(20, 3, 4);
    console.log(
      JSON.stringify({ addRecorded: summary(latency.addRecorded), addObserved: summary(latency.addObserved), removeObserved: summary(latency.removeObserved) }),
    );
    return;
  }
  if (process.argv[2] === 'register') {
    const run = await registrationLoad(Number(process.argv[3] ?? 1000), Number(process.argv[4] ?? 32));
    console.log(
      `${run.clusters} new clusters, ${run.concurrency} in flight: ${run.reportsPerSecond} reports/s, p50 ${run.p50Ms} ms, p99 ${run.p99Ms} ms, ${run.sent - run.ok} errors (target ≥ 500/s, 0 errors)`,
    );
    console.log(JSON.stringify(run));
    return;
  }
  if (process.argv[2] === 'appfailover') {
    console.log(JSON.stringify(await applicationFailoverDelay(20, 3)));
    return;
  }
  if (process.argv[2] === 'apply-background') {
    console.log(JSON.stringify(await backgroundApplyRun(Number(process.argv[3] ?? 10_000))));
    return;
  }
  if (process.argv[2] === 'templates') {
    const run = await templatesRun(Number(process.argv[3] ?? 10_000));
    console.log(
      `${run.templates} templates + policy, one apply: ${run.templatesPerSecond}/s, ${run.requestsPerTemplate} requests each (target ≥ 1,000/s, ≤ 2.1 requests each)`,
    );
    console.log(`policy change re-deriving ${run.rederived} bindings: ${run.bindingsPerSecond}/s (target ≥ 1,000/s)`);
    console.log(JSON.stringify(run));
    return;
  }
  if (process.argv[2] === 'idle') return void (await idleBench(process.argv.slice(3)));
  if (process.argv[2] === 'policies') {
    const [namespaces, perNamespace, ...checkpoints] = process.argv.slice(3).map(Number);
    console.log(JSON.stringify(await policyBench(namespaces || undefined, perNamespace || undefined, checkpoints.length > 0 ? checkpoints : undefined)));
    return;
  }
  if (process.argv[2] === 'taintpolicies') {
    const run = await taintPolicyBench(Number(process.argv[3] ?? 2000));
    console.log(`ClusterTaintPolicy apply and delete on ${run.clusters} clusters`);
    console.log('policy | clusters targeted | apply ms | delete ms');
    for (const r of run.runs) console.log(`${r.policy} | ${r.targeted} | ${r.applyMs} | ${r.deleteMs}`);
    console.log(JSON.stringify(run));
    return;
  }
  if (process.argv[2] === 'scale') {
    // 100 and 1,000 clusters at 10,000 bindings, then the target size (or the sizes given).
    const sizes: Array<[number, number]> = process.argv[3]
      ? [[Number(process.argv[3]), Number(process.argv[4] ?? 100_000)]]
      : [
          [100, 10_000],
          [1000, 10_000],
          [1000, 100_000],
        ];
    const runs = [];
    for (const [clusters, bindings] of sizes) runs.push(await scaleRun(clusters, bindings, 10, 50, 120));
    writeFileSync(join(ROOT, 'bench-scale.json'), JSON.stringify(runs, null, 2) + '\n');
    console.log(
      'clusters | bindings | idle req/min | idle rows read/min | host MB at the phase ends (≤ 300), and peak | failure → first eviction, median of failed clusters (≤ 1 s) | planning/s end to end (× ceiling) | planner/s (× ceiling) | achieved/50 overall | steady | req/eviction',
    );
    for (const r of runs) {
      console.log(
        `${r.clusters} | ${r.bindings} | ${r.idle.requestsPerMinute} | ${r.idle.tableRowsReadPerMinute} | ${Math.max(r.idle.hostMemoryMb, r.evictions.hostMemoryMb)} (peak ${Math.max(r.idle.hostPeakMemoryMb, r.planning.hostPeakMemoryMb, r.evictions.hostPeakMemoryMb)}) | ${r.firstEviction.perClusterMedianSeconds ?? 'none'} s (first ${r.firstEviction.seconds ?? 'none'} s; median planning began ${r.firstEviction.medianStagesSeconds.planningBegan ?? 'none'} s, first slot ${r.firstEviction.medianStagesSeconds.firstSlot ?? 'none'} s, whole plan ${r.firstEviction.medianStagesSeconds.wholePlanStored ?? 'none'} s) | ${r.planning.perSecond} (×${r.planning.ratio}) | ${r.planning.plannerPerSecond} (×${r.planning.plannerRatio}) | ${r.evictions.achieved} (×${r.evictions.ratio}) | ${r.evictions.steadyAchieved} (×${r.evictions.steadyRatio}) | ${r.evictions.requestsPerEviction}`,
      );
    }
    return;
  }
  if (process.argv[2] === 'whatif' && process.argv.includes('--memory')) {
    const [clusters, bindings] = process.argv.slice(3).filter((a) => a !== '--memory');
    const run = await whatIfMemoryRun(Number(clusters ?? 1000), Number(bindings ?? 100_000));
    writeFileSync(join(ROOT, 'bench-whatif-memory.json'), JSON.stringify(run, null, 2) + '\n');
    console.log(`what-if on ${run.clusters} clusters and ${run.bindings} bindings, in-memory ports, ${run.runs} runs each`);
    console.log('clusters failing | evictions | median ms | worst ms');
    for (const r of run.results) console.log(`${r.failing} | ${r.evictions} | ${r.medianMs} | ${r.worstMs}`);
    return;
  }
  if (process.argv[2] === 'whatif') {
    const run = await whatIfRun(Number(process.argv[3] ?? 1000), Number(process.argv[4] ?? 100_000));
    const bundle = consoleBundleSize();
    writeFileSync(join(ROOT, 'bench-whatif.json'), JSON.stringify({ whatIf: run, consoleBundle: bundle }, null, 2) + '\n');
    console.log(`what-if on ${run.clusters} clusters and ${run.bindings} bindings (seeded in ${run.seedSeconds} s), ${run.runs} runs each`);
    console.log('clusters failing | evictions | blocked | tier | median ms | worst ms | storage unchanged');
    for (const r of run.results) console.log(`${r.failing} | ${r.evictions} | ${r.blocked} | ${r.tier} | ${r.medianMs} | ${r.worstMs} | ${r.storageUnchanged}`);
    if (bundle) console.log(`console bundle: ${bundle.bytes} bytes, ${bundle.gzipBytes} bytes gzip`);
    return;
  }
  if (process.argv[2] === 'apply') return applyBench(ROOT, process.argv.slice(3).map(Number));
  if (process.argv[2] === 'karmada') {
    console.log(JSON.stringify(await karmadaRun(), null, 2));
    return;
  }
  // Starts real Karmada control planes: run it under flock /tmp/realkarmada.lock.
  if (process.argv[2] === 'karmada-vs-ours') return karmadaVsOursBench(process.argv.slice(3));
  // The first sync against a real Karmada control plane (run it under the same lock).
  if (process.argv[2] === 'karmada-first-sync') {
    await karmadaFirstSyncBench(process.argv.slice(3));
    // The app's Kubernetes client keeps connections open.
    process.exit(0);
  }
  if (process.argv[2] === 'planning') {
    console.log(JSON.stringify(await planningRun(20_000)));
    return;
  }
  const startup = await startupTime(5);
  const latency = await taintLatency(20, 3, 4);
  const configuredRate = 5;
  const evictionRuns = [];
  for (const hosts of [1, 2, 4]) evictionRuns.push(await evictionRun(hosts, configuredRate, 60));
  const halted = await haltedRun(6);
  const planning = await planningRun(20_000);
  // The headline at 8 requests in flight (what a fleet of reporters produces: each waits for its answer);
  // 32 in flight shows the saturation throughput and its queueing latency.
  const webhook = await webhookLoad(100, 20_000, 8, 20);
  const webhookSaturated = await webhookLoad(100, 20_000, 32, 20);
  const registration = await registrationLoad(1000, 32);
  const applicationFailover = await applicationFailoverDelay(20, 3);
  const templates = await templatesRun(10_000);
  // The failure the users feel, at scale: 10 of 1,000 clusters fail with 100,000 bindings stored (an idle
  // minute first; 20 s of evictions are enough for the first ones and the memory they cost).
  const scale = await scaleRun(1000, 100_000, 10, 50, 20);
  const karmada = await karmadaRun();
  const results = {
    machine: { node: process.version, cpus: (await import('node:os')).cpus().length },
    startup: { command: 'npm start → first 200 from GET /api/healthz', ...summary(startup) },
    taintLatency: {
      windowSeconds: 3,
      add: { recorded: summary(latency.addRecorded), observed: summary(latency.addObserved) },
      remove: { observed: summary(latency.removeObserved) },
    },
    evictionRate: {
      configured: configuredRate,
      achieved: Object.fromEntries(evictionRuns.map((r) => [`${r.hosts}host${r.hosts > 1 ? 's' : ''}`, r.achieved])),
      ratio: Object.fromEntries(evictionRuns.map((r) => [`${r.hosts}host${r.hosts > 1 ? 's' : ''}`, Math.round((r.achieved / configuredRate) * 1000) / 1000])),
      runs: evictionRuns,
      halted,
    },
    planning,
    webhook: { ...webhook, saturated: webhookSaturated },
    registration,
    applicationFailover: { ...applicationFailover, note: 'eviction time minus first Unhealthy report minus tolerationSeconds' },
    templates,
    scale,
    karmada,
    storage: {
      operationsPerEviction: evictionRuns[0].operationsPerEviction,
      marginalOperationsPerEviction: evictionRuns[0].marginalOperationsPerEviction,
      idleOperationsPerSecond: evictionRuns[0].idleOperationsPerSecond,
      note: 'every Table and Queue request of one host from the taint to the last eviction, divided by evictions; marginal subtracts the idle rate (timers, polling) measured before',
    },
  };
  writeFileSync(join(ROOT, 'bench-results.json'), JSON.stringify(results, null, 2) + '\n');
  const rows: Array<[string, string, string, string]> = [
    ['startup (npm start → serving)', `${results.startup.medianMs} ms`, `${results.startup.worstMs} ms`, '≤ 3000 ms'],
    [
      'taint add, beyond window (timeAdded)',
      `${results.taintLatency.add.recorded.medianMs} ms`,
      `${results.taintLatency.add.recorded.worstMs} ms`,
      'median ≤ 300, worst ≤ 1000',
    ],
    [
      'taint add, beyond window (seen by poller)',
      `${results.taintLatency.add.observed.medianMs} ms`,
      `${results.taintLatency.add.observed.worstMs} ms`,
      'median ≤ 300, worst ≤ 1000',
    ],
    [
      'taint remove, beyond window (seen)',
      `${results.taintLatency.remove.observed.medianMs} ms`,
      `${results.taintLatency.remove.observed.worstMs} ms`,
      'median ≤ 300, worst ≤ 1000',
    ],
    ...evictionRuns.map((r): [string, string, string, string] => [
      `eviction rate, ${r.hosts} host(s), ${r.evictions} evictions`,
      `${r.achieved}/s (×${(r.achieved / configuredRate).toFixed(3)})`,
      `configured ${configuredRate}/s`,
      'ratio 0.95–1.05',
    ]),
    ['evictions while halted (7 of 10 failed)', `${halted.evicted}`, `over ${halted.seconds} s`, '0'],
    ['planning, 20,000 bindings', `${planning.bindingsPerSecond}/s`, `${planning.seconds} s`, '≥ 6,000/s'],
    ['signed reports, 100 clusters, 8 in flight', `${webhook.requestsPerSecond}/s`, `p99 ${webhook.p99Ms} ms (p50 ${webhook.p50Ms})`, '≥ 1,000/s, p99 ≤ 50 ms'],
    [
      'signed reports, 100 clusters, 32 in flight',
      `${webhookSaturated.requestsPerSecond}/s`,
      `p99 ${webhookSaturated.p99Ms} ms (p50 ${webhookSaturated.p50Ms})`,
      '(saturation)',
    ],
    [
      `new clusters registering by their first signed report, ${registration.clusters}, ${registration.concurrency} in flight`,
      `${registration.reportsPerSecond}/s`,
      `p99 ${registration.p99Ms} ms, ${registration.sent - registration.ok} errors`,
      '≥ 500/s, 0 errors',
    ],
    [
      `application failover beyond toleration (${applicationFailover.tolerationSeconds} s)`,
      `${applicationFailover.beyondToleration.medianMs} ms`,
      `${applicationFailover.beyondToleration.worstMs} ms`,
      'within about 1 s',
    ],
    [
      '10,000 templates + policy, one apply → bindings',
      `${templates.templatesPerSecond}/s`,
      `${templates.applySeconds} s, ${templates.requestsPerTemplate} requests each`,
      '≥ 1,000/s, ≤ 2.1 requests each',
    ],
    [
      'policy change re-deriving 10,000 bindings',
      `${templates.bindingsPerSecond}/s`,
      `${templates.rederiveSeconds} s, ${templates.requestsPerRederivedBinding} requests each`,
      '≥ 1,000/s',
    ],
    [
      `failure → first eviction executed, median of ${scale.planning.failing} failed clusters, ${scale.clusters} clusters / ${scale.bindings} bindings`,
      `${scale.firstEviction.perClusterMedianSeconds ?? 'none'} s`,
      `${scale.firstEviction.perClusterSeconds.at(-1) ?? 'none'} s`,
      '≤ 1 s',
    ],
    [
      `host memory, ${scale.clusters} clusters / ${scale.bindings} bindings, idle · planning · evictions`,
      `${Math.max(scale.idle.hostPeakMemoryMb, scale.planning.hostPeakMemoryMb, scale.evictions.hostPeakMemoryMb)} MB peak`,
      `${scale.idle.hostPeakMemoryMb} · ${scale.planning.hostPeakMemoryMb} · ${scale.evictions.hostPeakMemoryMb} MB`,
      '≤ 300 MB in every phase',
    ],
    [
      'Karmada: condition change → evaluation start',
      `${karmada.conditionToEvaluation.medianMs} ms`,
      `${karmada.conditionToEvaluation.worstMs} ms`,
      'median ≤ 1000 ms',
    ],
    [
      `Karmada: start-up sync, ${karmada.startupSync.clusters} clusters + ${karmada.startupSync.bindings} bindings`,
      `${karmada.startupSync.seconds} s`,
      `${karmada.startupSync.apiRequests} API requests`,
      '≤ 10 s',
    ],
    [
      `Karmada: probe round, ${karmada.probeRound.clusters} clusters`,
      `${karmada.probeRound.steadyRoundMs} ms`,
      `first ${karmada.probeRound.firstRoundMs} ms`,
      `< ${karmada.probeRound.periodMs} ms`,
    ],
    [
      `Karmada: API requests per eviction (${karmada.evictions.evictions})`,
      `${karmada.evictions.requestsPerEviction}`,
      `marginal ${karmada.evictions.marginalRequestsPerEviction}`,
      '',
    ],
    ['storage ops per eviction (all, 1 host)', `${evictionRuns[0].operationsPerEviction}`, `marginal ${evictionRuns[0].marginalOperationsPerEviction}`, '≤ 8'],
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
