import type { WhatIfAnswer } from '../api/contract/views';
import { badRequest } from '../api/errors';
import type { WhatIfRequest } from '../api/resources';
import { mapConcurrent } from '../concurrency';
import { ACTIVE_STATES, bindingKey, EvictionState } from '../failover/bindingModel';
import { evictionRowId } from '../failover/evictionRow';
import { whatIf, WhatIfBindingSpec } from '../failover/whatIf';
import { clusterFacts, taintPolicy } from '../store/records';
import { DELIVERY_LEAD_MS, MIN_SLOT_LEAD_MS } from './pacer';
import type { ControlPlane } from './ports';
import { placementCounts, readPlacementCounts } from './scheduler';
import { listClusterPlacements } from './state/bindingWrites';
import { loadTaintPolicies } from './state/reads';

/** Bindings read at once while gathering what a what-if needs. */
const READ_CONCURRENCY = 32;

/**
 * POST /api/whatif: gathers what the decisions need (every cluster, the taint policies, the failing
 * clusters' placement and ledger rows, their bindings, the rows already waiting and the pacer's row) with
 * reads only, and asks the pure simulation (failover/whatIf.ts). Writes nothing.
 */
export async function whatIfFailure(plane: ControlPlane, request: WhatIfRequest): Promise<WhatIfAnswer> {
  const [clusters, policies, pacer, waiting] = await Promise.all([
    plane.clusters.list(),
    loadTaintPolicies(plane, 0),
    plane.ledger.getPacerState(),
    plane.ledger.scanEvictions({ states: ['pending', 'scheduled'] }),
  ]);
  const known = new Set(clusters.map(({ value }) => value.name));
  const unknown = request.failClusters.flatMap((name, i) => (known.has(name) ? [] : [{ path: `failClusters[${i}]`, message: `no cluster named "${name}"` }]));
  if (unknown.length > 0) throw badRequest(unknown, 'unknown clusters; nothing was simulated');
  const failing = [...new Set(request.failClusters)];
  const rows = await Promise.all(failing.map((name) => listClusterPlacements(plane, name)));
  const placements = rows.flatMap((r) => r.placements);
  const decided = new Map<string, { state: EvictionState; dueAt: string }>();
  for (const { record } of rows.flatMap((r) => r.evictions)) {
    if (ACTIVE_STATES.includes(record.state)) decided.set(evictionRowId(record), { state: record.state, dueAt: record.dueAt });
  }
  const keys = [...new Set(placements.map(bindingKey))];
  const bindings = new Map<string, WhatIfBindingSpec>();
  await mapConcurrent(keys, READ_CONCURRENCY, async (key) => {
    const binding = await plane.bindings.get(key);
    if (binding) bindings.set(key, binding.value.spec);
  });
  // The scheduler's spread rule compares placements per cluster (its own counts, from the placement index).
  const names = clusters.map(({ value }) => value.name);
  await readPlacementCounts(plane, names);
  const now = plane.clock.now();
  const result = whatIf({
    now,
    failClusters: failing,
    condition: request.condition ?? { type: 'Ready', status: 'False', reason: 'WhatIf' },
    clusters: clusters.map(({ value }) => clusterFacts(value)),
    policies: policies.map(taintPolicy),
    placements,
    bindings,
    decided,
    waiting: waiting.map(({ record }) => ({
      id: evictionRowId(record),
      cluster: record.cluster,
      bindingKey: record.bindingKey,
      dueAt: Date.parse(record.dueAt),
      ...(record.state === 'scheduled' && record.scheduledFor ? { scheduledFor: Date.parse(record.scheduledFor) } : {}),
    })),
    rates: plane.config.rates,
    placementCounts: placementCounts(plane, names),
    switches: {
      failoverEnabled: plane.config.failoverEnabled,
      paused: pacer.state.paused,
      nextSlotAt: Date.parse(pacer.state.nextSlotAt),
      earliestLeadMs: MIN_SLOT_LEAD_MS,
      deliveryLeadMs: DELIVERY_LEAD_MS,
    },
  });
  return { ...result, mode: plane.karmada ? 'karmada' : 'standalone' };
}
