import type { ApplicationFailover, EvictionHistoryEntry } from '../api/resources';

/**
 * Application failover decisions (docs/architecture.md, decision 10), pure and clock-driven.
 *
 * Per (binding, cluster) the aggregated status item keeps when the workload's status was first collected
 * (`creationTimestamp`), whether it was ever Healthy there (`settled`) and when its current Unhealthy
 * stretch began (`unhealthySince`); the caller persists them with the binding, so a restart keeps every
 * deadline. Healthy ends the stretch; Unknown neither counts nor resets (it never evicts by itself, and
 * the stretch it interrupts goes on). A cluster is evicted once Unhealthy for tolerationSeconds (0 = the
 * first Unhealthy report), provided the preconditions hold: the status was first collected at least
 * delaySeconds ago, and, with healthyState: Healthy, the workload once settled there.
 */

export type WorkloadHealth = 'Healthy' | 'Unhealthy' | 'Unknown';

export interface WorkloadStatusItem {
  clusterName: string;
  applied?: boolean;
  health?: WorkloadHealth;
  /** When the control plane first collected this workload's status from the cluster. */
  creationTimestamp?: string;
  /** It has been Healthy there at least once. */
  settled?: boolean;
  /** Start of the current Unhealthy stretch. */
  unhealthySince?: string;
  /** Why a due failover is not happening (preconditions, gate, pause, nowhere to go). */
  failoverHeld?: string;
  /** The workload's own status last reported from the cluster (free-form): what statePreservation reads. */
  status?: Record<string, unknown>;
}

export interface ReportedStatus {
  clusterName: string;
  applied?: boolean;
  health: WorkloadHealth;
  status?: Record<string, unknown>;
}

/**
 * Folds a workload status report into the stored items: the control plane's own fields are kept from the
 * previous item, the stretch starts at the first Unhealthy report on a placed cluster. Clusters not in
 * the report keep their item. A report without `status` keeps the status last reported (a health-only
 * reporter does not erase what statePreservation would read); one with `status` replaces it.
 */
export function mergeWorkloadStatus(
  previous: readonly WorkloadStatusItem[],
  reported: readonly ReportedStatus[],
  placedOn: readonly string[],
  now: Date,
): WorkloadStatusItem[] {
  const byCluster = new Map(previous.map((item) => [item.clusterName, item]));
  for (const report of reported) {
    const before = byCluster.get(report.clusterName);
    const item: WorkloadStatusItem = {
      clusterName: report.clusterName,
      ...(report.applied !== undefined ? { applied: report.applied } : {}),
      health: report.health,
      creationTimestamp: before?.creationTimestamp ?? now.toISOString(),
      settled: (before?.settled ?? false) || report.health === 'Healthy',
    };
    const status = report.status ?? before?.status;
    if (status !== undefined) item.status = status;
    const placed = placedOn.includes(report.clusterName);
    const since =
      report.health === 'Unhealthy' ? (before?.unhealthySince ?? now.toISOString()) : report.health === 'Unknown' ? before?.unhealthySince : undefined;
    if (placed && since) item.unhealthySince = since;
    if (placed && item.unhealthySince && before?.failoverHeld) item.failoverHeld = before.failoverHeld;
    byCluster.set(report.clusterName, item);
  }
  return [...byCluster.values()];
}

export interface ApplicationAssessment {
  evict: Array<{ cluster: string; unhealthySince: string }>;
  /** Why an Unhealthy cluster past its toleration is not evicted (a precondition). */
  held: Array<{ cluster: string; why: string }>;
  /** The earliest future moment something may change: a toleration or a delay ending. */
  nextCheckAt?: Date;
}

/** The due evictions of one binding, from its stored status items. */
export function assessApplicationHealth(
  items: readonly WorkloadStatusItem[],
  placedOn: readonly string[],
  policy: ApplicationFailover,
  now: Date,
): ApplicationAssessment {
  const nowMs = now.getTime();
  const evict: ApplicationAssessment['evict'] = [];
  const held: ApplicationAssessment['held'] = [];
  const deadlines: number[] = [];
  const delaySeconds = policy.preConditions?.delaySeconds ?? 0;
  for (const item of items) {
    if (!placedOn.includes(item.clusterName) || !item.unhealthySince) continue;
    const due = Date.parse(item.unhealthySince) + policy.decisionConditions.tolerationSeconds * 1000;
    if (nowMs < due) {
      deadlines.push(due);
      continue;
    }
    // Unknown keeps the stretch running but never evicts by itself.
    if (item.health !== 'Unhealthy') continue;
    if (policy.preConditions?.healthyState === 'Healthy' && !item.settled) {
      held.push({ cluster: item.clusterName, why: 'the workload never became Healthy on this cluster (preConditions.healthyState: Healthy)' });
      continue;
    }
    const ready = Date.parse(item.creationTimestamp ?? item.unhealthySince) + delaySeconds * 1000;
    if (nowMs < ready) {
      held.push({ cluster: item.clusterName, why: `its status was first collected less than preConditions.delaySeconds (${delaySeconds}s) ago` });
      deadlines.push(ready);
      continue;
    }
    evict.push({ cluster: item.clusterName, unhealthySince: item.unhealthySince });
  }
  return { evict, held, ...(deadlines.length > 0 ? { nextCheckAt: new Date(Math.min(...deadlines)) } : {}) };
}

/** When a history entry stops blocking its cluster, or undefined for ever (blockPredecessorSeconds 0). */
export function blockedUntil(entry: EvictionHistoryEntry, blockPredecessorSeconds: number): Date | undefined {
  return blockPredecessorSeconds === 0 ? undefined : new Date(Date.parse(entry.creationTimestamp) + blockPredecessorSeconds * 1000);
}

/**
 * activeEvictionHistory: clusters this binding left for an application failure stay blocked for
 * blockPredecessorSeconds (0 = for ever). Returns the clusters still blocked, the entries to keep, and
 * when the next one expires.
 */
/** blockPredecessorSeconds when a binding has no application failover of its own (the field's default). */
export const DEFAULT_BLOCK_SECONDS = 600;

export function activeBlocks(
  history: readonly EvictionHistoryEntry[],
  blockPredecessorSeconds: number,
  now: Date,
): { blocked: string[]; keep: EvictionHistoryEntry[]; nextExpiry?: Date } {
  const keep = history.filter((entry) => {
    const until = blockedUntil(entry, blockPredecessorSeconds);
    return until === undefined || until.getTime() > now.getTime();
  });
  const expiries = keep.map((entry) => blockedUntil(entry, blockPredecessorSeconds)?.getTime()).filter((t): t is number => t !== undefined);
  return {
    blocked: [...new Set(keep.map((entry) => entry.clusterName))].sort(),
    keep,
    ...(expiries.length > 0 ? { nextExpiry: new Date(Math.min(...expiries)) } : {}),
  };
}
