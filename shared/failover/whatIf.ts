import type { BindingSpec } from '../api/resources';
import { activeBlocks, DEFAULT_BLOCK_SECONDS } from './applicationFailover';
import { bindingKey, EvictionRecord, EvictionState, parseBindingKey, PlacementFacts } from './bindingModel';
import { mergeConditions, ReportedCondition } from './conditions';
import { decideEviction, isFaultyTaint, RateSettings } from './evictionDecision';
import { evictionRowId } from './evictionRow';
import { FleetHealth, fleetHealth, isUnhealthyCluster } from './fleetHealth';
import type { AnyTaintPolicy, ClusterFacts, ClusterTaint } from './model';
import { evictFromPlacement } from './placementEviction';
import { CandidateCluster, candidateCluster, preScheduleCheck } from './precheck';
import { schedule, TargetCluster } from './scheduler';
import { forecastSlots, WaitingRow } from './slotForecast';
import { evaluateTaintPolicies } from './taintPolicy';

/**
 * "What would happen if these clusters failed now?", pure and from the same decisions the controllers run:
 * the taint policies (with their windows) evaluated at each deadline as the scheduled evaluations would,
 * the taint manager's plan at each change of faulty taints (frozen decisions: a binding decided once is not
 * decided again), the fleet tier and rate once the taints have landed, the pacer's slots, the worker's
 * pre-scheduling check and the scheduler's placement, applied in slot order so that a binding leaving two
 * failed clusters sees its first eviction when the second is decided. Nothing here reads or writes storage.
 *
 * Assumptions, as docs/concepts.md documents them: the given condition holds from now on and nothing else changes
 * (no other report, no apply); a placement uses the fleet as it is once every simulated taint has landed.
 */

export interface WhatIfBindingSpec {
  replicas?: BindingSpec['replicas'];
  placement?: BindingSpec['placement'];
  clusters?: BindingSpec['clusters'];
  gracefulEvictionTasks?: BindingSpec['gracefulEvictionTasks'];
  activeEvictionHistory?: BindingSpec['activeEvictionHistory'];
  failover?: BindingSpec['failover'];
}

export interface WhatIfInput {
  now: Date;
  failClusters: readonly string[];
  condition: ReportedCondition;
  /** Every cluster, as stored. */
  clusters: readonly ClusterFacts[];
  policies: readonly AnyTaintPolicy[];
  /** The placement rows of the failing clusters. */
  placements: readonly PlacementFacts[];
  /** The bindings placed on the failing clusters, by binding key. */
  bindings: ReadonlyMap<string, WhatIfBindingSpec>;
  /** Active ledger rows of the failing clusters, by `cluster|bindingKey`: decisions already frozen. */
  decided: ReadonlyMap<string, { state: EvictionState; dueAt: string }>;
  /** The fleet's rows already waiting (pending or scheduled): they go first. */
  waiting: readonly WaitingRow[];
  rates: RateSettings;
  /** `deliveryLeadMs`: how close to now a running series of slots continues (the pacer's SLOT_LEADS); absent: `earliestLeadMs`. */
  switches: { failoverEnabled: boolean; paused: boolean; nextSlotAt: number; earliestLeadMs: number; deliveryLeadMs?: number };
  /** How far ahead the taint windows are followed (default 7 days). */
  horizonMs?: number;
  /** Bindings placed on each cluster now (the placement index): the scheduler's spread rule (absent: name order). */
  placementCounts?: ReadonlyMap<string, number>;
}

type Ref = ReturnType<typeof parseBindingKey>;

export interface WhatIfResult {
  at: string;
  condition: ReportedCondition;
  taints: Array<{ cluster: string; key: string; value?: string; effect: ClusterTaint['effect']; at: string; policy: string }>;
  untainted: Array<{ cluster: string; why: string }>;
  fleet: FleetHealth;
  evictions: Array<{
    binding: Ref;
    cluster: string;
    dueAt: string;
    slot: string | null;
    why: string;
    purgeMode: string;
    targets: TargetCluster[];
    noFit?: string;
  }>;
  blocked: Array<{ binding: Ref; cluster: string; dueAt: string; slot: string | null; reason: string }>;
  tolerated: Array<{ binding: Ref; cluster: string; why: string }>;
  alreadyDecided: Array<{ binding: Ref; cluster: string; state: EvictionState; dueAt: string }>;
  eta: string | null;
  heldBy: 'gate' | 'paused' | 'halted' | null;
  counts: { evictions: number; blocked: number; tolerated: number; alreadyDecided: number };
}

const DEFAULT_HORIZON_MS = 7 * 24 * 3600 * 1000;
const MAX_EVALUATIONS = 200;

