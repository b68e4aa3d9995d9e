/**
 * The app's Karmada-mode first sync against a REAL Karmada v1.18.2 control plane (test/helpers/realKarmada.ts:
 * kube-apiserver, etcd, Karmada's CRDs, its aggregated API server and webhook), at 1,000 Clusters and 10,000
 * ResourceBindings by default: the measurement `startupSync` in scripts/benchKarmada.ts makes against the
 * in-process test server. Prints one JSON line.
 *
 *   flock /tmp/realkarmada.lock npx tsx scripts/benchKarmadaFirstSync.ts [clusters] [bindings]
 *
 * The helper always starts karmada-controller-manager, karmada-scheduler and at least one kwok member (it
 * cannot register zero members). They are killed before seeding: thousands of Clusters with no member behind
 * them would keep the controllers busy probing and reconciling on a 2-core machine, and the member's Cluster
 * is deleted so that the app sees exactly the seeded ones. The JSON says what ran during the measurement.
 */
import { Agent, request } from 'node:https';
import { sleep } from '../shared/clock';
import { loadConfig } from '../shared/config';
import { syncKarmada } from '../shared/controllers/karmadaSync';
import { createControlPlane } from '../shared/runtime';
import { silentLogger } from '../shared/telemetry/log';
import { startTestStorage, TestStorage } from '../test/helpers/azurite';
import { ensureKarmadaBuilt, RealKarmada, startRealKarmada } from '../test/helpers/realKarmada';
import { findPid } from './benchKarmadaVsOurs';

/** Requests in flight while seeding: enough to keep kube-apiserver, etcd and the webhook busy on 2 cores. */
const CONCURRENCY = 32;
/** A seeding request is retried on a transient answer (429, 5xx: e.g. a webhook call that timed out under load). */
const ATTEMPTS = 5;
/** Quiet time after seeding, so that the informers of what still runs have caught up before the clock starts. */
const SETTLE_MS = 5000;

const round = (x: number) => Math.round(x * 10) / 10;
const log = (line: string) => process.stderr.write(`[karmada-first-sync ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

const clusterObject = (name: string) => ({
  apiVersion: 'cluster.karmada.io/v1alpha1',
  kind: 'Cluster',
  metadata: { name, labels: { bench: 'karmada' } },
  // apiEndpoint is optional in Karmada's validation, and the first sync never dials a member.
  spec: { syncMode: 'Push' },
});

const readyStatus = () => ({
  status: { conditions: [{ type: 'Ready', status: 'True', reason: 'ClusterReady', message: '', lastTransitionTime: new Date().toISOString() }] },
});

// Karmada's schema has no failover.cluster.tolerationSeconds (Strict validation refuses it), and status is
// dropped on create (a subresource): the app derives schedulerObservedGeneration from spec.clusters anyway.
const bindingObject = (i: number, cluster: string) => ({
  apiVersion: 'work.karmada.io/v1alpha2',
  kind: 'ResourceBinding',
  metadata: { name: `app-${i}`, namespace: 'default' },
  spec: {
    resource: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: `app-${i}` },
    replicas: 1,
    clusters: [{ name: cluster, replicas: 1 }],
    failover: { cluster: { purgeMode: 'Gracefully' } },
  },
});

// startupSync's policy has a 3600 s window, which Karmada's schema cannot express; this Karmada-shape one
// matches no cluster either while every Cluster is Ready=True, so the sync lists and indexes it the same way.
const taintPolicy = {
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind: 'ClusterTaintPolicy',
  metadata: { name: 'bench-not-ready' },
  spec: {
    targetClusters: { labelSelector: { matchLabels: { bench: 'karmada' } } },
    addOnConditions: [{ conditionType: 'Ready', operator: 'NotIn', statusValues: ['True'] }],
    removeOnConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['True'] }],
    taints: [{ key: 'bench/not-ready', effect: 'NoExecute' }],
  },
};

interface Answer {
  status: number;
  body: string;
}

/** Admin requests to the karmada-apiserver over a keep-alive pool (a new TLS handshake per object would dominate). */
function adminClient(karmada: RealKarmada) {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY, ca: karmada.caPem });
  const send = (method: string, path: string, body: unknown, contentType = 'application/json'): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const req = request(
        `${karmada.apiServerUrl}${path}`,
        {
          method,
          agent,
          headers: { authorization: `Bearer ${karmada.adminToken}`, accept: 'application/json', 'content-type': contentType },
          timeout: 60_000,
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path} timed out`)));
      req.on('error', reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
  /** A write that must succeed: retried while the answer is transient, refused objects fail the bench with the reason. */
  const write = async (method: string, path: string, body: unknown, contentType?: string, alreadyExistsIsFine = false) => {
    for (let attempt = 1; ; attempt++) {
      let answer: Answer | undefined;
      let failure: unknown;
      try {
        answer = await send(method, path, body, contentType);
      } catch (error) {
        failure = error;
      }
      if (answer && answer.status < 300) return;
      // A retried create whose first attempt got through after all.
      if (answer?.status === 409 && alreadyExistsIsFine) return;
      const transient = !answer || answer.status === 429 || answer.status >= 500;
      if (!transient || attempt >= ATTEMPTS)
        throw new Error(`${method} ${path}: ${answer ? `${answer.status} ${answer.body.slice(0, 2000)}` : String(failure)}`);
      await sleep(200 * attempt);
    }
  };
  return { send, write, close: () => agent.destroy() };
}

