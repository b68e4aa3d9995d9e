import { ApiError, badRequest, notFound } from '../api/errors';
import type { ClusterInput, StatusReport } from '../api/resources';
import { CLUSTER_STATUS_UNKNOWN_REASON, heartbeatVerdict, mergeConditions } from '../failover/conditions';
import { ClusterTaint, taintId } from '../failover/model';
import type { EventRecord } from '../store/ports';
import type { ControlPlane } from './ports';
import { ClusterRecord, newClusterRecord } from './records';
import { RecentCache } from './state/cache';
import { ClusterUpdate, updateCluster } from './state/clusterWrites';
import type { ApplyAction } from './state/derivation';
import { clusterEvent } from './state/events';
import { forgetFleet, loadTaintPolicies, noteFleetChange } from './state/reads';
import { clusterResource } from './views';

/**
 * A report that changes nothing but the heartbeat is written at most this often per cluster, so a fleet
 * reporting many times a second does not cost a Table write per report. The monitor allows for it: a
 * silent cluster turns Unknown after the grace period plus this, never before.
 */
export const HEARTBEAT_COALESCE_SECONDS = 2;

/** What this process last stored or read per cluster, so a heartbeat that changes nothing costs no request. */
const recentReports = new RecentCache<{ record: ClusterRecord; etag?: string }>(1000);

/** How far in the future a reporter's `observedAt` may be (clock skew) before the report is refused. */
export const MAX_FUTURE_SKEW_SECONDS = 60;

/** The user-owned part of a cluster, to tell `configured` from `unchanged`. */
const userView = (record: ClusterRecord) =>
  JSON.stringify({
    labels: record.labels,
    annotations: record.annotations,
    spec: record.spec,
    manual: record.taints.filter((t) => t.manual).map((t) => [t.key, t.value ?? '', t.effect]),
    // A taint a Karmada-shape policy left behind goes when the Cluster is applied without it.
    left: record.taints.filter((t) => t.leftBy && t.owners.length === 0 && !t.manual).map((t) => [t.key, t.effect]),
  });

/**
 * Apply a Cluster: labels, annotations and spec replace what was there. `spec.taints` are the manual
 * taints: listed ones are held by hand (never removed by a policy), unlisted ones are no longer held by
 * hand and go unless a policy holds them.
 */
export async function applyCluster(plane: ControlPlane, input: ClusterInput): Promise<ApplyAction> {
  const { taints: manualTaints = [], ...spec } = input.spec ?? {};
  const outcome = await updateCluster<ApplyAction>(plane, input.metadata.name, (current, now) => {
    const record = current ?? newClusterRecord(input.metadata.name, now, 'apply');
    const before = current ? userView(current) : undefined;
    record.labels = input.metadata.labels ?? {};
    record.annotations = input.metadata.annotations ?? {};
    record.spec = spec;
    const listed = new Map(manualTaints.map((t) => [taintId(t), t]));
    const taints: ClusterTaint[] = [];
    for (const taint of record.taints) {
      const wanted = listed.get(taintId(taint));
      listed.delete(taintId(taint));
      if (wanted) taints.push({ ...taint, ...(wanted.value !== undefined ? { value: wanted.value } : {}), manual: true });
      else if (taint.owners.length > 0) taints.push({ ...taint, manual: false });
    }
    for (const taint of listed.values()) {
      taints.push({
        key: taint.key,
        ...(taint.value !== undefined ? { value: taint.value } : {}),
        effect: taint.effect,
        timeAdded: taint.timeAdded ?? now.toISOString(),
        owners: [],
        manual: true,
      });
    }
    record.taints = taints;
    if (!current) return { record, result: 'created', events: [clusterEvent(record.name, now, 'Registered', 'cluster registered by apply')] };
    if (before === userView(record)) return { unchanged: 'unchanged' };
    record.generation += 1;
    return { record, result: 'configured' };
  });
  return outcome.result;
}

