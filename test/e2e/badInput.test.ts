import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterKey, signReport } from '../../shared/auth/signing';
import { startTestStorage, TestStorage } from '../helpers/azurite';
import { HostProcess, startHostProcess } from '../helpers/hostProcess';
import { quietStorageSnapshot, storageSnapshot } from '../helpers/storageSnapshot';

/**
 * A corpus of malformed, unauthenticated, replayed and cross-cluster requests. Each must get its status
 * code, and afterwards the stored state (every table the app keeps, every queue) must be byte-for-byte what
 * it was before. The timer lease table is left out: it changes every second by design.
 */
const ADMIN = 'corpus-admin-token-0123456789';
const ROOT = 'corpus-signing-key-0123456789';
const AM = 'corpus-alertmanager-0123456789';
const AZ = 'corpus-azure-monitor-0123456789';

let env: TestStorage;
let host: HostProcess;
let lastSigned = 0;

const snapshot = () => storageSnapshot(env.storage);

type Case = { name: string; method?: string; path: string; headers?: Record<string, string>; body?: string | Uint8Array; status: number };

const json = { 'content-type': 'application/json' };
const admin = { ...json, authorization: `Bearer ${ADMIN}` };
const yaml = { 'content-type': 'application/yaml', authorization: `Bearer ${ADMIN}` };
const signedHeaders = (cluster: string, body: string | Uint8Array, options: { ts?: number; as?: string; sig?: string } = {}) => {
  const ts = String(options.ts ?? lastSigned + 1);
  return {
    ...json,
    'x-failover-timestamp': ts,
    'x-failover-signature': options.sig ?? signReport(clusterKey(ROOT, options.as ?? cluster), ts, body),
    ...(options.as ? { 'x-failover-cluster': options.as } : {}),
  };
};
const report = (conditions: unknown, extra: Record<string, unknown> = {}) => JSON.stringify({ conditions, ...extra });
const ready = [{ type: 'Ready', status: 'False' }];
const policy = (spec: unknown, name = 'corpus-policy') =>
  JSON.stringify({ apiVersion: 'policy.karmada.io/v1alpha1', kind: 'ClusterTaintPolicy', metadata: { name }, spec });
const goodPolicy = { taintsToAdd: [{ key: 'k', effect: 'NoExecute' }] };
const rb = (spec: Record<string, unknown>) =>
  JSON.stringify({
    apiVersion: 'work.karmada.io/v1alpha2',
    kind: 'ResourceBinding',
    metadata: { name: 'corpus-rb' },
    spec: { resource: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'x' }, ...spec },
  });

