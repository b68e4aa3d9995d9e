import type { Clock } from '../clock';
import type { AppConfig } from '../config';
import type { MessageQueue } from '../queue/storageQueue';
import type { DocumentStore, EventLog } from '../store/ports';
import type { Logger } from '../telemetry/log';
import type { ClusterRecord, PolicyRecord } from './records';

/** A request to re-evaluate one cluster's taints, now or at `dueAt`. */
export interface TaintEvaluationMessage {
  cluster: string;
  reason: 'deadline' | 'policy-changed' | 'resync';
  dueAt?: string;
}

/** Everything the controllers touch, injected: real adapters in the app, the same adapters on Azurite in tests. */
export interface ControlPlane {
  clusters: DocumentStore<ClusterRecord>;
  policies: DocumentStore<PolicyRecord>;
  events: EventLog;
  evaluations: MessageQueue<TaintEvaluationMessage>;
  clock: Clock;
  config: AppConfig;
  log: Logger;
}