export interface ReportOutcome {
  record: ClusterRecord;
  etag?: string;
  transitioned: string[];
}

/**
 * A health report: records the conditions (lastTransitionTime moves only on a status change), renews the
 * heartbeat, and re-evaluates the taint policies in the same write.
 */
export async function reportClusterStatus(
  plane: ControlPlane,
  name: string,
  report: StatusReport,
  signed?: { signedAt: number; signature: string },
  options: { registerUnknown?: boolean } = {},
): Promise<ReportOutcome> {
  const received = plane.clock.now();
  let observedAt = received.toISOString();
  if (report.observedAt) {
    const observed = new Date(report.observedAt);
    if (observed.getTime() > received.getTime() + MAX_FUTURE_SKEW_SECONDS * 1000) {
      throw badRequest([{ path: 'observedAt', message: `is more than ${MAX_FUTURE_SKEW_SECONDS}s in the future` }]);
    }
    observedAt = new Date(Math.min(observed.getTime(), received.getTime())).toISOString();
  }
  let transitioned: string[] = [];
  // What the report means for `current`, without changing it (the cache below checks against a shared copy).
  const assess = (current: ClusterRecord | undefined, now: Date): { coalesced: true } | { merged: ReturnType<typeof mergeConditions> } => {
    if (!current && (options.registerUnknown === false || !plane.config.autoRegisterClusters)) {
      throw notFound(`cluster "${name}" is not registered; apply a Cluster first (AUTO_REGISTER_CLUSTERS is false)`);
    }
    // Replay protection: a signed report older than the newest applied one, or the same one again, is refused.
    if (
      signed &&
      current?.lastSignedAt !== undefined &&
      (signed.signedAt < current.lastSignedAt || (signed.signedAt === current.lastSignedAt && signed.signature === current.lastSignature))
    ) {
      throw new ApiError(409, 'this signed report is older than (or the same as) the newest report already applied for this cluster; nothing changed');
    }
    if (current?.lastObservedAt && observedAt < current.lastObservedAt) {
      throw new ApiError(409, `report observed at ${observedAt} is older than the newest report already applied (${current.lastObservedAt}); nothing changed`);
    }
    const merged = mergeConditions(current?.conditions ?? [], report.conditions, observedAt);
    const onlyHeartbeat = current && JSON.stringify(merged.conditions) === JSON.stringify(current.conditions);
    if (onlyHeartbeat && current.lastReportAt && now.getTime() - Date.parse(current.lastReportAt) < HEARTBEAT_COALESCE_SECONDS * 1000) {
      return { coalesced: true };
    }
    return { merged };
  };
  const applyReport = (current: ClusterRecord | undefined, now: Date): ClusterUpdate<undefined> | { unchanged: undefined } => {
    const verdict = assess(current, now);
    if ('coalesced' in verdict) return { unchanged: undefined };
    const { merged } = verdict;
    transitioned = merged.transitioned;
    const record = current ?? newClusterRecord(name, now, 'report');
    record.conditions = merged.conditions;
    record.lastReportAt = now.toISOString();
    record.lastObservedAt = observedAt;
    if (signed) {
      record.lastSignedAt = signed.signedAt;
      record.lastSignature = signed.signature;
    }
    const events: EventRecord[] = [];
    if (!current) events.push(clusterEvent(name, now, 'Registered', 'cluster registered by its first health report'));
    for (const type of transitioned) {
      const c = merged.conditions.find((x) => x.type === type)!;
      events.push(
        clusterEvent(name, now, 'ConditionChanged', `condition ${type} is now ${c.status}${c.reason ? ` (${c.reason})` : ''}`, 'Normal', { condition: c }),
      );
    }
    return { record, result: undefined, events };
  };
  // A heartbeat that changes nothing, checked against what this process stored or read within the last
  // second, costs no storage request at all. Anything else is decided again on a fresh read.
  const recent = recentReports.peek(plane, name);
  if (recent && 'coalesced' in assess(recent.record, plane.clock.now())) {
    return { record: recent.record, etag: recent.etag, transitioned: [] };
  }
  const outcome = await updateCluster(plane, name, applyReport);
  if (outcome.record) recentReports.set(plane, { record: outcome.record, etag: outcome.etag }, name);
  return { record: outcome.record!, etag: outcome.etag, transitioned };
}