/** Runs `task(i)` for i in [0, count) with at most CONCURRENCY at once; the first failure stops the rest. */
async function pool(count: number, task: (i: number) => Promise<void>) {
  let next = 0;
  let failed: Error | undefined;
  const worker = async () => {
    while (failed === undefined && next < count) {
      const i = next++;
      try {
        await task(i);
      } catch (error) {
        failed ??= error instanceof Error ? error : new Error(String(error));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, count) }, worker));
  if (failed !== undefined) throw failed;
}

/** A process of this Karmada (its admin kubeconfig on the command line), by the name of its binary. */
const pidOf = (karmada: RealKarmada, binary: string): number | undefined =>
  findPid((argv) => argv[0]?.endsWith(`/${binary}`) && argv.includes(`--kubeconfig=${karmada.kubeconfigPath}`));

/** SIGKILLs one of the helper's child processes (each leads its own process group) and waits until it is gone. */
async function killComponent(karmada: RealKarmada, binary: string): Promise<boolean> {
  const pid = pidOf(karmada, binary);
  if (pid === undefined) return false;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    return false;
  }
  for (let i = 0; i < 100 && pidOf(karmada, binary) === pid; i++) await sleep(100);
  return true;
}

/** Everything but the API servers, etcd, the webhook and Karmada's kube-controller-manager, and the member's Cluster. */
async function quietKarmada(karmada: RealKarmada) {
  const killed: string[] = [];
  for (const binary of ['karmada-controller-manager', 'karmada-scheduler']) if (await killComponent(karmada, binary)) killed.push(binary);
  for (const member of karmada.members) {
    await member.kill();
    killed.push(`${member.name} (kube-apiserver, kube-controller-manager, kwok)`);
    // The cluster controller may have put its finalizer on it already, and it no longer runs to remove it.
    await karmada.kubectl(['delete', 'cluster', member.name, '--wait=false', '--ignore-not-found']);
    await karmada.kubectl(['patch', 'cluster', member.name, '--type=merge', '-p', '{"metadata":{"finalizers":null}}'], { allowFailure: true });
    await karmada.kubectl(['delete', 'secret', '-n', 'karmada-cluster', member.name, `${member.name}-impersonator`, '--ignore-not-found']);
  }
  for (let i = 0; ; i++) {
    const { status, body } = await karmada.get('/apis/cluster.karmada.io/v1alpha1/clusters');
    if (status === 200 && (body as { items: unknown[] }).items.length === 0) break;
    if (i >= 100) throw new Error(`the member Clusters are still there: ${status} ${JSON.stringify(body).slice(0, 1000)}`);
    await sleep(100);
  }
  return killed;
}

