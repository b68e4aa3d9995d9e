import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../shared/api/openapi';
import { clusterKey, signReport } from '../../shared/auth/signing';
import { startTestStorage, TestStorage } from '../helpers/azurite';
import { binding } from '../helpers/fleet';
import { HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';

/**
 * The contract against the real thing: real routes on a real local host (AUTH_MODE=required), each answer's
 * body validated against the document's schema for that route and status. A view that adds, drops or
 * retypes a field without the contract (shared/api/contract/views.ts) fails here.
 */
const ADMIN = 'contract-admin-token-0123456789';
const ROOT = 'contract-signing-key-0123456789';
const admin = { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` };

type Doc = { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>> };
const doc = openApiDocument() as unknown as Doc;
// The whole document is one schema resource, so "#/components/schemas/..." refs resolve inside it.
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema({ ...(openApiDocument() as object), $id: 'https://contract.test/openapi.json' });

const validators = new Map<string, ValidateFunction>();
function validatorFor(path: string, method: string, status: number): ValidateFunction {
  const key = `${method} ${path} ${status}`;
  const cached = validators.get(key);
  if (cached) return cached;
  const operation = doc.paths[path]?.[method];
  if (!operation) throw new Error(`the document has no ${method.toUpperCase()} ${path}`);
  const response = operation.responses[String(status)] ?? operation.responses.default;
  const schema = response.content?.['application/json']?.schema;
  if (!schema) throw new Error(`${key}: no JSON schema in the document`);
  const rebased = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"https://contract.test/openapi.json#/components/')) as object;
  const validate = ajv.compile(rebased);
  validators.set(key, validate);
  return validate;
}

let env: TestStorage;
let host: HostProcess;
let signedAt = Math.floor(Date.now() / 1000);
const seen: string[] = [];

/** Calls `path` (a document path, {params} filled from `params`) and checks the answer against the document. */
async function call(
  method: string,
  path: string,
  options: { params?: Record<string, string>; query?: string; body?: unknown; headers?: Record<string, string>; status?: number } = {},
) {
  const url = path.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(options.params?.[name] ?? ''));
  const body = typeof options.body === 'string' ? options.body : options.body === undefined ? undefined : JSON.stringify(options.body);
  const res = await fetch(`${host.url}/api${url}${options.query ? `?${options.query}` : ''}`, {
    method: method.toUpperCase(),
    headers: options.headers ?? admin,
    ...(body !== undefined ? { body } : {}),
  });
  const json = await res.json();
  const validate = validatorFor(path, method, res.status);
  const errors = validate(json) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`);
  expect(errors, `${method.toUpperCase()} ${url} answered ${res.status} ${JSON.stringify(json).slice(0, 2000)}`).toEqual([]);
  if (options.status !== undefined) expect(res.status, `${method.toUpperCase()} ${url}: ${JSON.stringify(json).slice(0, 500)}`).toBe(options.status);
  seen.push(`${method} ${path} ${res.status}`);
  return { status: res.status, body: json as any };
}

function signed(cluster: string, status: 'True' | 'False') {
  const body = JSON.stringify({ conditions: [{ type: 'Ready', status, reason: 'Test' }] });
  const ts = String(++signedAt);
  return {
    body,
    headers: { 'content-type': 'application/json', 'x-failover-timestamp': ts, 'x-failover-signature': signReport(clusterKey(ROOT, cluster), ts, body) },
  };
}

const member = (name: string) => ({
  apiVersion: 'cluster.karmada.io/v1alpha1',
  kind: 'Cluster',
  metadata: { name, labels: { env: 'test' } },
  spec: { region: 'eu' },
});

beforeAll(async () => {
  env = await startTestStorage();
  host = await startHostProcess({
    AzureWebJobsStorage: env.azurite.connectionString,
    AUTH_MODE: 'required',
    ADMIN_TOKEN: ADMIN,
    REPORTER_SIGNING_KEY: ROOT,
    FAILOVER_ENABLED: 'true',
    RESOURCE_EVICTION_RATE: '10',
    CLUSTER_MONITOR_GRACE_PERIOD_SECONDS: '3600',
    CLUSTER_STARTUP_GRACE_PERIOD_SECONDS: '3600',
  });
}, 60_000);
afterAll(async () => {
  await host?.stop();
  await env?.close();
});

