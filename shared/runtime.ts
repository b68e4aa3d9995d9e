import { hostname } from 'node:os';
import type { InvocationContext } from '@azure/functions';
import type { AppliedObject } from './api/decode';
import { PlaneCaches } from './cache';
import { systemClock } from './clock';
import { AppConfig, loadConfig } from './config';
import type {
  ApplicationFailoverMessage,
  ApplyChunkMessage,
  ControlPlane,
  EvictionBatch,
  FleetSummary,
  IndexedPlacement,
  KarmadaConnection,
  KarmadaPorts,
  SchedulerMessage,
  SyncCursor,
  TaintEvaluationMessage,
  TaintManagerMessage,
} from './controllers/ports';
import { KarmadaMemberDirectory, StaticMemberDirectory } from './controllers/state/members';
import type { PolicyState } from './failover/policyStatus';
import { warnAboutAuth } from './http/auth';
import { ClientNodeProber, lazyKubeApi, membersFromKubeconfig } from './kube/clientNode';
import { outboxOf } from './queue/handOff';
import { QUEUES, StorageMessageQueue } from './queue/storageQueue';
import { StorageClients, storageFromConnectionString, storageFromIdentity } from './store/connection';
import { KarmadaBindingStore } from './store/karmada/bindingStore';
import { KarmadaBudgetStore } from './store/karmada/budgetStore';
import { ClusterOverlay, KarmadaClusterStore } from './store/karmada/clusterStore';
import { KubeMirroredEventLog } from './store/karmada/kubeEvents';
import { karmadaPropagationPolicyStore, karmadaTaintPolicyStore } from './store/karmada/policyStores';
import { TableLedger } from './store/ledgerTable';
import type { MessageQueue } from './store/ports';
import {
  ApplyChunkRecord,
  ApplyOperationRecord,
  BindingFlag,
  bindingFlags,
  BindingRecord,
  BudgetFlight,
  ClusterRecord,
  FailoverBudgetRecord,
  PolicyRecord,
  PropagationPolicyRecord,
  TemplateRecord,
} from './store/records';
import { TableDocumentStore, TableEventLog, TABLES } from './store/tableStorage';
import { jsonLogger } from './telemetry/log';
import { FailoverMetrics } from './telemetry/metrics';

/**
 * The app's wiring, built once per process from the app settings. Functions call `controlPlane()`;
 * tests build their own with `createControlPlane` on an Azurite of their own.
 */
let cached: ControlPlane | undefined;

/**
 * Partitions of the kinds that grow with the fleet (bindings, templates, Karmada mode's placement index):
 * 32 partitions hold 1,000,000 bindings at ~31,000 each and serve ~64,000 entities/s on Azure.
 */
const DOCUMENT_BUCKETS = 32;

