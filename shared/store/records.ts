import { randomUUID } from 'node:crypto';
import {
  type BindingSpec,
  type ClusterSpecInput,
  type ClusterTaintPolicySpec,
  type FailoverBudgetSpec,
  isKarmadaTaintPolicySpec,
  type PropagationSpec,
} from '../api/resources';
import type { WorkloadStatusItem } from '../failover/applicationFailover';
import type { BindingKind } from '../failover/bindingModel';
import type { FailbackEntries } from '../failover/failback';
import type { AnyTaintPolicy, ClusterFacts, ClusterTaint, Condition, PolicyWindow } from '../failover/model';
import { type CandidateCluster, candidateCluster } from '../failover/precheck';
import type { ProbeState } from '../failover/probe';
import type { InheritedField, PolicyRef } from '../failover/propagation';
import { policyMode } from '../failover/shadow';

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
  /** Pull-mode health: the current run of probe answers (only a change of outcome is written). */
  probe?: ProbeState;
  /**
   * Failback's count: since when the cluster has been Ready=True with no NoExecute/PreferNoExecute taint
   * without a break (set and cleared by every cluster write: state/clusterWrites.ts). Absent while not.
   */
  healthySince?: string;
  /**
   * W3C traceparent of the write that last changed the faulty taints (absent while there are none): the
   * taint manager's rows continue the failure's trace even when its resync, not the message, plans them.
   */
  faultTraceparent?: string;
  /** The failure episode (its earliest faulty taint's `timeAdded`) that trace belongs to. */
  faultTraceSince?: string;
}

/** A ClusterTaintPolicy as stored: its spec is of the seed shape or of Karmada's (never both). */
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

/** The cluster as placement sees it (the fleet view, failback's home). */
export const clusterCandidate = (record: ClusterRecord): CandidateCluster => candidateCluster(clusterFacts(record));

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

