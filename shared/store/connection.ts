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
  const tables = new Map<string, TableClient>();
  const queues = new Map<string, QueueClient>();
  const queueService = QueueServiceClient.fromConnectionString(connectionString);
  return {
    table(name) {
      let client = tables.get(name);
      if (!client) {
        client = TableClient.fromConnectionString(connectionString, name, tableOptions);
        tables.set(name, client);
      }
      return client;
    },
    tableService: () => TableServiceClient.fromConnectionString(connectionString, tableOptions),
    queue(name) {
      let client = queues.get(name);
      if (!client) {
        client = queueService.getQueueClient(name);
        queues.set(name, client);
      }
      return client;
    },
    queueService: () => queueService,
  };
}

/**
 * Clients for an account reached with an Entra ID identity (shared keys disabled): the
 * `AzureWebJobsStorage__*` settings the Functions host uses for the same connection.
 */
export function storageFromIdentity(settings: IdentityStorage, credential: TokenCredential): StorageClients {
  const tables = new Map<string, TableClient>();
  const queueService = new QueueServiceClient(settings.queueServiceUri, credential);
  const queues = new Map<string, QueueClient>();
  return {
    table(name) {
      let client = tables.get(name);
      if (!client) {
        client = new TableClient(settings.tableServiceUri, name, credential);
        tables.set(name, client);
      }
      return client;
    },
    tableService: () => new TableServiceClient(settings.tableServiceUri, credential),
    queue(name) {
      let client = queues.get(name);
      if (!client) {
        client = queueService.getQueueClient(name);
        queues.set(name, client);
      }
      return client;
    },
    queueService: () => queueService,
  };
}
