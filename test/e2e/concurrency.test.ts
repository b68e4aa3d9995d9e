import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterKey, signReport } from '../../shared/auth/signing';
import { binding, cluster } from '../helpers/fleet';
import { api, HostProcess, startHostProcess } from '../helpers/hostProcess';

/**
 * Concurrency is load, not an error: requests that touch the same document at the same time (a thousand
 * clusters registering into one fleet summary, applies of one object) all answer 2xx or a 409 that names
 * the conflict, never a 5xx; and what they acknowledged is counted at once.
 */
const ADMIN = 'e2e-admin-token-0123456789';
const ROOT = 'e2e-signing-key-0123456789';
let host: HostProcess;
beforeAll(async () => {
  // The monitor's grace longer than the test: a cluster that reported once is not marked Unknown meanwhile.
  host = await startHostProcess({
    AUTH_MODE: 'required',
    ADMIN_TOKEN: ADMIN,
    REPORTER_SIGNING_KEY: ROOT,
    CLUSTER_MONITOR_GRACE_PERIOD_SECONDS: '3600',
    CLUSTER_STARTUP_GRACE_PERIOD_SECONDS: '3600',
  });
}, 30_000);
afterAll(async () => host?.stop());

const admin = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };

async function signedReport(name: string, status: string): Promise<number> {
  const body = JSON.stringify({ conditions: [{ type: 'Ready', status }] });
  const ts = String(Math.floor(Date.now() / 1000));
  const res = await fetch(`${host.url}/api/clusters/${name}/status`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-failover-timestamp': ts, 'x-failover-signature': signReport(clusterKey(ROOT, name), ts, body) },
    body,
  });
  await res.arrayBuffer();
  return res.status;
}

/** Runs `work` over `items` with at most `inFlight` at once; answers each item's result in order. */
async function inParallel<T, R>(items: T[], inFlight: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await work(items[index]);
      }
    }),
  );
  return results;
}

const tally = (statuses: number[]) => statuses.reduce<Record<number, number>>((counts, s) => ({ ...counts, [s]: (counts[s] ?? 0) + 1 }), {});

describe('concurrent requests', () => {
  it('1,000 clusters registering by signed reports, 32 in flight: every one 200, and the fleet counts them at once', async () => {
    const names = Array.from({ length: 1000 }, (_, i) => `reg-${String(i).padStart(4, '0')}`);
    // A tenth report Ready=False: the unhealthy count must be exact too.
    const statuses = await inParallel(names, 32, (name) => signedReport(name, Number(name.slice(4)) % 10 === 0 ? 'False' : 'True'));
    expect(tally(statuses)).toEqual({ 200: 1000 });
    const fleet = (await api(host.url, 'GET', 'fleet')).body;
    expect(fleet).toMatchObject({ total: 1000, unhealthy: 100 });
  }, 120_000);

  it('50 concurrent applies of different versions of one Cluster: 200 each, and the last writer wins', async () => {
    const versions = Array.from({ length: 50 }, (_, v) => cluster('contended', false, { version: String(v) }));
    const statuses = await Promise.all(
      versions.map(async (object) => (await fetch(`${host.url}/api/apply`, { method: 'POST', headers: admin, body: JSON.stringify([object]) })).status),
    );
    expect(statuses.filter((s) => s !== 200 && s !== 409)).toEqual([]);
    const stored = (await api(host.url, 'GET', 'clusters/contended')).body;
    expect(versions.map((v) => v.metadata.labels.version)).toContain(stored.metadata.labels.version);
  }, 60_000);

  it('50 concurrent applies of different versions of one ResourceBinding: 200 or 409, never a 5xx', async () => {
    const versions = Array.from({ length: 50 }, (_, v) => binding('contended', [], { replicas: v + 1 }));
    const statuses = await Promise.all(
      versions.map(async (object) => (await fetch(`${host.url}/api/apply`, { method: 'POST', headers: admin, body: JSON.stringify([object]) })).status),
    );
    expect(statuses.filter((s) => s !== 200 && s !== 409)).toEqual([]);
    const stored = (await api(host.url, 'GET', 'resourcebindings/default/contended')).body;
    expect(stored.spec.replicas).toBeGreaterThanOrEqual(1);
  }, 60_000);
});
