import { FleetHealth, fleetHealth, isFaultyTaint } from '../../failover/evictionDecision';
import type { CandidateCluster } from '../../failover/precheck';
import type { PropagationCandidate } from '../../failover/propagation';
import type { PacerState } from '../../store/ports';
import type { ControlPlane } from '../ports';
import type { PolicyRecord } from '../records';
import { RecentCache } from './cache';

/**
 * Reads that many invocations share, each kept by this process for about a second: a burst of evictions
 * or reports then costs one listing, not one per item. A writer that changed the data forgets (or
 * replaces) its own copy; other processes see the change within the TTL.
 */
const SECOND = 1000;

const fleetCache = new RecentCache<CandidateCluster[]>(SECOND);
/** Every cluster's labels, location and taints (the pacer's fleet health, the pre-scheduling check, the scheduler). */
export function fleetClusters(plane: ControlPlane, maxAgeMs = SECOND): Promise<CandidateCluster[]> {
  return fleetCache.get(
    plane,
    async () =>
      (await plane.clusters.list()).map(({ value }) => ({
        name: value.name,
        labels: value.labels,
        provider: value.spec.provider,
        region: value.spec.region,
        zone: value.spec.zone,
        taints: value.taints.map((t) => ({ key: t.key, value: t.value, effect: t.effect })),
      })),
    { maxAgeMs },
  );
}

/** After this process wrote a cluster, its next placement and pre-check read the fleet again. */
export function forgetFleet(plane: ControlPlane): void {
  fleetCache.forget(plane);
}

/** Fleet health (design decision 6) from the fleet view, with the faulty clusters' names; updates the gauges. */
export async function currentFleetHealth(plane: ControlPlane, maxAgeMs?: number): Promise<FleetHealth & { faultyClusters: string[] }> {
  const clusters = await fleetClusters(plane, maxAgeMs);
  const faultyClusters = clusters.filter((c) => c.taints.some(isFaultyTaint)).map((c) => c.name);
  const health = fleetHealth(clusters.length, faultyClusters.length, plane.config.rates);
  plane.metrics.setFleet({ faulty: health.faulty, failureRatio: health.failureRatio, rate: health.rate });
  return { ...health, faultyClusters };
}

const taintPolicyCache = new RecentCache<PolicyRecord[]>(SECOND);
/**
 * The ClusterTaintPolicies. A policy change also queues a re-evaluation of every cluster, so a report
 * evaluated against a second-old list is corrected at once.
 */
export function loadTaintPolicies(plane: ControlPlane, maxAgeMs = SECOND): Promise<PolicyRecord[]> {
  return taintPolicyCache.get(plane, async () => (await plane.policies.list()).map((entry) => entry.value), { maxAgeMs });
}
export function forgetTaintPolicies(plane: ControlPlane): void {
  taintPolicyCache.forget(plane);
}

const propagationPolicyCache = new RecentCache<PropagationCandidate[]>(SECOND);
/** The PropagationPolicies and ClusterPropagationPolicies, as selection candidates. */
export function loadPropagationPolicies(plane: ControlPlane, maxAgeMs = SECOND): Promise<PropagationCandidate[]> {
  return propagationPolicyCache.get(
    plane,
    async () =>
      (await plane.propagationPolicies.list()).map(({ value }) => ({
        kind: value.kind,
        ...(value.namespace ? { namespace: value.namespace } : {}),
        name: value.name,
        spec: value.spec,
      })),
    { maxAgeMs },
  );
}
export function forgetPropagationPolicies(plane: ControlPlane): void {
  propagationPolicyCache.forget(plane);
}

const pacerStateCache = new RecentCache<PacerState>(SECOND);
/**
 * The pause switch and tier as this process last read them: the worker checks them before every eviction,
 * and a second-old answer still stops evictions within seconds.
 */
export function recentPacerState(plane: ControlPlane, maxAgeMs = SECOND): Promise<PacerState> {
  return pacerStateCache.get(plane, async () => (await plane.ledger.getPacerState()).state, { maxAgeMs });
}
/** After this process wrote the pacer row (the pause switch), its own checks see it at once. */
export function rememberPacerState(plane: ControlPlane, state: PacerState): void {
  pacerStateCache.set(plane, state);
}
