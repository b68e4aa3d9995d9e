import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStorage, TestStorage } from '../helpers/azurite';
import { HostProcess, startHostProcess } from '../helpers/hostProcess';
import { quietStorageSnapshot, storageSnapshot } from '../helpers/storageSnapshot';

/**
 * Bad ClusterTaintPolicies of Karmada's shape (and mixes of the two shapes) through POST /api/apply on a
 * running host. Each must be answered 400 naming the field and the reason, and afterwards every table the
 * app keeps and every queue must be byte-for-byte what it was before (the timer lease table changes every
 * second by design and is left out).
 */
const ADMIN = 'ctp-corpus-admin-token-0123456789';

let env: TestStorage;
let host: HostProcess;

const snapshot = () => storageSnapshot(env.storage);

const policy = (spec: unknown, name = 'ctp-corpus') => ({ apiVersion: 'policy.karmada.io/v1alpha1', kind: 'ClusterTaintPolicy', metadata: { name }, spec });
const taints = [{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute' }];
const readyFalse = [{ conditionType: 'Ready', operator: 'In', statusValues: ['False'] }];
const goodKarmada = { targetClusters: { clusterNames: ['ctp1'] }, addOnConditions: readyFalse, taints };
const goodSeed = { targetCluster: { clusterNames: ['ctp1'] }, matchConditions: readyFalse, taintsToAdd: [{ key: 'seed/not-ready', effect: 'NoSchedule' }] };

interface Case {
  name: string;
  body: string;
  /** Each expected error: its path and (a part of) its message. */
  errors: Array<{ path: string; message: string; document?: number }>;
  contentType?: string;
}

const json = (objects: unknown) => JSON.stringify(objects);

const cases: Case[] = [
  {
    name: 'taintsToAdd with taints',
    body: json(policy({ ...goodKarmada, taintsToAdd: [{ key: 'k', effect: 'NoExecute' }] })),
    errors: [
      {
        path: 'spec.taintsToAdd',
        message: 'windowed-shape field "taintsToAdd" cannot be mixed with Karmada-shape fields "targetClusters", "addOnConditions", "taints"',
      },
    ],
  },
  {
    name: 'matchConditions with addOnConditions',
    body: json(policy({ ...goodSeed, addOnConditions: readyFalse })),
    errors: [
      {
        path: 'spec.addOnConditions',
        message: 'Karmada-shape field "addOnConditions" cannot be mixed with windowed-shape fields "targetCluster", "matchConditions", "taintsToAdd"',
      },
    ],
  },
  {
    name: 'targetCluster with targetClusters',
    body: json(policy({ targetCluster: {}, targetClusters: {}, taints })),
    errors: [
      { path: 'spec.targetCluster', message: 'windowed-shape field "targetCluster" cannot be mixed with Karmada-shape fields "targetClusters", "taints"' },
    ],
  },
  {
    name: 'taints with taintsToAdd only (a tie is reported on the Karmada field)',
    body: json(policy({ taints, taintsToAdd: [{ key: 'k', effect: 'NoExecute' }] })),
    errors: [{ path: 'spec.taints', message: 'Karmada-shape field "taints" cannot be mixed with windowed-shape field "taintsToAdd"' }],
  },
  {
    name: "the seed spelling targetCluster in a Karmada-shape policy, with Karmada's",
    body: json(policy({ targetCluster: {}, addOnConditions: readyFalse, taints })),
    errors: [{ path: 'spec.targetCluster', message: 'the Karmada shape spells it "targetClusters"' }],
  },
  {
    name: 'removeOnConditions in a windowed-shape policy',
    body: json(policy({ ...goodSeed, removeOnConditions: readyFalse })),
    errors: [{ path: 'spec.removeOnConditions', message: 'Karmada-shape field "removeOnConditions" cannot be mixed with windowed-shape fields' }],
  },
  {
    name: 'a duplicate key+effect in taints (value ignored)',
    body: json(
      policy({
        taints: [
          { key: 'a', effect: 'NoExecute', value: 'x' },
          { key: 'a', effect: 'NoExecute', value: 'y' },
        ],
      }),
    ),
    errors: [{ path: 'spec.taints[1]', message: 'duplicate taint a:NoExecute (also at spec.taints[0]); taints are unique by key and effect' }],
  },
  {
    name: 'an effect outside the four',
    body: json(policy({ taints: [{ key: 'a', effect: 'Evict' }] })),
    errors: [{ path: 'spec.taints[0].effect', message: 'must be one of "NoSchedule", "PreferNoSchedule", "PreferNoExecute", "NoExecute"' }],
  },
  {
    name: 'an empty taints list',
    body: json(policy({ addOnConditions: readyFalse, taints: [] })),
    errors: [{ path: 'spec.taints', message: 'must list at least one taint' }],
  },
  {
    name: 'a missing taints list',
    body: json(policy({ targetClusters: {}, addOnConditions: readyFalse })),
    errors: [{ path: 'spec.taints', message: 'required field is missing (expected array)' }],
  },
  {
    name: 'an unknown field with a near name',
    body: json(policy({ ...goodKarmada, removeOnCondition: readyFalse })),
    errors: [{ path: 'spec.removeOnCondition', message: 'unknown field; did you mean "removeOnConditions"?' }],
  },
  {
    name: 'a window on a Karmada-shape taint',
    body: json(policy({ taints: [{ key: 'a', effect: 'NoExecute', removeOnMismatchSeconds: 5 }] })),
    errors: [{ path: 'spec.taints[0].removeOnMismatchSeconds', message: 'unknown field' }],
  },
  {
    name: 'timeAdded on a Karmada-shape taint',
    body: json(policy({ taints: [{ key: 'a', effect: 'NoExecute', timeAdded: '2026-01-01T00:00:00Z' }] })),
    errors: [{ path: 'spec.taints[0].timeAdded', message: 'unknown field' }],
  },
  {
    name: 'an operator outside In/NotIn',
    body: json(policy({ addOnConditions: [{ conditionType: 'Ready', operator: 'Exists', statusValues: ['False'] }], taints })),
    errors: [{ path: 'spec.addOnConditions[0].operator', message: 'must be one of "In", "NotIn"' }],
  },
  {
    name: 'In with no status values',
    body: json(policy({ removeOnConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: [] }], taints })),
    errors: [{ path: 'spec.removeOnConditions[0].statusValues', message: 'must list at least one status when operator is In' }],
  },
  {
    name: 'a lower-case status value',
    body: json(policy({ addOnConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['false'] }], taints })),
    errors: [{ path: 'spec.addOnConditions[0].statusValues[0]', message: 'must be one of "True", "False", "Unknown"' }],
  },
  {
    name: 'a missing conditionType',
    body: json(policy({ addOnConditions: [{ operator: 'In', statusValues: ['False'] }], taints })),
    errors: [{ path: 'spec.addOnConditions[0].conditionType', message: 'required field is missing (expected string)' }],
  },
  {
    name: 'a bad condition type',
    body: json(policy({ addOnConditions: [{ conditionType: 'Ready now!', operator: 'In', statusValues: ['False'] }], taints })),
    errors: [{ path: 'spec.addOnConditions[0].conditionType', message: 'must be a condition type' }],
  },
  {
    name: 'a bad cluster name in targetClusters',
    body: json(policy({ targetClusters: { clusterNames: ['Not_A_Name'] }, taints })),
    errors: [{ path: 'spec.targetClusters.clusterNames[0]', message: 'must be a DNS label' }],
  },
  {
    name: 'an unknown targetClusters field',
    body: json(policy({ targetClusters: { clusterName: ['ctp1'] }, taints })),
    errors: [{ path: 'spec.targetClusters.clusterName', message: 'unknown field; did you mean "clusterNames"?' }],
  },
  {
    name: 'a bad taint key',
    body: json(policy({ taints: [{ key: 'not ready', effect: 'NoExecute' }] })),
    errors: [{ path: 'spec.taints[0].key', message: 'must be a qualified name' }],
  },
  {
    name: 'taints not a list',
    body: json(policy({ taints: { key: 'a', effect: 'NoExecute' } })),
    errors: [{ path: 'spec.taints', message: 'expected array' }],
  },
  {
    name: 'a mix reported with a bad field',
    body: json(policy({ taintsToAdd: [{ key: 'a', effect: 'NoExecute' }], taints: [{ key: 'a', effect: 'Evict' }] })),
    errors: [
      { path: 'spec.taints[0].effect', message: 'must be one of' },
      { path: 'spec.taints', message: 'cannot be mixed with windowed-shape field "taintsToAdd"' },
    ],
  },
  {
    name: 'a mixed re-apply of an existing Karmada-shape policy',
    body: json(policy({ ...goodKarmada, matchConditions: readyFalse }, 'seed-karmada')),
    errors: [{ path: 'spec.matchConditions', message: 'windowed-shape field "matchConditions" cannot be mixed with Karmada-shape fields' }],
  },
  {
    name: 'a good Karmada-shape policy with a bad one (nothing applied)',
    body: json([policy(goodKarmada, 'good-one'), policy({ taints: [{ key: 'a', effect: 'Bad' }] }, 'bad-one')]),
    errors: [{ path: 'spec.taints[0].effect', message: 'must be one of', document: 1 }],
  },
  {
    name: 'YAML: a Karmada-shape policy with a windowed-shape window (YAML as written upstream plus one seed field)',
    contentType: 'application/yaml',
    body: `apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata:
  name: detect-cluster-notready
spec:
  targetClusters:
    clusterNames: [ctp1]
  addOnConditions:
  - conditionType: Ready
    operator: NotIn
    statusValues: ["True"]
  removeOnConditions:
  - conditionType: Ready
    operator: In
    statusValues: ["True"]
  taints:
  - key: not-ready
    effect: NoSchedule
  taintsToAdd:
  - key: not-ready
    effect: NoSchedule
    addOnMatchSeconds: 30
`,
    errors: [
      {
        path: 'spec.taintsToAdd',
        message:
          'windowed-shape field "taintsToAdd" cannot be mixed with Karmada-shape fields "targetClusters", "addOnConditions", "removeOnConditions", "taints"',
      },
    ],
  },
];

