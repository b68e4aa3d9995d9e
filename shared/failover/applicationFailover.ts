/**
 * Application failover decisions (seed 003, design decision 10), pure and clock-driven. Not wired to the
 * API yet: the next step adds `failover.application` to bindings and a function around these.
 *
 * Per (binding, cluster) the first Unhealthy time is kept (persisted by the caller): Healthy resets it,
 * Unknown neither counts nor resets. A cluster is evicted once Unhealthy for tolerationSeconds (0 = the
 * first Unhealthy report), provided the preconditions hold: the status was first collected at least
 * delaySeconds ago, and, with healthyState: Healthy, the workload once settled (was Healthy) there.
 */

export interface ApplicationFailoverPolicy {
  tolerationSeconds: number;
  delaySeconds?: number;
  requireSettled?: boolean;
}

export interface ClusterTrack {
  /** When the workload's status was first collected from this cluster. */
  firstCollectedAt: string;
  /** It has been Healthy there at least once. */
  settled: boolean;
  /** Start of the current Unhealthy stretch. */
  unhealthySince?: string;
}

export interface HealthObservation {
  clusterName: string;
  health: 'Healthy' | 'Unhealthy' | 'Unknown';
}

export interface ApplicationAssessment {
  tracks: Record<string, ClusterTrack>;
  evict: Array<{ cluster: string; unhealthySince: string }>;
  /** Why an Unhealthy cluster is not evicted although its toleration has passed. */
  held: Array<{ cluster: string; why: string }>;
  nextCheckAt?: Date;
}

export function assessApplicationHealth(
  previous: Readonly<Record<string, ClusterTrack>>,
  observations: readonly HealthObservation[],
  placedOn: readonly string[],
  policy: ApplicationFailoverPolicy,
  now: Date,
): ApplicationAssessment {
  const nowMs = now.getTime();
  const tracks: Record<string, ClusterTrack> = {};
  const evict: ApplicationAssessment['evict'] = [];
  const held: ApplicationAssessment['held'] = [];
  const deadlines: number[] = [];
  for (const observation of observations) {
    if (!placedOn.includes(observation.clusterName)) continue;
    const before = previous[observation.clusterName];
    const track: ClusterTrack = before ? { ...before } : { firstCollectedAt: now.toISOString(), settled: false };
    if (observation.health === 'Healthy') {
      track.settled = true;
      delete track.unhealthySince;
    } else if (observation.health === 'Unhealthy') {
      track.unhealthySince ??= now.toISOString();
    }
    tracks[observation.clusterName] = track;
    // Unknown keeps the stretch running but never triggers an eviction by itself.
    if (observation.health !== 'Unhealthy' || !track.unhealthySince) continue;
    const due = Date.parse(track.unhealthySince) + policy.tolerationSeconds * 1000;
    if (nowMs < due) {
      deadlines.push(due);
      continue;
    }
    if (policy.requireSettled && !track.settled) {
      held.push({ cluster: observation.clusterName, why: 'the workload never became Healthy on this cluster (healthyState: Healthy)' });
      continue;
    }
    const ready = Date.parse(track.firstCollectedAt) + (policy.delaySeconds ?? 0) * 1000;
    if (nowMs < ready) {
      held.push({ cluster: observation.clusterName, why: `its status was first collected less than ${policy.delaySeconds}s ago` });
      deadlines.push(ready);
      continue;
    }
    evict.push({ cluster: observation.clusterName, unhealthySince: track.unhealthySince });
  }
  // Clusters no longer reported keep their track only while still placed.
  for (const [cluster, track] of Object.entries(previous)) if (!(cluster in tracks) && placedOn.includes(cluster)) tracks[cluster] = track;
  return { tracks, evict, held, ...(deadlines.length > 0 ? { nextCheckAt: new Date(Math.min(...deadlines)) } : {}) };
}

export interface HistoryEntry {
  clusterName: string;
  creationTimestamp: string;
}

/**
 * activeEvictionHistory: clusters this binding left for an application failure stay blocked for
 * blockPredecessorSeconds (0 = for ever). Returns the clusters still blocked and the entries to keep.
 */
export function activeBlocks(history: readonly HistoryEntry[], blockPredecessorSeconds: number, now: Date): { blocked: string[]; keep: HistoryEntry[] } {
  const keep = history.filter((entry) => blockPredecessorSeconds === 0 || Date.parse(entry.creationTimestamp) + blockPredecessorSeconds * 1000 > now.getTime());
  return { blocked: [...new Set(keep.map((entry) => entry.clusterName))].sort(), keep };
}
