import { describe, expect, it } from 'vitest';
import { decodeApplyDocuments, parseDocuments } from '../../shared/api/decode';
import { ApiError } from '../../shared/api/errors';
import { applyObjects } from '../../shared/controllers/apply';
import { executeEviction } from '../../shared/controllers/evictionWorker';
import { runPacer } from '../../shared/controllers/pacer';
import { scheduleAll } from '../../shared/controllers/scheduler';
import { manageCluster } from '../../shared/controllers/taintManager';
import { cluster } from '../helpers/fleet';
import { MemoryPlane, memoryPlane } from '../helpers/memoryPlane';

/**
 * Every YAML example of the Karmada proposals this project implements (shared/seeds), as a user would
 * apply it: each applies as written, or, where the proposal itself has a typo or shows a shape that was
 * not adopted, is refused with a 400 that names the field and the reason. Seed 001's examples lost their
 * indentation in the copy we have; they are given here indented as the YAML they describe.
 */

async function applyYaml(m: MemoryPlane, yaml: string) {
  try {
    return { results: await applyObjects(m.plane, decodeApplyDocuments(parseDocuments(yaml, 'yaml'))) };
  } catch (error) {
    if (error instanceof ApiError) return { status: error.status, errors: error.errors.map((e) => `${e.path}: ${e.message}`) };
    throw error;
  }
}

const SEED_000_CTP = `apiVersion: "policy.karmada.io/v1alpha1"
kind: "ClusterTaintPolicy"
metadata:
  name: "detect-cluster-not-ready"
spec:
  targetCluster:
    clusterNames:
    - "member1"
    - "member2"
  matchConditions:
  - conditionType: "Ready"
    operator: "In"
    statusValues:
    - "False"
    - "Unknown"
  taintsToAdd:
  - key: "cluster.karmada.io/not-ready"
    effect: PreferNoExecute
    addOnMatchSeconds: 300
    removeOnMismatchSeconds: 180
`;
const SEED_000_CLUSTER = `apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: member1
spec:
  apiEndpoint: https://172.18.0.4:6443
status:
  conditions:
  - lastTransitionTime: "2025-01-17T02:36:26Z"
    message: "cluster is not reachable"
    reason: ClusterNotReachable
    status: False
    type: Ready
`;
const SEED_000_PP = `apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-propagation
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    name: nginx
  placement:
    clusterAffinity:
      clusterNames:
      - member1
      - member2
  failover:
    cluster:
      pureMode: Directly
      tolerationSeconds: 100
`;
const SEED_001_TOLERATIONS = `apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-propagation
  namespace: default
spec:
  placement:
    clusterTolerations:
    - effect: NoExecute
      key: cluster.karmada.io/not-ready
      operator: Exists
      tolerationSeconds: 300
    - effect: NoExecute
      key: cluster.karmada.io/unreachable
      operator: Exists
      tolerationSeconds: 300
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    name: nginx
    namespace: default
`;
const deployment = (replicas: number) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx
  labels:
    app: nginx
spec:
  replicas: ${replicas}
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - image: nginx
        name: nginx
`;
const SEED_001_DUPLICATED = `${deployment(2)}---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-propagation
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    name: nginx
  placement:
    clusterAffinity:
      clusterNames:
      - member1
      - member2
      - member3
      - member5
    spreadConstraints:
    - maxGroups: 2
      minGroups: 2
    replicaScheduling:
      replicaSchedulingType: Duplicated
`;
const SEED_001_DIVIDED = `${deployment(3)}---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-propagation
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    name: nginx
  placement:
    clusterAffinity:
      clusterNames:
      - member1
      - member2
    replicaScheduling:
      replicaDivisionPreference: Weighted
      replicaSchedulingType: Divided
      weightPreference:
        staticWeightList:
        - targetCluster:
            clusterNames:
            - member1
          weight: 1
        - targetCluster:
            clusterNames:
            - member2
          weight: 2
`;
const SEED_002_PP = `apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-propagation
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: nginx
  failover:
    cluster:
      purgeMode: Graciously
      gracePeriodSeconds: 100
  placement:
    clusterAffinity:
      clusterNames:
        - member1
        - member2
`;
const SEED_003_INTERPRETER = `apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata:
  name: declarative-configuration-example
spec:
  target:
    apiVersion: apps/v1
    kind: Deployment
  healthInterpretation:
    luaScript: >
      function InterpretHealth(observedObj)
        return observedObj.status.readyReplicas == observedObj.spec.replicas
      end
`;
const SEED_003_PP = `apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-propagation
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: nginx
    - apiVersion: apps/v1
      kind: StatefulSet
      name: mysql
  failover:
    application:
      preConditions:
        delaySeconds: 5000
      decisionConditions:
        tolerationSeconds: 200
        healthyState: 
        - Unhealthy
  placement:
    clusterAffinity:
      clusterNames:
        - member1
        - member2
`;
const SEED_003_RB = `apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata:
  name: nginx-pod