beforeAll(async () => {
  env = await startTestStorage();
  host = await startHostProcess({
    AzureWebJobsStorage: env.azurite.connectionString,
    AUTH_MODE: 'required',
    ADMIN_TOKEN: ADMIN,
    REPORTER_SIGNING_KEY: 'ctp-corpus-signing-key-0123456789',
    CLUSTER_MONITOR_GRACE_PERIOD_SECONDS: '3600',
    CLUSTER_STARTUP_GRACE_PERIOD_SECONDS: '3600',
  });
  const seed = [
    { apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name: 'ctp1' } },
    policy(goodKarmada, 'seed-karmada'),
    policy(goodSeed, 'seed-seed'),
  ];
  const res = await fetch(`${host.url}/api/apply`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` },
    body: JSON.stringify(seed),
  });
  expect(res.status).toBe(200);
  // The baseline is taken once the work queued by the set-up has settled (quietStorageSnapshot).
}, 60_000);
afterAll(async () => {
  await host?.stop();
  await env?.close();
});

describe('bad ClusterTaintPolicies of Karmada shape, and mixes of the two shapes', () => {
  it('answers each with 400, naming the field and the reason, and leaves every table and queue byte-for-byte unchanged', async () => {
    const baseline = await quietStorageSnapshot(env.storage);
    const failures: string[] = [];
    for (const c of cases) {
      const res = await fetch(`${host.url}/api/apply`, {
        method: 'POST',
        headers: { 'content-type': c.contentType ?? 'application/json', authorization: `Bearer ${ADMIN}` },
        body: c.body,
      });
      const body = (await res.json()) as { error?: string; errors?: Array<{ path: string; message: string; document?: number }> };
      if (res.status !== 400) {
        failures.push(`${c.name}: ${res.status} (expected 400) ${JSON.stringify(body).slice(0, 300)}`);
        continue;
      }
      if (!body.error) failures.push(`${c.name}: no error message`);
      const got = body.errors ?? [];
      const matches =
        got.length === c.errors.length &&
        c.errors.every((want, i) => got[i].path === want.path && got[i].message.includes(want.message) && got[i].document === (want.document ?? 0));
      if (!matches) failures.push(`${c.name}: ${JSON.stringify(got)} (expected ${JSON.stringify(c.errors)})`);
    }
    expect(failures).toEqual([]);
    expect(await snapshot()).toBe(baseline);
  }, 60_000);

  it('the seeded policies are stored with their shapes', async () => {
    const list = (await (await fetch(`${host.url}/api/clustertaintpolicies`)).json()) as {
      items: Array<{ metadata: { name: string }; status: { shape: string } }>;
    };
    expect(list.items.map((p) => [p.metadata.name, p.status.shape])).toEqual([
      ['seed-karmada', 'karmada'],
      ['seed-seed', 'seed'],
    ]);
  });
});
