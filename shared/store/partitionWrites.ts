import type { TableClient, TransactionAction } from '@azure/data-tables';
import { mapConcurrent } from '../concurrency';
import { BATCH } from './ledger/keys';
import { partitionOfAction, statusOf, submitOne } from './ledger/transactions';

/** A transaction's body may hold 4 MiB: writes are packed into transactions well below that. */
export const TRANSACTION_BYTES = 3 * 1024 * 1024;
/** Transactions of one partition sent at once when more than one waits. */
const ROUNDS_AT_ONCE = 8;
/** Writes of a refused transaction tried again alone, this many at once. */
const ALONE_AT_ONCE = 8;

interface Waiting {
  action: TransactionAction;
  bytes: number;
  resolve: (etag: string | undefined) => void;
  reject: (error: unknown) => void;
}

interface PartitionLine {
  waiting: Waiting[];
  running: boolean;
}

const rowKeyOf = (action: TransactionAction): string => String((action[1] as { rowKey: string }).rowKey);

/** What a write carries in its string properties, as a transaction's body measures it (about): what packs transactions. */
export function entityBytes(action: TransactionAction): number {
  let bytes = 0;
  for (const value of Object.values(action[1] as Record<string, unknown>)) if (typeof value === 'string') bytes += Buffer.byteLength(value);
  return bytes;
}

/**
 * Single-entity writes to one table, each answered on its own, that go together when they meet: a partition
 * has one round of this process's writes in flight at a time (one request, or several transactions when
 * more than one transaction's worth waits), and the writes that arrive meanwhile are sent next as one
 * transaction (at most 100 entities, 3 MiB). A write that meets none is sent alone at once. A burst of a
 * thousand clusters registering, or of their events, then costs a request per round instead of one each;
 * the storage service serves a partition's writes one after another either way.
 *
 * Each write keeps its own outcome: a transaction is all or nothing, so when one is refused for one of its
 * writes, none of them was written, and each is sent again alone, answering its caller with its own ETag or
 * error. (A transaction the retry policy repeated after a lost answer had landed: its writes then meet
 * themselves, as a single write repeated after a lost answer does.) Two writes of one row never share a
 * transaction (the service refuses that); the later one goes in a later round.
 */
export class PartitionWrites {
  private readonly lines = new Map<string, PartitionLine>();

  constructor(private readonly client: TableClient) {}

  /** Sends one create, update, upsert or delete; its ETag (none for a delete), or its own error. */
  write(action: TransactionAction): Promise<string | undefined> {
    const partition = partitionOfAction(action);
    let line = this.lines.get(partition);
    if (!line) this.lines.set(partition, (line = { waiting: [], running: false }));
    const written = new Promise<string | undefined>((resolve, reject) => line.waiting.push({ action, bytes: entityBytes(action), resolve, reject }));
    if (!line.running) {
      line.running = true;
      // After the current task: the writes one caller makes together (an append of many events) start as one round.
      queueMicrotask(() => void this.drain(partition, line));
    }
    return written;
  }

  /**
   * Sends what waits, round after round, until none waits; a round answers its callers and never throws.
   * More than a transaction's worth waiting goes as several transactions at once.
   */
  private async drain(partition: string, line: PartitionLine): Promise<void> {
    while (line.waiting.length > 0) await Promise.all(nextRounds(line).map((round) => this.send(round)));
    line.running = false;
    this.lines.delete(partition);
  }

  private async send(round: Waiting[]): Promise<void> {
    if (round.length === 1) return this.alone(round[0]);
    try {
      const response = await this.client.submitTransaction(round.map((w) => w.action));
      round.forEach((w, k) => w.resolve(response.subResponses[k]?.etag));
    } catch (error) {
      // Refused for one of its writes (a created row that exists, a replaced one that changed, one the service
      // will not take): each write gets its own answer, sent alone. The service failing or not answering (after
      // the retry policy's tries) is every write's answer: sending them one by one would only multiply the load.
      const status = statusOf(error);
      if (status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429)
        await mapConcurrent(round, ALONE_AT_ONCE, (w) => this.alone(w));
      else for (const w of round) w.reject(error);
    }
  }

  private async alone(w: Waiting): Promise<void> {
    try {
      w.resolve(await submitOne(this.client, w.action));
    } catch (error) {
      w.reject(error);
    }
  }
}

/**
 * Takes the next transactions' writes from the line, in arrival order, each within the limits: a row written
 * twice waits for the next rounds, so its writes land in the order they were made.
 */
function nextRounds(line: PartitionLine): Waiting[][] {
  const rounds: Waiting[][] = [];
  const rows = new Set<string>();
  const left: Waiting[] = [];
  let round: Waiting[] = [];
  let bytes = 0;
  for (const w of line.waiting) {
    const row = rowKeyOf(w.action);
    if (rows.has(row)) {
      left.push(w);
      continue;
    }
    if (round.length >= BATCH || (round.length > 0 && bytes + w.bytes > TRANSACTION_BYTES)) {
      if (rounds.length + 1 >= ROUNDS_AT_ONCE) {
        // Its row's later writes wait behind it.
        rows.add(row);
        left.push(w);
        continue;
      }
      rounds.push(round);
      round = [];
      bytes = 0;
    }
    round.push(w);
    rows.add(row);
    bytes += w.bytes;
  }
  rounds.push(round);
  line.waiting = left;
  return rounds;
}
