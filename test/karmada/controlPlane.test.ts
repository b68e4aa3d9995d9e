import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureKarmadaBuilt, RealKarmada, startRealKarmada } from '../helpers/realKarmada';

/**
 * Smoke test of the real Karmada control plane the tests under test/karmada run against: it builds (once,
 * cached outside the repository), starts with three kwok-backed members, takes the repository's CRDs and
 * RBAC as a real API server takes them, and Karmada's own clusterStatus controller follows a member that dies
 * and comes back.
 */

const ROOT = join(__dirname, '..', '..');
const BUILD_TIMEOUT_MS = 30 * 60_000;

type Condition = { type: string; status: string; reason?: string };
type Cluster = { metadata: { name: string }; status?: { conditions?: Condition[] } };

let binDir: string;
let karmada: RealKarmada | undefined;

const readyOf = (cluster: Cluster) => cluster.status?.conditions?.find((c) => c.type === 'Ready');

async function clusters(k: RealKarmada): Promise<Cluster[]> {
  const res = await k.get('/apis/cluster.karmada.io/v1alpha1/clusters');
  expect(res.status).toBe(200);
  return res.body.items as Cluster[];
}

async function waitReady(k: RealKarmada, name: string, status: 'True' | 'False', timeoutMs: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    const cluster = (await clusters(k)).find((c) => c.metadata.name === name);
    if (cluster && readyOf(cluster)?.status === status) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`${name} not Ready=${status} within ${timeoutMs} ms: ${JSON.stringify(cluster?.status?.conditions)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

beforeAll(async () => {
  const started = Date.now();
  binDir = await ensureKarmadaBuilt({ onOutput: (chunk) => process.stderr.write(chunk) });
  process.stderr.write(`[controlPlane] binaries ready in ${((Date.now() - started) / 1000).toFixed(1)} s: ${binDir}\n`);
}, BUILD_TIMEOUT_MS);

afterAll(async () => {
  await karmada?.stop();
});

describe('a real Karmada control plane', () => {
  it('starts with three members that Karmada reports Ready', async () => {
    const started = Date.now();
    karmada = await startRealKarmada({ members: 3, binDir });
    const seconds = (Date.now() - started) / 1000;
    process.stderr.write(`[controlPlane] cold start to three Ready members: ${seconds.toFixed(1)} s ${JSON.stringify(karmada.timings)}\n`);

    const list = await clusters(karmada);
    expect(list.map((c) => c.metadata.name).sort()).toEqual(['member1', 'member2', 'member3']);
    for (const cluster of list) expect(readyOf(cluster)?.status).toBe('True');

    // kwok runs the members' node: Ready, as a kubelet would report it.
    const nodes = JSON.parse((await karmada.members[0].kubectl(['get', 'nodes', '-o', 'json'])).stdout) as {
      items: Array<{ status: { conditions: Condition[] } }>;
    };
    expect(nodes.items).toHaveLength(1);
    expect(nodes.items[0].status.conditions.find((c) => c.type === 'Ready')?.status).toBe('True');
  });

  it('accepts every CRD under infra/', async () => {
    const k = karmada!;
    const files = readdirSync(join(ROOT, 'infra')).filter((f) => /crd.*\.ya?ml$/.test(f));
    expect(files.length).toBeGreaterThan(0);
    const refused: string[] = [];
    for (const file of files) {
      const result = await k.kubectl(['apply', '--server-side', '-f', join(ROOT, 'infra', file)], { allowFailure: true });
      if (result.code !== 0) refused.push(`${file}: ${result.stderr.trim() || result.stdout.trim()}`);
    }
    expect(refused).toEqual([]);
    await k.kubectl(['wait', '--for=condition=Established', 'crd', '--all', '--timeout=30s']);
  });

  it('gives the app exactly infra/karmada-rbac.yaml', async () => {
    const k = karmada!;
    const app = { kubeconfig: k.appKubeconfigPath, allowFailure: true };
    const list = await k.kubectl(['get', 'clusters', '-o', 'name'], app);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout.trim().split('\n').sort()).toEqual([
      'cluster.cluster.karmada.io/member1',
      'cluster.cluster.karmada.io/member2',
      'cluster.cluster.karmada.io/member3',
    ]);
    const secret = await k.kubectl(['get', 'secret', '-n', 'karmada-cluster', 'member1', '-o', 'name'], app);
    expect(secret.code, secret.stderr).toBe(0);

    // Outside the rules: listing secrets (only get is granted), deleting a cluster, writing a policy.
    const listSecrets = await k.kubectl(['get', 'secrets', '-n', 'karmada-cluster'], app);
    expect(listSecrets.code).not.toBe(0);
    expect(listSecrets.stderr).toMatch(/forbidden/i);
    const deleteCluster = await k.kubectl(['delete', 'cluster', 'member1', '--dry-run=server'], app);
    expect(deleteCluster.code).not.toBe(0);
    expect(deleteCluster.stderr).toMatch(/forbidden/i);
    const canCreatePolicy = await k.kubectl(['auth', 'can-i', 'create', 'propagationpolicies.policy.karmada.io', '-n', 'default'], app);
    expect(canCreatePolicy.stdout.trim()).toBe('no');
  });

  it("runs Karmada's webhook, and refuses its writes while it is down", async () => {
    const k = karmada!;
    // Karmada's webhook rule the app's own validation lacks: application failover needs propagateDeps.
    const policy = `apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: smoke, namespace: default}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: smoke}]
  placement: {clusterAffinity: {clusterNames: [member1, member2]}}
  failover:
    application:
      decisionConditions: {tolerationSeconds: 10}