function corpus(): Case[] {
  const cases: Case[] = [];
  // Unauthenticated or wrongly authenticated admin calls.
  const adminCalls: Array<[string, string, string?]> = [
    ['POST', 'apply', policy(goodPolicy)],
    ['DELETE', 'clusters/corpus1'],
    ['DELETE', 'clustertaintpolicies/seed-policy'],
    ['DELETE', 'resourcebindings/default/seed-rb'],
    ['DELETE', 'resourcebindings/default/seed-rb/evictiontasks/corpus1'],
    ['POST', 'failover/pause'],
    ['POST', 'failover/resume'],
  ];
  const badAuth: Array<[string, Record<string, string>]> = [
    ['no token', {}],
    ['wrong token', { authorization: 'Bearer wrong-token-0123456789' }],
    ['basic scheme', { authorization: `Basic ${Buffer.from(`x:${ADMIN}`).toString('base64')}` }],
    ['empty bearer', { authorization: 'Bearer ' }],
    ['token with a suffix', { authorization: `Bearer ${ADMIN}x` }],
  ];
  for (const [method, path, body] of adminCalls)
    for (const [what, headers] of badAuth)
      cases.push({ name: `${method} ${path}: ${what}`, method, path, headers: { ...json, ...headers }, body, status: 401 });

  // Signed reports that must be refused.
  const body = report(ready);
  cases.push(
    { name: 'report without headers', method: 'POST', path: 'clusters/corpus1/status', headers: json, body, status: 401 },
    {
      name: 'report without signature',
      method: 'POST',
      path: 'clusters/corpus1/status',
      headers: { ...json, 'x-failover-timestamp': String(lastSigned + 1) },
      body,
      status: 401,
    },
    {
      name: 'timestamp not in seconds',
      method: 'POST',
      path: 'clusters/corpus1/status',
      headers: { ...signedHeaders('corpus1', body), 'x-failover-timestamp': '2026-01-01T00:00:00Z' },
      body,
      status: 401,
    },
    {
      name: 'timestamp 10 minutes old',
      method: 'POST',
      path: 'clusters/corpus1/status',
      headers: signedHeaders('corpus1', body, { ts: Math.floor(Date.now() / 1000) - 600 }),
      body,
      status: 401,
    },
    {
      name: 'timestamp 10 minutes ahead',
      method: 'POST',
      path: 'clusters/corpus1/status',
      headers: signedHeaders('corpus1', body, { ts: Math.floor(Date.now() / 1000) + 600 }),
      body,
      status: 401,
    },
    {
      name: 'signature of another body',
      method: 'POST',
      path: 'clusters/corpus1/status',
      headers: signedHeaders('corpus1', report([{ type: 'Ready', status: 'True' }])),
      body,
      status: 401,
    },
    {
      name: 'zero signature',
      method: 'POST',
      path: 'clusters/corpus1/status',
      headers: signedHeaders('corpus1', body, { sig: `sha256=${'0'.repeat(64)}` }),
      body,
      status: 401,
    },
    {
      name: 'malformed signature',
      method: 'POST',
      path: 'clusters/corpus1/status',
      headers: signedHeaders('corpus1', body, { sig: 'sha1=abc' }),
      body,
      status: 401,
    },
    {
      name: 'cross-cluster, announced',
      method: 'POST',
      path: 'clusters/corpus1/status',
      headers: signedHeaders('corpus1', body, { as: 'corpus2' }),
      body,
      status: 403,
    },
    {
      name: 'cross-cluster, unannounced',
      method: 'POST',
      path: 'clusters/corpus1/status',
      headers: { ...signedHeaders('corpus2', body), 'x-failover-cluster': '' },
      body,
      status: 401,
    },
    {
      name: 'replay older than the newest applied',
      method: 'POST',
      path: 'clusters/corpus1/status',
      headers: signedHeaders('corpus1', body, { ts: lastSigned - 1 }),
      body,
      status: 409,
    },
    {
      name: 'cross-cluster to an unknown cluster',
      method: 'POST',
      path: 'clusters/corpus9/status',
      headers: signedHeaders('corpus9', body, { as: 'corpus1' }),
      body,
      status: 403,
    },
  );

  // Properly signed reports with bad bodies.
  const signedBad: Array<[string, string | Uint8Array, number, Record<string, string>?]> = [
    ['invalid JSON', '{"conditions": [', 400],
    ['a JSON array', '[]', 400],
    ['a JSON string', '"Ready"', 400],
    ['no conditions', report([]), 400],
    ['a bad status', report([{ type: 'Ready', status: 'false' }]), 400],
    ['a missing type', report([{ status: 'False' }]), 400],
    ['a bad condition type', report([{ type: 'Ready now!', status: 'False' }]), 400],
    [
      'duplicate conditions',
      report([
        { type: 'Ready', status: 'False' },
        { type: 'Ready', status: 'True' },
      ]),
      400,
    ],
    ['an unknown field', report(ready, { severity: 'high' }), 400],
    ['an unknown condition field', report([{ type: 'Ready', status: 'False', lastTransitionTime: 'now' }]), 400],
    ['a future observedAt', report(ready, { observedAt: new Date(Date.now() + 3_600_000).toISOString() }), 400],
    ['a malformed observedAt', report(ready, { observedAt: 'yesterday' }), 400],
    ['an oversized message', report([{ type: 'Ready', status: 'False', message: 'x'.repeat(5000) }]), 400],
    ['an oversized reason', report([{ type: 'Ready', status: 'False', reason: 'x'.repeat(2000) }]), 400],
    ['too many conditions', report(Array.from({ length: 40 }, (_, i) => ({ type: `C${i}`, status: 'True' }))), 400],
    ['deep nesting', `{"conditions":[{"type":"Ready","status":"False","x":${'['.repeat(40)}${']'.repeat(40)}}]}`, 400],
    ['invalid UTF-8', new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]), 400],
    ['an empty body', '', 400],
    ['a form content type', body, 415, { 'content-type': 'application/x-www-form-urlencoded' }],
    ['invalid YAML', 'conditions: [', 400, { 'content-type': 'application/yaml' }],
    ['two YAML documents', 'conditions: []\n---\nconditions: []\n', 400, { 'content-type': 'application/yaml' }],
    ['an oversized body', `{"conditions":[{"type":"Ready","status":"False","message":"${'x'.repeat(1_100_000)}"}]}`, 413],
  ];
  for (const [what, payload, status, headers] of signedBad) {
    cases.push({
      name: `signed report with ${what}`,
      method: 'POST',
      path: 'clusters/corpus1/status',
      headers: { ...signedHeaders('corpus1', payload), ...(headers ?? {}) },
      body: payload,
      status,
    });
  }
  cases.push({
    name: 'report for an invalid cluster name',
    method: 'POST',
    path: 'clusters/Not_A_Name/status',
    headers: signedHeaders('Not_A_Name', body),
    body,
    status: 400,
  });

  // Bad objects for the admin API (with the right token): nothing from the request is stored.
  const applyBad: Array<[string, string, Record<string, string>?, number?]> = [
    ['an unknown kind', JSON.stringify({ apiVersion: 'policy.karmada.io/v1alpha1', kind: 'OverridePolicy', metadata: { name: 'p' }, spec: {} })],
    [
      'a PropagationPolicy without selectors',
      JSON.stringify({
        apiVersion: 'policy.karmada.io/v1alpha1',
        kind: 'PropagationPolicy',
        metadata: { name: 'p', namespace: 'default' },
        spec: { resourceSelectors: [] },
      }),
    ],
    [
      'a selector with a name and a labelSelector',
      JSON.stringify({
        apiVersion: 'policy.karmada.io/v1alpha1',
        kind: 'ClusterPropagationPolicy',
        metadata: { name: 'p' },
        spec: { resourceSelectors: [{ apiVersion: 'v1', kind: 'Pod', name: 'x', labelSelector: {} }] },
      }),
    ],
    ['a grace period with Immediately', rb({ failover: { application: { purgeMode: 'Immediately', gracePeriodSeconds: 5 } } })],
    ['a negative application toleration', rb({ failover: { application: { decisionConditions: { tolerationSeconds: -1 } } } })],
    ['healthyState Unknown', rb({ failover: { application: { preConditions: { healthyState: 'Unknown' } } } })],
    ['a wrong apiVersion', policy(goodPolicy).replace('v1alpha1', 'v9')],
    ['an invalid effect', policy({ taintsToAdd: [{ key: 'k', effect: 'Evict' }] })],
    ['a zero window', policy({ taintsToAdd: [{ key: 'k', effect: 'NoExecute', addOnMatchSeconds: 0 }] })],
    [
      'a duplicate taint',
      policy({
        taintsToAdd: [
          { key: 'k', effect: 'NoExecute' },
          { key: 'k', effect: 'NoExecute' },
        ],
      }),
    ],
    ['an unknown field with a near name', policy({ taintsToAdd: [{ key: 'k', effect: 'NoExecute', removeOnMismatchSecond: 5 }] })],
    ['the merged spelling targetClusters', policy({ targetClusters: {}, ...goodPolicy })],
    ['an invalid policy name', policy(goodPolicy, 'Bad Name')],
    ['no taints', policy({ taintsToAdd: [] })],
    ['a bad operator', policy({ matchConditions: [{ conditionType: 'Ready', operator: 'Exists', statusValues: ['False'] }], ...goodPolicy })],
    ['one good and one bad object', `[${policy(goodPolicy, 'good-one')},${policy({ taintsToAdd: [{ key: 'k', effect: 'Bad' }] }, 'bad-one')}]`],
    ['the same object twice', `[${policy(goodPolicy, 'twice')},${policy(goodPolicy, 'twice')}]`],
    [
      'a cluster with duplicate taints',
      JSON.stringify({
        apiVersion: 'cluster.karmada.io/v1alpha1',
        kind: 'Cluster',
        metadata: { name: 'dup' },
        spec: {
          taints: [
            { key: 'a', effect: 'NoSchedule' },
            { key: 'a', effect: 'NoSchedule' },
          ],
        },
      }),
    ],
    [
      'a cluster with a bad label',
      JSON.stringify({ apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name: 'lbl', labels: { 'a b': 'c' } } }),
    ],
    ['a binding with pureMode', rb({ failover: { cluster: { pureMode: 'Directly' } } })],
    ['a binding with purgeMode Never', rb({ failover: { cluster: { purgeMode: 'Never' } } })],
    ['a binding listing a cluster twice', rb({ clusters: [{ name: 'a' }, { name: 'a' }] })],
    ['a binding with negative replicas', rb({ replicas: -1 })],
    ['a binding without resource', JSON.stringify({ apiVersion: 'work.karmada.io/v1alpha2', kind: 'ResourceBinding', metadata: { name: 'nores' }, spec: {} })],
    ['invalid YAML', 'kind: [', yaml],
    ['a YAML document with duplicate keys', 'kind: Cluster\nkind: Cluster\n', yaml],
    ['a YAML alias to no anchor', 'kind: *nothing\n', yaml],
    [
      'YAML with one bad document',
      `apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {name: yaml-good}\n---\napiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {name: Yaml_Bad}\n`,
      yaml,
    ],
    ['an empty body', ''],
    ['not an object', '42'],
    ['null', 'null'],
    [
      'deep nesting',
      `{"apiVersion":"cluster.karmada.io/v1alpha1","kind":"Cluster","metadata":{"name":"deep","labels":${'{"a":'.repeat(40)}1${'}'.repeat(40)}}}`,
    ],
    ['a text content type', policy(goodPolicy), { ...admin, 'content-type': 'text/plain' }, 415],
    ['an oversized body', policy(goodPolicy).replace('"metadata":{', `"metadata":{"annotations":{"a":"${'x'.repeat(1_100_000)}"},`), undefined, 413],
  ];
  for (const [what, payload, headers, status] of applyBad)
    cases.push({ name: `apply ${what}`, method: 'POST', path: 'apply', headers: headers ?? admin, body: payload, status: status ?? 400 });

  // Monitoring webhooks.
  const am = JSON.stringify({ version: '4', alerts: [{ status: 'firing', labels: { cluster: 'corpus1', alertname: 'X' } }] });
  const az = (token: string) => `webhooks/azure-monitor?token=${encodeURIComponent(token)}`;
  const azBody = JSON.stringify({
    schemaId: 'azureMonitorCommonAlertSchema',
    data: { essentials: { alertRule: 'r', monitorCondition: 'Fired', alertTargetIDs: ['/x'] } },
  });
  cases.push(
    { name: 'alertmanager without token', method: 'POST', path: 'webhooks/alertmanager', headers: json, body: am, status: 401 },
    { name: 'alertmanager with the admin token', method: 'POST', path: 'webhooks/alertmanager', headers: admin, body: am, status: 401 },
    {
      name: 'alertmanager version 3',
      method: 'POST',
      path: 'webhooks/alertmanager',
      headers: { ...json, authorization: `Bearer ${AM}` },
      body: am.replace('"4"', '"3"'),
      status: 400,
    },
    {
      name: 'alertmanager without alerts',
      method: 'POST',
      path: 'webhooks/alertmanager',
      headers: { ...json, authorization: `Bearer ${AM}` },
      body: JSON.stringify({ version: '4', alerts: [] }),
      status: 400,
    },
    {
      name: 'alertmanager with a bad alert status',
      method: 'POST',
      path: 'webhooks/alertmanager',
      headers: { ...json, authorization: `Bearer ${AM}` },
      body: am.replace('firing', 'burning'),
      status: 400,
    },
    {
      name: 'alertmanager invalid JSON',
      method: 'POST',
      path: 'webhooks/alertmanager',
      headers: { ...json, authorization: `Bearer ${AM}` },
      body: '{',
      status: 400,
    },
    { name: 'azure monitor without token', method: 'POST', path: 'webhooks/azure-monitor', headers: json, body: azBody, status: 401 },
    { name: 'azure monitor with a wrong token', method: 'POST', path: az('wrong-token-0123456789'), headers: json, body: azBody, status: 401 },
    {
      name: 'azure monitor with another schema',
      method: 'POST',
      path: az(AZ),
      headers: json,
      body: azBody.replace('azureMonitorCommonAlertSchema', 'Microsoft.Insights/activityLogs'),
      status: 400,
    },
    { name: 'azure monitor without targets', method: 'POST', path: az(AZ), headers: json, body: azBody.replace('["/x"]', '[]'), status: 400 },
    { name: 'azure monitor with a bad condition', method: 'POST', path: az(AZ), headers: json, body: azBody.replace('Fired', 'Burning'), status: 400 },
  );

  // Wrong methods, unknown routes and bad queries.
  cases.push(
    { name: 'GET apply', method: 'GET', path: 'apply', status: 405 },
    { name: 'PUT clusters', method: 'PUT', path: 'clusters', headers: admin, body: '{}', status: 405 },
    { name: 'PATCH a cluster', method: 'PATCH', path: 'clusters/corpus1', headers: admin, body: '{}', status: 405 },
    { name: 'GET a status endpoint', method: 'GET', path: 'clusters/corpus1/status', status: 405 },
    { name: 'DELETE fleet', method: 'DELETE', path: 'fleet', headers: admin, status: 405 },
    { name: 'GET pause', method: 'GET', path: 'failover/pause', status: 405 },
    { name: 'an unknown failover action', method: 'POST', path: 'failover/explode', headers: admin, status: 404 },
    { name: 'an unknown route', method: 'GET', path: 'nothing/here', status: 404 },
    { name: 'DELETE an unknown cluster', method: 'DELETE', path: 'clusters/never-seen', headers: admin, status: 404 },
    { name: 'DELETE an unknown binding', method: 'DELETE', path: 'resourcebindings/default/never-seen', headers: admin, status: 404 },
    { name: 'DELETE an unknown propagation policy', method: 'DELETE', path: 'propagationpolicies/default/never-seen', headers: admin, status: 404 },
    {
      name: 'confirm a task of an unknown binding',
      method: 'DELETE',
      path: 'resourcebindings/default/never-seen/evictiontasks/corpus1',
      headers: admin,
      status: 404,
    },
    {
      name: 'confirm a task that does not exist',
      method: 'DELETE',
      path: 'resourcebindings/default/seed-rb/evictiontasks/corpus1',
      headers: admin,
      status: 404,
    },
    {
      name: 'confirm a task for an invalid cluster name',
      method: 'DELETE',
      path: 'resourcebindings/default/seed-rb/evictiontasks/Not_A_Name',
      headers: admin,
      status: 400,
    },
    {
      name: 'POST to an eviction task',
      method: 'POST',
      path: 'resourcebindings/default/seed-rb/evictiontasks/corpus1',
      headers: admin,
      body: '{}',
      status: 405,
    },
    { name: 'events with a bad since', method: 'GET', path: 'events?since=yesterday', status: 400 },
    { name: 'events with an unknown parameter', method: 'GET', path: 'events?colour=red', status: 400 },
    { name: 'evictions with a bad state', method: 'GET', path: 'evictions?state=gone', status: 400 },
    { name: 'evictions with a bad cluster', method: 'GET', path: 'evictions?cluster=Not_A_Name', status: 400 },
  );
  return cases;
}

