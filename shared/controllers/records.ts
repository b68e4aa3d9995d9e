import { randomUUID } from 'node:crypto';
import type { BindingSpec, ClusterSpecInput, ClusterTaintPolicySpec, PropagationSpec } from '../api/resources';
import type { InheritedField, PolicyRef } from '../failover/propagation';
import type { WorkloadStatusItem } from '../failover/applicationFailover';
import type { BindingKind } from '../failover/bindingModel';
import type { ClusterFacts, ClusterTaint, Condition, PolicyWindow, TaintPolicy } from '../failover/model';

/** What every stored object carries, as Kubernetes metadata. */
export interface StoredMetadata {
  name: string;
  uid: string;
  createdAt: string;
  generation: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** A cluster as stored: one document, so conditions, taints and windows change together under one ETag. */
export interface ClusterRecord extends StoredMetadata {
  spec: Omit<ClusterSpecInput, 'taints'>;
  taints: ClusterTaint[];
  conditions: Condition[];
  /** Server time of the last health report: the heartbeat. */
  lastReportAt?: string;
  /** The newest `observedAt` applied; older reports are refused. */
  lastObservedAt?: string;
  /** The signed time (unix seconds) and signature of the newest signed report applied (replay protection). */
  lastSignedAt?: number;
  lastSignature?: string;
  registeredBy: 'apply' | 'report';
  policyWindows: Record<string, PolicyWindow>;
  /** The deadline a delayed evaluation message is already queued for. */
  evaluationScheduledFor?: string;
}

export interface PolicyRecord extends StoredMetadata {
  spec: ClusterTaintPolicySpec;
}

export function newClusterRecord(name: string, now: Date, registeredBy: ClusterRecord['registeredBy']): ClusterRecord {
  return {
    name,
    uid: randomUUID(),
    createdAt: now.toISOString(),
    generation: 1,
    labels: {},
    annotations: {},
    spec: {},
    taints: [],
    conditions: [],
    registeredBy,
    policyWindows: {},
  };
}

export function clusterFacts(record: ClusterRecord): ClusterFacts {
  return {
    name: record.name,
    labels: record.labels,
    provider: record.spec.provider,
    region: record.spec.region,
    zone: record.spec.zone,
    conditions: record.conditions,
    taints: record.taints,
    policyWindows: record.policyWindows,
  };
}

export function taintPolicy(record: PolicyRecord): TaintPolicy {
  return {
    name: record.name,
    targetCluster: record.spec.targetCluster,
    matchConditions: record.spec.matchConditions ?? [],
    taintsToAdd: record.spec.taintsToAdd,
  };
}

const CLUSTER_API_VERSION = 'cluster.karmada.io/v1alpha1';
const POLICY_API_VERSION = 'policy.karmada.io/v1alpha1';

const metadataView = (record: StoredMetadata, etag?: string) => ({
  name: record.name,
  uid: record.uid,
  creationTimestamp: record.createdAt,
  generation: record.generation,
  ...(etag ? { resourceVersion: etag } : {}),
  ...(Object.keys(record.labels).length > 0 ? { labels: record.labels } : {}),
  ...(Object.keys(record.annotations).length > 0 ? { annotations: record.annotations } : {}),
});

/** The Karmada-shaped Cluster the API returns, plus what explains its taints. */
export function clusterResource(record: ClusterRecord, etag?: string) {
  return {
    apiVersion: CLUSTER_API_VERSION,
    kind: 'Cluster',
    metadata: metadataView(record, etag),
    spec: {
      ...record.spec,
      taints: record.taints.map((t) => ({ key: t.key, ...(t.value !== undefined ? { value: t.value } : {}), effect: t.effect, timeAdded: t.timeAdded })),
    },
    status: {
      conditions: record.conditions,
      ...(record.lastReportAt ? { lastHeartbeatTime: record.lastReportAt } : {}),
      taintHolders: record.taints.map((t) => ({ key: t.key, effect: t.effect, policies: t.owners, manual: t.manual })),
      policyWindows: Object.entries(record.policyWindows)
        .map(([policy, w]) => ({ policy, matched: w.matched, since: w.since }))
        .sort((a, b) => a.policy.localeCompare(b.policy)),
    },
  };
}

export function policyResource(record: PolicyRecord, etag?: string) {
  return {
    apiVersion: POLICY_API_VERSION,
    kind: 'ClusterTaintPolicy',
    metadata: metadataView(record, etag),
    spec: record.spec,
  };
}

/** A ResourceBinding or ClusterResourceBinding as stored. `rev` counts writes, for the placement index. */
export interface BindingRecord extends StoredMetadata {
  kind: BindingKind;
  namespace?: string;
  rev: number;
  spec: BindingSpec;
  status: BindingStatus;
  /**
   * W3C traceparent of the last eviction from this binding: rescheduling and the sweep continue that
   * failure's trace even when a timer, not a message, picks them up. Not part of the API view.
   */
  traceparent?: string;
  /** The propagation policy this binding took placement and/or failover from, and which. */
  inheritedFrom?: PolicyRef & { fields: InheritedField[] };
}

export interface PropagationPolicyRecord extends StoredMetadata, PolicyRef {
  spec: PropagationSpec;
}

export function propagationPolicyResource(record: PropagationPolicyRecord, etag?: string) {
  return {
    apiVersion: POLICY_API_VERSION,
    kind: record.kind,
    metadata: { ...metadataView(record, etag), ...(record.namespace ? { namespace: record.namespace } : {}) },
    spec: record.spec,
  };
}

export interface BindingStatus {
  schedulerObservedGeneration?: number;
  conditions?: Array<{ type: string; status: string; reason?: string; message?: string; lastTransitionTime: string }>;
  /** Per cluster: the reported health plus what application failover keeps (first collected, settled, stretch). */
  aggregatedStatus?: WorkloadStatusItem[];
  /** The application failover check already queued (one message per deadline, however often it is reported). */
  applicationFailoverCheckAt?: string;
}

export function bindingResource(record: BindingRecord, etag?: string) {
  return {
    apiVersion: 'work.karmada.io/v1alpha2',
    kind: record.kind,
    metadata: { ...metadataView(record, etag), ...(record.namespace ? { namespace: record.namespace } : {}) },
    spec: record.spec,
    status: { ...record.status, ...(record.inheritedFrom ? { propagationPolicy: record.inheritedFrom } : {}) },
  };
}
