import { z } from 'zod';
import type { AppliedObject } from '../api/decode';
import type { PlaneCaches } from '../cache';
import type { Clock } from '../clock';
import type { AppConfig } from '../config';
import type { EvictionRecord } from '../failover/bindingModel';
import type { PolicyState } from '../failover/policyStatus';
import type { KubeApi, MemberEndpoint, MemberProber } from '../kube/api';
import type { BulkDocumentStore, DocumentStore, EventLog, EvictionLedger, FlaggedDocumentStore, MessageQueue } from '../store/ports';
import type {
  ApplyChunkRecord,
  ApplyOperationRecord,
  BindingFlag,
  BindingRecord,
  BudgetFlight,
  ClusterRecord,
  FailoverBudgetRecord,
  PolicyRecord,
  PropagationPolicyRecord,
  TemplateRecord,
} from '../store/records';
import type { Logger } from '../telemetry/log';
import type { FailoverMetrics } from '../telemetry/metrics';

/** Where a watch of one kind got to: resume from here after a restart or on another instance. */
export interface SyncCursor {
  resourceVersion: string;
  updatedAt: string;
}

/** Where a Karmada binding is placed, as the placement index last recorded it (its resourceVersion then). */
export interface IndexedPlacement {
  clusters: string[];
  resourceVersion: string;
  /**
   * A digest of the placement rows written for that version (what planning reads: clusters, replicas,
   * tolerations, failover settings, priority). A later version with the same digest changes no row and
   * gives the taint manager nothing new to plan.
   */
  facts?: string;
}

/** The Karmada API server's reachability as the last sync saw it: what /api/healthz and /api/fleet report. */
export interface KarmadaConnection {
  state: 'ok' | 'degraded';
  /** Why it is degraded: the verb and resource that failed, and how. */
  reason?: string;
  since: string;
  checkedAt: string;
}

/** Karmada mode: Karmada's objects are read from and written to its API server. */
export interface KarmadaPorts {
  api: KubeApi;
  /** The sync cursors (one per kind) and the connection row, in the app's own table. */
  cursors: DocumentStore<SyncCursor>;
  connection: DocumentStore<KarmadaConnection>;
  /** Per binding, the clusters its placement rows were written for: a watch event carries only the new object. */
  placements: BulkDocumentStore<IndexedPlacement>;
}

/** Which clusters can be probed, and how (Karmada: spec.apiEndpoint + the secretRef's Secret; standalone: a kubeconfig). */
export interface MemberDirectory {
  endpoints(clusters: ClusterRecord[]): Promise<MemberEndpoint[]>;
}

export type { DocumentStore, EventLog, EvictionLedger, MessageQueue } from '../store/ports';

/**
 * The controllers' ports: what they touch, injected. Every queue message is defined here once, as a zod
 * schema: the sender is typed by it and the handler (functions/) parses with it.
 */

/** Clusters one taint-evaluation message names at most (a message stays far inside the queue's 64 KiB). */
export const EVALUATIONS_PER_MESSAGE = 100;
const evaluationReason = z.enum(['deadline', 'policy-changed', 'resync', 'watch']);
const clusterName = z.string().min(1).max(63);
/**
 * A request to re-evaluate one cluster's taints, now or at `dueAt`; or several clusters' now (a relist or a
 * policy change that affects many: one message per EVALUATIONS_PER_MESSAGE clusters instead of one each).
 */
export const taintEvaluationMessage = z.union([
  z.object({ cluster: clusterName, reason: evaluationReason, dueAt: z.iso.datetime({ offset: true }).optional() }),
  z.object({ clusters: z.array(clusterName).min(1).max(EVALUATIONS_PER_MESSAGE), reason: evaluationReason }),
]);
export type TaintEvaluationMessage = z.infer<typeof taintEvaluationMessage>;

/** Plan or abandon the evictions of one cluster (its faulty taints changed, a binding landed there, or a resync). */
export const taintManagerMessage = z.object({
  cluster: z.string().min(1).max(63),
  reason: z.enum(['taints-changed', 'binding-changed', 'resync']),
});
export type TaintManagerMessage = z.infer<typeof taintManagerMessage>;

/** The next chunk of a background apply (shared/controllers/applyOperations.ts). */
export const applyChunkMessage = z.object({
  operation: z.string().min(1).max(64),
  chunk: z.number().int().min(0),
});
export type ApplyChunkMessage = z.infer<typeof applyChunkMessage>;

/** Background applies: their progress, their chunks of objects, and the queue that applies one chunk a message. */
export interface ApplyOperationPorts {
  operations: DocumentStore<ApplyOperationRecord>;
  chunks: DocumentStore<ApplyChunkRecord<AppliedObject>>;
  queue: MessageQueue<ApplyChunkMessage>;
}