describe('every answer matches the OpenAPI document', () => {
  it('objects, reads, operator actions and errors', async () => {
    const objects = [
      {
        apiVersion: 'policy.karmada.io/v1alpha1',
        kind: 'ClusterTaintPolicy',
        metadata: { name: 'not-ready' },
        spec: {
          matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False', 'Unknown'] }],
          taintsToAdd: [{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', addOnMatchSeconds: 1, removeOnMismatchSeconds: 1 }],
        },
      },
      {
        apiVersion: 'policy.karmada.io/v1alpha1',
        kind: 'ClusterTaintPolicy',
        metadata: { name: 'karmada-shape' },
        spec: { addOnConditions: [{ conditionType: 'Disk', operator: 'In', statusValues: ['False'] }], taints: [{ key: 'disk', effect: 'NoSchedule' }] },
      },
      ...['ct1', 'ct2', 'ct3'].map(member),
      binding('web', ['ct1'], { placement: { clusterAffinity: { clusterNames: ['ct1', 'ct2'] } }, failover: { cluster: { purgeMode: 'Gracefully' } } }),
      {
        apiVersion: 'policy.karmada.io/v1alpha1',
        kind: 'PropagationPolicy',
        metadata: { name: 'apps', namespace: 'default' },
        spec: { resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment' }], placement: { clusterAffinity: { clusterNames: ['ct2', 'ct3'] } } },
      },
      {
        apiVersion: 'policy.karmada.io/v1alpha1',
        kind: 'ClusterPropagationPolicy',
        metadata: { name: 'everything' },
        spec: { resourceSelectors: [{ apiVersion: 'v1', kind: 'ConfigMap' }] },
      },
      {
        apiVersion: 'failover.io/v1alpha1',
        kind: 'FailoverBudget',
        metadata: { name: 'half', namespace: 'default' },
        spec: { selector: {}, maxInFlight: '50%' },
      },
      { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'api', namespace: 'default' }, spec: { replicas: 2 } },
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'creds', namespace: 'default' }, data: { token: 'c2VjcmV0' } },
    ];
    await call('post', '/apply', { body: objects, status: 200 });
    await call('post', '/apply', { body: [{ ...member('ct1'), spec: { regio: 'eu' } }], status: 400 });
    await call('post', '/apply', { body: objects.slice(0, 1), headers: { 'content-type': 'application/json' }, status: 401 });
    for (const name of ['ct1', 'ct2', 'ct3']) {
      const report = signed(name, 'True');
      await call('post', '/clusters/{name}/status', { params: { name }, ...report, status: 200 });
    }
    const replay = signed('ct1', 'True');
    await call('post', '/clusters/{name}/status', { params: { name: 'ct1' }, ...replay, status: 200 });
    await call('post', '/clusters/{name}/status', { params: { name: 'ct1' }, ...replay, status: 409 });
    await call('post', '/clusters/{name}/status', { params: { name: 'ct1' }, body: replay.body, headers: { 'content-type': 'application/json' }, status: 401 });

    await call('get', '/healthz', { status: 200 });
    await call('get', '/openapi.json', { status: 200 });
    await call('get', '/clusters', { status: 200 });
    await call('get', '/clusters/{name}', { params: { name: 'ct1' }, status: 200 });
    await call('get', '/clusters/{name}', { params: { name: 'nope' }, status: 404 });
    await call('get', '/clustertaintpolicies', { status: 200 });
    await call('get', '/clustertaintpolicies/{name}', { params: { name: 'not-ready' }, status: 200 });
    await call('get', '/clustertaintpolicies/{name}', { params: { name: 'karmada-shape' }, status: 200 });
    await call('post', '/clustertaintpolicies/{name}/acknowledge', { params: { name: 'not-ready' }, status: 200 });
    await call('get', '/resourcebindings', { status: 200 });
    await call('get', '/resourcebindings/{namespace}', { params: { namespace: 'default' }, status: 200 });
    await call('get', '/resourcebindings/{namespace}/{name}', { params: { namespace: 'default', name: 'web' }, status: 200 });
    await call('get', '/resourcebindings/{namespace}/{name}/why', { params: { namespace: 'default', name: 'web' }, status: 200 });
    await call('get', '/clusterresourcebindings', { status: 200 });
    await call('get', '/propagationpolicies', { status: 200 });
    await call('get', '/propagationpolicies/{namespace}/{name}', { params: { namespace: 'default', name: 'apps' }, status: 200 });
    await call('get', '/clusterpropagationpolicies', { status: 200 });
    await call('get', '/clusterpropagationpolicies/{name}', { params: { name: 'everything' }, status: 200 });
    await call('get', '/failoverbudgets', { status: 200 });
    await call('get', '/failoverbudgets/{namespace}/{name}', { params: { namespace: 'default', name: 'half' }, status: 200 });
    await call('get', '/templates', { status: 200 });
    await call('get', '/templates', { query: 'apiVersion=v1&kind=Secret&namespace=default&name=creds', status: 200 });
    await call('get', '/templates', { query: 'bogus=1', status: 400 });
    await call('get', '/events', { query: 'limit=50', status: 200 });
    await call('get', '/events', { query: 'limit=abc', status: 400 });
    await call('get', '/fleet', { status: 200 });
    await call('get', '/fleet/history', { query: 'minutes=5', status: 200 });
    await call('post', '/whatif', { body: { failClusters: ['ct1'] }, headers: { 'content-type': 'application/json' }, status: 200 });
    await call('post', '/whatif', { body: { failClusters: ['nope'] }, headers: { 'content-type': 'application/json' }, status: 400 });
    await call('post', '/resourcebindings/{namespace}/{name}/status', {
      params: { namespace: 'default', name: 'web' },
      body: { aggregatedStatus: [{ clusterName: 'ct1', applied: true, health: 'Healthy' }] },
      status: 200,
    });

    // A failure: the binding leaves ct1 (a graceful-eviction task, ledger rows, a failback home).
    await call('post', '/clusters/{name}/status', { params: { name: 'ct1' }, ...signed('ct1', 'False'), status: 200 });
    const rows = await waitFor(
      async () => {
        const items = (await call('get', '/evictions', { query: 'cluster=ct1' })).body.items as any[];
        return items.some((r) => r.state === 'done') ? items : undefined;
      },
      30_000,
      200,
    );
    expect(rows.length).toBeGreaterThan(0);
    await call('get', '/evictions', { status: 200 });
    await call('get', '/evictions', { query: 'state=nonsense', status: 400 });
    await call('get', '/evictions/summary', { status: 200 });
    await call('get', '/failback', { status: 200 });
    await call('get', '/resourcebindings/{namespace}/{name}/why', { params: { namespace: 'default', name: 'web' }, status: 200 });
    await call('get', '/clusters/{name}', { params: { name: 'ct1' }, status: 200 });
    await call('get', '/clustertaintpolicies/{name}', { params: { name: 'not-ready' }, status: 200 });
    const task = await call('get', '/resourcebindings/{namespace}/{name}', { params: { namespace: 'default', name: 'web' }, status: 200 });
    const from = (task.body.spec.gracefulEvictionTasks ?? [])[0]?.fromCluster as string | undefined;
    if (from) {
      await call('delete', '/resourcebindings/{namespace}/{name}/evictiontasks/{cluster}', {
        params: { namespace: 'default', name: 'web', cluster: from },
        status: 200,
      });
    }
    await call('delete', '/resourcebindings/{namespace}/{name}/evictiontasks/{cluster}', {
      params: { namespace: 'default', name: 'web', cluster: 'ct3' },
      status: 404,
    });

    // Operator actions.
    await call('post', '/failover/pause', { status: 200 });
    await call('post', '/failover/resume', { status: 200 });
    await call('post', '/clusters/{name}/drain', { params: { name: 'ct3' }, status: 200 });
    await call('post', '/clusters/{name}/uncordon', { params: { name: 'ct3' }, status: 200 });
    await call('post', '/webhooks/alertmanager', {
      body: {
        version: '4',
        status: 'firing',
        alerts: [
          { status: 'firing', labels: { alertname: 'Disk', cluster: 'ct2' } },
          { status: 'firing', labels: {} },
        ],
      },
      headers: { 'content-type': 'application/json', authorization: 'Bearer wrong-token-0123456789' },
    });

    // Deletes.
    await call('delete', '/templates', { query: 'apiVersion=v1&kind=Secret&namespace=default&name=creds', status: 200 });
    await call('delete', '/failoverbudgets/{namespace}/{name}', { params: { namespace: 'default', name: 'half' }, status: 200 });
    await call('delete', '/clusterpropagationpolicies/{name}', { params: { name: 'everything' }, status: 200 });
    await call('delete', '/clustertaintpolicies/{name}', { params: { name: 'karmada-shape' }, status: 200 });
    await call('delete', '/clusters/{name}', { params: { name: 'nope' }, status: 404 });
    await call('delete', '/clusters/{name}', { params: { name: 'nope' }, headers: {}, status: 401 });
  }, 120_000);

  it('fails on an answer the document does not describe', () => {
    const validate = validatorFor('/fleet/history', 'get', 200);
    expect(validate({ from: 'a', to: 'b', bucketSeconds: 10, points: [], extra: true })).toBe(false);
    expect(validate({ from: 'a', to: 'b', bucketSeconds: 10, points: [] })).toBe(true);
  });
});