export function createControlPlane(storage: StorageClients, config: AppConfig, overrides: Partial<ControlPlane> = {}): ControlPlane {
  const log = overrides.log ?? jsonLogger();
  const events = new TableEventLog(storage.table(TABLES.events));
  const karmadaTable = storage.table(TABLES.karmada);
  const karmada: KarmadaPorts | undefined = config.karmadaKubeconfig
    ? {
        api: overrides.karmada?.api ?? lazyKubeApi(config.karmadaKubeconfig, log),
        cursors: new TableDocumentStore<SyncCursor>(karmadaTable, 'cursor'),
        connection: new TableDocumentStore<KarmadaConnection>(karmadaTable, 'connection'),
        placements: new TableDocumentStore<IndexedPlacement>(karmadaTable, 'placement', undefined, DOCUMENT_BUCKETS),
      }
    : undefined;
  // Karmada mode: Karmada's kinds live in its API server; our tables keep only what Karmada has no place for.
  const karmadaStores = karmada
    ? {
        clusters: new KarmadaClusterStore(karmada.api, new TableDocumentStore<ClusterOverlay>(karmadaTable, 'cluster')),
        policies: karmadaTaintPolicyStore(karmada.api, log),
        bindings: new KarmadaBindingStore(karmada.api),
        propagationPolicies: karmadaPropagationPolicyStore(karmada.api, log),
        events: new KubeMirroredEventLog(events, karmada.api, log, `${hostname()}-${process.pid}`),
        karmada,
        members: { directory: new KarmadaMemberDirectory(karmada.api, log), prober: new ClientNodeProber() },
      }
    : {};
  const memberKubeconfigs = config.memberKubeconfigs;
  const standaloneMembers = memberKubeconfigs
    ? { members: { directory: new StaticMemberDirectory(onceAsync(() => membersFromKubeconfig(memberKubeconfigs))), prober: new ClientNodeProber() } }
    : {};
  return {
    // Clusters registering or reporting at once write together (a transaction per round, not a request each).
    clusters: new TableDocumentStore<ClusterRecord>(storage.table(TABLES.clusters), 'cluster', undefined, 1, { groupWrites: true }),
    policies: new TableDocumentStore<PolicyRecord>(storage.table(TABLES.policies), 'policy'),
    policyStates: new TableDocumentStore<PolicyState>(storage.table(TABLES.policies), 'policystate'),
    events,
    evaluations: new StorageMessageQueue<TaintEvaluationMessage>(storage.queue(QUEUES.taintEvaluations)),
    bindings: new TableDocumentStore<BindingRecord, BindingFlag>(storage.table(TABLES.bindings), 'binding', bindingFlags, DOCUMENT_BUCKETS),
    propagationPolicies: new TableDocumentStore<PropagationPolicyRecord>(storage.table(TABLES.propagationPolicies), 'propagationpolicy'),
    templates: new TableDocumentStore<TemplateRecord>(storage.table(TABLES.templates), 'template', undefined, DOCUMENT_BUCKETS),
    // Karmada mode: the budgets are FailoverBudget custom resources (infra/failoverbudget-crd.yaml); what is in flight is ours.
    budgets: {
      rules: karmada ? new KarmadaBudgetStore(karmada.api, log) : new TableDocumentStore<FailoverBudgetRecord>(storage.table(TABLES.budgets), 'budget'),
      flights: new TableDocumentStore<BudgetFlight>(storage.table(TABLES.budgets), 'flight'),
    },
    fleetSummary: new TableDocumentStore<FleetSummary>(storage.table(TABLES.clusters), 'summary'),
    ledger: new TableLedger(storage.table(TABLES.ledger), storage.table(TABLES.journal)),
    taintManager: new StorageMessageQueue<TaintManagerMessage>(storage.queue(QUEUES.taintManager)),
    evictions: new StorageMessageQueue<EvictionBatch>(storage.queue(QUEUES.evictions)),
    scheduler: new StorageMessageQueue<SchedulerMessage>(storage.queue(QUEUES.scheduler)),
    applicationFailover: new StorageMessageQueue<ApplicationFailoverMessage>(storage.queue(QUEUES.applicationFailover)),
    applyOperations: {
      operations: new TableDocumentStore<ApplyOperationRecord>(storage.table(TABLES.applyOperations), 'operation'),
      chunks: new TableDocumentStore<ApplyChunkRecord<AppliedObject>>(storage.table(TABLES.applyOperations), 'chunk'),
      queue: new StorageMessageQueue<ApplyChunkMessage>(storage.queue(QUEUES.applyChunks)),
    },
    metrics: new FailoverMetrics(),
    clock: systemClock,
    caches: new PlaneCaches(),
    // Karmada mode: a cluster exists when Karmada has it; a report never registers one.
    config: karmada ? { ...config, autoRegisterClusters: false } : config,
    log,
    ...standaloneMembers,
    ...karmadaStores,
    ...overrides,
  };
}

/** Runs `load` once (again after a failure). */
function onceAsync<T>(load: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () =>
    (pending ??= load().catch((error: unknown) => {
      pending = undefined;
      throw error;
    }));
}

/** The connection string when there is one (local, Azurite), else the identity settings (Azure). */
export function storageFor(config: AppConfig): StorageClients {
  if (config.storageConnectionString) return storageFromConnectionString(config.storageConnectionString);
  if (config.identityStorage) {
    // Loaded only in Azure: @azure/identity is large, and the local host never needs it.
    const { DefaultAzureCredential, ManagedIdentityCredential } = require('@azure/identity') as typeof import('@azure/identity');
    const { clientId } = config.identityStorage;
    return storageFromIdentity(config.identityStorage, clientId ? new ManagedIdentityCredential({ clientId }) : new DefaultAzureCredential());
  }
  throw new Error(
    'no storage account: set AzureWebJobsStorage, or AzureWebJobsStorage__accountName (or __queueServiceUri and __tableServiceUri) for an identity (npm start provides Azurite)',
  );
}

/**
 * The plane for one invocation: the process's plane, with its queues through the invocation's outbox when
 * the function hands messages off to its output bindings (`handingOff`), so a send there is held for the
 * binding instead of written. Everything else (stores, caches) is the process's.
 */
export function invocationPlane(ctx: InvocationContext): ControlPlane {
  const plane = controlPlane();
  const outbox = outboxOf(ctx);
  if (!outbox) return plane;
  const through = <T>(queue: MessageQueue<T>) => queue.through?.(outbox) ?? queue;
  return {
    ...plane,
    evaluations: through(plane.evaluations),
    taintManager: through(plane.taintManager),
    evictions: through(plane.evictions),
    scheduler: through(plane.scheduler),
    applicationFailover: through(plane.applicationFailover),
    applyOperations: { ...plane.applyOperations, queue: through(plane.applyOperations.queue) },
  };
}

export function controlPlane(): ControlPlane {
  if (!cached) {
    const config = loadConfig();
    cached = createControlPlane(storageFor(config), config);
    // In Azure this runs once per instance, at the first invocation: say what is unprotected or disabled.
    const log = cached.log;
    warnAboutAuth(config.auth, (message) => log.warn(message));
  }
  return cached;
}