`;
    const refused = await k.kubectl(['apply', '--server-side', '-f', '-'], { input: policy, allowFailure: true });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/propagateDeps/);

    await k.stopWebhook();
    const down = await k.kubectl(['apply', '--server-side', '-f', '-'], {
      input: policy.replace('failover:', 'propagateDeps: true\n  failover:'),
      allowFailure: true,
    });
    expect(down.code).not.toBe(0);
    expect(down.stderr).toMatch(/webhook/i);
    await k.startWebhook();
    const accepted = await k.kubectl(['apply', '--server-side', '-f', '-'], { input: policy.replace('failover:', 'propagateDeps: true\n  failover:') });
    expect(accepted.code).toBe(0);
    await k.kubectl(['delete', 'propagationpolicy', '-n', 'default', 'smoke']);
  });

  it('propagates a Deployment that runs Healthy on the members', async () => {
    const k = karmada!;
    await k.kubectl(['apply', '-f', '-'], {
      input: `apiVersion: apps/v1
kind: Deployment
metadata: {name: smoke, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: smoke}}
  template:
    metadata: {labels: {app: smoke}}
    spec:
      containers: [{name: smoke, image: nginx}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: smoke, namespace: default}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: smoke}]
  placement:
    clusterAffinity: {clusterNames: [member1, member2, member3]}
    replicaScheduling: {replicaSchedulingType: Duplicated}
`,
    });
    type Aggregated = Array<{ clusterName: string; health?: string }>;
    const started = Date.now();
    let aggregated: Aggregated = [];
    while (Date.now() - started < 60_000) {
      const res = await k.get('/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings/smoke-deployment');
      aggregated = (res.body?.status?.aggregatedStatus ?? []) as Aggregated;
      if (aggregated.length === 3 && aggregated.every((s) => s.health === 'Healthy')) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(aggregated.map((s) => `${s.clusterName}:${s.health}`).sort()).toEqual(['member1:Healthy', 'member2:Healthy', 'member3:Healthy']);
    await k.kubectl(['delete', 'deployment,propagationpolicy', '-n', 'default', 'smoke']);
  });

  it('sees Karmada write Ready=False when member1 dies and Ready=True when it is back', async () => {
    const k = karmada!;
    const member1 = k.members[0];
    await member1.kill();
    const down = await waitReady(k, 'member1', 'False', 60_000);
    process.stderr.write(`[controlPlane] member1 Ready=False ${(down / 1000).toFixed(1)} s after the kill\n`);
    // The others stay Ready.
    for (const cluster of await clusters(k)) if (cluster.metadata.name !== 'member1') expect(readyOf(cluster)?.status).toBe('True');

    await member1.restart();
    const up = await waitReady(k, 'member1', 'True', 60_000);
    process.stderr.write(`[controlPlane] member1 Ready=True ${(up / 1000).toFixed(1)} s after its API server was back\n`);
  });

  it('survives a restart of the karmada-apiserver and of etcd', async () => {
    const k = karmada!;
    await k.restartApiServer();
    expect((await clusters(k)).length).toBe(3);
    await k.restartEtcd();
    expect((await clusters(k)).length).toBe(3);
    await waitReady(k, 'member2', 'True', 30_000);
  });

  it('stops everything, and a second start works', async () => {
    const first = karmada!;
    const dir = first.dir;
    await first.stop();
    karmada = undefined;
    expect(() => readdirSync(dir)).toThrow();
    // Its ports are free again: nothing answers on the old API server.
    await expect(first.get('/readyz')).rejects.toThrow();

    const started = Date.now();
    karmada = await startRealKarmada({ members: 3, binDir });
    process.stderr.write(`[controlPlane] second start to three Ready members: ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    const list = await clusters(karmada);
    expect(list.filter((c) => readyOf(c)?.status === 'True')).toHaveLength(3);
  });
});
