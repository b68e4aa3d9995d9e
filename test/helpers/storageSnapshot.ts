import { QUEUES } from '../../shared/queue/storageQueue';
import type { StorageClients } from '../../shared/store/connection';
import { TABLES } from '../../shared/store/tableStorage';

/**
 * Every table the app keeps (but the timer leases, which change every second by design) and every queue,
 * as one string: a bad request must leave it byte-for-byte what it was.
 */
export async function storageSnapshot(storage: StorageClients): Promise<string> {
  const parts: string[] = [];
  for (const table of Object.values(TABLES).filter((t) => t !== TABLES.leases)) {
    const rows: string[] = [];
    for await (const entity of storage.table(table).listEntities()) rows.push(JSON.stringify(entity));
    parts.push(`${table}:${rows.sort().join('\n')}`);
  }
  for (const queue of Object.values(QUEUES)) {
    const peeked = await storage.queue(queue).peekMessages({ numberOfMessages: 32 });
    parts.push(`${queue}:${peeked.peekedMessageItems.map((m) => m.messageText).join(',')}`);
  }
  return parts.join('\n---\n');
}

/**
 * The snapshot once storage has stopped changing: the same for `quietMs` (timers and queued work of the
 * set-up finish at their own pace on a loaded machine, so a fixed sleep is not enough).
 */
export async function quietStorageSnapshot(storage: StorageClients, quietMs = 2000, timeoutMs = 30_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let last = await storageSnapshot(storage);
  let since = Date.now();
  while (Date.now() - since < quietMs) {
    if (Date.now() > deadline) throw new Error(`storage still changing ${timeoutMs} ms after the set-up`);
    await new Promise((r) => setTimeout(r, 250));
    const next = await storageSnapshot(storage);
    if (next !== last) {
      last = next;
      since = Date.now();
    }
  }
  return last;
}
