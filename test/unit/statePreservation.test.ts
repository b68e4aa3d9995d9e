import { describe, expect, it } from 'vitest';
import { decodeApplyDocuments } from '../../shared/api/decode';
import { ApiError, FieldError } from '../../shared/api/errors';
import { bindingStatusReportSchema, gracefulEvictionTaskSchema } from '../../shared/api/resources';
import { mergeWorkloadStatus } from '../../shared/failover/applicationFailover';
import { evaluateJsonPath, jsonPathProblem, MAX_PRESERVED_VALUE, preserveState } from '../../shared/failover/statePreservation';

/** What a workload might report as its own status (Karmada's aggregatedStatus[].status). */
const STATUS = {
  jobId: 'job-42',
  replicas: 3,
  ready: true,
  nothing: null,
  checkpoint: { path: 's3://ckpt/7', epoch: 7 },
  'app.kubernetes.io/name': 'web',
  conditions: [
    { type: 'Ready', status: 'True', generation: 1 },
    { type: 'Synced', status: 'False', generation: 2 },
  ],
  items: [{ name: 'a', meta: { x: 1 } }, { name: 'b', meta: { x: 2 } }, { name: 'c' }],
  map: { z: 1, a: 2 },
  want: 'b',
};

describe('Kubernetes JSONPath templates, evaluated from the status', () => {
  const found: Array<[string, string]> = [
    ['{.jobId}', 'job-42'],
    ['{ .jobId }', 'job-42'],
    ['{$.jobId}', 'job-42'],
    ['{.replicas}', '3'],
    ['{.ready}', 'true'],
    ['{.checkpoint.path}', 's3://ckpt/7'],
    ['{.checkpoint.path}@{.checkpoint.epoch}', 's3://ckpt/7@7'],
    ['id={.jobId}', 'id=job-42'],
    ['{"ckpt-"}{.checkpoint.epoch}', 'ckpt-7'],
    ['{.checkpoint}', '{"epoch":7,"path":"s3://ckpt/7"}'],
    ['{.map}', '{"a":2,"z":1}'],
    ['{.app\\.kubernetes\\.io/name}', 'web'],
    ["{['app.kubernetes.io/name']}", 'web'],
    ['{.conditions[?(@.type=="Ready")].status}', 'True'],
    ["{.conditions[?(@.type=='Synced')].status}", 'False'],
    ['{.conditions[?(@.type!="Ready")].type}', 'Synced'],
    ['{.conditions[?(@.generation>1)].type}', 'Synced'],
    ['{.conditions[?(@.generation>=1)].type}', 'Ready Synced'],
    ['{.items[?(@.meta.x==2)].name}', 'b'],
    ['{.items[?(@.meta)].name}', 'a b'],
    ['{.items[?(@.name==$.want)].name}', 'b'],
    ['{.items[*].name}', 'a b c'],
    ['{.items[0].name}', 'a'],
    ['{.items[-1].name}', 'c'],
    ['{.items[-2].name}', 'b'],
    ['{.items[0:2].name}', 'a b'],
    ['{.items[1:].name}', 'b c'],
    ['{.items[::2].name}', 'a c'],
    ['{.items[0,2].name}', 'a c'],
    ["{['jobId','replicas']}", 'job-42 3'],
    ['{..x}', '1 2'],
    ['{.items..name}', 'a b c'],
  ];
  it.each(found)('%s gives %j', (template, value) => {
    expect(jsonPathProblem(template)).toBeUndefined();
    expect(evaluateJsonPath(template, STATUS)).toEqual({ found: true, value });
  });

  const nothing: Array<[string, RegExp]> = [
    ['{.missing}', /found nothing/],
    ['{.checkpoint.missing}', /found nothing/],
    ['{.items[5].name}', /found nothing/],
    ['{.conditions[?(@.type=="Gone")].status}', /found nothing/],
    ['{.nothing}', /is null/],
    ['{.jobId}-{.missing}', /\{\.missing\} found nothing/],
  ];
  it.each(nothing)('%s finds nothing', (template, why) => {
    const result = evaluateJsonPath(template, STATUS);
    expect(result.found).toBe(false);
    expect(!result.found && result.why).toMatch(why);
  });

  const invalid: Array<[string, RegExp]> = [
    ['jobId', /has no \{\.\.\.\} path/],
    ['.jobId', /has no \{\.\.\.\} path/],
    ['{.jobId', /unclosed action/],
    ['{}', /empty action/],
    ['{jobId}', /unexpected "j"/],
    ['{range .items[*]}{.name}{end}', /range\/end is not supported/],
    ['{.items[}', /unclosed/],
    ['{.items[a:b]}', /invalid array subscript/],
    ['{.items[0:0]}', /selects nothing/],
    ['{.items[::0]}', /step must be greater than 0/],
    ['{.items[?(@.name=~"a")]}', /unsupported filter operator/],
    ['{.items[?(@.name=="a"]}', /unclosed action.*"\(" in it is not closed/],
    ['{.items[?(@.name=="a"])}', /unclosed filter/],
    ['{.items[?(@.name==a)]}', /invalid filter operand "a"/],
    ['{.items[?(@.name=="a(b)")]}', /not supported in a filter/],
    ["{['a;b']}", /not supported here/],
  ];
  it.each(invalid)('%s is invalid', (template, why) => {
    expect(jsonPathProblem(template)).toMatch(why);
  });
});

