import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStorage, TestStorage } from '../helpers/azurite';
import { HostProcess, startHostProcess } from '../helpers/hostProcess';
import { quietStorageSnapshot, storageSnapshot } from '../helpers/storageSnapshot';

/**
 * Bad failover input on a running host (statePreservation rules, Lt/Gt tolerations, the workload status
 * report): each request answers 400 naming the field and the reason, and the stored state (every table but
 * the timer leases, every queue) is byte-for-byte what it was before.
 */
const ADMIN = 'failover-corpus-admin-0123456789';

let env: TestStorage;
let host: HostProcess;

const snapshot = () => storageSnapshot(env.storage);

const admin = { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` };
const yaml = { 'content-type': 'application/yaml', authorization: `Bearer ${ADMIN}` };

const rb = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'work.karmada.io/v1alpha2',
  kind: 'ResourceBinding',
  metadata: { name, namespace: 'default' },
  spec: { resource: { apiVersion: 'apps/v1', kind: 'Deployment', name }, replicas: 1, clusters: [{ name: 'fo1', replicas: 1 }], ...spec },
});
const policy = (kind: 'PropagationPolicy' | 'ClusterPropagationPolicy', spec: Record<string, unknown>) => ({
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind,
  metadata: kind === 'PropagationPolicy' ? { name: 'bad-policy', namespace: 'default' } : { name: 'bad-policy' },
  spec: { resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'x' }], ...spec },
});
const rules = (...list: Array<Record<string, unknown>>) => ({ statePreservation: { rules: list } });
const clusterRules = (...list: Array<Record<string, unknown>>) => ({ failover: { cluster: rules(...list) } });
const appRules = (...list: Array<Record<string, unknown>>) => ({ failover: { application: rules(...list) } });
const tolerations = (...list: Array<Record<string, unknown>>) => ({ placement: { clusterTolerations: list } });

type Case = { name: string; path: string; body: string; headers?: Record<string, string>; field: string; reason: RegExp };

const CLUSTER_RULES = 'spec.failover.cluster.statePreservation.rules';
const APP_RULES = 'spec.failover.application.statePreservation.rules';
const apply = (name: string, object: unknown, field: string, reason: RegExp): Case => ({ name, path: 'apply', body: JSON.stringify(object), field, reason });
const status = (name: string, aggregatedStatus: unknown[], field: string, reason: RegExp): Case => ({
  name,
  path: 'resourcebindings/default/seed-rb/status',
  body: JSON.stringify({ aggregatedStatus }),
  field,
  reason,
});

const CASES: Case[] = [
  apply(
    'an unclosed JSONPath',
    rb('bad', clusterRules({ aliasLabelName: 'job-id', jsonPath: '{.jobId' })),
    `${CLUSTER_RULES}[0].jsonPath`,
    /^invalid JSONPath: unclosed action/,
  ),
  apply(
    'a JSONPath without braces (Karmada would preserve the text itself)',
    rb('bad', clusterRules({ aliasLabelName: 'job-id', jsonPath: '.jobId' })),
    `${CLUSTER_RULES}[0].jsonPath`,
    /has no \{\.\.\.\} path.*\{\.jobId\}/,
  ),
  apply(
    'a JSONPath that names the field without a dot',
    rb('bad', appRules({ aliasLabelName: 'job-id', jsonPath: '{jobId}' })),
    `${APP_RULES}[0].jsonPath`,
    /^invalid JSONPath: unexpected "j"/,
  ),
  apply(
    'range/end',
    policy('PropagationPolicy', appRules({ aliasLabelName: 'ids', jsonPath: '{range .jobs[*]}{.id}{end}' })),
    `${APP_RULES}[0].jsonPath`,
    /range\/end is not supported/,
  ),
  apply(
    'a filter with an unsupported operator',
    policy('ClusterPropagationPolicy', clusterRules({ aliasLabelName: 'ready', jsonPath: '{.conditions[?(@.type=~"Ready")].status}' })),
    `${CLUSTER_RULES}[0].jsonPath`,
    /unsupported filter operator/,
  ),
  apply('an empty JSONPath', rb('bad', clusterRules({ aliasLabelName: 'job-id', jsonPath: '' })), `${CLUSTER_RULES}[0].jsonPath`, /must not be empty/),
  apply(
    'an aliasLabelName that is not a label name',
    policy('PropagationPolicy', appRules({ aliasLabelName: 'Job ID', jsonPath: '{.jobId}' })),
    `${APP_RULES}[0].aliasLabelName`,
    /qualified name/,
  ),
  apply(
    'an aliasLabelName of 64 characters',
    policy('ClusterPropagationPolicy', clusterRules({ aliasLabelName: 'a'.repeat(64), jsonPath: '{.jobId}' })),
    `${CLUSTER_RULES}[0].aliasLabelName`,
    /at most 63 characters/,
  ),
  apply(
    'the same aliasLabelName twice',
    rb('bad', clusterRules({ aliasLabelName: 'id', jsonPath: '{.a}' }, { aliasLabelName: 'id', jsonPath: '{.b}' })),
    `${CLUSTER_RULES}[1].aliasLabelName`,
    /used twice/,
  ),
  apply('a rule without its jsonPath', rb('bad', appRules({ aliasLabelName: 'id' })), `${APP_RULES}[0].jsonPath`, /required field is missing/),
  apply(
    'statePreservation without rules',
    rb('bad', { failover: { cluster: { statePreservation: {} } } }),
    'spec.failover.cluster.statePreservation.rules',
    /required field is missing/,
  ),
  apply(
    'an Lt toleration on a binding',
    rb('bad', tolerations({ key: 'k', operator: 'Lt', value: '5', effect: 'NoExecute' })),
    'spec.placement.clusterTolerations[0].operator',
    /^Lt is not supported in clusterTolerations: Karmada rejects the comparison operators Lt and Gt; use "Exists" or "Equal"$/,
  ),
  apply(
    'a Gt toleration on a PropagationPolicy',
    policy('PropagationPolicy', tolerations({ key: 'k', operator: 'Gt', value: '1' })),
    'spec.placement.clusterTolerations[0].operator',
    /^Gt is not supported in clusterTolerations/,
  ),
  apply(
    'a Gt toleration on a ClusterPropagationPolicy, second in the list',
    policy('ClusterPropagationPolicy', tolerations({ key: 'k', operator: 'Exists' }, { key: 'k', operator: 'Gt', value: '1' })),
    'spec.placement.clusterTolerations[1].operator',
    /^Gt is not supported in clusterTolerations/,
  ),
  {
    name: 'Lt in YAML, as Karmada users write it',
    path: 'apply',
    headers: yaml,
    body: [
      'apiVersion: policy.karmada.io/v1alpha1',
      'kind: PropagationPolicy',
      'metadata: {name: yaml-policy, namespace: default}',
      'spec:',
      '  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: x}]',
      '  placement:',
      '    clusterTolerations:',
      '    - {key: node.kubernetes.io/gpu, operator: Lt, value: "3", effect: NoSchedule}',
      '',
    ].join('\n'),
    field: 'spec.placement.clusterTolerations[0].operator',
    reason: /^Lt is not supported in clusterTolerations/,
  },
  {
    name: 'a good binding with a bad one in the same request',
    path: 'apply',
    body: JSON.stringify([rb('good-one', {}), rb('bad-one', clusterRules({ aliasLabelName: 'x', jsonPath: '{.a' }))]),
    field: `${CLUSTER_RULES}[0].jsonPath`,
    reason: /unclosed action/,
  },
  status('a status that is not an object', [{ clusterName: 'fo1', health: 'Healthy', status: 'running' }], 'aggregatedStatus[0].status', /expected record/),
  status(
    'a status over 4096 characters',
    [{ clusterName: 'fo1', health: 'Healthy', status: { log: 'x'.repeat(5000) } }],
    'aggregatedStatus[0].status',
    /at most 4096 characters as JSON/,
  ),
  status('a status beside an unknown field', [{ clusterName: 'fo1', health: 'Healthy', state: {} }], 'aggregatedStatus[0].state', /did you mean "status"/),
];

beforeAll(async () => {
  env = await startTestStorage();
  host = await startHostProcess({
    AzureWebJobsStorage: env.azurite.connectionString,
    AUTH_MODE: 'required',
    ADMIN_TOKEN: ADMIN,
    CLUSTER_MONITOR_GRACE_PERIOD_SECONDS: '3600',
    CLUSTER_STARTUP_GRACE_PERIOD_SECONDS: '3600',
  });
  const seed = [
    { apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name: 'fo1' } },
    { apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name: 'fo2' } },
    rb('seed-rb', {
      placement: { clusterAffinity: { clusterNames: ['fo1', 'fo2'] } },
      ...clusterRules({ aliasLabelName: 'failover.example.com/job-id', jsonPath: '{.jobId}' }),
    }),
  ];
  const res = await fetch(`${host.url}/api/apply`, { method: 'POST', headers: admin, body: JSON.stringify(seed) });
  expect(res.status, await res.text()).toBe(200);
  // A good report with a status: the baseline has one.
  const good = await fetch(`${host.url}/api/resourcebindings/default/seed-rb/status`, {
    method: 'POST',
    headers: admin,
    body: JSON.stringify({ aggregatedStatus: [{ clusterName: 'fo1', health: 'Healthy', status: { jobId: 'job-1' } }] }),
  });
  expect(good.status).toBe(200);
  expect(((await good.json()) as { status: { aggregatedStatus: Array<{ status?: unknown }> } }).status.aggregatedStatus[0].status).toEqual({ jobId: 'job-1' });
  // The baseline is taken once the work queued by the set-up has settled (quietStorageSnapshot).
}, 60_000);
afterAll(async () => {
  await host?.stop();
  await env?.close();
});

describe('bad failover input', () => {
  it('answers each with 400 naming the field and the reason, and stores nothing', async () => {
    const baseline = await quietStorageSnapshot(env.storage);
    const failures: string[] = [];
    for (const c of CASES) {
      const res = await fetch(`${host.url}/api/${c.path}`, { method: 'POST', headers: c.headers ?? admin, body: c.body });
      const text = await res.text();
      if (res.status !== 400) {
        failures.push(`${c.name}: ${res.status} (expected 400) ${text.slice(0, 300)}`);
        continue;
      }
      const body = JSON.parse(text) as { error?: string; errors?: Array<{ path: string; message: string }> };
      const error = body.errors?.find((e) => e.path === c.field);
      if (!body.error) failures.push(`${c.name}: no error message`);
      if (!error) failures.push(`${c.name}: no error for ${c.field}: ${JSON.stringify(body.errors)}`);
      else if (!c.reason.test(error.message)) failures.push(`${c.name}: ${c.field}: "${error.message}" does not match ${c.reason}`);
    }
    expect(failures).toEqual([]);
    expect(await snapshot()).toBe(baseline);
    // Not even the good object of the mixed request.
    expect((await fetch(`${host.url}/api/resourcebindings/default/good-one`)).status).toBe(404);
  }, 60_000);
});
