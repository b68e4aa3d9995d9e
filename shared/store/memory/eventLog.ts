import { eventPartition, kindPartitions } from '../eventKeys';
import type { EventLog, EventQuery, EventRecord } from '../ports';

/**
 * Events in memory with the Table adapter's semantics: stored as it stores them (message cut at 4,000
 * characters, details as JSON cut at 30,000), matched as it matches them (an object by its kind and name,
 * a kind by the range of its partitions, a name alone exactly), listed oldest first (by time, then write
 * order) and cut to the newest `limit`.
 */
export class MemoryEventLog implements EventLog {
  private readonly rows: Array<{
    partition: string;
    id?: string;
    sequence: number;
    time: string;
    kind: string;
    name: string;
    type: string;
    reason: string;
    message: string;
    details: string;
  }> = [];
  private sequence = 0;

  async append(events: EventRecord[]): Promise<void> {
    await Promise.resolve();
    for (const event of events) {
      // As the Table adapter's upsert: an event with an id (and the same time) replaces its earlier copy.
      const key = event.id ? `${event.time}-id-${event.id}` : undefined;
      const earlier = key ? this.rows.findIndex((row) => row.id === key && row.kind === event.kind && row.name === event.name) : -1;
      if (earlier >= 0) this.rows.splice(earlier, 1);
      this.rows.push({
        partition: eventPartition(event.kind, event.name),
        ...(key ? { id: key } : {}),
        sequence: this.sequence++,
        time: event.time,
        kind: event.kind,
        name: event.name,
        type: event.type,
        reason: event.reason,
        message: event.message.slice(0, 4000),
        details: event.details ? JSON.stringify(event.details).slice(0, 30_000) : '',
      });
    }
  }

  async list(query: EventQuery): Promise<EventRecord[]> {
    await Promise.resolve();
    const kindRange = query.kind ? kindPartitions(query.kind) : undefined;
    const rows = this.rows.filter(
      (row) =>
        (query.kind && query.name ? row.kind === query.kind && row.name === query.name : true) &&
        (query.kind && !query.name ? row.partition >= kindRange!.ge && row.partition < kindRange!.lt : true) &&
        (!query.kind && query.name ? row.name === query.name : true) &&
        (query.since ? row.time >= query.since : true),
    );
    rows.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : a.sequence - b.sequence));
    return rows.slice(Math.max(0, rows.length - query.limit)).map((row) => ({
      time: row.time,
      kind: row.kind,
      name: row.name,
      type: row.type === 'Warning' ? 'Warning' : 'Normal',
      reason: row.reason,
      message: row.message,
      ...(row.details ? { details: JSON.parse(row.details) as Record<string, unknown> } : {}),
    }));
  }

  /** Every event, oldest first (for tests). */
  all(): Promise<EventRecord[]> {
    return this.list({ limit: Number.MAX_SAFE_INTEGER });
  }
}
