import type { EvictionView, FleetAnswer, FleetHistory, QueueSummary, QueueSummaryEntry, ServiceHealth, SwitchAnswer } from '../api/contract/views';
import { RecentCache } from '../cache';
import type { EvictionState } from '../failover/bindingModel';
import { bypassesGate, isCordonTaint } from '../failover/drain';
import { decidedInEpisode, earliestTime, isFaultyTaint } from '../failover/evictionDecision';
import { evictionRowId } from '../failover/evictionRow';
import { forecastSlots } from '../failover/slotForecast';
import { applicationFailoverResync } from './applicationFailover';
import { karmadaConnection } from './karmadaSync';
import { DELIVERY_LEAD_MS, MIN_SLOT_LEAD_MS, setPaused } from './pacer';
import type { ControlPlane } from './ports';
import { currentFleetHealth } from './state/reads';
import { evictionView, fleetView } from './views';

/** The app's own health: degraded in Karmada mode when the Karmada API server cannot be used, with why. */
export async function serviceHealth(plane: ControlPlane): Promise<ServiceHealth> {
  if (!plane.karmada) return { status: 'ok', mode: 'standalone' };
  const connection = await karmadaConnection(plane);
  if (!connection) return { status: 'degraded', mode: 'karmada', reason: 'not synchronised with the Karmada API server yet' };
  return { status: connection.state, mode: 'karmada', ...(connection.reason ? { reason: connection.reason } : {}), since: connection.since };
}

/** GET /api/fleet: fleet health, the eviction tier and rate, the switches, and the ledger's waiting rows. */
export async function fleetStatus(plane: ControlPlane): Promise<FleetAnswer> {
  const service = await serviceHealth(plane);
  // Karmada's API server failing answers 503 with its reason (shared/http/respond.ts), as every read route does.
  const [health, { state }, waiting] = await Promise.all([
    currentFleetHealth(plane, 0),
    plane.ledger.getPacerState(),
    plane.ledger.scanEvictions({ states: ['pending', 'scheduled'] }),
  ]);
  const pending = waiting.filter((row) => row.record.state === 'pending').length;
  return {
    ...fleetView(health, { failoverEnabled: plane.config.failoverEnabled, paused: state.paused }, { pending, scheduled: waiting.length - pending }),
    ...service,
  };
}

/** GET /api/evictions: the ledger, by due time then cluster. */
export async function listEvictions(plane: ControlPlane, filter: { cluster?: string; state?: EvictionState }): Promise<EvictionView[]> {
  const rows = await plane.ledger.scanEvictions(filter);
  return rows.map(({ record }) => evictionView(record)).sort((a, b) => (a.dueAt < b.dueAt ? -1 : a.dueAt > b.dueAt ? 1 : a.cluster.localeCompare(b.cluster)));
}

/** POST /api/failover/pause | resume. A resume also lets the application failovers the pause held go now. */
export async function switchEvictions(plane: ControlPlane, action: 'pause' | 'resume', actor?: string): Promise<SwitchAnswer> {
  await setPaused(plane, action === 'pause', actor);
  if (action === 'resume') await applicationFailoverResync(plane);
  return { paused: action === 'pause', failoverEnabled: plane.config.failoverEnabled };
}

export type HeldBy = 'gate' | 'paused' | 'halted' | null;

/**
 * Why nothing leaves now. With the gate off, a drain's rows still go (they bypass the gate), so a fleet
 * with a drain under way is not reported as held by the gate.
 */
const heldBy = (failoverEnabled: boolean, paused: boolean, rate: number, draining: boolean): HeldBy =>
  !failoverEnabled && !draining ? 'gate' : paused ? 'paused' : rate <= 0 ? 'halted' : null;

export type { QueueSummaryEntry } from '../api/contract/views';

/**
 * GET /api/evictions/summary: the eviction queue per cluster that is faulty, drained, or has rows waiting:
 * counts by state for its current episode, why rows are blocked, and when its last eviction would run at
 * the current rate (the pacer's order and slots, forecast by failover/slotForecast.ts).
 */
