import type { AppliedObject } from '../../shared/api/decode';
import { PlaneCaches } from '../../shared/cache';
import { ManualClock } from '../../shared/clock';
import { loadConfig } from '../../shared/config';
import type {
  ApplicationFailoverMessage,
  ApplyChunkMessage,
  ControlPlane,
  EvictionBatch,
  EvictionMessage,
  FleetSummary,
  SchedulerMessage,
  TaintEvaluationMessage,
  TaintManagerMessage,
} from '../../shared/controllers/ports';
import type { PolicyState } from '../../shared/failover/policyStatus';
import { MemoryDocumentStore, MemoryEventLog, MemoryLedger, MemoryMessageQueue } from '../../shared/store/memory';
import type { SentMessage } from '../../shared/store/memory/messageQueue';
import {
  ApplyChunkRecord,
  ApplyOperationRecord,
  BindingFlag,
  bindingFlags,
  BindingRecord,
  ClusterRecord,
  PolicyRecord,
  PropagationPolicyRecord,
  TemplateRecord,
} from '../../shared/store/records';
import { silentLogger } from '../../shared/telemetry/log';
import { FailoverMetrics } from '../../shared/telemetry/metrics';

/** A control plane on the in-memory adapters, with a manual clock: controllers run as in the app, no Azurite. */
export function memoryPlane(settings: Record<string, string> = {}, start = '2026-01-01T00:00:00.000Z') {
  const clock = new ManualClock(start);
  const now = () => clock.now();
  const stores = {
    clusters: new MemoryDocumentStore<ClusterRecord>(),
    policies: new MemoryDocumentStore<PolicyRecord>(),
    policyStates: new MemoryDocumentStore<PolicyState>(),
    events: new MemoryEventLog(),
    bindings: new MemoryDocumentStore<BindingRecord, BindingFlag>({ flags: bindingFlags }),
    propagationPolicies: new MemoryDocumentStore<PropagationPolicyRecord>(),
    templates: new MemoryDocumentStore<TemplateRecord>(),
    fleetSummary: new MemoryDocumentStore<FleetSummary>(),
    ledger: new MemoryLedger(),
    evaluations: new MemoryMessageQueue<TaintEvaluationMessage>(now),
    taintManager: new MemoryMessageQueue<TaintManagerMessage>(now),
    evictions: new MemoryMessageQueue<EvictionBatch>(now),
    scheduler: new MemoryMessageQueue<SchedulerMessage>(now),
    applicationFailover: new MemoryMessageQueue<ApplicationFailoverMessage>(now),
    applyOperations: {
      operations: new MemoryDocumentStore<ApplyOperationRecord>(),
      chunks: new MemoryDocumentStore<ApplyChunkRecord<AppliedObject>>(),
      queue: new MemoryMessageQueue<ApplyChunkMessage>(now),
    },
  };
  const plane: ControlPlane = {
    ...stores,
    metrics: new FailoverMetrics(),
    clock,
    caches: new PlaneCaches(),
    config: loadConfig({ FAILOVER_ENABLED: 'true', ...settings }),
    log: silentLogger,
  };
  return { plane, clock, ...stores };
}

export type MemoryPlane = ReturnType<typeof memoryPlane>;

/**
 * Takes every message from the eviction queue, one entry per eviction it carries (a message carries the
 * evictions whose slots are less than a second apart), as a test runs them one by one.
 */
export function takeEvictions(m: Pick<MemoryPlane, 'evictions'>): Array<SentMessage<EvictionMessage>> {
  return m.evictions.takeAll().flatMap((sent) => sent.message.evictions.map((message) => ({ ...sent, message })));
}
