import type { AlertmanagerPayload, AzureMonitorPayload } from '../api/alerts';
import { conditionTypeFrom } from '../api/alerts';
import type { ConditionStatus } from './model';

/** Reported conditions per cluster, from a monitoring notification; what could not be mapped, and why. */
export interface AlertBatch {
  byCluster: Map<string, Array<{ type: string; status: ConditionStatus; reason: string; message?: string }>>;
  unmatched: Array<{ alert: string; why: string }>;
}

export interface AlertmanagerMapping {
  clusterLabel: string;
  conditionLabel: string;
  statusLabel: string;
}

const STATUSES: readonly string[] = ['True', 'False', 'Unknown'];

/** A label's value; own labels only, so a label name such as "constructor" is never what objects inherit. */
const labelOf = (labels: Readonly<Record<string, string>> | undefined, name: string): string | undefined =>
  labels && Object.hasOwn(labels, name) ? labels[name] : undefined;

/**
 * Alertmanager: the cluster label names the cluster, the condition label (else the alert name) the
 * condition type; firing sets it False (or the status the status label names), resolved sets it True. When
 * one notification holds several alerts for the same condition, the latest one wins.
 */
export function mapAlertmanager(payload: AlertmanagerPayload, mapping: AlertmanagerMapping): AlertBatch {
  const batch: AlertBatch = { byCluster: new Map(), unmatched: [] };
  const latest = new Map<string, { at: number; cluster: string; condition: { type: string; status: ConditionStatus; reason: string; message?: string } }>();
  payload.alerts.forEach((alert, index) => {
    const name = labelOf(alert.labels, 'alertname') ?? `alerts[${index}]`;
    const cluster = labelOf(alert.labels, mapping.clusterLabel);
    if (!cluster) {
      batch.unmatched.push({ alert: name, why: `no "${mapping.clusterLabel}" label` });
      return;
    }
    const rawType = labelOf(alert.labels, mapping.conditionLabel) ?? labelOf(alert.labels, 'alertname');
    if (!rawType) {
      batch.unmatched.push({ alert: name, why: `no "${mapping.conditionLabel}" or "alertname" label` });
      return;
    }
    const type = conditionTypeFrom(rawType, 'AlertmanagerAlert');
    const named = labelOf(alert.labels, mapping.statusLabel);
    const status: ConditionStatus = alert.status === 'resolved' ? 'True' : named && STATUSES.includes(named) ? (named as ConditionStatus) : 'False';
    const at = Date.parse((alert.status === 'resolved' ? alert.endsAt : alert.startsAt) ?? '') || 0;
    const id = `${cluster}\u0000${type}`;
    const previous = latest.get(id);
    if (previous && previous.at > at) return;
    const message = labelOf(alert.annotations, 'summary') ?? labelOf(alert.annotations, 'description');
    latest.set(id, {
      at,
      cluster,
      condition: {
        type,
        status,
        reason: alert.status === 'resolved' ? 'AlertResolved' : 'AlertFiring',
        ...(message ? { message: message.slice(0, 4096) } : {}),
      },
    });
  });
  for (const { cluster, condition } of latest.values()) {
    const list = batch.byCluster.get(cluster) ?? [];
    list.push(condition);
    batch.byCluster.set(cluster, list);
  }
  return batch;
}

/**
 * Azure Monitor (common alert schema): each target resource ID maps to a cluster (explicit mapping, or a
 * cluster whose annotation holds that ID); the alert rule names the condition; Fired sets it False,
 * Resolved True.
 */
export function mapAzureMonitor(payload: AzureMonitorPayload, clusterOfResource: (resourceId: string) => string | undefined): AlertBatch {
  const batch: AlertBatch = { byCluster: new Map(), unmatched: [] };
  const essentials = payload.data.essentials;
  const type = conditionTypeFrom(essentials.alertRule, 'AzureMonitorAlert');
  const status: ConditionStatus = essentials.monitorCondition === 'Resolved' ? 'True' : 'False';
  for (const target of essentials.alertTargetIDs) {
    // A lookup backed by a plain object answers an inherited member for "constructor" or "__proto__": no cluster.
    const found: unknown = clusterOfResource(target);
    const cluster = typeof found === 'string' && found !== '' ? found : undefined;
    if (!cluster) {
      batch.unmatched.push({ alert: essentials.alertRule, why: `no cluster is mapped to ${target}` });
      continue;
    }
    const list = batch.byCluster.get(cluster) ?? [];
    if (!list.some((c) => c.type === type))
      list.push({
        type,
        status,
        reason: essentials.monitorCondition === 'Resolved' ? 'AlertResolved' : 'AlertFired',
        ...(essentials.description ? { message: essentials.description.slice(0, 4096) } : {}),
      });
    batch.byCluster.set(cluster, list);
  }
  return batch;
}