describe('preserveState', () => {
  const rules = [
    { aliasLabelName: 'job-id', jsonPath: '{.jobId}' },
    { aliasLabelName: 'example.com/epoch', jsonPath: '{.checkpoint.epoch}' },
    { aliasLabelName: 'gone', jsonPath: '{.gone}' },
  ];
  it('keeps what each rule finds and returns the rules that find nothing, with why', () => {
    expect(preserveState(rules, STATUS)).toEqual({
      preservedLabelState: { 'job-id': 'job-42', 'example.com/epoch': '7' },
      missed: [{ aliasLabelName: 'gone', jsonPath: '{.gone}', why: '{.gone} found nothing in the status' }],
    });
  });
  it('without a collected status every rule is missed', () => {
    expect(preserveState(rules, undefined).missed.map((m) => m.why)).toEqual(Array(3).fill('no status was collected from the cluster'));
  });
  it('a value longer than the limit is missed, not cut', () => {
    const result = preserveState([{ aliasLabelName: 'big', jsonPath: '{.big}' }], { big: 'x'.repeat(MAX_PRESERVED_VALUE + 1) });
    expect(result.preservedLabelState).toEqual({});
    expect(result.missed[0].why).toMatch(/longer than/);
  });
  it('a stored rule that is not valid (applied before a stricter check) is reported, not thrown', () => {
    expect(preserveState([{ aliasLabelName: 'x', jsonPath: '{.a' }], {}).missed[0].why).toMatch(/unclosed action/);
  });
});

function errorsOf(objects: unknown[]): FieldError[] {
  try {
    decodeApplyDocuments(objects);
  } catch (error) {
    if (error instanceof ApiError) return error.errors;
    throw error;
  }
  throw new Error('expected a 400');
}

