import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterKey, signReport } from '../../shared/auth/signing';
import { HostProcess, startHostProcess } from '../helpers/hostProcess';

const ADMIN = 'e2e-admin-token-0123456789';
const ROOT = 'e2e-signing-key-0123456789';
let host: HostProcess;
let bare: HostProcess;
beforeAll(async () => {
  [host, bare] = await Promise.all([
    startHostProcess({ AUTH_MODE: 'required', ADMIN_TOKEN: ADMIN, REPORTER_SIGNING_KEY: ROOT }),
    startHostProcess({ AUTH_MODE: 'required' }),
  ]);
}, 30_000);
afterAll(async () => Promise.all([host?.stop(), bare?.stop()]));

const report = (status: string) => JSON.stringify({ conditions: [{ type: 'Ready', status }] });
async function send(base: string, cluster: string, body: string, options: { as?: string; ts?: number; headers?: Record<string, string> } = {}) {
  const ts = String(options.ts ?? Math.floor(Date.now() / 1000));
  const signer = options.as ?? cluster;
  const res = await fetch(`${base}/api/clusters/${cluster}/status`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-failover-timestamp': ts,
      'x-failover-signature': signReport(clusterKey(ROOT, signer), ts, body),
      ...(options.as ? { 'x-failover-cluster': options.as } : {}),
      ...options.headers,
    },
    body,
  });
  return { status: res.status, body: (await res.json()) as any };
}
const stored = async (cluster: string) => JSON.stringify(await (await fetch(`${host.url}/api/clusters/${cluster}`)).json());

describe('signed reports', () => {
  it('accepts a report signed by its cluster, and refuses unsigned, forged, cross-cluster, stale and replayed ones without a change', async () => {
    const first = await send(host.url, 'auth1', report('True'));
    expect(first.status).toBe(200);
    const before = await stored('auth1');
    const ts = Math.floor(Date.now() / 1000) + 1;
    expect((await send(host.url, 'auth1', report('False'), { ts })).status).toBe(200);
    const after = await stored('auth1');

    const refused: Array<[string, Promise<{ status: number; body: any }>, number]> = [
      [
        'unsigned',
        fetch(`${host.url}/api/clusters/auth1/status`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: report('True') }).then(
          async (r) => ({ status: r.status, body: await r.json() }),
        ),
        401,
      ],
      ['forged', send(host.url, 'auth1', report('True'), { headers: { 'x-failover-signature': `sha256=${'0'.repeat(64)}` } }), 401],
      ['another cluster, announced', send(host.url, 'auth1', report('True'), { as: 'auth2' }), 403],
      [
        'another cluster, unannounced',
        send(host.url, 'auth1', report('True'), {
          headers: { 'x-failover-signature': signReport(clusterKey(ROOT, 'auth2'), String(ts + 1), report('True')), 'x-failover-timestamp': String(ts + 1) },
        }),
        401,
      ],
      ['ten minutes old', send(host.url, 'auth1', report('True'), { ts: ts - 600 }), 401],
      ['older than the newest applied', send(host.url, 'auth1', report('True'), { ts: ts - 5 }), 409],
    ];
    for (const [name, pending, status] of refused) {
      const result = await pending;
      expect({ name, status: result.status }).toEqual({ name, status });
      expect(typeof result.body.error).toBe('string');
    }
    expect(await stored('auth1')).toBe(after);
    expect(after).not.toBe(before);
  });

  it('refuses the exact same signed request twice', async () => {
    const ts = Math.floor(Date.now() / 1000);
    const body = report('True');
    const headers = {
      'content-type': 'application/json',
      'x-failover-timestamp': String(ts),
      'x-failover-signature': signReport(clusterKey(ROOT, 'auth3'), String(ts), body),
    };
    expect((await fetch(`${host.url}/api/clusters/auth3/status`, { method: 'POST', headers, body })).status).toBe(200);
    expect((await fetch(`${host.url}/api/clusters/auth3/status`, { method: 'POST', headers, body })).status).toBe(409);
  });
});

describe('the admin API', () => {
  const cluster = JSON.stringify({ apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name: 'admin1' } });
  it('needs the admin token to apply, delete, pause and resume', async () => {
    const apply = (authorization?: string) =>
      fetch(`${host.url}/api/apply`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
        body: cluster,
      });
    expect((await apply()).status).toBe(401);
    expect((await apply('Bearer wrong-token-0123456789')).status).toBe(401);
    expect((await fetch(`${host.url}/api/clusters/admin1`)).status).toBe(404);
    expect((await apply(`Bearer ${ADMIN}`)).status).toBe(200);
    expect((await fetch(`${host.url}/api/clusters/admin1`, { method: 'DELETE' })).status).toBe(401);
    expect((await fetch(`${host.url}/api/failover/pause`, { method: 'POST' })).status).toBe(401);
    expect((await fetch(`${host.url}/api/failover/pause`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } })).status).toBe(200);
    expect((await fetch(`${host.url}/api/failover/resume`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } })).status).toBe(200);
    expect((await fetch(`${host.url}/api/clusters/admin1`, { method: 'DELETE', headers: { authorization: `Bearer ${ADMIN}` } })).status).toBe(200);
  });

  it('answers 503 naming the missing setting when auth is required but no secret is configured, and says so at start', async () => {
    const apply = await fetch(`${bare.url}/api/apply`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer anything-at-all-123' },
      body: cluster,
    });
    expect(apply.status).toBe(503);
    expect(((await apply.json()) as any).error).toContain('ADMIN_TOKEN');
    const status = await send(bare.url, 'x1', report('True'));
    expect(status.status).toBe(503);
    expect(status.body.error).toContain('REPORTER_SIGNING_KEY');
    expect(bare.output()).toContain('ADMIN_TOKEN is not set');
  });

  it('never writes a secret to the log', () => {
    expect(host.output()).not.toContain(ADMIN);
    expect(host.output()).not.toContain(ROOT);
  });
});