spec:
  clusters:
  - name: member1
  activeEvictionHistory:
  - clusterName: member2
    createTimestamp: "2023-04-03T01:44:31Z"
  failover:
    application:
      preConditions:
        delaySeconds: 5000
      decisionConditions:
        tolerationSeconds: 200
        healthyState: 
        - Unhealthy
  placement:
    clusterAffinity:
      clusterNames:
      - member1
      - member2
  resource:
    apiVersion: v1
    kind: Pod
    name: nginx
    namespace: default
`;
const SEED_003_REJECTED_SHAPE = `apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-propagation
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: nginx
  failover:
    - apiVersion: apps/v1
      kind: Deployment
      behavior:
        application:
          activeGates:
            - healthyState: Unhealthy
  placement:
    clusterAffinity:
      clusterNames:
        - member1
        - member2
`;

describe("the proposals' YAML, as written", () => {
  const applies: Array<[string, string]> = [
    ['seed 000: the ClusterTaintPolicy example', SEED_000_CTP],
    ['seed 000: the Cluster example (its status is ignored: health comes from reports)', SEED_000_CLUSTER],
    ['seed 001: the PropagationPolicy with the default tolerations', SEED_001_TOLERATIONS],
    ['seed 001: the Duplicated Deployment and its policy', SEED_001_DUPLICATED],
    ['seed 001: the Divided Deployment and its policy', SEED_001_DIVIDED],
    ['seed 002: the PropagationPolicy with purgeMode Graciously', SEED_002_PP],
    ['seed 003: the ResourceInterpreterCustomization (stored as a resource template)', SEED_003_INTERPRETER],
    ['seed 003: the PropagationPolicy with application failover', SEED_003_PP],
  ];
  it.each(applies)('%s applies', async (_name, yaml) => {
    const m = memoryPlane();
    const outcome = await applyYaml(m, yaml);
    expect(outcome).toMatchObject({ results: expect.any(Array) as unknown });
    expect((outcome.results ?? []).every((r) => r.action === 'created')).toBe(true);
  });

  const refused: Array<[string, string, string]> = [
    ["seed 000: the policy's typo pureMode", SEED_000_PP, 'spec.failover.cluster.pureMode: unknown field; did you mean "purgeMode"?'],
    [
      "seed 003: the binding's typo createTimestamp",
      SEED_003_RB,
      'spec.activeEvictionHistory[0].createTimestamp: unknown field; did you mean "creationTimestamp"?',
    ],
    ['seed 003: the failover list of an alternative design', SEED_003_REJECTED_SHAPE, 'spec.failover'],
  ];
  it.each(refused)('%s is refused with the field and the reason', async (_name, yaml, expected) => {
    const m = memoryPlane();
    const outcome = await applyYaml(m, yaml);
    expect(outcome.status).toBe(400);
    expect(outcome.errors!.some((e) => e.startsWith(expected))).toBe(true);
    expect(await m.policies.list()).toEqual([]);
    expect(await m.propagationPolicies.list()).toEqual([]);
    expect(await m.bindings.list()).toEqual([]);
  });
});

describe("seed 001's failover examples, end to end on the controllers", () => {
  const placement = async (m: MemoryPlane) =>
    ((await m.bindings.get('rb:default:nginx-deployment'))!.value.spec.clusters ?? []).map((c) => `${c.name}:${c.replicas}`);

  async function failover(m: MemoryPlane, name: string) {
    await applyObjects(m.plane, decodeApplyDocuments([cluster(name, true)]));
    await manageCluster(m.plane, name);
    for (let tick = 0; tick < 10; tick++) {
      await runPacer(m.plane);
      for (const { message } of m.evictions.takeAll()) {
        m.clock.set(message.slot);
        await executeEviction(m.plane, message);
      }
      m.clock.advance(1000);
    }
  }

  async function fleet(yaml: string) {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '10', UNHEALTHY_CLUSTER_THRESHOLD: '0.9' });
    await applyObjects(m.plane, decodeApplyDocuments(['member1', 'member2', 'member3', 'member4', 'member5'].map((n) => cluster(n))));
    expect((await applyYaml(m, yaml)).results).toHaveLength(2);
    await scheduleAll(m.plane);
    return m;
  }

  it('Duplicated: [member1, member2]; member2 fails; [member1, member3] (member4 does not match the affinity)', async () => {
    const m = await fleet(SEED_001_DUPLICATED);
    expect(await placement(m)).toEqual(['member1:2', 'member2:2']);
    await failover(m, 'member2');
    expect(await placement(m)).toEqual(['member1:2', 'member3:2']);
  });

  it('Divided: member1 1 and member2 2; member1 fails; member2 3', async () => {
    const m = await fleet(SEED_001_DIVIDED);
    expect(await placement(m)).toEqual(['member1:1', 'member2:2']);
    await failover(m, 'member1');
    expect(await placement(m)).toEqual(['member2:3']);
  });
});