const rb = (spec: Record<string, unknown>) => ({
  apiVersion: 'work.karmada.io/v1alpha2',
  kind: 'ResourceBinding',
  metadata: { name: 'web', namespace: 'default' },
  spec: { resource: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }, ...spec },
});
const pp = (kind: 'PropagationPolicy' | 'ClusterPropagationPolicy', spec: Record<string, unknown>) => ({
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind,
  metadata: kind === 'PropagationPolicy' ? { name: 'p', namespace: 'default' } : { name: 'p' },
  spec: { resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment' }], ...spec },
});
const preserve = (...rules: Array<Record<string, unknown>>) => ({ statePreservation: { rules } });

describe('statePreservation and toleration validation', () => {
  it("accepts Karmada's example as written, on a binding and on both kinds of policy", () => {
    const application = { purgeMode: 'Immediately', ...preserve({ aliasLabelName: 'application.karmada.io/failover-jobid', jsonPath: '{ .jobStatus.id }' }) };
    const cluster = { purgeMode: 'Directly', ...preserve({ aliasLabelName: 'failover-jobid', jsonPath: '{.jobId}' }) };
    const [binding, policy, clusterPolicy] = decodeApplyDocuments([
      rb({ failover: { application, cluster } }),
      pp('PropagationPolicy', { failover: { application } }),
      pp('ClusterPropagationPolicy', { failover: { cluster } }),
    ]);
    expect(binding.kind === 'ResourceBinding' && binding.object.spec.failover?.application?.statePreservation?.rules).toEqual([
      { aliasLabelName: 'application.karmada.io/failover-jobid', jsonPath: '{ .jobStatus.id }' },
    ]);
    expect(binding.kind === 'ResourceBinding' && binding.object.spec.failover?.cluster?.statePreservation?.rules[0].jsonPath).toBe('{.jobId}');
    expect(policy.kind === 'PropagationPolicy' && policy.object.spec.failover?.application?.statePreservation?.rules).toHaveLength(1);
    expect(clusterPolicy.kind === 'ClusterPropagationPolicy' && clusterPolicy.object.spec.failover?.cluster?.statePreservation?.rules).toHaveLength(1);
  });

  const P = 'spec.failover.cluster.statePreservation';
  const A = 'spec.failover.application.statePreservation';
  const cases: Array<{ name: string; objects: unknown[]; path: string; message: RegExp }> = [
    {
      name: 'an unclosed JSONPath',
      objects: [rb({ failover: { cluster: preserve({ aliasLabelName: 'a', jsonPath: '{.jobId' }) } })],
      path: `${P}.rules[0].jsonPath`,
      message: /^invalid JSONPath: unclosed action/,
    },
    {
      name: 'a JSONPath without braces',
      objects: [rb({ failover: { cluster: preserve({ aliasLabelName: 'a', jsonPath: '.jobId' }) } })],
      path: `${P}.rules[0].jsonPath`,
      message: /has no \{\.\.\.\} path/,
    },
    {
      name: 'range/end',
      objects: [pp('PropagationPolicy', { failover: { application: preserve({ aliasLabelName: 'a', jsonPath: '{range .x[*]}{.y}{end}' }) } })],
      path: `${A}.rules[0].jsonPath`,
      message: /range\/end is not supported/,
    },
    {
      name: 'an aliasLabelName that is not a label key',
      objects: [rb({ failover: { application: preserve({ aliasLabelName: 'job id!', jsonPath: '{.jobId}' }) } })],
      path: `${A}.rules[0].aliasLabelName`,
      message: /qualified name/,
    },
    {
      name: 'an aliasLabelName longer than 63 characters',
      objects: [pp('ClusterPropagationPolicy', { failover: { cluster: preserve({ aliasLabelName: `example.com/${'a'.repeat(64)}`, jsonPath: '{.jobId}' }) } })],
      path: `${P}.rules[0].aliasLabelName`,
      message: /at most 63 characters/,
    },
    {
      name: 'the same aliasLabelName twice',
      objects: [
        rb({
          failover: {
            cluster: preserve({ aliasLabelName: 'a', jsonPath: '{.x}' }, { aliasLabelName: 'a', jsonPath: '{.y}' }),
          },
        }),
      ],
      path: `${P}.rules[1].aliasLabelName`,
      message: /used twice/,
    },
    {
      name: 'a misspelt rule field',
      objects: [rb({ failover: { cluster: preserve({ aliasLabelName: 'a', jsonpath: '{.x}' }) } })],
      path: `${P}.rules[0].jsonpath`,
      message: /did you mean "jsonPath"/,
    },
    {
      name: 'an Lt toleration on a binding',
      objects: [rb({ placement: { clusterTolerations: [{ key: 'k', operator: 'Lt', value: '5', effect: 'NoExecute' }] } })],
      path: 'spec.placement.clusterTolerations[0].operator',
      message: /^Lt is not supported in clusterTolerations: Karmada rejects the comparison operators Lt and Gt/,
    },
    {
      name: 'a Gt toleration on a policy',
      objects: [
        pp('PropagationPolicy', {
          placement: {
            clusterTolerations: [
              { key: 'k', operator: 'Equal' },
              { key: 'k', operator: 'Gt', value: '1' },
            ],
          },
        }),
      ],
      path: 'spec.placement.clusterTolerations[1].operator',
      message: /^Gt is not supported in clusterTolerations/,
    },
    {
      name: 'another unknown operator',
      objects: [rb({ placement: { clusterTolerations: [{ key: 'k', operator: 'Matches' }] } })],
      path: 'spec.placement.clusterTolerations[0].operator',
      message: /^must be one of "Exists", "Equal"$/,
    },
  ];
  it.each(cases)('refuses $name, naming the field', ({ objects, path, message }) => {
    const errors = errorsOf(objects);
    expect(errors.map((e) => e.path)).toContain(path);
    expect(errors.find((e) => e.path === path)!.message).toMatch(message);
  });

  it('still accepts Exists and Equal tolerations', () => {
    const [binding] = decodeApplyDocuments([
      rb({
        placement: {
          clusterTolerations: [
            { key: 'k', operator: 'Exists' },
            { key: 'k', value: 'v' },
          ],
        },
      }),
    ]);
    expect(binding.kind === 'ResourceBinding' && binding.object.spec.placement?.clusterTolerations).toEqual([
      { key: 'k', operator: 'Exists' },
      { key: 'k', value: 'v' },
    ]);
  });

  it('accepts a task with preservedLabelState and clustersBeforeFailover (GET output applies again)', () => {
    const task = {
      fromCluster: 'm1',
      reason: 'TaintUntolerated',
      producer: 'TaintManager',
      preservedLabelState: { 'example.com/job-id': 'job-42' },
      clustersBeforeFailover: ['m1', 'm2'],
    };
    expect(gracefulEvictionTaskSchema.parse(task)).toMatchObject(task);
    expect(gracefulEvictionTaskSchema.safeParse({ ...task, preservedLabelState: { 'not a label': 'x' } }).success).toBe(false);
  });
});

describe('the workload status report', () => {
  it('accepts a free-form status per cluster and keeps it with the health', () => {
    const report = bindingStatusReportSchema.parse({
      aggregatedStatus: [{ clusterName: 'm1', health: 'Healthy', status: { jobId: 'job-42', checkpoint: { epoch: 7 } } }],
    });
    const now = new Date('2026-01-01T00:00:00Z');
    const [item] = mergeWorkloadStatus([], report.aggregatedStatus, ['m1'], now);
    expect(item).toMatchObject({ clusterName: 'm1', health: 'Healthy', status: { jobId: 'job-42', checkpoint: { epoch: 7 } } });
    // A later health-only report keeps the status; a report with a status replaces it.
    const [kept] = mergeWorkloadStatus([item], [{ clusterName: 'm1', health: 'Unhealthy' }], ['m1'], now);
    expect(kept.status).toEqual({ jobId: 'job-42', checkpoint: { epoch: 7 } });
    const [replaced] = mergeWorkloadStatus([kept], [{ clusterName: 'm1', health: 'Unhealthy', status: { jobId: 'job-43' } }], ['m1'], now);
    expect(replaced.status).toEqual({ jobId: 'job-43' });
  });

  it.each([
    ['not an object', 'running', /expected record/],
    ['too large', { blob: 'x'.repeat(5000) }, /at most 4096 characters as JSON/],
  ])('refuses a status that is %s', (_what, status, message) => {
    const result = bindingStatusReportSchema.safeParse({ aggregatedStatus: [{ clusterName: 'm1', health: 'Healthy', status }] });
    expect(result.success).toBe(false);
    expect(result.error!.issues[0].path).toEqual(['aggregatedStatus', 0, 'status']);
    expect(result.error!.issues[0].message).toMatch(message);
  });
});
