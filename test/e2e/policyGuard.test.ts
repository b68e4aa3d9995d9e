import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterKey, signReport } from '../../shared/auth/signing';
import { binding, cluster } from '../helpers/fleet';
import { api, HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';

/**
 * Shadow policies and the blast-radius guard end to end: the app as `npm start` runs it (embedded Azurite),
 * over HTTP with checks on, and the CLI as a user runs it. A shadow policy records what it would evict and,
 * once enforced, evicts exactly that; a policy stops at MAX_FLEET_SHARE_TAINTED_BY_POLICY of the fleet until
 * `cluster-failover acknowledge policy` lets it go on.
 */

const BIN = join(__dirname, '..', '..', 'bin', 'cluster-failover.cjs');
const ADMIN = 'guard-admin-token-0123456789';
const ROOT = 'guard-signing-key-0123456789';
const MEMBERS = ['m1', 'm2', 'm3', 'm4'];
const GUARDED = ['g1', 'g2', 'g3', 'g4', 'g5', 'g6'];

let host: HostProcess;
beforeAll(async () => {
  host = await startHostProcess({
    AUTH_MODE: 'required',
    ADMIN_TOKEN: ADMIN,
    REPORTER_SIGNING_KEY: ROOT,
    FAILOVER_ENABLED: 'true',
    RESOURCE_EVICTION_RATE: '20',
    CLUSTER_MONITOR_GRACE_PERIOD_SECONDS: '3600',
    CLUSTER_STARTUP_GRACE_PERIOD_SECONDS: '3600',
  });
  // Ten clusters: at the default share of 0.5 a policy may hold NoExecute taints on five.
  await admin(
    'apply',
    [...MEMBERS, ...GUARDED].map((name) => cluster(name)),
  );
  // Each cluster's agent reports Ready=True (a cluster without Ready counts as unhealthy).
  for (const name of [...MEMBERS, ...GUARDED]) await report(name, 'Ready', 'True');
  // Signed reports carry whole seconds: the tests' own reports start in the next one, so none is the same report again.
  await new Promise((resolve) => setTimeout(resolve, 1100));
}, 30_000);
afterAll(async () => {
  await host?.stop();
});

const admin = async (path: string, body?: unknown) => {
  const res = await fetch(`${host.url}/api/${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const answer = { status: res.status, body: (await res.json()) as any };
  if (path === 'apply') expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer;
};

async function report(name: string, type: string, status: string) {
  const body = JSON.stringify({ conditions: [{ type, status }] });
  const ts = String(Math.floor(Date.now() / 1000));
  const res = await fetch(`${host.url}/api/clusters/${name}/status`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-failover-timestamp': ts, 'x-failover-signature': signReport(clusterKey(ROOT, name), ts, body) },
    body,
  });
  expect(res.status, await res.text()).toBe(200);
}

function cli(args: string[], token: string | null = ADMIN): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, CLUSTER_FAILOVER_SERVER: host.url };
  delete env.CLUSTER_FAILOVER_TOKEN;
  if (token) env.CLUSTER_FAILOVER_TOKEN = token;
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env, timeout: 20_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

const policy = (name: string, targets: string[], conditionType: string, annotations?: Record<string, string>) => ({
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind: 'ClusterTaintPolicy',
  metadata: { name, ...(annotations ? { annotations } : {}) },
  spec: {
    targetCluster: { clusterNames: targets },
    matchConditions: [{ conditionType, operator: 'In', statusValues: ['False'] }],
    taintsToAdd: [{ key: `failover.io/${name}`, effect: 'NoExecute', addOnMatchSeconds: 2, removeOnMismatchSeconds: 1 }],
  },
});

const events = async (name: string, reason: string) =>
  ((await api(host.url, 'GET', `events?kind=ClusterTaintPolicy&name=${name}&limit=1000`)).body.items as Array<{ reason: string; details?: any }>).filter(
    (e) => e.reason === reason,
  );
const taintsOf = async (name: string) => ((await api(host.url, 'GET', `clusters/${name}`)).body.spec.taints as Array<{ key: string }>).map((t) => t.key);
const condition = async (name: string, type: string) =>
  ((await api(host.url, 'GET', `clustertaintpolicies/${name}`)).body.status.conditions as Array<{ type: string; status: string; reason: string }>).find(
    (c) => c.type === type,
  );

describe('shadow mode', () => {
  it('refuses a mode other than shadow or enforce, naming the annotation, and stores nothing', async () => {
    const bad = await fetch(`${host.url}/api/apply`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify(policy('bad-mode', MEMBERS, 'Ready', { 'failover.io/mode': 'dry-run' })),
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).errors).toEqual([
      expect.objectContaining({ path: 'metadata.annotations["failover.io/mode"]', message: 'must be shadow or enforce, got "dry-run"' }),
    ]);
    expect((await api(host.url, 'GET', 'clustertaintpolicies/bad-mode')).status).toBe(404);
  });

  it('records what it would evict, writes nothing, and once enforced evicts exactly that', async () => {
    const affinity = { clusterAffinity: { clusterNames: MEMBERS } };
    const toleration = (seconds?: number) => ({
      key: 'failover.io/shadowed',
      operator: 'Exists',
      effect: 'NoExecute',
      ...(seconds !== undefined ? { tolerationSeconds: seconds } : {}),
    });
    await admin('apply', [
      binding('untolerated', ['m1'], { placement: affinity }),
      binding('tolerated-forever', ['m1'], { placement: { ...affinity, clusterTolerations: [toleration()] } }),
      binding('tolerated-3s', ['m1'], { placement: { ...affinity, clusterTolerations: [toleration(3)] } }),
      binding('with-failover', ['m1'], { placement: affinity, failover: { cluster: { purgeMode: 'Directly', tolerationSeconds: 1 } } }),
      binding('on-m2', ['m2'], { placement: affinity }),
      policy('shadowed', MEMBERS, 'Ready', { 'failover.io/mode': 'shadow' }),
    ]);
    for (const name of MEMBERS) await report(name, 'Ready', name === 'm1' ? 'False' : 'True');

    const found = await waitFor(async () => ((await events('shadowed', 'WouldTaint')).length > 0 ? true : undefined), 15_000, 200);
    expect(found).toBe(true);
    const wouldEvict = (await events('shadowed', 'WouldEvict')).map((e) => e.details.binding.name as string).sort();
    expect(wouldEvict).toEqual(['tolerated-3s', 'untolerated', 'with-failover']);
    expect((await api(host.url, 'GET', 'clustertaintpolicies/shadowed')).body.status.mode).toBe('shadow');
    // Nothing written: no taint, no ledger row; and a few seconds later still one finding (once per episode).
    await new Promise((r) => setTimeout(r, 3000));
    expect(await taintsOf('m1')).toEqual([]);
    expect((await api(host.url, 'GET', 'evictions?cluster=m1')).body.items).toEqual([]);
    expect(await events('shadowed', 'WouldTaint')).toHaveLength(1);

    // Enforced: applied again without the annotation. Its window was kept, so it taints at once.
    await admin('apply', [policy('shadowed', MEMBERS, 'Ready')]);
    await waitFor(async () => ((await taintsOf('m1')).includes('failover.io/shadowed') ? true : undefined), 10_000, 100);
    const rows = await waitFor(
      async () => {
        const items = (await api(host.url, 'GET', 'evictions?cluster=m1')).body.items as Array<{ state: string; binding: { name: string } }>;
        return items.length > 0 && items.every((r) => r.state === 'done') ? items : undefined;
      },
      20_000,
      200,
    );
    expect(rows.map((r) => r.binding.name).sort()).toEqual(wouldEvict);
    const stayed = (await api(host.url, 'GET', 'resourcebindings/default/tolerated-forever')).body.spec.clusters.map((c: { name: string }) => c.name);
    expect(stayed).toEqual(['m1']);
    await report('m1', 'Ready', 'True');
  }, 60_000);
});

describe('the blast-radius guard', () => {
  it('holds a policy at its share of the fleet until an admin acknowledges with the CLI', async () => {
    await admin('apply', [policy('guarded', GUARDED, 'NetworkReady')]);
    for (const name of GUARDED) await report(name, 'NetworkReady', 'False');
    const held = async () =>
      (await Promise.all(GUARDED.map(async (n) => ((await taintsOf(n)).includes('failover.io/guarded') ? n : undefined)))).filter(Boolean);
    // Five of ten (exactly the share: allowed); the sixth is refused.
    await waitFor(async () => ((await events('guarded', 'PolicyBlastRadiusExceeded')).length > 0 ? true : undefined), 15_000, 200);
    await new Promise((r) => setTimeout(r, 2000));
    expect(await held()).toHaveLength(5);
    const refused = await events('guarded', 'PolicyBlastRadiusExceeded');
    expect(refused).toHaveLength(1);
    expect(refused[0].details).toMatchObject({ held: 5, limit: 5, total: 10, maxShare: 0.5 });
    const exceeded = await waitFor(
      async () => {
        const c = await condition('guarded', 'BlastRadiusExceeded');
        return c?.status === 'True' ? c : undefined;
      },
      10_000,
      200,
    );
    expect(exceeded.reason).toBe('PolicyBlastRadiusExceeded');

    // Admin only; unknown policies are 404 (exit 1); then acknowledged, and again (idempotent).
    expect((await cli(['acknowledge', 'policy', 'guarded'], null)).code).toBe(1);
    const missing = await cli(['acknowledge', 'policy', 'no-such-policy']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/NotFound/);
    expect((await cli(['acknowledge', 'cluster', 'guarded'])).code).toBe(2);
    const acked = await cli(['acknowledge', 'policy', 'guarded']);
    expect(acked, acked.stderr).toMatchObject({ code: 0, stdout: 'clustertaintpolicy/guarded acknowledged; 1 cluster evaluated again\n' });
    expect((await cli(['acknowledge', 'policy', 'guarded'])).stdout).toBe('clustertaintpolicy/guarded already acknowledged\n');
    const again = await api(host.url, 'POST', 'clustertaintpolicies/guarded/acknowledge');
    expect(again.status).toBe(401);

    await waitFor(async () => ((await held()).length === 6 ? true : undefined), 10_000, 200);
    expect(await condition('guarded', 'BlastRadiusExceeded')).toMatchObject({ status: 'False', reason: 'Acknowledged' });
    expect(await events('guarded', 'BlastRadiusAcknowledged')).toHaveLength(1);
    // A policy that never exceeded has nothing to acknowledge.
    expect((await cli(['acknowledge', 'policy', 'shadowed'])).stdout).toBe(
      'clustertaintpolicy/shadowed: nothing to acknowledge (BlastRadiusExceeded is False)\n',
    );
  }, 60_000);
});
