import { describe, expect, it } from 'vitest';
import { bodyFormat, decodeApplyDocuments, decodeSingle, parseDocuments, readBodyText } from '../../shared/api/decode';
import { ApiError, FieldError } from '../../shared/api/errors';
import { statusReportSchema } from '../../shared/api/resources';
import { SEED_000_CTP } from '../helpers/seedYaml';

const SEED_POLICY = SEED_000_CTP;

function errorsOf(fn: () => unknown): { status: number; errors: FieldError[] } {
  try {
    fn();
  } catch (error) {
    if (error instanceof ApiError) return { status: error.status, errors: error.errors };
    throw error;
  }
  throw new Error('expected an ApiError');
}

const applyYaml = (text: string) => decodeApplyDocuments(parseDocuments(text, 'yaml'));

describe('apply decoding', () => {
  it("applies the seed's ClusterTaintPolicy as written", () => {
    const [policy] = applyYaml(SEED_POLICY);
    expect(policy).toMatchObject({ kind: 'ClusterTaintPolicy', name: 'detect-cluster-not-ready' });
  });

  it('fills the window defaults (300 s add, 180 s remove)', () => {
    const [policy] = applyYaml(SEED_POLICY.replace('    addOnMatchSeconds: 300\n    removeOnMismatchSeconds: 180\n', ''));
    expect(policy.kind === 'ClusterTaintPolicy' && 'taintsToAdd' in policy.object.spec && policy.object.spec.taintsToAdd[0]).toMatchObject({
      addOnMatchSeconds: 300,
      removeOnMismatchSeconds: 180,
    });
  });

  it('accepts several YAML documents, a JSON array and a List', () => {
    const cluster = { apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name: 'member1' } };
    expect(applyYaml(`${SEED_POLICY}---\napiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: member1\n`)).toHaveLength(2);
    expect(decodeApplyDocuments(parseDocuments(JSON.stringify([cluster, { ...cluster, metadata: { name: 'member2' } }]), 'json'))).toHaveLength(2);
    expect(decodeApplyDocuments([{ kind: 'List', items: [cluster] }])).toHaveLength(1);
  });

  const invalid: Array<{ name: string; edit: (yaml: string) => string; errors: Array<Partial<FieldError>> }> = [
    {
      name: 'an unknown field, with the closest known name',
      edit: (y) => y.replace('    addOnMatchSeconds: 300', '    addOnMatchSecond: 300'),
      errors: [{ path: 'spec.taintsToAdd[0].addOnMatchSecond', message: 'unknown field; did you mean "addOnMatchSeconds"?' }],
    },
    {
      name: "Karmada's spelling targetClusters mixed into a windowed-shape policy",
      edit: (y) => y.replace('  targetCluster:', '  targetClusters:'),
      errors: [
        {
          path: 'spec.targetClusters',
          message:
            'Karmada-shape field "targetClusters" cannot be mixed with windowed-shape fields "matchConditions", "taintsToAdd"; a policy uses one shape (the windowed shape spells it "targetCluster")',
        },
      ],
    },
    {
      name: 'an effect outside the four',
      edit: (y) => y.replace('effect: PreferNoExecute', 'effect: NoEvict'),
      errors: [{ path: 'spec.taintsToAdd[0].effect', message: 'must be one of "NoSchedule", "PreferNoSchedule", "PreferNoExecute", "NoExecute"' }],
    },
    {
      name: 'a window below 1 s',
      edit: (y) => y.replace('removeOnMismatchSeconds: 180', 'removeOnMismatchSeconds: 0'),
      errors: [{ path: 'spec.taintsToAdd[0].removeOnMismatchSeconds', message: 'must be at least 1' }],
    },
    {
      name: 'a fractional window',
      edit: (y) => y.replace('addOnMatchSeconds: 300', 'addOnMatchSeconds: 1.5'),
      errors: [{ path: 'spec.taintsToAdd[0].addOnMatchSeconds', message: 'must be a whole number of seconds' }],
    },
    {
      name: 'an operator outside In/NotIn',
      edit: (y) => y.replace('operator: "In"', 'operator: "Exists"'),
      errors: [{ path: 'spec.matchConditions[0].operator', message: 'must be one of "In", "NotIn"' }],
    },
    {
      name: 'a status value outside True/False/Unknown',
      edit: (y) => y.replace('- "Unknown"', '- "Maybe"'),
      errors: [{ path: 'spec.matchConditions[0].statusValues[1]', message: 'must be one of "True", "False", "Unknown"' }],
    },
    {
      name: 'a duplicate key+effect in one policy',
      edit: (y) => `${y}  - key: "cluster.karmada.io/not-ready"\n    effect: PreferNoExecute\n    value: other\n`,
      errors: [
        {
          path: 'spec.taintsToAdd[1]',
          message: 'duplicate taint cluster.karmada.io/not-ready:PreferNoExecute (also at spec.taintsToAdd[0]); a policy lists each key and effect once',
        },
      ],
    },
    {
      name: 'a missing taintsToAdd',
      edit: (y) => y.slice(0, y.indexOf('  taintsToAdd:')),
      errors: [{ path: 'spec.taintsToAdd', message: 'required field is missing (expected array)' }],
    },
    {
      name: 'an invalid name',
      edit: (y) => y.replace('name: "detect-cluster-not-ready"', 'name: "Detect_Not_Ready"'),
      errors: [{ path: 'metadata.name' }],
    },
    {
      name: 'a kind we do not serve, with a suggestion',
      edit: (y) => y.replace('kind: "ClusterTaintPolicy"', 'kind: "ClusterTaintPolicies"'),
      errors: [
        {
          path: 'kind',
          message:
            'unsupported kind "ClusterTaintPolicies"; did you mean "ClusterTaintPolicy"? (supported: Cluster, ClusterTaintPolicy, ResourceBinding, ClusterResourceBinding, PropagationPolicy, ClusterPropagationPolicy, FailoverBudget)',
        },
      ],
    },
    {
      name: 'a wrong apiVersion',
      edit: (y) => y.replace('policy.karmada.io/v1alpha1', 'policy.karmada.io/v1'),
      errors: [{ path: 'apiVersion' }],
    },
  ];
  it.each(invalid)('rejects $name, naming the field', ({ edit, errors }) => {
    const result = errorsOf(() => applyYaml(edit(SEED_POLICY)));
    expect(result.status).toBe(400);
    expect(result.errors).toEqual(errors.map((e) => expect.objectContaining({ ...e, document: 0 })));
  });

  it('reports every bad object of a request, by document', () => {
    const bad = `${SEED_POLICY.replace('effect: PreferNoExecute', 'effect: Nope')}---\napiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: member1\nspec:\n  taints:\n  - key: a\n    effect: NoSchedule\n  - key: a\n    effect: NoSchedule\n`;
    const result = errorsOf(() => applyYaml(bad));
    expect(result.errors.map((e) => [e.document, e.path])).toEqual([
      [0, 'spec.taintsToAdd[0].effect'],
      [1, 'spec.taints[1]'],
    ]);
  });

  it('rejects the same object twice in one request', () => {
    const result = errorsOf(() => applyYaml(`${SEED_POLICY}---\n${SEED_POLICY}`));
    expect(result.errors).toEqual([expect.objectContaining({ document: 1, path: 'metadata.name' })]);
  });
});

