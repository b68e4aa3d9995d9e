/**
 * The order in which the pacer hands out send slots (pure). Within the paced queue, due evictions go out by
 * the binding's `spec.schedulePriority.priority` (Karmada's field; higher first); among due rows of one
 * priority the failed clusters take turns (turnsOf), each cluster's rows by due time. The rate is not changed
 * by any of this: only which row takes the next slot.
 *
 * Starvation bound (aging by a hard deadline): a row that has been due for STARVATION_SECONDS or longer is
 * *starving*, and starving rows go before every other row, oldest due time first, whatever their
 * priority. Once a row due at `d` starves (at `d + N`, N = STARVATION_SECONDS), only rows due at or before
 * `d` can still take a slot before it: a row due later starves later and sorts after it, and a row that is
 * not starving sorts after every starving one. So, while the rate `r` holds (no halt, pause or budget
 * holding it), a row due at `d` gets its slot by
 *
 *     d + N + Q / r      (plus the pacer's one-second tick)
 *
 * where Q is the number of rows due at or before `d` that are still waiting at `d + N` (the rows FIFO would
 * also have put in front of it). A stream of higher-priority rows, however long, delays it by at most N.
 * Rows planned later with a due time already past (a binding placed on a long-failed cluster) are the only
 * rows that join Q afterwards, each at most once per eviction. A FailoverBudget may hold a row longer: that
 * wait is the budget's (`BudgetExceeded`), not the queue's.
 */

/** A due row (or a group of rows sharing priority and due time) waiting for a slot. */
export interface DueCandidate {
  /** spec.schedulePriority.priority of the binding when the eviction was planned (0 when unset). */
  priority: number;
  /** Due time, epoch milliseconds. */
  dueAt: number;
}

/** A row due this long goes before any row that is not: the starvation bound's N. */
export const STARVATION_SECONDS = 60;

/** Kubernetes' PriorityClass range (int32); values outside are clamped. */
export const MIN_PRIORITY = -2_147_483_648;
export const MAX_PRIORITY = 2_147_483_647;

export const clampPriority = (value: number): number => (Number.isFinite(value) ? Math.min(MAX_PRIORITY, Math.max(MIN_PRIORITY, Math.trunc(value))) : 0);

/** Whether a row has waited the bound out: due at least `starvationMs` before `now`. */
export const isStarving = (candidate: DueCandidate, now: number, starvationMs = STARVATION_SECONDS * 1000): boolean => now - candidate.dueAt >= starvationMs;

/**
 * The pacer's order, as a comparator: rows due by `now` (the earliest slot) before rows not yet due;
 * among due rows, starving ones first (oldest due first), then higher priority, then earlier due time;
 * rows not yet due by due time, then priority.
 */
export function compareDue(a: DueCandidate, b: DueCandidate, now: number, starvationMs = STARVATION_SECONDS * 1000): number {
  const dueA = a.dueAt <= now;
  const dueB = b.dueAt <= now;
  if (dueA !== dueB) return dueA ? -1 : 1;
  if (!dueA) return a.dueAt - b.dueAt || b.priority - a.priority;
  const starvingA = isStarving(a, now, starvationMs);
  const starvingB = isStarving(b, now, starvationMs);
  if (starvingA !== starvingB) return starvingA ? -1 : 1;
  if (starvingA) return a.dueAt - b.dueAt || b.priority - a.priority;
  return b.priority - a.priority || a.dueAt - b.dueAt;
}

/** The candidates in the pacer's order (a stable sort: equal ones keep their order). */
export function orderDue<T extends DueCandidate>(candidates: readonly T[], now: number, starvationMs = STARVATION_SECONDS * 1000): T[] {
  return [...candidates].sort((a, b) => compareDue(a, b, now, starvationMs));
}

/** A candidate of one cluster: a row, or a bucket of one cluster's rows sharing a due time. */
export interface ClusterCandidate extends DueCandidate {
  cluster: string;
  /** The FailoverBudget a row waits for: such rows keep their own place in line. */
  parkedFor?: string;
}

/**
 * The pacer's order (orderDue) cut into turns. Rows that are due, not starving and not waiting for a budget,
 * and that share a priority, form one turn in which clusters take slots in turn: when several clusters fail
 * together, each one's first eviction goes within a slot or so of the others' instead of after every row of
 * the clusters planned before it. Every other candidate is a turn of its own. A turn is a list of lanes,
 * one per cluster in the order of its first candidate, each lane in the pacer's order. The starvation bound
 * above holds: starving rows are turns of their own, oldest first, before every shared one.
 */
export function turnsOf<T extends ClusterCandidate>(candidates: readonly T[], now: number, starvationMs = STARVATION_SECONDS * 1000): T[][][] {
  const turns: T[][][] = [];
  let shared: { priority: number; lanes: Map<string, T[]> } | undefined;
  for (const candidate of orderDue(candidates, now, starvationMs)) {
    const shares = candidate.dueAt <= now && candidate.parkedFor === undefined && !isStarving(candidate, now, starvationMs);
    if (!shares) {
      shared = undefined;
      turns.push([[candidate]]);
      continue;
    }
    if (!shared || shared.priority !== candidate.priority) {
      shared = { priority: candidate.priority, lanes: new Map() };
      turns.push([]);
    }
    const lane = shared.lanes.get(candidate.cluster);
    if (lane) lane.push(candidate);
    else {
      const fresh = [candidate];
      shared.lanes.set(candidate.cluster, fresh);
      turns[turns.length - 1].push(fresh);
    }
  }
  return turns;
}

/**
 * A turn's lanes starting with the one after `cluster`'s (the cluster that took the last slot a pass handed
 * out), wrapping around; as they are when no lane is that cluster's. Clusters thus take turns across passes as
 * within one: a pass that hands out one slot gives it to the next cluster, not to the first again.
 */
export function startAfter<T extends { cluster: string }>(lanes: readonly (readonly T[])[], cluster: string | undefined): Array<readonly T[]> {
  const at = cluster === undefined ? -1 : lanes.findIndex((lane) => lane[0]?.cluster === cluster);
  return at < 0 ? [...lanes] : [...lanes.slice(at + 1), ...lanes.slice(0, at + 1)];
}

/** The lanes of a turn taken in turn: each lane's first, then each one's second, and so on. */
export function interleave<T>(lanes: readonly (readonly T[])[]): T[] {
  const out: T[] = [];
  const longest = Math.max(0, ...lanes.map((lane) => lane.length));
  for (let i = 0; i < longest; i++) for (const lane of lanes) if (i < lane.length) out.push(lane[i]);
  return out;
}

/** Single rows in the pacer's order: turns one after another, clusters taking turns within each. */
export function orderRows<T extends ClusterCandidate>(candidates: readonly T[], now: number, starvationMs = STARVATION_SECONDS * 1000): T[] {
  return turnsOf(candidates, now, starvationMs).flatMap((turn) => interleave(turn));
}
