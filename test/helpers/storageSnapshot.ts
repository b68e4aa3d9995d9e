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