async function seed(karmada: RealKarmada, clusters: number, bindings: number) {
  const client = adminClient(karmada);
  // Strict: a field Karmada's schema does not declare is refused, not silently pruned.
  const strict = '?fieldValidation=Strict';
  try {
    const started = performance.now();
    await pool(clusters, (c) => client.write('POST', `/apis/cluster.karmada.io/v1alpha1/clusters${strict}`, clusterObject(`c${c}`), undefined, true));
    const clustersAt = performance.now();
    // Ready=True as in startupSync's objects: nobody else writes it here (karmada-controller-manager is gone).
    await pool(clusters, (c) =>
      client.write('PATCH', `/apis/cluster.karmada.io/v1alpha1/clusters/c${c}/status${strict}`, readyStatus(), 'application/merge-patch+json'),
    );
    const statusAt = performance.now();
    await client.write('POST', `/apis/policy.karmada.io/v1alpha1/clustertaintpolicies${strict}`, taintPolicy, undefined, true);
    await pool(bindings, (b) =>
      client.write(
        'POST',
        `/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings${strict}`,
        bindingObject(b, `c${b % clusters}`),
        undefined,
        true,
      ),
    );
    const bindingsAt = performance.now();

    // What the API server now serves, as the app will list it.
    const count = async (path: string) => {
      const answer = await client.send('GET', `${path}?limit=1`, undefined);
      const list = JSON.parse(answer.body) as { items?: unknown[]; metadata?: { remainingItemCount?: number } };
      return (list.items?.length ?? 0) + (list.metadata?.remainingItemCount ?? 0);
    };
    const served = {
      clusters: await count('/apis/cluster.karmada.io/v1alpha1/clusters'),
      resourceBindings: await count('/apis/work.karmada.io/v1alpha2/resourcebindings'),
    };
    if (served.clusters !== clusters || served.resourceBindings !== bindings)
      throw new Error(`seeded ${JSON.stringify(served)}, wanted ${clusters} and ${bindings}`);
    const notReady = (
      JSON.parse((await client.send('GET', '/apis/cluster.karmada.io/v1alpha1/clusters', undefined)).body) as {
        items: Array<{ metadata: { name: string }; status?: { conditions?: Array<{ type: string; status: string }> } }>;
      }
    ).items.filter((c) => !c.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True'));
    if (notReady.length > 0) throw new Error(`${notReady.length} Clusters are not Ready=True after the status writes, e.g. ${notReady[0].metadata.name}`);
    return {
      clustersSeconds: round((clustersAt - started) / 1000),
      clusterStatusSeconds: round((statusAt - clustersAt) / 1000),
      bindingsSeconds: round((bindingsAt - statusAt) / 1000),
      bindingsPerSecond: Math.round(bindings / ((bindingsAt - statusAt) / 1000)),
    };
  } finally {
    client.close();
  }
}

export async function karmadaFirstSyncBench(args: string[]): Promise<void> {
  const clusters = Number(args[0] ?? 1000);
  const bindings = Number(args[1] ?? 10_000);
  if (!(Number.isInteger(clusters) && clusters >= 1 && Number.isInteger(bindings) && bindings >= 0))
    throw new Error('usage: benchKarmadaFirstSync [clusters ≥ 1] [bindings ≥ 0]');
  const began = performance.now();
  let karmada: RealKarmada | undefined;
  let storage: TestStorage | undefined;
  let result: Record<string, unknown>;
  try {
    const binDir = await ensureKarmadaBuilt({ onOutput: (chunk) => process.stderr.write(chunk) });
    log('starting Karmada');
    karmada = await startRealKarmada({ members: 1, memberScheduler: false, waitReady: false, binDir, timeoutMs: 300_000 });
    const controlPlaneAt = performance.now();
    const killed = await quietKarmada(karmada);
    log(`killed ${killed.join(', ')}; seeding ${clusters} Clusters and ${bindings} ResourceBindings`);
    const seeding = await seed(karmada, clusters, bindings);
    log(`seeded: ${JSON.stringify(seeding)}`);
    await sleep(SETTLE_MS);

    storage = await startTestStorage();
    // The app's user (infra/karmada-rbac.yaml's rights only), as in production.
    const config = { ...loadConfig({}), karmadaKubeconfig: karmada.appKubeconfigPath };
    const plane = createControlPlane(storage.storage, config, { log: silentLogger });
    const setupSeconds = (performance.now() - began) / 1000;
    log('first sync');
    const started = performance.now();
    const report = await syncKarmada(plane, 0);
    const seconds = (performance.now() - started) / 1000;
    const placements = (await plane.ledger.listPlacements('c0')).length;
    const served = Object.values(report.kinds).filter((k) => !k.notServed);
    result = {
      clusters,
      bindings,
      seconds: round(seconds),
      placementRowsOfOneCluster: placements,
      relisted: served.length > 0 && served.every((k) => k.relisted),
      relistedByKind: Object.fromEntries(Object.entries(report.kinds).map(([kind, k]) => [kind, k.notServed ? 'not served' : k.relisted])),
      ...(report.degraded ? { degraded: report.degraded } : {}),
      setupSeconds: round(setupSeconds),
      setup: { controlPlaneSeconds: round((controlPlaneAt - began) / 1000), ...seeding, settleSeconds: SETTLE_MS / 1000 },
      karmada: {
        version: 'v1.18.2',
        runningDuringSync: [
          'etcd',
          'karmada-apiserver',
          'karmada-aggregated-apiserver',
          'karmada-webhook',
          'kube-controller-manager (namespace, garbagecollector)',
        ],
        startedByTheHelperThenKilledBeforeSeeding: killed,
      },
      kubeconfig: 'the app user (infra/karmada-rbac.yaml)',
    };
  } finally {
    await storage?.close().catch((error: unknown) => log(`closing Azurite: ${String(error)}`));
    await karmada?.stop().catch((error: unknown) => log(`stopping Karmada: ${String(error)}`));
  }
  result.totalSeconds = round((performance.now() - began) / 1000);
  console.log(JSON.stringify(result));
}

if (require.main === module) {
  karmadaFirstSyncBench(process.argv.slice(2)).then(
    // The app's Kubernetes client keeps connections open; nothing else is left to wait for.
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