describe('body decoding', () => {
  const request = (body: string | Uint8Array, headers: Record<string, string> = {}) => ({
    headers: new Headers(headers),
    arrayBuffer: async () => (typeof body === 'string' ? new TextEncoder().encode(body) : body).buffer as ArrayBuffer,
  });

  it.each([
    ['application/json', 'json'],
    ['application/json; charset=utf-8', 'json'],
    ['application/yaml', 'yaml'],
    ['text/yaml', 'yaml'],
    [null, 'yaml'],
  ])('Content-Type %s reads as %s', (type, format) => {
    expect(bodyFormat(type)).toBe(format);
  });

  it('refuses other content types with 415', () => {
    expect(() => bodyFormat('application/x-www-form-urlencoded')).toThrow(expect.objectContaining({ status: 415 }));
  });

  it('refuses bodies over the limit with 413, by header or by size', async () => {
    await expect(readBodyText(request('x'.repeat(2000)), 1024)).rejects.toMatchObject({ status: 413 });
    await expect(readBodyText(request('{}', { 'content-length': '999999' }), 1024)).rejects.toMatchObject({ status: 413 });
  });

  it('refuses invalid UTF-8 and empty bodies with 400', async () => {
    await expect(readBodyText(request(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d])), 1024)).rejects.toMatchObject({
      status: 400,
      message: 'request body is not valid UTF-8',
    });
    await expect(readBodyText(request(''), 1024)).rejects.toMatchObject({ status: 400 });
  });

  it('names the line of a YAML syntax error', () => {
    const result = errorsOf(() => parseDocuments('a: [1, 2\nb: c', 'yaml'));
    expect(result.errors[0].message).toMatch(/^body is not valid YAML at line \d+, column \d+/);
  });

  it('refuses deep nesting', () => {
    const deep = '['.repeat(40) + ']'.repeat(40);
    expect(errorsOf(() => parseDocuments(deep, 'json')).errors[0].message).toBe('nesting is deeper than 32 levels');
  });

  it('refuses duplicate keys in YAML', () => {
    expect(errorsOf(() => parseDocuments('a: 1\na: 2\n', 'yaml')).status).toBe(400);
  });
});