export async function evictionQueueSummary(plane: ControlPlane): Promise<QueueSummary> {
  const now = plane.clock.now();
  const [health, { state: pacer }, active] = await Promise.all([
    currentFleetHealth(plane, 0),
    plane.ledger.getPacerState(),
    plane.ledger.scanEvictions({ states: ['pending', 'scheduled', 'blocked'] }),
  ]);
  const names = [...new Set([...health.faultyClusters, ...pacer.draining, ...active.map((row) => row.record.cluster)])].sort();
  const clusters = await Promise.all(
    names.map(async (name) => ({ name, cluster: await plane.clusters.get(name), rows: await plane.ledger.listEvictions(name) })),
  );
  const held = heldBy(plane.config.failoverEnabled, pacer.paused, health.rate, pacer.draining.length > 0);
  const slots = held
    ? new Map<string, number>()
    : forecastSlots(
        active
          .filter(({ record }) => record.state !== 'blocked' && (plane.config.failoverEnabled || bypassesGate(record)))
          .map(({ record }) => ({
            id: evictionRowId(record),
            cluster: record.cluster,
            bindingKey: record.bindingKey,
            dueAt: Date.parse(record.dueAt),
            ...(record.state === 'scheduled' && record.scheduledFor ? { scheduledFor: Date.parse(record.scheduledFor) } : {}),
          })),
        Date.parse(pacer.nextSlotAt),
        now.getTime() + MIN_SLOT_LEAD_MS,
        health.rate,
        { now: now.getTime(), deliveryLeadMs: DELIVERY_LEAD_MS },
      );
  const entries: QueueSummaryEntry[] = clusters.map(({ name, cluster, rows }) => {
    const taints = cluster?.value.taints ?? [];
    const since = earliestTime(taints.filter((t) => isFaultyTaint(t) || isCordonTaint(t)).map((t) => t.timeAdded)) ?? null;
    const current = rows.filter(
      ({ record }) => ['pending', 'scheduled', 'blocked'].includes(record.state) || since === null || decidedInEpisode(record.decidedAt, since),
    );
    const count = (state: EvictionState) => current.filter(({ record }) => record.state === state).length;
    const reasons = new Map<string, number>();
    for (const { record } of current)
      if (record.state === 'blocked') reasons.set(record.message ?? 'blocked', (reasons.get(record.message ?? 'blocked') ?? 0) + 1);
    const etas = current.map(({ record }) => slots.get(evictionRowId(record))).filter((t): t is number => t !== undefined);
    return {
      cluster: name,
      faulty: taints.some(isFaultyTaint),
      draining: pacer.draining.includes(name) && taints.some(isCordonTaint),
      since,
      pending: count('pending'),
      scheduled: count('scheduled'),
      blocked: count('blocked'),
      done: count('done'),
      abandoned: count('abandoned'),
      failed: count('failed'),
      blockedReasons: [...reasons].map(([reason, n]) => ({ reason, count: n })).sort((a, b) => b.count - a.count),
      lastEta: etas.length > 0 ? new Date(Math.max(...etas)).toISOString() : null,
    };
  });
  return {
    generatedAt: now.toISOString(),
    tier: health.tier,
    rate: health.rate,
    paused: pacer.paused,
    failoverEnabled: plane.config.failoverEnabled,
    heldBy: held,
    clusters: entries,
  };
}

const HISTORY_BUCKET_SECONDS = 10;
const historyCache = new RecentCache<{ done: number[]; tiers: Array<{ at: number; from: string; to: string }>; tierNow: string }>('fleetHistory', 5000);

/**
 * GET /api/fleet/history?minutes=: evictions per second (from the ledger's done rows) and the eviction tier
 * (from the RateTierChanged events) over the last `minutes`, in 10 s buckets. Kept by this process for 5 s:
 * the console polls it.
 */
export async function fleetHistory(plane: ControlPlane, minutes: number): Promise<FleetHistory> {
  const now = plane.clock.now().getTime();
  const from = now - minutes * 60_000;
  const { done, tiers, tierNow } = await historyCache.get(plane, async () => {
    const [rows, events, { state }] = await Promise.all([
      plane.ledger.scanEvictions({ state: 'done' }),
      plane.events.list({ kind: 'Failover', name: 'evictions', since: new Date(now - 24 * 3600_000).toISOString(), limit: 10_000 }),
      plane.ledger.getPacerState(),
    ]);
    return {
      done: rows.map(({ record }) => Date.parse(record.executedAt ?? record.updatedAt)).filter((t) => t >= now - 24 * 3600_000),
      tiers: events
        .filter((e) => e.reason === 'RateTierChanged')
        .map((e) => ({ at: Date.parse(e.time), from: String(e.details?.from ?? ''), to: String(e.details?.to ?? '') })),
      tierNow: state.tier,
    };
  });
  const buckets = Math.ceil((now - from) / 1000 / HISTORY_BUCKET_SECONDS);
  const start = now - buckets * HISTORY_BUCKET_SECONDS * 1000;
  const counts = new Array<number>(buckets).fill(0);
  for (const t of done) {
    const i = Math.floor((t - start) / 1000 / HISTORY_BUCKET_SECONDS);
    if (i >= 0 && i < buckets) counts[i]++;
  }
  // The tier at the window's start: the `from` of the first change after it, else the tier now.
  const firstAfter = tiers.find((t) => t.at > start);
  let tier = firstAfter?.from || (tiers.filter((t) => t.at <= start).pop()?.to ?? tierNow);
  const points = counts.map((count, i) => {
    const end = start + (i + 1) * HISTORY_BUCKET_SECONDS * 1000;
    for (const change of tiers) if (change.at > end - HISTORY_BUCKET_SECONDS * 1000 && change.at <= end) tier = change.to;
    return { at: new Date(end).toISOString(), evictionsPerSecond: count / HISTORY_BUCKET_SECONDS, tier };
  });
  return { from: new Date(start).toISOString(), to: new Date(now).toISOString(), bucketSeconds: HISTORY_BUCKET_SECONDS, points };
}
