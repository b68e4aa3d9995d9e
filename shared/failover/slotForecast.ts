import { assignSlots, earliestSlot } from './evictionDecision';
import { orderRows } from './priority';

/**
 * When each waiting eviction would run at a given rate, pure: the pacer's own order (orderRows: rows due by
 * the first slot with clusters taking turns, oldest cluster first; later ones by due time; within a cluster by
 * due time, then binding) and slot rule (assignSlots), without its look-ahead window or priorities. Rows already scheduled keep
 * their slot. Used by the queue summary's ETAs and by what-if.
 */
export interface WaitingRow {
  id: string;
  cluster: string;
  bindingKey: string;
  dueAt: number;
  /** A scheduled row's slot. */
  scheduledFor?: number;
}

/**
 * `earliest`: where a series that has run out starts. `running`, when given: the pacer's rule for a series
 * still running (earliestSlot): it continues at `nextSlotAt` down to `now + deliveryLeadMs`.
 */
export function forecastSlots(
  rows: readonly WaitingRow[],
  nextSlotAt: number,
  earliest: number,
  rate: number,
  running?: { now: number; deliveryLeadMs: number },
): Map<string, number> {
  const slots = new Map<string, number>();
  for (const row of rows) if (row.scheduledFor !== undefined) slots.set(row.id, row.scheduledFor);
  if (rate <= 0) return slots;
  const start = running ? earliestSlot(nextSlotAt, running.now, { freshMs: earliest - running.now, deliveryMs: running.deliveryLeadMs }) : earliest;
  const pending = orderRows(
    rows
      .filter((row) => row.scheduledFor === undefined)
      .sort((a, b) => a.dueAt - b.dueAt || compare(a.cluster, b.cluster) || compare(a.bindingKey, b.bindingKey))
      .map((row) => ({ ...row, priority: 0 })),
    Math.max(start, nextSlotAt),
  );
  const assigned = assignSlots(
    pending.map((row) => row.dueAt),
    nextSlotAt,
    start,
    rate,
    Number.POSITIVE_INFINITY,
  ).slots;
  pending.forEach((row, i) => slots.set(row.id, assigned[i]));
  return slots;
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
