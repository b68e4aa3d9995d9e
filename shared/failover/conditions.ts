import type { Condition, ConditionStatus, MatchCondition } from './model';

/**
 * ANDed match conditions. An absent condition type matches neither In nor NotIn. An empty list matches: a
 * windowed policy without conditions taints every cluster it targets (Karmada's shape never acts on one).
 */
export function matchesConditions(matchConditions: readonly MatchCondition[], conditions: readonly Condition[]): boolean {
  return matchConditions.every((match) => matchesCondition(match, conditions));
}

export function matchesCondition(match: MatchCondition, conditions: readonly Condition[]): boolean {
  const condition = conditions.find((c) => c.type === match.conditionType);
  if (!condition) return false;
  const listed = match.statusValues.includes(condition.status);
  return match.operator === 'In' ? listed : !listed;
}

export interface ReportedCondition {
  type: string;
  status: ConditionStatus;
  reason?: string;
  message?: string;
}

/**
 * Merges reported conditions into the stored ones. `lastTransitionTime` moves only when a condition's
 * status changes; reason and message always take the reported value. Conditions not named in the report
 * keep their value, so several sources (our reporter, Alertmanager, Azure Monitor) can each own some.
 */
export function mergeConditions(
  existing: readonly Condition[],
  reported: readonly ReportedCondition[],
  observedAt: string,
): { conditions: Condition[]; transitioned: string[] } {
  const byType = new Map(existing.map((c) => [c.type, c]));
  const transitioned: string[] = [];
  for (const report of reported) {
    const previous = byType.get(report.type);
    const statusChanged = !previous || previous.status !== report.status;
    if (statusChanged) transitioned.push(report.type);
    byType.set(report.type, {
      type: report.type,
      status: report.status,
      ...(report.reason !== undefined ? { reason: report.reason } : {}),
      ...(report.message !== undefined ? { message: report.message } : {}),
      lastTransitionTime: statusChanged ? observedAt : previous.lastTransitionTime,
    });
  }
  return { conditions: [...byType.values()].sort((a, b) => a.type.localeCompare(b.type)), transitioned };
}

/**
 * One condition set in a list as an object's controller sets it: `lastTransitionTime` kept while its status
 * stays, now when it changes; the others as they were.
 */
export function setCondition<C extends { type: string; status: string; lastTransitionTime: string }>(
  conditions: readonly C[] | undefined,
  condition: Omit<C, 'lastTransitionTime'>,
  now: Date,
): C[] {
  const previous = conditions?.find((c) => c.type === condition.type);
  const next = { ...condition, lastTransitionTime: previous && previous.status === condition.status ? previous.lastTransitionTime : now.toISOString() } as C;
  return [...(conditions ?? []).filter((c) => c.type !== condition.type), next];
}

export const CLUSTER_STATUS_UNKNOWN_REASON = 'ClusterStatusUnknown';

export interface HeartbeatInput {
  /** When the cluster last reported (server receipt time), if ever. */
  lastReportAt?: string;
  /** When the cluster was registered: the start of the startup grace period. */
  registeredAt: string;
  readyCondition?: Condition;
}

/**
 * The cluster monitor's decision: a cluster not heard from within the grace period (or the startup grace
 * period, if it never reported) gets Ready=Unknown. Returns the deadline either way so the caller can tell
 * how long is left.
 */
export function heartbeatVerdict(
  input: HeartbeatInput,
  now: Date,
  gracePeriodSeconds: number,
  startupGracePeriodSeconds: number,
): { expired: boolean; alreadyUnknown: boolean; deadline: Date; silentSince: string } {
  const silentSince = input.lastReportAt ?? input.registeredAt;
  const grace = input.lastReportAt ? gracePeriodSeconds : startupGracePeriodSeconds;
  const deadline = new Date(new Date(silentSince).getTime() + grace * 1000);
  const alreadyUnknown = input.readyCondition?.status === 'Unknown' && input.readyCondition.reason === CLUSTER_STATUS_UNKNOWN_REASON;
  return { expired: now.getTime() >= deadline.getTime(), alreadyUnknown, deadline, silentSince };
}

/** The freshness window's bounds: never written more often than every 2 s, nor less often than every 30 s. */
export const HEARTBEAT_FRESHNESS_MIN_SECONDS = 2;
export const HEARTBEAT_FRESHNESS_MAX_SECONDS = 30;

/**
 * How long a stored heartbeat stays fresh: a report that changes no condition is not written while the stored
 * `lastReportAt` is younger than this. A quarter of the shortest window that reads `lastReportAt` (the
 * monitor's grace period; the probes' failure threshold when probes run), within 2–30 s: Karmada renews a
 * cluster lease every quarter of its duration (cluster-lease-renew-interval-fraction 0.25). Whole seconds.
 */
export function heartbeatFreshnessSeconds(...windowsSeconds: number[]): number {
  const quarter = Math.floor(Math.min(...windowsSeconds) / 4);
  return Math.min(HEARTBEAT_FRESHNESS_MAX_SECONDS, Math.max(HEARTBEAT_FRESHNESS_MIN_SECONDS, quarter));
}

export type HeartbeatWrite = 'write' | 'fresh';

/**
 * Whether a report must be stored: always when it changes a condition (or the cluster was never stored or
 * never reported), otherwise only once the stored heartbeat is `freshnessSeconds` old. A coalesced report
 * leaves `lastReportAt` at most `freshnessSeconds` behind the cluster's last report, so the monitor waits the
 * grace period plus that (`monitorGraceSeconds`) and never marks a reporting cluster.
 */
export function heartbeatWrite(input: { conditionsChanged: boolean; lastReportAt?: string }, now: Date, freshnessSeconds: number): HeartbeatWrite {
  if (input.conditionsChanged || !input.lastReportAt) return 'write';
  const age = now.getTime() - Date.parse(input.lastReportAt);
  // A stored heartbeat from the future (another host's clock ahead) counts as fresh only within the window.
  return Math.abs(age) < freshnessSeconds * 1000 ? 'fresh' : 'write';
}

/** The silence the monitor allows before Ready=Unknown: the grace period plus the freshness window. */
export function monitorGraceSeconds(gracePeriodSeconds: number, freshnessSeconds: number): number {
  return gracePeriodSeconds + freshnessSeconds;
}
