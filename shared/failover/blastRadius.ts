/**
 * The blast-radius guard (MAX_FLEET_SHARE_TAINTED_BY_POLICY), pure. An enforcing ClusterTaintPolicy may
 * hold NoExecute or PreferNoExecute taints on at most `maxShare` of the fleet's clusters: holding them on
 * exactly maxShare × fleet clusters is allowed, one more is not (a policy may always hold them on one
 * cluster, so a fleet of one or two can still fail over). The taint that would cross the share is not
 * written; the policy records PolicyBlastRadiusExceeded until an admin acknowledges. Taints already written
 * stay. After an acknowledgement the policy may go beyond the share for the current episode: the
 * acknowledgement expires once the policy holds such taints on fewer clusters than the share allows.
 *
 * The state is one document per policy, changed with its ETag: every taint that would add to the count
 * first takes its place here, so concurrent evaluations of many clusters cannot all slip under the limit.
 * It is separate from the fleet-health rate (docs/architecture.md, decision 6), which paces evictions, not taints.
 */

export interface PolicyGuard {
  /** Clusters where the policy holds (or has just been allowed to add) a NoExecute/PreferNoExecute taint, with since when. */
  held: Record<string, string>;
  /** Set while BlastRadiusExceeded is True: since when, and the clusters whose taint was not written. */
  exceeded?: { since: string; refused: string[] };
  /** An admin's acknowledgement of the current episode: the policy may hold beyond the share until it expires. */
  acknowledged?: { at: string; refused: string[] };
}

export const emptyGuard = (): PolicyGuard => ({ held: {} });

/** The most clusters a policy may hold faulty taints on: maxShare × fleet, rounded down, at least one. */
export function blastRadiusLimit(total: number, maxShare: number): number {
  // The epsilon keeps 0.29 × 100 at 29 (floating point gives 28.999…).
  return Math.max(1, Math.floor(maxShare * total + 1e-9));
}

export type Reservation<G extends PolicyGuard = PolicyGuard> =
  | { allowed: true; guard: G; changed: boolean; held: number; limit: number; beyondShare: boolean }
  | { allowed: false; guard: G; changed: boolean; newlyRefused: boolean; held: number; limit: number };

/**
 * May the policy add a faulty taint on `cluster`? Yes when it already holds one there, when one more stays
 * within the limit, or when an admin acknowledged the current episode; the cluster then counts as held.
 * Otherwise the guard is (or stays) exceeded and the cluster is remembered as refused.
 */
export function reserve<G extends PolicyGuard>(guard: G, cluster: string, total: number, maxShare: number, now: Date): Reservation<G> {
  const limit = blastRadiusLimit(total, maxShare);
  const count = Object.keys(guard.held).length;
  if (guard.held[cluster] !== undefined) return { allowed: true, guard, changed: false, held: count, limit, beyondShare: count > limit };
  if (count + 1 <= limit || guard.acknowledged) {
    const next = structuredClone(guard);
    next.held[cluster] = now.toISOString();
    if (next.exceeded) next.exceeded.refused = next.exceeded.refused.filter((c) => c !== cluster);
    return { allowed: true, guard: next, changed: true, held: count + 1, limit, beyondShare: count + 1 > limit };
  }
  if (guard.exceeded?.refused.includes(cluster)) return { allowed: false, guard, changed: false, newlyRefused: false, held: count, limit };
  const next = structuredClone(guard);
  next.exceeded = { since: guard.exceeded?.since ?? now.toISOString(), refused: [...(guard.exceeded?.refused ?? []), cluster].sort() };
  return { allowed: false, guard: next, changed: true, newlyRefused: true, held: count, limit };
}

/**
 * Sets whether the policy holds a faulty taint on `cluster` (after the cluster was written: a release, or
 * a taint it took hold of without writing it). Then `settle`.
 */
export function setHeld<G extends PolicyGuard>(
  guard: G,
  cluster: string,
  holds: boolean,
  total: number,
  maxShare: number,
  now: Date,
): { guard: G; expired: boolean } {
  const next = structuredClone(guard);
  if (holds) next.held[cluster] ??= now.toISOString();
  else delete next.held[cluster];
  return settle(next, total, maxShare);
}

/** The acknowledgement expires once the policy holds faulty taints on fewer clusters than the limit. */
export function settle<G extends PolicyGuard>(guard: G, total: number, maxShare: number): { guard: G; expired: boolean } {
  if (!guard.acknowledged || Object.keys(guard.held).length >= blastRadiusLimit(total, maxShare)) return { guard, expired: false };
  const next = structuredClone(guard);
  delete next.acknowledged;
  return { guard: next, expired: true };
}

/**
 * An admin's acknowledgement: the exceeded episode becomes acknowledged (BlastRadiusExceeded turns False)
 * and the refused clusters may now be tainted. Idempotent: acknowledging again, or a policy that is not
 * exceeded, changes nothing.
 */
export function acknowledge<G extends PolicyGuard>(guard: G, now: Date): { guard: G; changed: boolean; refused: string[] } {
  if (!guard.exceeded) return { guard, changed: false, refused: [] };
  const next = structuredClone(guard);
  next.acknowledged = { at: now.toISOString(), refused: guard.exceeded.refused };
  delete next.exceeded;
  return { guard: next, changed: true, refused: guard.exceeded.refused };
}

/**
 * The periodic recount: the clusters a listing shows the policy holding faulty taints on, plus places
 * taken after `listedAt` (an evaluation that reserved while the listing ran). Then `settle`.
 */
export function recount<G extends PolicyGuard>(
  guard: G,
  holding: readonly string[],
  listedAt: Date,
  total: number,
  maxShare: number,
): { guard: G; expired: boolean } {
  const next = structuredClone(guard);
  const fresh = Object.entries(guard.held).filter(([, since]) => Date.parse(since) >= listedAt.getTime());
  next.held = Object.fromEntries([...holding.map((c) => [c, guard.held[c] ?? listedAt.toISOString()] as const), ...fresh].sort(([a], [b]) => (a < b ? -1 : 1)));
  return settle(next, total, maxShare);
}
