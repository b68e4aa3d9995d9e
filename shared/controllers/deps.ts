import type { Clock } from '../clock';
import type { AppConfig } from '../config';
import type { MessageQueue } from '../queue/storageQueue';
import type { DocumentStore, EventLog } from '../store/ports';
import type { Logger } from '../telemetry/log';
import type { EvictionRecord } from '../failover/bindingModel';
import type { TableLedger } from '../store/ledgerTable';
import type { FailoverMetrics } from '../telemetry/metrics';
import type { ApplicationFailoverMessage } from './applicationFailover';
import type { BindingRecord, ClusterRecord, PolicyRecord, PropagationPolicyRecord } from './records';

/** A request to re-evaluate one cluster's taints, now or at `dueAt`. */
export interface TaintEvaluationMessage {
  cluster: string;
  reason: 'deadline' | 'policy-changed' | 'resync';
  dueAt?: string;
}

/** Plan or abandon the evictions of one cluster (its faulty taints changed, or a resync). */
export interface TaintManagerMessage {
  cluster: string;
  reason: 'taints-changed' | 'binding-changed' | 'resync';
}

/** One paced eviction: the ledger row it executes, with the ETag the pacer left it at. */
export interface EvictionMessage {
  cluster: string;
  bindingKey: string;
  etag: string;
  slot: string;
  /** The row as the pacer wrote it (the frozen decision), so the worker need not read it back. */
  record?: EvictionRecord;
}

/** A binding to place. */
export interface SchedulerMessage {
  binding: string;
}

/** The eviction ledger port; its one adapter is the Table one. */
export type EvictionLedger = Pick<TableLedger, keyof TableLedger>;

/** Everything the controllers touch, injected: real adapters in the app, the same adapters on Azurite in tests. */
export interface ControlPlane {
  clusters: DocumentStore<ClusterRecord>;
  policies: DocumentStore<PolicyRecord>;
  events: EventLog;
  evaluations: MessageQueue<TaintEvaluationMessage>;
  bindings: DocumentStore<BindingRecord>;
  propagationPolicies: DocumentStore<PropagationPolicyRecord>;
  ledger: EvictionLedger;
  taintManager: MessageQueue<TaintManagerMessage>;
  evictions: MessageQueue<EvictionMessage>;
  scheduler: MessageQueue<SchedulerMessage>;
  applicationFailover: MessageQueue<ApplicationFailoverMessage>;
  metrics: FailoverMetrics;
  clock: Clock;
  config: AppConfig;
  log: Logger;
}