/** The decision input of a stored policy; Karmada-shape policies act in creationTimestamp order. */
export function taintPolicy(record: PolicyRecord): AnyTaintPolicy {
  const spec = record.spec;
  // failover.io/mode: shadow (shadow.ts); enforcing policies carry no mode.
  const mode = policyMode(record.annotations) === 'shadow' ? { mode: 'shadow' as const } : {};
  if (isKarmadaTaintPolicySpec(spec)) {
    return {
      shape: 'karmada',
      name: record.name,
      createdAt: record.createdAt,
      targetClusters: spec.targetClusters,
      addOnConditions: spec.addOnConditions ?? [],
      removeOnConditions: spec.removeOnConditions ?? [],
      taints: spec.taints,
      ...mode,
    };
  }
  return {
    name: record.name,
    targetCluster: spec.targetCluster,
    matchConditions: spec.matchConditions ?? [],
    taintsToAdd: spec.taintsToAdd,
    ...mode,
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
  /**
   * Per cluster this binding was evicted from by the taint manager: the ledger decision (its decidedAt)
   * and when. Written in the same write that takes the cluster out, so an eviction interrupted before its
   * ledger commit is recognised and finished, never repeated. Not part of the API view.
   */
  evictionMarks?: Record<string, { decision: string; at: string }>;
  /**
   * Failback (shared/failover/failback.ts), per home: the cluster cluster failover took this binding off,
   * what replaced it, and (for an hour) when it went back. Written in the eviction's own write. Not part of
   * the API view (GET /api/failback and .../why show it).
   */
  failback?: FailbackEntries;
}

export interface PropagationPolicyRecord extends StoredMetadata, PolicyRef {
  spec: PropagationSpec;
}

export interface BindingStatus {
  schedulerObservedGeneration?: number;
  conditions?: Array<{ type: string; status: string; reason?: string; message?: string; lastTransitionTime: string }>;
  /** Per cluster: the reported health plus what application failover keeps (first collected, settled, stretch). */
  aggregatedStatus?: WorkloadStatusItem[];
  /** The application failover check already queued (one message per deadline, however often it is reported). */
  applicationFailoverCheckAt?: string;
}

/**
 * A resource template (Deployment, ConfigMap, a custom resource...) as stored: the manifest as given,
 * and which propagation policy claims it (the detector's choice, also written as the template's labels).
 */
export interface TemplateRecord extends StoredMetadata {
  apiVersion: string;
  kind: string;
  namespace?: string;
  /** The object as applied (its metadata's read-only fields dropped). */
  manifest: Record<string, unknown>;
  /** Counts changes, as Kubernetes' resourceVersion: the derived binding's spec.resource carries it. */
  resourceVersion: string;
  claimedBy?: PolicyRef;
}

/** What a binding may need from a timer, kept as queryable flags with it (`FlaggedDocumentStore`). */
export type BindingFlag = 'needsSweep' | 'needsScheduling' | 'watchesApplication' | 'awaitsFailback';

export function bindingFlags(record: BindingRecord): Record<BindingFlag, boolean> {
  const items = record.status.aggregatedStatus ?? [];
  return {
    // Graceful-eviction tasks to assess.
    needsSweep: (record.spec.gracefulEvictionTasks ?? []).length > 0,
    // A scheduled generation behind (new without clusters, a lost cluster, an earlier no-fit).
    needsScheduling: record.status.schedulerObservedGeneration !== record.generation,
    // A running Unhealthy stretch or a held failover (application failover), or eviction history to prune.
    watchesApplication:
      (record.spec.failover?.application !== undefined && items.some((i) => i.unhealthySince !== undefined || i.failoverHeld !== undefined)) ||
      (record.spec.activeEvictionHistory ?? []).length > 0,
    // A home to go back to (or a failback done within the hour, shown by GET /api/failback).
    awaitsFailback: Object.keys(record.failback ?? {}).length > 0,
  };
}

/** A FailoverBudget as stored (standalone) or read from its custom resource (Karmada mode). */
export interface FailoverBudgetRecord extends StoredMetadata {
  namespace: string;
  spec: FailoverBudgetSpec;
}

/** One binding in flight under a budget: released (or evicted by application failover), its task not yet seen cleared. */
export interface InFlightEntry {
  /** The binding key (`rb:<namespace>:<name>`). */
  binding: string;
  cluster: string;
  /** When it was released. */
  since: string;
  /** The pacer (a ledger row it released) or application failover (no ledger row). */
  by: 'pacer' | 'application';
}

/**
 * What is in flight under one budget (document id: the budget's `<namespace>:<name>`), kept by whoever
 * releases under it, ETag-checked: the in-flight entries, and the count of matching bindings a percentage
 * is resolved against (recounted at most once a minute, and only for a percentage).
 */
export interface BudgetFlight {
  inFlight: InFlightEntry[];
  matching?: { count: number; countedAt: string };
}

/** A background apply's progress (shared/controllers/applyOperations.ts): one document per operation. */
export interface ApplyOperationRecord {
  state: 'Running' | 'Succeeded' | 'Failed';
  createdAt: string;
  updatedAt: string;
  finishedAt?: string;
  /** Objects in the request. */
  total: number;
  chunks: number;
  /** Chunks applied so far: the next message applies this one. */
  chunksApplied: number;
  /** Objects applied so far. */
  applied: number;
  counts: { created: number; configured: number; unchanged: number };
  /** Why it stopped (Failed): the error the apply answered, with its status. */
  error?: { status: number; error: string; errors?: Array<{ path: string; message: string; document?: number }> };
}

/** One chunk of a background apply: its objects as decoded at the edge (emptied once applied) and their results. */
export interface ApplyChunkRecord<O = unknown> {
  objects: Array<{ index: number; object: O }>;
  results: Array<{ index: number; kind: string; name: string; action: 'created' | 'configured' | 'unchanged' }>;
}
