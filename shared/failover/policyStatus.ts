import { blastRadiusLimit, type PolicyGuard } from './blastRadius';
import { mergeConditions, type ReportedCondition } from './conditions';
import type { Condition } from './model';

/**
 * A ClusterTaintPolicy's status conditions, pure:
 * - `EvictionInProgress`: True while evictions caused by its taints wait or run: ledger rows pending or
 *   scheduled on the clusters where it holds NoExecute/PreferNoExecute taints (drain rows are a person's, not
 *   the policy's); the message gives the counts. False otherwise.
 * - `BlastRadiusExceeded`: True from the first taint the blast-radius guard did not write until an admin
 *   acknowledges (blastRadius.ts).
 * `lastTransitionTime` moves only when a condition's status changes (conditions.ts mergeConditions), so
 * `kubectl wait --for=condition=EvictionInProgress=false` sees one transition per episode.
 */

export const POLICY_CONDITIONS = ['BlastRadiusExceeded', 'EvictionInProgress'] as const;

/** What the controllers keep per policy (one document, changed with its ETag): the guard and the conditions. */
export interface PolicyState extends PolicyGuard {
  conditions: Condition[];
}

export const emptyPolicyState = (): PolicyState => ({ held: {}, conditions: [] });

export interface EvictionCounts {
  pending: number;
  scheduled: number;
  /** Clusters with at least one such row. */
  clusters: number;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

export function evictionInProgress(counts: EvictionCounts, heldClusters: number): ReportedCondition {
  if (counts.pending + counts.scheduled > 0) {
    return {
      type: 'EvictionInProgress',
      status: 'True',
      reason: 'EvictionsPending',
      message: `${counts.pending} pending, ${counts.scheduled} scheduled eviction(s) on ${plural(counts.clusters, 'cluster')} where the policy holds NoExecute or PreferNoExecute taints`,
    };
  }
  return {
    type: 'EvictionInProgress',
    status: 'False',
    reason: heldClusters > 0 ? 'NoPendingEvictions' : 'NoTaintsHeld',
    message:
      heldClusters > 0
        ? `no pending or scheduled eviction on the ${plural(heldClusters, 'cluster')} where the policy holds NoExecute or PreferNoExecute taints`
        : 'the policy holds no NoExecute or PreferNoExecute taint',
  };
}

export function blastRadiusExceeded(guard: PolicyGuard, total: number, maxShare: number): ReportedCondition {
  const held = Object.keys(guard.held).length;
  const limit = blastRadiusLimit(total, maxShare);
  const share = `${held} of ${plural(total, 'cluster')} (at most ${limit}: ${maxShare} of the fleet)`;
  if (guard.exceeded) {
    const refused = guard.exceeded.refused;
    return {
      type: 'BlastRadiusExceeded',
      status: 'True',
      reason: 'PolicyBlastRadiusExceeded',
      message: `holds NoExecute/PreferNoExecute taints on ${share}; ${refused.length > 0 ? `not written on ${refused.join(', ')}` : 'further taints are not written'} until an admin acknowledges (POST /api/clustertaintpolicies/{name}/acknowledge)`,
    };
  }
  if (guard.acknowledged) {
    return {
      type: 'BlastRadiusExceeded',
      status: 'False',
      reason: 'Acknowledged',
      message: `acknowledged at ${guard.acknowledged.at}: may go beyond the share until it holds them on fewer than ${limit}; holds them on ${share}`,
    };
  }
  return { type: 'BlastRadiusExceeded', status: 'False', reason: 'WithinShare', message: `holds NoExecute/PreferNoExecute taints on ${share}` };
}

/** The conditions as they are now, with lastTransitionTime kept unless the status changed. */
export function policyConditions(previous: readonly Condition[], current: readonly ReportedCondition[], now: Date): Condition[] {
  return mergeConditions(previous, current, now.toISOString()).conditions;
}

/** Whether two condition lists say something different (type, status, reason or message): what is worth a write. */
export function conditionsChanged(a: readonly Condition[], b: readonly Condition[]): boolean {
  const view = (list: readonly Condition[]) =>
    JSON.stringify([...list].sort((x, y) => x.type.localeCompare(y.type)).map((c) => [c.type, c.status, c.reason ?? '', c.message ?? '']));
  return view(a) !== view(b);
}
