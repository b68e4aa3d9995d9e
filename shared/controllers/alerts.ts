import type { AlertAnswer } from '../api/contract/views';
import { ApiError } from '../api/errors';
import type { AlertBatch } from '../failover/alertMapping';
import { reportClusterStatus } from './clusters';
import type { ControlPlane } from './ports';

/** The annotation (resource IDs hold "/", which label values may not) that maps an Azure resource to a cluster. */
export const AZURE_RESOURCE_ANNOTATION = 'failover.io/azure-resource-id';

/** What a webhook answers: the contract's shape. */
export type AlertOutcome = AlertAnswer;

/**
 * Applies a monitoring notification: one write per cluster, all of its conditions at once. Clusters that
 * are not registered are reported back, never created (a typo in a label must not invent a cluster).
 * The receipt time is the observation time: notifications repeat old alerts, and their start times would
 * otherwise be refused as older than what a native reporter sent since.
 */
export async function applyAlertBatch(plane: ControlPlane, batch: AlertBatch): Promise<AlertOutcome> {
  const outcome: AlertOutcome = { applied: [], unknownClusters: [], unmatched: batch.unmatched };
  for (const [cluster, conditions] of batch.byCluster) {
    try {
      const result = await reportClusterStatus(plane, cluster, { conditions }, undefined, { registerUnknown: false });
      outcome.applied.push({ cluster, conditions: conditions.map((c) => c.type), transitioned: result.transitioned });
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) outcome.unknownClusters.push(cluster);
      else throw error;
    }
  }
  if (outcome.unknownClusters.length > 0 || outcome.unmatched.length > 0) {
    plane.log.warn('alerts not applied', { unknownClusters: outcome.unknownClusters, unmatched: outcome.unmatched.length });
  }
  return outcome;
}

/**
 * Which cluster an Azure resource ID (an AKS cluster, say) is: AZURE_MONITOR_CLUSTER_MAP first, then the
 * clusters' `failover.io/azure-resource-id` annotation; both compared case-insensitively, as Azure does.
 */
export async function azureResourceClusters(plane: ControlPlane): Promise<(resourceId: string) => string | undefined> {
  const byAnnotation = new Map<string, string>();
  for (const { value } of await plane.clusters.list()) {
    const id = value.annotations[AZURE_RESOURCE_ANNOTATION];
    if (id) byAnnotation.set(id.toLowerCase(), value.name);
  }
  const configured = plane.config.alerts.azureMonitorClusterMap;
  return (resourceId) => {
    const id = resourceId.toLowerCase();
    // Own entries only: an id such as "constructor" must not find Object.prototype's.
    return (Object.hasOwn(configured, id) ? configured[id] : undefined) ?? byAnnotation.get(id);
  };
}
