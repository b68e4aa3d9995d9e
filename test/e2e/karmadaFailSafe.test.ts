import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { api, HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';
import { APP_USER, FAST_PROBE_SETTINGS, KarmadaFleet, startKarmadaFleet } from '../helpers/karmadaFleet';
import { crdResources, type FaultHandle, type KubeApiServer } from '../helpers/kubeApiServer';
import { SEED_000_CTP } from '../helpers/seedYaml';

/**
 * Karmada mode fails safe and says so, end to end (the app as `npm start` runs it, against the Kubernetes
 * API test server with infra/karmada-rbac.yaml): a write the API server forbids makes the app degraded,
 * naming the verb and resource, until it is allowed again; while the API server is down every read route
 * answers 503 with the reason and Retry-After; and an outage is a few log lines, not a few a second.
 */

let karmada: KarmadaFleet;
let server: KubeApiServer;
let host: HostProcess;
let statusNotFound: FaultHandle;

const POLICY = 'detect-cluster-not-ready';

interface LogLine {
  level: string;
  msg: string;
  condition?: string;
  policy?: string;
}

/** The host's JSON log lines from `from` (an offset in its output) on. */
function logLines(from = 0): LogLine[] {
  return host
    .output()
    .slice(from)
    .split('\n')
    .flatMap((line) => {
      try {
        const parsed = JSON.parse(line) as unknown;
        return parsed && typeof parsed === 'object' && 'level' in parsed ? [parsed as LogLine] : [];
      } catch {
        return [];
      }
    });
}

const ready = (name: string) =>
  (server.get('clusters', name)?.status as { conditions?: Array<{ type: string; status: string }> } | undefined)?.conditions?.find((c) => c.type === 'Ready');

const healthz = () => api(host.url, 'GET', 'healthz');
const untilHealthy = () => waitFor(async () => ((await healthz()).status === 200 ? true : undefined), 25_000, 200);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  karmada = await startKarmadaFleet({ prefix: 'karmada-fail-safe-' });
  server = karmada.server;
  server.upsert(parse(SEED_000_CTP) as Record<string, unknown>);
  // Karmada's ClusterTaintPolicy has no status subresource: its conditions go to a TaintPolicyStatus, whose
  // status writes are answered 404 here every round.
  for (const resource of crdResources(readFileSync(join(__dirname, '..', '..', 'infra', 'taintpolicystatus-crd.yaml'), 'utf8'))) server.addResource(resource);
  statusNotFound = server.inject({ method: 'PATCH', pathRegex: /\/taintpolicystatuses\/[^/?]+\/status/, status: 404, times: Infinity });
}, 60_000);

afterAll(async () => {
  await host?.stop();
  await karmada?.close();
});

