import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';
import { FAST_PROBE_SETTINGS, KarmadaFleet, startKarmadaFleet } from '../helpers/karmadaFleet';
import { crdResources, type KubeApiServer } from '../helpers/kubeApiServer';
import type { MemberEndpointServer } from '../helpers/memberEndpoints';

/**
 * Policy status in Karmada mode, read with the real kubectl: the app writes a windowed policy's conditions
 * to the status subresource of our own kind (failover.io/v1alpha1 ClusterTaintPolicy, authorized by exactly
 * infra/karmada-rbac.yaml), so `kubectl wait --for=condition=EvictionInProgress=false
 * clustertaintpolicies.failover.io/<name>` waits for a failover's
 * evictions to finish. member1 stops answering /readyz → Ready=False → the policy's taint → evictions paced
 * at 2/s → EvictionInProgress True, then False once every eviction is done.
 */

const KUBECTL = '/usr/bin/kubectl';
const BINDINGS = 8;
const POLICY = 'member-not-ready';

let karmada: KarmadaFleet;
let server: KubeApiServer;
let host: HostProcess;
let members: MemberEndpointServer[];
let dir: string;
let kubeconfig: string;

function kubectl(args: string[], timeoutMs = 90_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(KUBECTL, ['--kubeconfig', kubeconfig, ...args], { env: { ...process.env, HOME: dir }, timeout: timeoutMs }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

const conditions = () =>
  ((
    server.get('clustertaintpolicies.failover.io', POLICY)?.status as {
      conditions?: Array<{ type: string; status: string; reason: string; lastTransitionTime: string }>;
    }
  )?.conditions ?? []) as Array<{ type: string; status: string; reason: string; message?: string; lastTransitionTime: string }>;
const condition = (type: string) => conditions().find((c) => c.type === type);

beforeAll(async () => {
  karmada = await startKarmadaFleet({ prefix: 'policy-status-' });
  ({ server, members, dir } = karmada);
  for (const resource of crdResources(readFileSync(join(__dirname, '..', '..', 'infra', 'clustertaintpolicy-crd.yaml'), 'utf8'))) server.addResource(resource);
  server.upsert({
    apiVersion: 'failover.io/v1alpha1',
    kind: 'ClusterTaintPolicy',
    metadata: { name: POLICY },
    spec: {
      targetCluster: { clusterNames: ['member1', 'member2', 'member3'] },
      matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False', 'Unknown'] }],
      taintsToAdd: [{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', addOnMatchSeconds: 2, removeOnMismatchSeconds: 1 }],
    },
  });
  for (let i = 0; i < BINDINGS; i++) {
    server.upsert({
      apiVersion: 'work.karmada.io/v1alpha2',
      kind: 'ResourceBinding',
      metadata: { name: `web-${i}`, namespace: 'default', generation: 1 },
      spec: {
        resource: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: `web-${i}` },
        replicas: 1,
        clusters: [{ name: 'member1', replicas: 1 }],
        placement: { clusterAffinity: { clusterNames: ['member1', 'member2', 'member3'] } },
        failover: { cluster: { purgeMode: 'Directly', tolerationSeconds: 0 } },
      },
      status: { schedulerObservedGeneration: 1 },
    });
  }
  kubeconfig = karmada.adminKubeconfig;
  host = await startHostProcess({ KARMADA_KUBECONFIG: karmada.appKubeconfig(), FAILOVER_ENABLED: 'true', RESOURCE_EVICTION_RATE: '2', ...FAST_PROBE_SETTINGS });
}, 60_000);

afterAll(async () => {
  await host?.stop();
  await karmada?.close();
});

describe('ClusterTaintPolicy status in Karmada', () => {
  it('is written to the status subresource: both conditions False while nothing is held', async () => {
    await waitFor(async () => (condition('EvictionInProgress') ? true : undefined), 30_000, 200);
    expect(condition('EvictionInProgress')).toMatchObject({ status: 'False', reason: 'NoTaintsHeld' });
    expect(condition('BlastRadiusExceeded')).toMatchObject({ status: 'False', reason: 'WithinShare' });
    // Through the subresource only: the policy's spec and generation are untouched.
    const stored = server.get('clustertaintpolicies.failover.io', POLICY)!;
    expect((stored.metadata as { generation: number }).generation).toBe(1);
    expect(server.requests.some((r) => r.verb === 'patch' && r.resource === 'clustertaintpolicies' && r.subresource === 'status' && r.status === 200)).toBe(
      true,
    );
    expect(
      server.requests.some((r) => r.resource === 'clustertaintpolicies' && r.subresource === undefined && (r.verb === 'patch' || r.verb === 'update')),
    ).toBe(false);
    const now = await kubectl(['wait', '--for=condition=EvictionInProgress=false', `clustertaintpolicies.failover.io/${POLICY}`, '--timeout=10s']);
    expect(now, now.stderr).toMatchObject({ code: 0 });
    expect(now.stdout).toContain(`clustertaintpolicy.failover.io/${POLICY} condition met`);
  }, 60_000);

  it('kubectl wait sees EvictionInProgress turn True during a failover and False once its evictions are done', async () => {
    const failedAt = Date.now();
    members[0].health = 'down';
    const busy = await kubectl(['wait', '--for=condition=EvictionInProgress=true', `clustertaintpolicies.failover.io/${POLICY}`, '--timeout=60s']);
    expect(busy, busy.stderr).toMatchObject({ code: 0 });
    const inProgress = condition('EvictionInProgress')!;
    expect(inProgress).toMatchObject({ status: 'True', reason: 'EvictionsPending' });
    expect(inProgress.message).toMatch(/pending, \d+ scheduled eviction\(s\) on 1 cluster/);
    // The API says the same.
    const viaApi = (await api(host.url, 'GET', `clustertaintpolicies/failover.io.${POLICY}`)).body.status.conditions as Array<{ type: string; status: string }>;
    expect(viaApi.find((c) => c.type === 'EvictionInProgress')?.status).toBe('True');

    const done = await kubectl(['wait', '--for=condition=EvictionInProgress=false', `clustertaintpolicies.failover.io/${POLICY}`, '--timeout=60s']);
    expect(done, done.stderr).toMatchObject({ code: 0 });
    const ledger = (await api(host.url, 'GET', 'evictions?cluster=member1')).body.items as Array<{ state: string }>;
    expect(ledger).toHaveLength(BINDINGS);
    expect(ledger.every((r) => r.state === 'done')).toBe(true);
    // Paced at 2/s, so the condition was True for a while, and its lastTransitionTime moved once each way.
    const finished = condition('EvictionInProgress')!;
    expect(finished).toMatchObject({ status: 'False', reason: 'NoPendingEvictions' });
    expect(Date.parse(finished.lastTransitionTime)).toBeGreaterThan(Date.parse(inProgress.lastTransitionTime));
    expect(Date.parse(inProgress.lastTransitionTime)).toBeGreaterThanOrEqual(failedAt - 1000);
    // kubectl wait watched the policy, as it does against a real API server.
    expect(server.requests.some((r) => r.verb === 'watch' && r.resource === 'clustertaintpolicies' && r.user === 'admin')).toBe(true);
  }, 120_000);
});