describe('status report decoding', () => {
  const cases: Array<[string, unknown, string | undefined]> = [
    ['a valid report', { conditions: [{ type: 'Ready', status: 'False', reason: 'ClusterNotReachable' }] }, undefined],
    ['a bad status', { conditions: [{ type: 'Ready', status: 'false' }] }, 'conditions[0].status'],
    [
      'a duplicate condition type',
      {
        conditions: [
          { type: 'Ready', status: 'True' },
          { type: 'Ready', status: 'False' },
        ],
      },
      'conditions[1].type',
    ],
    ['no conditions', { conditions: [] }, 'conditions'],
    ['an unknown field', { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: 'x' }] }, 'conditions[0].lastTransitionTime'],
    ['a bad time', { conditions: [{ type: 'Ready', status: 'True' }], observedAt: 'yesterday' }, 'observedAt'],
    ['an oversized message', { conditions: [{ type: 'Ready', status: 'True', message: 'x'.repeat(5000) }] }, 'conditions[0].message'],
  ];
  it.each(cases)('%s', (_name, body, badPath) => {
    if (!badPath) {
      expect(decodeSingle([body], statusReportSchema).conditions).toHaveLength(1);
      return;
    }
    expect(errorsOf(() => decodeSingle([body], statusReportSchema)).errors.map((e) => e.path)).toEqual([badPath]);
  });
});

describe('binding decoding', () => {
  const binding = (spec: Record<string, unknown>) => ({
    apiVersion: 'work.karmada.io/v1alpha2',
    kind: 'ResourceBinding',
    metadata: { name: 'nginx' },
    spec: { resource: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'nginx' }, ...spec },
  });
  it('defaults the namespace and the cluster failover behaviour', () => {
    const [decoded] = decodeApplyDocuments([binding({ failover: { cluster: {} } })]);
    expect(decoded.kind === 'ResourceBinding' && decoded.object.metadata.namespace).toBe('default');
    expect(decoded.kind === 'ResourceBinding' && decoded.object.spec.failover?.cluster).toEqual({ purgeMode: 'Gracefully', tolerationSeconds: 300 });
  });
  it.each([
    ['Directly', 'Directly'],
    ['Immediately', 'Directly'],
    ['Gracefully', 'Gracefully'],
    ['Graciously', 'Gracefully'],
  ])('reads purge mode %s as %s', (spelling, mode) => {
    const [decoded] = decodeApplyDocuments([binding({ failover: { cluster: { purgeMode: spelling } } })]);
    expect(decoded.kind === 'ResourceBinding' && decoded.object.spec.failover?.cluster?.purgeMode).toBe(mode);
  });
  const invalid: Array<[string, Record<string, unknown>, Partial<FieldError>]> = [
    [
      'the seed typo pureMode',
      { failover: { cluster: { pureMode: 'Directly' } } },
      { path: 'spec.failover.cluster.pureMode', message: 'unknown field; did you mean "purgeMode"?' },
    ],
    [
      'Never for cluster failover',
      { failover: { cluster: { purgeMode: 'Never' } } },
      { path: 'spec.failover.cluster.purgeMode', message: 'must be one of "Directly", "Immediately", "Gracefully", "Graciously"' },
    ],
    [
      'a negative tolerationSeconds',
      { failover: { cluster: { tolerationSeconds: -1 } } },
      { path: 'spec.failover.cluster.tolerationSeconds', message: 'must not be negative' },
    ],
    [
      'a toleration with an empty key and Equal',
      { placement: { clusterTolerations: [{ operator: 'Equal', value: 'x' }] } },
      { path: 'spec.placement.clusterTolerations[0].operator', message: 'must be Exists when key is empty' },
    ],
    ['the same cluster twice', { clusters: [{ name: 'm1' }, { name: 'm1' }] }, { path: 'spec.clusters[1].name' }],
    [
      'minGroups above maxGroups',
      { placement: { spreadConstraints: [{ minGroups: 3, maxGroups: 2 }] } },
      { path: 'spec.placement.spreadConstraints[0].minGroups', message: 'must not be greater than maxGroups' },
    ],
  ];
  it.each(invalid)('rejects %s', (_name, spec, error) => {
    expect(errorsOf(() => decodeApplyDocuments([binding(spec)])).errors).toEqual([expect.objectContaining(error)]);
  });
});