/**
 * The cluster monitor (seed 001): Ready=Unknown for clusters silent beyond the grace period, or beyond the
 * startup grace period if they never reported. Returns the names it marked.
 */
export async function monitorClusterHeartbeats(plane: ControlPlane): Promise<string[]> {
  // Karmada mode: Karmada's cluster controller watches the leases and marks Ready Unknown itself.
  if (plane.karmada) return [];
  const grace = plane.config.clusterMonitorGracePeriodSeconds;
  const startupGrace = plane.config.clusterStartupGracePeriodSeconds;
  const now = plane.clock.now();
  const clusters = await plane.clusters.list();
  const stale = clusters.filter(({ value }) => {
    // A probed cluster is watched by its probes, which mark it not reachable themselves.
    if (value.probe) return false;
    const verdict = heartbeatVerdict(
      { lastReportAt: value.lastReportAt, registeredAt: value.createdAt, readyCondition: value.conditions.find((c) => c.type === 'Ready') },
      now,
      grace + HEARTBEAT_COALESCE_SECONDS,
      startupGrace,
    );
    return verdict.expired && !verdict.alreadyUnknown;
  });
  if (stale.length === 0) return [];
  const policies = await loadTaintPolicies(plane);
  const marked: string[] = [];
  for (const { id } of stale) {
    const outcome = await updateCluster<boolean>(
      plane,
      id,
      (current, at) => {
        if (!current) return { unchanged: false };
        const verdict = heartbeatVerdict(
          { lastReportAt: current.lastReportAt, registeredAt: current.createdAt, readyCondition: current.conditions.find((c) => c.type === 'Ready') },
          at,
          grace + HEARTBEAT_COALESCE_SECONDS,
          startupGrace,
        );
        if (!verdict.expired || verdict.alreadyUnknown) return { unchanged: false };
        const silentFor = Math.round((at.getTime() - new Date(verdict.silentSince).getTime()) / 1000);
        const message = current.lastReportAt
          ? `cluster has not reported for ${silentFor}s (grace period ${grace}s)`
          : `cluster has never reported, ${silentFor}s after registration (startup grace period ${startupGrace}s)`;
        const merged = mergeConditions(
          current.conditions,
          [{ type: 'Ready', status: 'Unknown', reason: CLUSTER_STATUS_UNKNOWN_REASON, message }],
          at.toISOString(),
        );
        current.conditions = merged.conditions;
        return {
          record: current,
          result: true,
          events: [clusterEvent(id, at, 'ClusterStatusUnknown', `Ready set to Unknown: ${message}`, 'Warning')],
        };
      },
      policies,
    );
    if (outcome.result) {
      marked.push(id);
      plane.log.warn('cluster status unknown', { cluster: id });
    }
  }
  return marked;
}

export async function deleteCluster(plane: ControlPlane, name: string): Promise<boolean> {
  const deleted = await plane.clusters.delete(name);
  if (deleted) {
    forgetFleet(plane);
    await noteFleetChange(plane, name, { deleted: true, faulty: false });
    await plane.events.append([clusterEvent(name, plane.clock.now(), 'Deleted', 'cluster deleted')]);
    await plane.taintManager.send({ cluster: name, reason: 'taints-changed' });
  }
  return deleted;
}

/** Every cluster as the API shows it, by name. */
export async function listClusters(plane: ControlPlane) {
  return (await plane.clusters.list()).map((entry) => clusterResource(entry.value, entry.etag)).sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
}

export async function getCluster(plane: ControlPlane, name: string) {
  const entry = await plane.clusters.get(name);
  return entry ? clusterResource(entry.value, entry.etag) : undefined;
}
