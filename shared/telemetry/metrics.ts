import { Counter, Histogram, Meter, metrics as otelMetrics, ObservableResult } from '@opentelemetry/api';
import type { BindingKind } from '../failover/bindingModel';

/**
 * The eviction metrics of seed 004, as OpenTelemetry instruments. Labels stay low-cardinality: queue name,
 * result, cluster and resource kind. Gauges read the latest snapshot the pacer computed.
 */

export const queueNameOf = (kind: BindingKind) => (kind === 'ResourceBinding' ? 'resource-binding' : 'cluster-resource-binding');

export interface LedgerSnapshot {
  /** Active (pending + scheduled) rows per queue name. */
  depth: Record<string, number>;
  /** Active rows per cluster and resource kind. */
  byKind: Array<{ cluster: string; resourceKind: string; count: number }>;
}

export interface FleetSnapshot {
  faulty: number;
  failureRatio: number;
  rate: number;
}

export class FailoverMetrics {
  private readonly processed: Counter;
  private readonly latency: Histogram;
  private ledger: LedgerSnapshot = { depth: {}, byKind: [] };
  private fleet?: FleetSnapshot;

  constructor(meter: Meter = otelMetrics.getMeter('cluster-failover')) {
    this.processed = meter.createCounter('eviction_processing_total', { description: 'Evictions processed by the worker, by result' });
    this.latency = meter.createHistogram('eviction_processing_latency_seconds', { description: 'From the eviction decision to the eviction', unit: 's' });
    meter
      .createObservableGauge('eviction_total', { description: 'Evictions waiting (pending or scheduled), by queue' })
      .addCallback((result: ObservableResult) => {
        for (const [queue, count] of Object.entries(this.ledger.depth)) result.observe(count, { queue_name: queue });
      });
    meter
      .createObservableGauge('evict_kind_total', { description: 'Evictions waiting, by cluster and resource kind' })
      .addCallback((result: ObservableResult) => {
        for (const row of this.ledger.byKind) result.observe(row.count, { cluster_name: row.cluster, resource_kind: row.resourceKind });
      });
    meter
      .createObservableGauge('cluster_fault_num', { description: 'Clusters with a NoExecute or PreferNoExecute taint' })
      .addCallback((result: ObservableResult) => {
        if (this.fleet) result.observe(this.fleet.faulty);
      });
    meter.createObservableGauge('cluster_failure_rate', { description: 'Faulty clusters / all clusters' }).addCallback((result: ObservableResult) => {
      if (this.fleet) result.observe(this.fleet.failureRatio);
    });
    meter
      .createObservableGauge('eviction_rate', { description: 'Current eviction rate (per second) from fleet health' })
      .addCallback((result: ObservableResult) => {
        if (this.fleet) result.observe(this.fleet.rate);
      });
  }

  recordProcessed(kind: BindingKind, result: 'success' | 'error' | 'blocked' | 'abandoned', latencySeconds?: number): void {
    const queue = queueNameOf(kind);
    this.processed.add(1, { queue_name: queue, result });
    if (latencySeconds !== undefined) this.latency.record(latencySeconds, { queue_name: queue });
  }

  setLedger(snapshot: LedgerSnapshot): void {
    this.ledger = snapshot;
  }

  setFleet(snapshot: FleetSnapshot): void {
    this.fleet = snapshot;
  }
}
