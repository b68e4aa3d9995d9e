import type { ClusterFailover, Toleration } from '../api/resources';
import type { ClusterTaint } from './model';

/**
 * The taint manager's decision for one binding on one faulty cluster (docs/architecture.md, decision 4), pure.
 * NoExecute: Kubernetes toleration semantics over `placement.clusterTolerations` — the first toleration
 * that tolerates a taint is the one used for it; no toleration = evict now; seconds ≤ 0 = now; no seconds =
 * never. The deadline is the earliest `timeAdded + seconds` over the taints.
 * PreferNoExecute: tolerations do not count; only bindings with `failover.cluster` leave, at
 * `timeAdded + failover.cluster.tolerationSeconds`.
 */

export type EvictionVerdict = { evict: false; why: string } | { evict: true; dueAt: Date; why: string; taints: string[] };

type EffectTaint = Pick<ClusterTaint, 'key' | 'value' | 'effect' | 'timeAdded'>;

export function tolerates(toleration: Toleration, taint: Pick<ClusterTaint, 'key' | 'value' | 'effect'>): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  if (toleration.key && toleration.key !== taint.key) return false;
  if (toleration.operator === 'Exists') return true;
  // Equal (the default): the values must match; an empty key with Equal cannot be written (validation).
  return (toleration.value ?? '') === (taint.value ?? '');
}

export const isFaultyTaint = (taint: Pick<ClusterTaint, 'effect'>) => taint.effect === 'NoExecute' || taint.effect === 'PreferNoExecute';

/** A failure episode starts with its earliest NoExecute/PreferNoExecute taint (undefined: none). */
export const episodeStart = (taints: ReadonlyArray<Pick<ClusterTaint, 'effect' | 'timeAdded'>>): string | undefined =>
  earliestTime(taints.filter(isFaultyTaint).map((t) => t.timeAdded));

/** The earliest of some RFC 3339 times, compared as instants (Kubernetes writes whole seconds, we write milliseconds). */
export function earliestTime(times: readonly string[]): string | undefined {
  return [...times].sort((a, b) => Date.parse(a) - Date.parse(b))[0];
}

/**
 * Whether a decision made at `decidedAt` belongs to the episode that began at `episodeBegan` (pure). Both
 * are compared as instants: Karmada stores a taint's timeAdded truncated to the second ("…:05Z") while a
 * decision carries milliseconds ("…:05.123Z"), and as strings "…:05.123Z" sorts before "…:05Z".
 */
export const decidedInEpisode = (decidedAt: string, episodeBegan: string): boolean => Date.parse(decidedAt) >= Date.parse(episodeBegan);

export function decideEviction(
  taints: readonly EffectTaint[],
  tolerations: readonly Toleration[],
  failoverCluster: ClusterFailover | undefined,
  now: Date,
): EvictionVerdict {
  const deadlines: Array<{ at: number; taint: string; why: string }> = [];
  const nowMs = now.getTime();
  for (const taint of taints) {
    const id = `${taint.key}:${taint.effect}`;
    const added = Date.parse(taint.timeAdded);
    if (taint.effect === 'NoExecute') {
      const used = tolerations.find((t) => tolerates(t, taint));
      if (!used) deadlines.push({ at: nowMs, taint: id, why: `taint ${id} is not tolerated` });
      else if (used.tolerationSeconds === undefined) continue;
      else if (used.tolerationSeconds <= 0)
        deadlines.push({ at: Math.min(added, nowMs), taint: id, why: `taint ${id} is tolerated for ${used.tolerationSeconds}s` });
      else deadlines.push({ at: added + used.tolerationSeconds * 1000, taint: id, why: `taint ${id} is tolerated for ${used.tolerationSeconds}s` });
    } else if (taint.effect === 'PreferNoExecute' && failoverCluster) {
      deadlines.push({
        at: added + failoverCluster.tolerationSeconds * 1000,
        taint: id,
        why: `failover.cluster leaves ${failoverCluster.tolerationSeconds}s after ${id}`,
      });
    }
  }
  if (deadlines.length === 0) {
    const hasPrefer = taints.some((t) => t.effect === 'PreferNoExecute');
    const hasNoExecute = taints.some((t) => t.effect === 'NoExecute');
    const why = hasNoExecute
      ? 'every NoExecute taint is tolerated without a time limit'
      : hasPrefer
        ? 'no failover.cluster: the binding stays on PreferNoExecute'
        : 'no NoExecute or PreferNoExecute taint';
    return { evict: false, why };
  }
  const first = deadlines.reduce((a, b) => (b.at < a.at ? b : a));
  return { evict: true, dueAt: new Date(first.at), why: first.why, taints: deadlines.map((d) => d.taint) };
}