const faultyKey = (taints: readonly ClusterTaint[]) =>
  taints
    .filter(isFaultyTaint)
    .map((t) => `${t.key}:${t.effect}@${t.timeAdded}`)
    .sort()
    .join(',');

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export function whatIf(input: WhatIfInput): WhatIfResult {
  const nowMs = input.now.getTime();
  const horizon = nowMs + (input.horizonMs ?? DEFAULT_HORIZON_MS);
  const facts = new Map(input.clusters.map((c) => [c.name, structuredClone(c)]));
  const taints: WhatIfResult['taints'] = [];
  const untainted: WhatIfResult['untainted'] = [];
  /** Per failing cluster, each change of its faulty taints: when the taint manager would plan. */
  const timelines = new Map<string, Array<{ at: number; faulty: ClusterTaint[] }>>();

  for (const name of input.failClusters) {
    const cluster = facts.get(name);
    if (!cluster) continue;
    cluster.conditions = mergeConditions(cluster.conditions, [input.condition], input.now.toISOString()).conditions;
    const timeline: Array<{ at: number; faulty: ClusterTaint[] }> = [];
    if (cluster.taints.some(isFaultyTaint)) timeline.push({ at: nowMs, faulty: cluster.taints.filter(isFaultyTaint) });
    let at = nowMs;
    for (let step = 0; step < MAX_EVALUATIONS; step++) {
      const before = faultyKey(cluster.taints);
      const evaluation = evaluateTaintPolicies(cluster, input.policies, new Date(at));
      cluster.taints = evaluation.taints;
      cluster.policyWindows = evaluation.policyWindows;
      for (const change of evaluation.changes) {
        if (change.action !== 'added') continue;
        taints.push({ cluster: name, ...change.taint, at: new Date(at).toISOString(), policy: change.policy });
      }
      if (faultyKey(cluster.taints) !== before) timeline.push({ at, faulty: cluster.taints.filter(isFaultyTaint) });
      const next = evaluation.nextDeadline?.getTime();
      if (next === undefined || next > horizon || next <= at) break;
      at = next;
    }
    timelines.set(name, timeline);
    if (!cluster.taints.some(isFaultyTaint)) {
      // NoSchedule and PreferNoSchedule taints only keep new placements off (or away): they evict nothing.
      const steering = taints
        .filter((t) => t.cluster === name && cluster.taints.some((held) => held.key === t.key && held.effect === t.effect))
        .map((t) => `${t.key}:${t.effect}`);
      untainted.push({
        cluster: name,
        why:
          `no ClusterTaintPolicy puts a NoExecute or PreferNoExecute taint on it for ${input.condition.type}=${input.condition.status}` +
          (steering.length > 0 ? ` (it gets only taints that steer new placements and evict nothing: ${steering.join(', ')})` : ''),
      });
    }
  }

  const fleet: CandidateCluster[] = [...facts.values()].map(candidateCluster);
  const health = fleetHealth(fleet.length, [...facts.values()].filter((c) => isUnhealthyCluster(c)).length, input.rates);

  // The taint manager: at each change of a cluster's faulty taints, every binding without a frozen decision.
  const tolerated: WhatIfResult['tolerated'] = [];
  const alreadyDecided: WhatIfResult['alreadyDecided'] = [];
  const planned: Array<{ key: string; cluster: string; dueAt: number; why: string; purgeMode: EvictionRecord['purgeMode'] }> = [];
  for (const placement of input.placements) {
    const timeline = timelines.get(placement.cluster) ?? [];
    const key = bindingKey(placement);
    const ref = parseBindingKey(key);
    const frozen = input.decided.get(evictionRowId({ cluster: placement.cluster, bindingKey: key }));
    if (frozen) {
      alreadyDecided.push({ binding: ref, cluster: placement.cluster, state: frozen.state, dueAt: frozen.dueAt });
      continue;
    }
    if (timeline.length === 0) continue;
    let why = '';
    let decided = false;
    for (const point of timeline) {
      const verdict = decideEviction(point.faulty, placement.tolerations, placement.failoverCluster, new Date(point.at));
      why = verdict.why;
      if (!verdict.evict) continue;
      planned.push({
        key,
        cluster: placement.cluster,
        dueAt: verdict.dueAt.getTime(),
        why: verdict.why,
        purgeMode: placement.failoverCluster?.purgeMode ?? 'Gracefully',
      });
      decided = true;
      break;
    }
    if (!decided) tolerated.push({ binding: ref, cluster: placement.cluster, why });
  }

  // The pacer's slots, after the rows already waiting.
  const heldBy = !input.switches.failoverEnabled ? 'gate' : input.switches.paused ? 'paused' : health.rate <= 0 ? 'halted' : null;
  const id = (cluster: string, key: string) => evictionRowId({ cluster, bindingKey: key });
  const slots = heldBy
    ? new Map<string, number>()
    : forecastSlots(
        [...input.waiting, ...planned.map((p) => ({ id: id(p.cluster, p.key), cluster: p.cluster, bindingKey: p.key, dueAt: p.dueAt }))],
        input.switches.nextSlotAt,
        nowMs + input.switches.earliestLeadMs,
        health.rate,
        input.switches.deliveryLeadMs !== undefined ? { now: nowMs, deliveryLeadMs: input.switches.deliveryLeadMs } : undefined,
      );

  // The worker at each slot, in slot order: the pre-scheduling check, the eviction, then the placement.
  const working = new Map<string, WhatIfBindingSpec>();
  const specOf = (key: string) => {
    let spec = working.get(key);
    if (!spec) working.set(key, (spec = structuredClone(input.bindings.get(key) ?? {})));
    return spec;
  };
  const order = planned
    .map((p) => ({ ...p, slot: slots.get(id(p.cluster, p.key)) }))
    .sort((a, b) => (a.slot ?? a.dueAt) - (b.slot ?? b.dueAt) || a.dueAt - b.dueAt || compare(a.cluster, b.cluster) || compare(a.key, b.key));
  const evictions: WhatIfResult['evictions'] = [];
  const blocked: WhatIfResult['blocked'] = [];
  // The placements the simulated evictions make count for the ones after them, as in the scheduler.
  const placementCounts = new Map(input.placementCounts ?? []);
  for (const row of order) {
    const spec = specOf(row.key);
    const at = new Date(row.slot ?? row.dueAt);
    const base = {
      binding: parseBindingKey(row.key),
      cluster: row.cluster,
      dueAt: new Date(row.dueAt).toISOString(),
      slot: row.slot === undefined ? null : at.toISOString(),
    };
    const placedOn = (spec.clusters ?? []).map((c) => c.name);
    const check = preScheduleCheck({
      placement: spec.placement,
      placedOn,
      evictFrom: row.cluster,
      clusters: fleet,
      gracefulEvictionTasks: spec.gracefulEvictionTasks,
    });
    if (!check.ok) {
      blocked.push({ ...base, reason: check.reason });
      continue;
    }
    const eviction = evictFromPlacement(
      { clusters: spec.clusters, gracefulEvictionTasks: spec.gracefulEvictionTasks, replicas: spec.replicas },
      row.cluster,
      { reason: 'TaintUntolerated', producer: 'TaintManager', purgeMode: row.purgeMode },
      at,
    );
    const history = activeBlocks(spec.activeEvictionHistory ?? [], spec.failover?.application?.blockPredecessorSeconds ?? DEFAULT_BLOCK_SECONDS, at);
    const placement = schedule({
      replicas: spec.replicas ?? 0,
      placement: spec.placement,
      current: eviction.clusters,
      clusters: fleet,
      blocked: history.blocked,
      gracefulEvictionTasks: eviction.gracefulEvictionTasks,
      placementCounts,
    });
    const after = placement.clusters.map((c) => c.name);
    for (const name of after.filter((n) => !placedOn.includes(n))) placementCounts.set(name, (placementCounts.get(name) ?? 0) + 1);
    for (const name of placedOn.filter((n) => !after.includes(n))) placementCounts.set(name, Math.max(0, (placementCounts.get(name) ?? 0) - 1));
    spec.clusters = placement.clusters;
    spec.gracefulEvictionTasks = eviction.gracefulEvictionTasks;
    evictions.push({ ...base, why: row.why, purgeMode: row.purgeMode, targets: placement.clusters, ...(placement.ok ? {} : { noFit: placement.message }) });
  }

  // The ETA is the last eviction that will run: a blocked row takes its slot but moves nothing.
  const planSlots = evictions.map((e) => (e.slot === null ? undefined : Date.parse(e.slot))).filter((slot): slot is number => slot !== undefined);
  return {
    at: input.now.toISOString(),
    condition: input.condition,
    taints,
    untainted,
    fleet: health,
    evictions,
    blocked,
    tolerated,
    alreadyDecided,
    eta: planSlots.length > 0 ? new Date(Math.max(...planSlots)).toISOString() : null,
    heldBy,
    counts: { evictions: evictions.length, blocked: blocked.length, tolerated: tolerated.length, alreadyDecided: alreadyDecided.length },
  };
}
