import { EmbeddedAzurite, startAzurite } from '../../shared/local/azurite';
import { QUEUES } from '../../shared/queue/storageQueue';
import { StorageClients, storageFromConnectionString } from '../../shared/store/connection';
import { ensureTables } from '../../shared/store/tableStorage';

export interface TestStorage {
  azurite: EmbeddedAzurite;
  storage: StorageClients;
  close(): Promise<void>;
}

/** A fresh in-memory Azurite on ephemeral ports, with the app's tables and queues created. */
export async function startTestStorage(extraQueues: string[] = []): Promise<TestStorage> {
  const azurite = await startAzurite();
  const storage = storageFromConnectionString(azurite.connectionString);
  await ensureTables(storage.tableService());
  for (const name of [...Object.values(QUEUES), ...extraQueues]) {
    await storage.queue(name).createIfNotExists();
    await storage.queue(`${name}-poison`).createIfNotExists();
  }
  return { azurite, storage, close: () => azurite.close() };
}