beforeAll(async () => {
  env = await startTestStorage();
  host = await startHostProcess({
    AzureWebJobsStorage: env.azurite.connectionString,
    AUTH_MODE: 'required',
    ADMIN_TOKEN: ADMIN,
    REPORTER_SIGNING_KEY: ROOT,
    ALERTMANAGER_TOKEN: AM,
    AZURE_MONITOR_TOKEN: AZ,
    CLUSTER_MONITOR_GRACE_PERIOD_SECONDS: '3600',
    CLUSTER_STARTUP_GRACE_PERIOD_SECONDS: '3600',
  });
  const seed = [
    { apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name: 'corpus1' } },
    { apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name: 'corpus2' } },
    JSON.parse(policy(goodPolicy, 'seed-policy')),
    {
      apiVersion: 'work.karmada.io/v1alpha2',
      kind: 'ResourceBinding',
      metadata: { name: 'seed-rb' },
      spec: { resource: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'x' }, clusters: [{ name: 'corpus1' }] },
    },
  ];
  expect((await fetch(`${host.url}/api/apply`, { method: 'POST', headers: admin, body: JSON.stringify(seed) })).status).toBe(200);
  lastSigned = Math.floor(Date.now() / 1000);
  const body = report([{ type: 'Ready', status: 'True' }]);
  expect(
    (await fetch(`${host.url}/api/clusters/corpus1/status`, { method: 'POST', headers: signedHeaders('corpus1', body, { ts: lastSigned }), body })).status,
  ).toBe(200);
  // The baseline is taken once the work queued by the set-up has settled (quietStorageSnapshot).
}, 60_000);
afterAll(async () => {
  await host?.stop();
  await env?.close();
});

describe('the bad-input corpus', () => {
  it('has at least 100 requests', () => {
    expect(corpus().length).toBeGreaterThanOrEqual(100);
  });

  it('answers each with its status and a JSON error, and leaves the stored state byte-for-byte unchanged', async () => {
    const baseline = await quietStorageSnapshot(env.storage);
    const failures: string[] = [];
    for (const c of corpus()) {
      const res = await fetch(`${host.url}/api/${c.path}`, { method: c.method ?? 'GET', headers: c.headers, body: c.body as string | undefined });
      const text = await res.text();
      if (res.status !== c.status) failures.push(`${c.name}: ${res.status} (expected ${c.status}) ${text.slice(0, 200)}`);
      else if (!JSON.parse(text).error) failures.push(`${c.name}: no error message`);
      if (text.includes(ADMIN) || text.includes(ROOT) || text.includes(AM) || text.includes(AZ)) failures.push(`${c.name}: a secret in the answer`);
    }
    expect(failures).toEqual([]);
    expect(await snapshot()).toBe(baseline);
    expect(host.output()).not.toContain(ADMIN);
  }, 60_000);
});
