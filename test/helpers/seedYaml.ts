/**
 * YAML examples of Karmada's failover designs, as a user would apply them. SEED_<n>_ groups them by
 * feature: 000 taint policies and the cluster failover of a PropagationPolicy, 001 tolerations and the
 * Duplicated and Divided failovers, 002 purge mode Graciously, 003 application failover. Their typos are
 * kept: the tests expect them refused with the field named.
 */
export const SEED_000_CTP = `apiVersion: "policy.karmada.io/v1alpha1"
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
export const SEED_000_CLUSTER = `apiVersion: cluster.karmada.io/v1alpha1
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
export const SEED_000_PP = `apiVersion: policy.karmada.io/v1alpha1
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
export const SEED_001_TOLERATIONS = `apiVersion: policy.karmada.io/v1alpha1
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
export const SEED_001_DUPLICATED = `${deployment(2)}---
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
export const SEED_001_DIVIDED = `${deployment(3)}---
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
export const SEED_002_PP = `apiVersion: policy.karmada.io/v1alpha1
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
export const SEED_003_INTERPRETER = `apiVersion: config.karmada.io/v1alpha1
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
export const SEED_003_PP = `apiVersion: policy.karmada.io/v1alpha1
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
export const SEED_003_RB = `apiVersion: work.karmada.io/v1alpha2
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
export const SEED_003_REJECTED_SHAPE = `apiVersion: policy.karmada.io/v1alpha1
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