// ---------------------------------------------------------------------------------------------
// The eviction rate's settings (docs/architecture.md, decision 6; fleet health itself: fleetHealth.ts)

export interface RateSettings {
  resourceEvictionRate: number;
  secondaryResourceEvictionRate: number;
  unhealthyClusterThreshold: number;
  largeClusterNumThreshold: number;
}

/** How far ahead of the tick a slot must lie for its queue message to reach the worker in time. */
export interface SlotLeads {
  /** A series that has run out starts this far ahead (delivery plus a margin for the pacer's own run). */
  freshMs: number;
  /** A running series may continue down to this far ahead: a message visible at once is received by then. */
  deliveryMs: number;
}

/**
 * The leads of a pass whose first messages need only `startMs` to reach their worker (its caller runs them
 * itself: no queue poll in between): a fresh series starts that far ahead, never further out than without
 * it (pure). A running series keeps its delivery lead: its later slots go with visibility delays and are
 * read by polling, and a message that reached the worker late would shorten the interval after it (the
 * rate, measured, would exceed its setting). Every slot stays at or after the stored next free slot, 1/rate
 * after the one before.
 */
export function directStartLeads(leads: SlotLeads, startMs: number): SlotLeads {
  return { freshMs: Math.min(leads.freshMs, startMs), deliveryMs: leads.deliveryMs };
}

/**
 * The earliest slot a tick may hand out (pure). While the series is running (its next free slot is not yet
 * past), a tick continues it at that slot as long as a message can still reach the worker by then, so a
 * late tick keeps the slots contiguous instead of restarting the series further out (the slots in between
 * were lost: a gap of one interval or more at the change of tick); a tick later still shifts the series by
 * the excess only. A series that has run out (the queue was idle, or the pacer stood still for longer than
 * it looks ahead) starts `freshMs` ahead.
 */
export function earliestSlot(nextFreeSlot: number, now: number, leads: SlotLeads): number {
  return nextFreeSlot > now ? now + leads.deliveryMs : now + leads.freshMs;
}

/**
 * How far ahead a tick hands out slots (pure): `baseMs`, or, while the series is running and the ticks come
 * further apart than that covers (slow runs on a busy host: the next tick is due a whole second after a run
 * ends), far enough that a next tick a second later still than this one finds the series' next slot in
 * reach; never more than `maxMs`, so a change of rate still takes effect within seconds.
 */
export function slotHorizon(
  nextFreeSlot: number,
  now: number,
  previousTickAt: number,
  limits: { baseMs: number; deliveryMs: number; tickMs: number; maxMs: number },
): number {
  const gap = nextFreeSlot > now ? now - previousTickAt : 0;
  return now + Math.min(limits.maxMs, Math.max(limits.baseMs, gap + limits.tickMs + limits.deliveryMs));
}

/**
 * Send slots at `rate` per second: each due item gets the next free slot at or after both its due time and
 * `earliest`, up to `horizon`. Returns the slots and where the next free slot starts. Rate 0 assigns nothing.
 */
export function assignSlots(
  dueTimes: readonly number[],
  nextFreeSlot: number,
  earliest: number,
  rate: number,
  horizon: number,
): { slots: number[]; nextFreeSlot: number } {
  const slots: number[] = [];
  if (rate <= 0) return { slots, nextFreeSlot };
  const interval = 1000 / rate;
  let cursor = Math.max(nextFreeSlot, earliest);
  for (const due of dueTimes) {
    const slot = Math.max(cursor, due);
    if (slot > horizon) break;
    slots.push(slot);
    cursor = slot + interval;
  }
  return { slots, nextFreeSlot: slots.length > 0 ? cursor : nextFreeSlot };
}
