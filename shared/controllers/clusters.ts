import type { ClusterView } from '../api/contract/views';
import { ApiError, badRequest, notFound } from '../api/errors';
import type { ClusterInput, StatusReport } from '../api/resources';
import { PlaneState } from '../cache';
import {
  CLUSTER_STATUS_UNKNOWN_REASON,
  heartbeatFreshnessSeconds,
  heartbeatVerdict,
  heartbeatWrite,
  mergeConditions,
  monitorGraceSeconds,
} from '../failover/conditions';
import { ClusterTaint, taintId } from '../failover/model';
import type { EventRecord } from '../store/ports';
import { ClusterRecord, newClusterRecord } from '../store/records';
import type { ControlPlane } from './ports';
import { ClusterUpdate, updateCluster } from './state/clusterWrites';
import type { ApplyAction } from './state/derivation';
import { clusterEvent } from './state/events';
import { fleetCounts, forgetFleet, loadTaintPolicies, noteFleetChange } from './state/reads';
import { clusterResource } from './views';

/**
 * What this process last stored or read per cluster, and the newest report it accepted (which a coalesced
 * report leaves unstored): an unchanged heartbeat is checked against it and costs no storage request while
 * the stored heartbeat is fresh; a replay of any report it accepted is refused. Per control plane (tests
 * build several); bounded, like the derived keys (a cleared map costs one read per cluster).
 */
interface Seen {
  record: ClusterRecord;
  etag?: string;
  /** The newest signed report accepted here: its time and every signature accepted at that second. */
  signed?: { signedAt: number; signatures: string[] };
  /** The newest observedAt accepted here. */
  observedAt?: string;
}
const seenReports = new PlaneState<Map<string, Seen>>('clusterSeenReports');
const MAX_SEEN_CLUSTERS = 100_000;

function seenOf(plane: ControlPlane): Map<string, Seen> {
  let seen = seenReports.get(plane);
  if (!seen) seenReports.set(plane, (seen = new Map<string, Seen>()));
  return seen;
}

/** Forgets what this process knows of a cluster's reports (it was deleted here). */
function forgetReports(plane: ControlPlane, name: string): void {
  seenReports.get(plane)?.delete(name);
}

/**
 * The heartbeat freshness window of this configuration, in seconds: a report that changes no condition is
 * written at most this often per cluster, and the monitor waits the grace period plus this.
 */
export function heartbeatFreshness(config: ControlPlane['config']): number {
  const windows = [config.clusterMonitorGracePeriodSeconds];
  // The probes read lastReportAt too ("a push within the failure threshold speaks for the cluster").
  if (config.memberKubeconfigs) windows.push(config.probes.failureThresholdSeconds);
  return heartbeatFreshnessSeconds(...windows);
}