/** One paced eviction: the ledger row it executes, with the ETag the pacer left it at. */
export const evictionMessage = z.object({
  cluster: z.string().min(1).max(63),
  bindingKey: z.string().min(1).max(400),
  etag: z.string().min(1),
  slot: z.iso.datetime({ offset: true }),
  // The row as the pacer wrote it (the frozen decision), so the worker need not read it back; every
  // write made from it is conditional on `etag`.
  record: z
    .looseObject({
      cluster: z.string(),
      bindingKey: z.string(),
      kind: z.enum(['ResourceBinding', 'ClusterResourceBinding']),
      name: z.string(),
      state: z.enum(['pending', 'scheduled', 'done', 'abandoned', 'blocked', 'failed']),
      purgeMode: z.enum(['Directly', 'Gracefully']),
      dueAt: z.string(),
      decidedAt: z.string(),
      attempts: z.number(),
    })
    .optional(),
});
export type EvictionMessage = Omit<z.infer<typeof evictionMessage>, 'record'> & { record?: EvictionRecord };

/** What the eviction queue carries: paced evictions whose slots are less than a second apart, in slot order. */
export const evictionBatchMessage = z.object({ evictions: z.array(evictionMessage).min(1).max(64) });
export type EvictionBatch = { evictions: EvictionMessage[] };

/** Bindings one scheduler message names at most (a request's many new bindings go a few dozen to a message). */
export const BINDINGS_PER_SCHEDULER_MESSAGE = 32;
/** Bindings to place: one, or several from one request. */
export const schedulerMessage = z.union([
  z.object({ binding: z.string().min(1).max(400) }),
  z.object({ bindings: z.array(z.string().min(1).max(400)).min(1).max(BINDINGS_PER_SCHEDULER_MESSAGE) }),
]);
export type SchedulerMessage = z.infer<typeof schedulerMessage>;
/** The bindings a scheduler message names. */
export const bindingsOf = (message: SchedulerMessage): string[] => ('bindings' in message ? message.bindings : [message.binding]);

/** A binding whose application failover should be checked, now or at `dueAt`. */
export const applicationFailoverMessage = z.object({ binding: z.string().min(1).max(400), dueAt: z.iso.datetime({ offset: true }).optional() });
export type ApplicationFailoverMessage = z.infer<typeof applicationFailoverMessage>;

/**
 * The fleet's counts, kept where taints change (and when clusters come and go) and checked against a full
 * recount by the minute taint resync: fleet health costs one small read, whatever the fleet's size.
 */
export interface FleetSummary {
  /** `members.length`, kept beside it for readers. */
  total: number;
  /**
   * Names of every cluster (a set): a creation noted twice, or noted after a recount already listed the
   * cluster, counts it once. Absent in a summary written by an older version: the next note recounts.
   */
  members?: string[];
  /** Names of the clusters with a NoExecute or PreferNoExecute taint (a set: adding one twice is harmless). */
  faulty: string[];
  /**
   * Names of the unhealthy clusters (`Ready` not True, or a faulty taint: failover/fleetHealth.ts), the
   * count fleet health is measured by. Absent in a summary written by an older version: recounted.
   */
  unhealthy?: string[];
  recountedAt?: string;
  /**
   * Bumped by every change of what the fleet view holds (a cluster created or deleted, its labels, location
   * or taints changed): a process keeps its listing of the fleet until this moves (absent: 0).
   */
  viewVersion?: number;
  /** The cluster each of the last view changes was about, by the version it moved to (the oldest first). */
  viewChanges?: Array<{ version: number; name: string }>;
}

/** FailoverBudgets and what is in flight under each (`shared/controllers/state/budgets.ts`). */
export interface BudgetPorts {
  /** Standalone: table `failoverbudgets`, applied through /api/apply. Karmada mode: the FailoverBudget custom resources (read only). */
  rules: DocumentStore<FailoverBudgetRecord>;
  /** In the app's own table in both modes. */
  flights: DocumentStore<BudgetFlight>;
}

/** Everything the controllers touch: Table and Storage queue adapters in the app, in-memory adapters in fast tests. */
export interface ControlPlane {
  clusters: DocumentStore<ClusterRecord>;
  policies: DocumentStore<PolicyRecord>;
  /** Per ClusterTaintPolicy (by name), in the app's own table in both modes: the blast-radius guard and the status conditions. */
  policyStates: DocumentStore<PolicyState>;
  events: EventLog;
  evaluations: MessageQueue<TaintEvaluationMessage>;
  bindings: FlaggedDocumentStore<BindingRecord, BindingFlag>;
  propagationPolicies: DocumentStore<PropagationPolicyRecord>;
  templates: DocumentStore<TemplateRecord>;
  /** One document, `fleet`: the maintained fleet summary. */
  fleetSummary: DocumentStore<FleetSummary>;
  ledger: EvictionLedger;
  taintManager: MessageQueue<TaintManagerMessage>;
  evictions: MessageQueue<EvictionBatch>;
  scheduler: MessageQueue<SchedulerMessage>;
  applicationFailover: MessageQueue<ApplicationFailoverMessage>;
  applyOperations: ApplyOperationPorts;
  /** FailoverBudgets (item: disruption budgets). Absent (some tests): no budget holds anything. */
  budgets?: BudgetPorts;
  /** Set in Karmada mode (KARMADA_KUBECONFIG). */
  karmada?: KarmadaPorts;
  /** Set when member clusters can be probed. */
  members?: { directory: MemberDirectory; prober: MemberProber };
  metrics: FailoverMetrics;
  clock: Clock;
  /** What this process keeps of what it read (shared/cache.ts), aged by `clock`: one store per named cache. */
  caches: PlaneCaches;
  config: AppConfig;
  log: Logger;
}
