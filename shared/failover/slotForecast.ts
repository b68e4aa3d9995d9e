import { assignSlots } from './evictionDecision';

/**
 * When each waiting eviction would run at a given rate, pure: the pacer's own order (due time, then cluster,
 * then binding) and slot rule (assignSlots), without its look-ahead window. Rows already scheduled keep
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

export function forecastSlots(rows: readonly WaitingRow[], nextSlotAt: number, earliest: number, rate: number): Map<string, number> {
  const slots = new Map<string, number>();
  for (const row of rows) if (row.scheduledFor !== undefined) slots.set(row.id, row.scheduledFor);
  if (rate <= 0) return slots;
  const pending = rows
    .filter((row) => row.scheduledFor === undefined)
    .sort((a, b) => a.dueAt - b.dueAt || compare(a.cluster, b.cluster) || compare(a.bindingKey, b.bindingKey));
  const assigned = assignSlots(
    pending.map((row) => row.dueAt),
    nextSlotAt,
    earliest,
    rate,
    Number.POSITIVE_INFINITY,
  ).slots;
  pending.forEach((row, i) => slots.set(row.id, assigned[i]));
  return slots;
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
