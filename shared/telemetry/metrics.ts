import { Counter, Histogram, Meter, metrics as otelMetrics, ObservableResult } from '@opentelemetry/api';
import type { BindingKind } from '../failover/bindingModel';
import type { ProbeOutcome } from '../failover/probe';

/**
 * The eviction metrics (docs/reference/observability.md), as OpenTelemetry instruments. Labels stay
 * low-cardinality: queue name, result, cluster and resource kind. Gauges read the latest snapshot the pacer
 * computed.
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
  /** Clusters whose Ready is not True or that hold a faulty taint: the count fleet health is measured by. */
  unhealthy: number;
  failureRatio: number;
  rate: number;
}

export class FailoverMetrics {
  private readonly processed: Counter;
  private readonly latency: Histogram;
  private ledger: LedgerSnapshot = { depth: {}, byKind: [] };
  private fleet?: FleetSnapshot;
  /** Probes of the member clusters (standalone mode). */
  readonly probes: ProbeMetrics;
  /** ClusterTaintPolicies: shadow mode's findings and the blast-radius guard. */
  readonly policies: PolicyMetrics;

  constructor(meter: Meter = otelMetrics.getMeter('cluster-failover')) {
    this.probes = new ProbeMetrics(meter);
    this.policies = new PolicyMetrics(meter);
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
    meter
      .createObservableGauge('cluster_unhealthy_num', { description: 'Clusters whose Ready condition is not True or that hold a faulty taint' })
      .addCallback((result: ObservableResult) => {
        if (this.fleet) result.observe(this.fleet.unhealthy);
      });
    meter.createObservableGauge('cluster_failure_rate', { description: 'Unhealthy clusters / all clusters' }).addCallback((result: ObservableResult) => {
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

/** Probe latency buckets (seconds): Prometheus' defaults, from 5 ms to the 10 s beyond any probe timeout. */
export const PROBE_LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Per member cluster, the probes of standalone mode, named as Karmada's cluster metrics
 * (`cluster_ready_state`) and as the eviction metrics are (`_total` counters with a result label,
 * `_latency_seconds` histograms), labelled `cluster_name` as `evict_kind_total` is:
 * `cluster_probe_latency_seconds{cluster_name}` (histogram, every probe, timeouts included),
 * `cluster_probe_total{cluster_name,outcome}` (counter; outcome `ok`, `notOk` or `unreachable`) and
 * `cluster_ready_state{cluster_name}` (gauge: 1 when Ready is True, 0 when False or Unknown), as the latest
 * probe round left each cluster.
 */
export class ProbeMetrics {
  private readonly latency: Histogram;
  private readonly results: Counter;
  private ready: ReadonlyMap<string, 0 | 1> = new Map();

  constructor(meter: Meter) {
    this.latency = meter.createHistogram('cluster_probe_latency_seconds', {
      description: 'Time a probe of a member cluster took to answer (or time out)',
      unit: 's',
      advice: { explicitBucketBoundaries: PROBE_LATENCY_BUCKETS },
    });
    this.results = meter.createCounter('cluster_probe_total', { description: 'Probes of member clusters, by cluster and outcome' });
    meter
      .createObservableGauge('cluster_ready_state', { description: 'Ready condition of each cluster (1 True, 0 False or Unknown)' })
      .addCallback((result: ObservableResult) => {
        for (const [cluster, value] of this.ready) result.observe(value, { cluster_name: cluster });
      });
  }

  recordProbe(cluster: string, outcome: ProbeOutcome, latencySeconds: number): void {
    this.latency.record(latencySeconds, { cluster_name: cluster });
    this.results.add(1, { cluster_name: cluster, outcome });
  }

  /** Replaces the Ready snapshot: a cluster left out (deleted) is no longer reported. */
  setReadyStates(ready: Readonly<Record<string, boolean>>): void {
    this.ready = new Map(Object.entries(ready).map(([cluster, isReady]) => [cluster, isReady ? 1 : 0]));
  }
}

/**
 * ClusterTaintPolicies, labelled by `policy` (few, named by people): what shadow policies would have done,
 * each finding once per match episode, and the taints the blast-radius guard did not write.
 */
export class PolicyMetrics {
  private readonly wouldTaint: Counter;
  private readonly wouldEvict: Counter;
  private readonly blastRadius: Counter;

  constructor(meter: Meter) {
    this.wouldTaint = meter.createCounter('cluster_failover_shadow_would_taint_total', {
      description: 'Taints shadow policies would have added, by policy and effect',
    });
    this.wouldEvict = meter.createCounter('cluster_failover_shadow_would_evict_total', {
      description: "Evictions shadow policies' taints would have caused, by policy",
    });
    this.blastRadius = meter.createCounter('cluster_failover_policy_blast_radius_exceeded_total', {
      description:
        'Taints not written: the policy would have held NoExecute/PreferNoExecute taints on more than MAX_FLEET_SHARE_TAINTED_BY_POLICY of the fleet',
    });
  }

  recordWouldTaint(policy: string, effect: string): void {
    this.wouldTaint.add(1, { policy, effect });
  }

  recordWouldEvict(policy: string, count: number): void {
    if (count > 0) this.wouldEvict.add(count, { policy });
  }

  recordBlastRadiusExceeded(policy: string): void {
    this.blastRadius.add(1, { policy });
  }
}
