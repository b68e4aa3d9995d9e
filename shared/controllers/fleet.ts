import type { CandidateCluster } from '../failover/precheck';
import { fleetHealth, FleetHealth, isFaultyTaint } from '../failover/evictionDecision';
import type { ControlPlane } from './deps';

/**
 * A short-lived per-process view of every cluster (labels, taints), shared by the pacer and the eviction
 * worker's pre-scheduling check so that a burst of evictions costs one listing, not one per eviction.
 */
const FLEET_TTL_MS = 1000;
const cache = new WeakMap<ControlPlane, { at: number; clusters: CandidateCluster[] }>();

export async function fleetClusters(plane: ControlPlane, maxAgeMs = FLEET_TTL_MS): Promise<CandidateCluster[]> {
  const now = Date.now();
  const hit = cache.get(plane);
  if (hit && now - hit.at < maxAgeMs) return hit.clusters;
  const clusters = (await plane.clusters.list()).map(({ value }) => ({
    name: value.name,
    labels: value.labels,
    provider: value.spec.provider,
    region: value.spec.region,
    zone: value.spec.zone,
    taints: value.taints.map((t) => ({ key: t.key, value: t.value, effect: t.effect })),
  }));
  cache.set(plane, { at: now, clusters });
  return clusters;
}

export async function currentFleetHealth(plane: ControlPlane, maxAgeMs?: number): Promise<FleetHealth & { faultyClusters: string[] }> {
  const clusters = await fleetClusters(plane, maxAgeMs);
  const faultyClusters = clusters.filter((c) => c.taints.some(isFaultyTaint)).map((c) => c.name);
  const health = fleetHealth(clusters.length, faultyClusters.length, plane.config.rates);
  plane.metrics.setFleet({ faulty: health.faulty, failureRatio: health.failureRatio, rate: health.rate });
  return { ...health, faultyClusters };
}