describe('Karmada mode fails safe and says so', () => {
  it('an RBAC rule missing for a write (patch clusters/status) makes it degraded, naming verb and resource, until the write is allowed', async () => {
    const denial = server.deny({ verb: 'patch', resource: 'clusters/status', user: APP_USER });
    host = await startHostProcess({ KARMADA_KUBECONFIG: karmada.appKubeconfig(), ...FAST_PROBE_SETTINGS });
    const degraded = await waitFor(
      async () => {
        const answer = await healthz();
        return answer.status === 503 && /forbidden/.test(String(answer.body.reason)) ? answer : undefined;
      },
      25_000,
      200,
    );
    expect(degraded.body).toMatchObject({ status: 'degraded', mode: 'karmada' });
    expect(degraded.body.reason).toMatch(/^forbidden: patch clusters\/status: /);
    expect(degraded.headers.get('retry-after')).toMatch(/^\d+$/);
    // The reads work, so the fleet answers, and says the same.
    const fleet = await api(host.url, 'GET', 'fleet');
    expect(fleet.status).toBe(200);
    expect(fleet.body).toMatchObject({ status: 'degraded', mode: 'karmada' });
    expect(fleet.body.reason).toMatch(/forbidden: patch clusters\/status/);

    // The probes keep trying to write Ready: each refusal is the same state, logged once.
    const refused = () => server.requests.filter((r) => r.verb === 'patch' && r.resource === 'clusters' && r.subresource === 'status' && r.status === 403);
    await waitFor(async () => (refused().length >= 5 ? true : undefined), 20_000, 100);
    const forbiddenLines = logLines().filter((l) => l.condition === 'forbidden: patch clusters/status');
    expect(forbiddenLines.map((l) => l.level)).toEqual(['error']);

    denial.restore();
    await untilHealthy();
    expect((await api(host.url, 'GET', 'fleet')).body).toMatchObject({ status: 'ok' });
    await waitFor(async () => (ready('member1')?.status === 'True' ? true : undefined), 10_000, 100);
    const after = logLines().filter((l) => l.condition === 'forbidden: patch clusters/status');
    expect(after.map((l) => `${l.level} ${l.msg}`)).toEqual([
      'error Karmada API server unusable: failing safe (no taint removed, no eviction)',
      'info Karmada API server usable again',
    ]);
  }, 90_000);

  it("a policy status write answered 404 every round is logged once, and nothing patches the status of Karmada's kind", async () => {
    // The status round runs every 5 s.
    await waitFor(async () => (statusNotFound.hits >= 3 ? true : undefined), 25_000, 200);
    const warnings = logLines().filter((l) => l.msg.startsWith('ClusterTaintPolicy status not written'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 'warn', policy: POLICY });
    expect(server.requests.some((r) => r.resource === 'clustertaintpolicies' && r.subresource === 'status')).toBe(false);
    server.clearFaults();
  }, 40_000);

  /** The read routes (GET), and what each answers while the Karmada API server is down. */
  const READS_FROM_KARMADA = [
    'clusters',
    'clusters/member1',
    'clustertaintpolicies',
    `clustertaintpolicies/${POLICY}`,
    'resourcebindings',
    'resourcebindings/default',
    'resourcebindings/default/web',
    'resourcebindings/default/web/why',
    'clusterresourcebindings',
    'clusterresourcebindings/web',
    'clusterresourcebindings/web/why',
    'propagationpolicies',
    'propagationpolicies/default/web',
    'clusterpropagationpolicies',
    'clusterpropagationpolicies/web',
    'failoverbudgets',
    'failoverbudgets/default/web',
    'fleet',
    'evictions/summary',
    'failback',
  ];
  /** Routes that read only the app's own tables: they keep answering. */
  const READS_FROM_TABLES = ['evictions', 'events', 'templates', 'fleet/history'];

  it('while the API server is down, every read route answers 503 with the reason and Retry-After, never 500', async () => {
    await untilHealthy();
    await server.suspend();
    try {
      const down = await waitFor(
        async () => {
          const answer = await healthz();
          return answer.status === 503 && /unreachable/.test(String(answer.body.reason)) ? answer : undefined;
        },
        15_000,
        100,
      );
      expect(down.body).toMatchObject({ status: 'degraded', mode: 'karmada' });
      expect(down.headers.get('retry-after')).toMatch(/^\d+$/);
      for (const route of READS_FROM_KARMADA) {
        // A read this process made a moment ago may still be served from its one-second cache.
        const seen: number[] = [];
        const answer = await waitFor(
          async () => {
            const got = await api(host.url, 'GET', route);
            seen.push(got.status);
            return got.status === 200 ? undefined : got;
          },
          5_000,
          200,
        );
        expect(seen, route).not.toContain(500);
        expect(answer.status, route).toBe(503);
        expect(answer.body.error, route).toMatch(/unreachable/);
        expect(answer.headers.get('retry-after'), route).toMatch(/^\d+$/);
      }
      for (const route of READS_FROM_TABLES) expect((await api(host.url, 'GET', route)).status, route).toBe(200);
    } finally {
      await server.resume();
    }
    await untilHealthy();
  }, 90_000);

  it('an outage of 10 s is at most 3 error lines: when it begins, perhaps a reminder, and when it ends', async () => {
    await untilHealthy();
    const from = host.output().length;
    await server.suspend();
    await sleep(10_000);
    await server.resume();
    await untilHealthy();
    // Time for what was failing when the server came back to finish.
    await sleep(2_000);
    const lines = logLines(from);
    const errors = lines.filter((l) => l.level === 'error');
    expect(errors.length, errors.map((l) => l.msg).join('\n')).toBeLessThanOrEqual(3);
    expect(lines.filter((l) => l.condition === 'unreachable').map((l) => `${l.level} ${l.msg}`)).toEqual([
      'error Karmada API server unusable: failing safe (no taint removed, no eviction)',
      'info Karmada API server usable again',
    ]);
  }, 60_000);
});
