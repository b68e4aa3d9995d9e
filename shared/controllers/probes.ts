import { mapConcurrent } from '../concurrency';
import { mergeConditions } from '../failover/conditions';
import { probeDecision } from '../failover/probe';
import type { MemberEndpoint } from '../kube/api';
import type { ClusterRecord } from '../store/records';
import type { ControlPlane } from './ports';
import { updateCluster } from './state/clusterWrites';
import { clusterEvent } from './state/events';

export interface ProbeRound {
  probed: number;
  ok: number;
  failed: number;
  /** Clusters whose Ready condition this round changed. */
  changed: string[];
  durationMs: number;
}

/**
 * One probe round: GET /readyz on every cluster with an endpoint and credentials, a bounded number at a time,
 * then the Ready condition where a run of answers has held for the threshold. A cluster whose answers did not
 * change costs no write. Each probe's latency and outcome are recorded, and every listed cluster's Ready
 * state as the round leaves it (cluster_ready_state).
 */
export async function probeClusters(plane: ControlPlane): Promise<ProbeRound> {
  const started = Date.now();
  const members = plane.members;
  if (!members) return { probed: 0, ok: 0, failed: 0, changed: [], durationMs: 0 };
  const clusters = (await plane.clusters.list()).map((entry) => entry.value);
  const endpoints = await members.directory.endpoints(clusters);
  const byName = new Map(clusters.map((c) => [c.name, c]));
  const { probeTimeoutSeconds, probeConcurrency } = plane.config.probes;
  const changed: string[] = [];
  const ready: Record<string, boolean> = Object.fromEntries(clusters.map((c) => [c.name, isReady(c)]));
  let ok = 0;
  await mapConcurrent(endpoints, probeConcurrency, async (endpoint) => {
    const probeStarted = performance.now();
    const result = await members.prober.probe(endpoint, probeTimeoutSeconds * 1000);
    plane.metrics.probes.recordProbe(endpoint.cluster, result.outcome, (performance.now() - probeStarted) / 1000);
    if (result.outcome === 'ok') ok++;
    const before = byName.get(endpoint.cluster);
    if (before && !decide(plane, before, result, plane.clock.now()).write) return;
    const written = await recordProbe(plane, endpoint, result);
    if (written === undefined) return;
    ready[endpoint.cluster] = written;
    changed.push(endpoint.cluster);
  });
  plane.metrics.probes.setReadyStates(ready);
  return { probed: endpoints.length, ok, failed: endpoints.length - ok, changed, durationMs: Date.now() - started };
}

const isReady = (cluster: ClusterRecord) => cluster.conditions.some((c) => c.type === 'Ready' && c.status === 'True');

function decide(plane: ControlPlane, cluster: ClusterRecord, result: { outcome: 'ok' | 'notOk' | 'unreachable'; detail?: string }, now: Date) {
  const threshold = plane.config.probes.failureThresholdSeconds;
  const decision = probeDecision({
    previous: cluster.probe,
    outcome: result.outcome,
    ...(result.detail ? { detail: result.detail } : {}),
    ready: cluster.conditions.find((c) => c.type === 'Ready'),
    // A pushed report within the threshold speaks for the cluster (the push comes from inside it).
    pushFresh: cluster.lastReportAt !== undefined && now.getTime() - Date.parse(cluster.lastReportAt) < threshold * 1000,
    now,
    thresholdSeconds: threshold,
  });
  return { decision, write: decision.probeChanged || decision.ready !== undefined };
}

async function recordProbe(
  plane: ControlPlane,
  endpoint: MemberEndpoint,
  result: { outcome: 'ok' | 'notOk' | 'unreachable'; detail?: string },
): Promise<boolean | undefined> {
  /** Whether Ready is now True, when this probe changed it. */
  let readyNow: boolean | undefined;
  await updateCluster(plane, endpoint.cluster, (current, now) => {
    readyNow = undefined; // decided again on a retry
    if (!current) return { unchanged: undefined };
    const { decision, write } = decide(plane, current, result, now);
    if (!write) return { unchanged: undefined };
    current.probe = decision.probe;
    if (!decision.ready) return { record: current, result: undefined };
    const merged = mergeConditions(current.conditions, [decision.ready], now.toISOString());
    current.conditions = merged.conditions;
    const { status, reason } = decision.ready;
    readyNow = status === 'True';
    return {
      record: current,
      result: undefined,
      events: [
        clusterEvent(
          current.name,
          now,
          'ConditionChanged',
          `condition Ready is now ${status} (${reason}) from probing ${endpoint.server}`,
          status === 'True' ? 'Normal' : 'Warning',
          {
            condition: decision.ready,
            source: 'probe',
          },
        ),
      ],
    };
  });
  return readyNow;
}
