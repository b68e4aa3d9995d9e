import { TableClient, TableServiceClient } from '@azure/data-tables';
import { QueueClient, QueueServiceClient } from '@azure/storage-queue';
import type { TokenCredential } from '@azure/identity';
import type { IdentityStorage } from '../config';

/** Clients for the app's storage account, built from the `AzureWebJobsStorage` connection string. */
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

/** One client per table and queue name, kept (clients hold connection pools). */
function cachedClients(makeTable: (name: string) => TableClient, makeTableService: () => TableServiceClient, queueService: QueueServiceClient): StorageClients {
  const tables = new Map<string, TableClient>();
  const queues = new Map<string, QueueClient>();
  return {
    table(name) {
      let client = tables.get(name);
      if (!client) tables.set(name, (client = makeTable(name)));
      return client;
    },
    tableService: makeTableService,
    queue(name) {
      let client = queues.get(name);
      if (!client) queues.set(name, (client = queueService.getQueueClient(name)));
      return client;
    },
    queueService: () => queueService,
  };
}
