import { TableClient, TableServiceClient } from '@azure/data-tables';
import type { TokenCredential } from '@azure/identity';
import { QueueClient, QueueServiceClient } from '@azure/storage-queue';
import type { IdentityStorage } from '../config';
import { installStorageRetryPolicy } from './retryPolicy';

/**
 * Clients for the app's storage account, built from the `AzureWebJobsStorage` connection string. Every
 * client retries as retryPolicy.ts says, and only so (the SDKs' own retry policies are replaced).
 */
export interface StorageClients {
  table(name: string): TableClient;
  tableService(): TableServiceClient;
  queue(name: string): QueueClient;
  queueService(): QueueServiceClient;
}

export function storageFromConnectionString(connectionString: string): StorageClients {
  const insecure = /DefaultEndpointsProtocol=http;|UseDevelopmentStorage=true|http:\/\//i.test(connectionString);
  const tableOptions = insecure ? { allowInsecureConnection: true } : {};
  return cachedClients(
    (name) => TableClient.fromConnectionString(connectionString, name, tableOptions),
    () => TableServiceClient.fromConnectionString(connectionString, tableOptions),
    QueueServiceClient.fromConnectionString(connectionString),
  );
}

/**
 * Clients for an account reached with an Entra ID identity (shared keys disabled): the
 * `AzureWebJobsStorage__*` settings the Functions host uses for the same connection.
 */
export function storageFromIdentity(settings: IdentityStorage, credential: TokenCredential): StorageClients {
  return cachedClients(
    (name) => new TableClient(settings.tableServiceUri, name, credential),
    () => new TableServiceClient(settings.tableServiceUri, credential),
    new QueueServiceClient(settings.queueServiceUri, credential),
  );
}

/** One client per table and queue name, kept (clients hold connection pools); each with the app's retry policy. */
function cachedClients(makeTable: (name: string) => TableClient, makeTableService: () => TableServiceClient, queueService: QueueServiceClient): StorageClients {
  const tables = new Map<string, TableClient>();
  const queues = new Map<string, QueueClient>();
  withRetryPolicy(queueService);
  return {
    table(name) {
      let client = tables.get(name);
      if (!client) tables.set(name, (client = withRetryPolicy(makeTable(name))));
      return client;
    },
    tableService: () => withRetryPolicy(makeTableService()),
    queue(name) {
      let client = queues.get(name);
      if (!client) queues.set(name, (client = withRetryPolicy(queueService.getQueueClient(name))));
      return client;
    },
    queueService: () => queueService,
  };
}

type CorePipeline = TableClient['pipeline'];

/**
 * Installs the app's retry policy in a client's HTTP pipeline (a core-rest-pipeline `Pipeline`). Table
 * clients expose it as `pipeline`. Queue clients keep it on the protected `storageClientContext` (a
 * core-client ServiceClient; `pipeline` on a queue client is the SDK's older policy-factory list), built
 * once per `QueueServiceClient` and shared by the queue clients it hands out; no public option replaces
 * the retry policy there, so this reaches for it, and fails loudly if a new SDK version moved it.
 */
function withRetryPolicy<C extends TableClient | TableServiceClient | QueueServiceClient | QueueClient>(client: C): C {
  installStorageRetryPolicy(client instanceof TableClient || client instanceof TableServiceClient ? client.pipeline : queuePipeline(client));
  return client;
}

function queuePipeline(client: QueueServiceClient | QueueClient): CorePipeline {
  const pipeline = (client as unknown as { storageClientContext?: { pipeline?: Partial<CorePipeline> } }).storageClientContext?.pipeline;
  if (typeof pipeline?.addPolicy !== 'function' || typeof pipeline.removePolicy !== 'function' || typeof pipeline.getOrderedPolicies !== 'function') {
    throw new Error(
      '@azure/storage-queue: no storageClientContext.pipeline on the client; cannot install the storage retry policy (see shared/store/connection.ts)',
    );
  }
  return pipeline as CorePipeline;
}