/** The newer of two signed-report marks (the stored one and this process's). */
function newestSigned(stored: ClusterRecord | undefined, seen: Seen['signed']): Seen['signed'] {
  const fromStore =
    stored?.lastSignedAt !== undefined ? { signedAt: stored.lastSignedAt, signatures: stored.lastSignature ? [stored.lastSignature] : [] } : undefined;
  if (!seen) return fromStore;
  if (!fromStore || seen.signedAt > fromStore.signedAt) return seen;
  if (fromStore.signedAt > seen.signedAt) return fromStore;
  return { signedAt: seen.signedAt, signatures: [...new Set([...seen.signatures, ...fromStore.signatures])] };
}

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
  const freshness = heartbeatFreshness(plane.config);
  const seenHere = seenOf(plane);
  // What the report means for `current`, without changing it (the coalescing below checks against this process's copy).
  const assess = (current: ClusterRecord | undefined, now: Date): { coalesced: true } | { merged: ReturnType<typeof mergeConditions> } => {
    if (!current && (options.registerUnknown === false || !plane.config.autoRegisterClusters)) {
      throw notFound(`cluster "${name}" is not registered; apply a Cluster first (AUTO_REGISTER_CLUSTERS is false)`);
    }
    const seen = seenHere.get(name);
    // Replay protection: a signed report older than the newest accepted one (stored, or accepted by this
    // process and coalesced), or the same one again, is refused.
    const newest = signed ? newestSigned(current, seen?.signed) : undefined;
    if (signed && newest && (signed.signedAt < newest.signedAt || (signed.signedAt === newest.signedAt && newest.signatures.includes(signed.signature)))) {
      throw new ApiError(409, 'this signed report is older than (or the same as) the newest report already applied for this cluster; nothing changed');
    }
    const lastObservedAt = [current?.lastObservedAt, seen?.observedAt]
      .filter((x): x is string => !!x)
      .sort()
      .pop();
    if (lastObservedAt && observedAt < lastObservedAt) {
      throw new ApiError(409, `report observed at ${observedAt} is older than the newest report already applied (${lastObservedAt}); nothing changed`);
    }
    const merged = mergeConditions(current?.conditions ?? [], report.conditions, observedAt);
    const conditionsChanged = !current || JSON.stringify(merged.conditions) !== JSON.stringify(current.conditions);
    if (current && heartbeatWrite({ conditionsChanged, lastReportAt: current.lastReportAt }, now, freshness) === 'fresh') return { coalesced: true };
    return { merged };
  };
  /** Notes an accepted report in this process's memory (a coalesced one is stored by a later write). */
  const accepted = (record: ClusterRecord, etag: string | undefined) => {
    const before = seenHere.get(name);
    let mark = before?.signed;
    if (signed) {
      if (!mark || signed.signedAt > mark.signedAt) mark = { signedAt: signed.signedAt, signatures: [signed.signature] };
      else if (signed.signedAt === mark.signedAt) mark = { signedAt: mark.signedAt, signatures: [...mark.signatures, signed.signature] };
    }
    if (!before && seenHere.size >= MAX_SEEN_CLUSTERS) seenHere.clear();
    seenHere.set(name, {
      record,
      etag,
      ...(mark ? { signed: mark } : {}),
      observedAt: before?.observedAt && before.observedAt > observedAt ? before.observedAt : observedAt,
    });
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
    // A new cluster's first conditions are not changes: its one event names them (an event less to write
    // for each cluster of a fleet registering at once).
    if (!current) {
      const first = merged.conditions.map((c) => `${c.type}=${c.status}`).join(', ');
      const message = `cluster registered by its first health report${first ? ` (${first})` : ''}`;
      return { record, result: undefined, events: [clusterEvent(name, now, 'Registered', message, 'Normal', { conditions: merged.conditions })] };
    }
    const events: EventRecord[] = [];
    for (const type of transitioned) {
      const c = merged.conditions.find((x) => x.type === type)!;
      events.push(
        clusterEvent(name, now, 'ConditionChanged', `condition ${type} is now ${c.status}${c.reason ? ` (${c.reason})` : ''}`, 'Normal', { condition: c }),
      );
    }
    return { record, result: undefined, events };
  };
  // A heartbeat that changes nothing, checked against what this process last stored or read for the
  // cluster, costs no storage request while the stored heartbeat is fresh (heartbeatWrite). Anything else is
  // decided again on a fresh read: a host that has not seen the cluster reads it once, then coalesces.
  const recent = seenHere.get(name);
  if (recent && 'coalesced' in assess(recent.record, plane.clock.now())) {
    accepted(recent.record, recent.etag);
    return { record: recent.record, etag: recent.etag, transitioned: [] };
  }
  // A due heartbeat is written on the version this process holds, with no read first (a stale one fails
  // its ETag and is decided again on a fresh read).
  // A cluster this process has not seen, that the fleet summary (read at most once a second) does not list
  // either, is registering: it is created without a read first (one registered meanwhile by another host
  // fails the create, and is read then).
  const members = !recent && plane.config.autoRegisterClusters && options.registerUnknown !== false ? (await fleetCounts(plane)).members : undefined;
  const registering = members !== undefined && !members.includes(name);
  const listed = recent?.etag ? { value: recent.record, etag: recent.etag } : registering ? ('absent' as const) : undefined;
  const outcome = await updateCluster(plane, name, applyReport, undefined, { listed });
  if (outcome.record) accepted(outcome.record, outcome.etag);
  return { record: outcome.record!, etag: outcome.etag, transitioned };
}

/**
 * The cluster monitor: Ready=Unknown for clusters silent beyond the grace period, or beyond the startup grace
 * period if they never reported. Returns the names it marked.
 */
export async function monitorClusterHeartbeats(plane: ControlPlane): Promise<string[]> {
  // Karmada mode: Karmada's cluster controller watches the leases and marks Ready Unknown itself.
  if (plane.karmada) return [];
  const grace = plane.config.clusterMonitorGracePeriodSeconds;
  // A coalesced heartbeat leaves lastReportAt up to the freshness window behind the last report.
  const monitorGrace = monitorGraceSeconds(grace, heartbeatFreshness(plane.config));
  const startupGrace = plane.config.clusterStartupGracePeriodSeconds;
  const now = plane.clock.now();
  const clusters = await plane.clusters.list();
  const stale = clusters.filter(({ value }) => {
    // A probed cluster is watched by its probes, which mark it not reachable themselves.
    if (value.probe) return false;
    const verdict = heartbeatVerdict(
      { lastReportAt: value.lastReportAt, registeredAt: value.createdAt, readyCondition: value.conditions.find((c) => c.type === 'Ready') },
      now,
      monitorGrace,
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
          monitorGrace,
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
  forgetReports(plane, name);
  if (deleted) {
    forgetFleet(plane, name);
    await noteFleetChange(plane, name, { deleted: true, faulty: false, unhealthy: false });
    await plane.events.append([clusterEvent(name, plane.clock.now(), 'Deleted', 'cluster deleted')]);
    await plane.taintManager.send({ cluster: name, reason: 'taints-changed' });
  }
  return deleted;
}

/** Every cluster as the API shows it, by name. */
export async function listClusters(plane: ControlPlane): Promise<ClusterView[]> {
  return (await plane.clusters.list()).map((entry) => clusterResource(entry.value, entry.etag)).sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
}

export async function getCluster(plane: ControlPlane, name: string): Promise<ClusterView | undefined> {
  const entry = await plane.clusters.get(name);
  return entry ? clusterResource(entry.value, entry.etag) : undefined;
}