describe('application failover decoding', () => {
  const binding = (application: unknown) => ({
    apiVersion: 'work.karmada.io/v1alpha2',
    kind: 'ResourceBinding',
    metadata: { name: 'nginx' },
    spec: { resource: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'nginx' }, failover: { application } },
  });
  const decode = (application: unknown) => {
    const [decoded] = decodeApplyDocuments([binding(application)]);
    return decoded.kind === 'ResourceBinding' ? decoded.object.spec.failover?.application : undefined;
  };
  it.each<[string, unknown, unknown]>([
    [
      'empty: every default',
      {},
      { decisionConditions: { tolerationSeconds: 10 }, purgeMode: 'Gracefully', gracePeriodSeconds: 600, blockPredecessorSeconds: 600 },
    ],
    [
      'Graciously with its grace period',
      { purgeMode: 'Graciously', gracePeriodSeconds: 30 },
      { decisionConditions: { tolerationSeconds: 10 }, purgeMode: 'Gracefully', gracePeriodSeconds: 30, blockPredecessorSeconds: 600 },
    ],
    [
      'Immediately is Directly, no grace period',
      { purgeMode: 'Immediately' },
      { decisionConditions: { tolerationSeconds: 10 }, purgeMode: 'Directly', blockPredecessorSeconds: 600 },
    ],
    [
      'Never',
      { purgeMode: 'Never', blockPredecessorSeconds: 0 },
      { decisionConditions: { tolerationSeconds: 10 }, purgeMode: 'Never', blockPredecessorSeconds: 0 },
    ],
    [
      "the seed's example (healthyState [Unhealthy] under decisionConditions)",
      { preConditions: { delaySeconds: 5000 }, decisionConditions: { tolerationSeconds: 200, healthyState: ['Unhealthy'] } },
      {
        preConditions: { delaySeconds: 5000 },
        decisionConditions: { tolerationSeconds: 200, healthyState: ['Unhealthy'] },
        purgeMode: 'Gracefully',
        gracePeriodSeconds: 600,
        blockPredecessorSeconds: 600,
      },
    ],
    [
      'toleration 0 and healthyState Healthy',
      { decisionConditions: { tolerationSeconds: 0 }, preConditions: { healthyState: 'Healthy' } },
      {
        decisionConditions: { tolerationSeconds: 0 },
        preConditions: { healthyState: 'Healthy' },
        purgeMode: 'Gracefully',
        gracePeriodSeconds: 600,
        blockPredecessorSeconds: 600,
      },
    ],
  ])('reads %s', (_name, input, expected) => {
    expect(decode(input)).toEqual(expected);
  });
  const prefix = 'spec.failover.application';
  it.each<[string, unknown, Partial<FieldError>]>([
    [
      'a grace period with Immediately',
      { purgeMode: 'Immediately', gracePeriodSeconds: 60 },
      { path: `${prefix}.gracePeriodSeconds`, message: 'only applies with purgeMode Graciously (Gracefully); purgeMode is Immediately' },
    ],
    [
      'a grace period with Never',
      { purgeMode: 'Never', gracePeriodSeconds: 60 },
      { path: `${prefix}.gracePeriodSeconds`, message: 'only applies with purgeMode Graciously (Gracefully); purgeMode is Never' },
    ],
    ['a zero grace period', { gracePeriodSeconds: 0 }, { path: `${prefix}.gracePeriodSeconds`, message: 'must be greater than 0' }],
    [
      'a negative toleration',
      { decisionConditions: { tolerationSeconds: -1 } },
      { path: `${prefix}.decisionConditions.tolerationSeconds`, message: 'must not be negative' },
    ],
    [
      'a fractional toleration',
      { decisionConditions: { tolerationSeconds: 1.5 } },
      { path: `${prefix}.decisionConditions.tolerationSeconds`, message: 'must be a whole number of seconds' },
    ],
    ['a negative delay', { preConditions: { delaySeconds: -5 } }, { path: `${prefix}.preConditions.delaySeconds`, message: 'must not be negative' }],
    ['healthyState Unknown', { preConditions: { healthyState: 'Unknown' } }, { path: `${prefix}.preConditions.healthyState` }],
    ['a negative block', { blockPredecessorSeconds: -1 }, { path: `${prefix}.blockPredecessorSeconds` }],
    ['an unknown purge mode', { purgeMode: 'Later' }, { path: `${prefix}.purgeMode` }],
    ['a misspelt field', { tolerationSeconds: 5 }, { path: `${prefix}.tolerationSeconds`, message: expect.stringContaining('unknown field') }],
    [
      'a trigger other than Unhealthy',
      { decisionConditions: { healthyState: ['Healthy'] } },
      { path: `${prefix}.decisionConditions.healthyState[0]`, message: 'must be one of "Unhealthy"' },
    ],
  ])('rejects %s, naming the field', (_name, input, error) => {
    expect(errorsOf(() => decode(input)).errors).toEqual([expect.objectContaining(error)]);
  });
});
