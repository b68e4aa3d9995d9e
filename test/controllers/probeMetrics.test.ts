import { AggregationTemporality, DataPoint, Histogram, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { decodeApplyDocuments } from '../../shared/api/decode';
import { sleep } from '../../shared/clock';
import { applyObjects } from '../../shared/controllers/apply';
import { reportClusterStatus } from '../../shared/controllers/clusters';
import { probeClusters } from '../../shared/controllers/probes';
import type { ProbeResult } from '../../shared/kube/api';
import { FailoverMetrics, PROBE_LATENCY_BUCKETS } from '../../shared/telemetry/metrics';
import { cluster } from '../helpers/fleet';
import { memoryPlane } from '../helpers/memoryPlane';

/**
 * The probe metrics of standalone mode, read back through the OpenTelemetry SDK: per cluster a latency
 * histogram, a counter by outcome, and the Ready state (1/0) as each probe round leaves it.
 */

interface Point {
  attributes: Record<string, unknown>;
  value: unknown;
}

let provider: MeterProvider | undefined;
afterEach(async () => provider?.shutdown());

function setup(answers: Record<string, { result: ProbeResult; delayMs?: number }>) {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
  provider = new MeterProvider({ readers: [reader] });
  const m = memoryPlane({ CLUSTER_FAILURE_THRESHOLD_SECONDS: '30' });
  m.plane.metrics = new FailoverMetrics(provider.getMeter('test'));
  m.plane.members = {
    // Every cluster with a scripted answer has an endpoint; the others (push only) have none.
    directory: {
      endpoints: (clusters) => Promise.resolve(clusters.filter((c) => c.name in answers).map((c) => ({ cluster: c.name, server: `https://${c.name}:6443` }))),
    },
    prober: {
      probe: async (endpoint) => {
        const answer = answers[endpoint.cluster];
        if (answer.delayMs) await sleep(answer.delayMs);
        return answer.result;
      },
    },
  };
  const points = async () => {
    await reader.forceFlush();
    const batches = exporter.getMetrics();
    const found: Record<string, Point[]> = {};
    const histograms: Record<string, Array<DataPoint<Histogram>>> = {};
    for (const scope of batches[batches.length - 1].scopeMetrics)
      for (const metric of scope.metrics) {
        found[metric.descriptor.name] = metric.dataPoints.map((p) => ({ attributes: p.attributes, value: p.value }));
        if (metric.descriptor.name === 'cluster_probe_latency_seconds') histograms[metric.descriptor.name] = metric.dataPoints as Array<DataPoint<Histogram>>;
      }
    const latency = (histograms.cluster_probe_latency_seconds ?? []).sort((a, b) =>
      String(a.attributes.cluster_name).localeCompare(String(b.attributes.cluster_name)),
    );
    return { found, latency };
  };
  return { m, answers, points };
}

const byCluster = (points: Point[] | undefined) =>
  Object.fromEntries(
    (points ?? []).map((p) => [`${String(p.attributes.cluster_name)}${p.attributes.outcome ? `/${String(p.attributes.outcome)}` : ''}`, p.value]),
  );

describe('probe metrics', () => {
  it('counts every probe by cluster and outcome, times each one, and reports Ready as 1/0 per cluster', async () => {
    const { m, answers, points } = setup({
      m1: { result: { outcome: 'ok' } },
      m2: { result: { outcome: 'notOk', detail: 'readyz answered 500' }, delayMs: 30 },
      m3: { result: { outcome: 'unreachable', detail: 'no answer in 5000 ms' } },
    });
    await applyObjects(m.plane, decodeApplyDocuments([cluster('m1'), cluster('m2'), cluster('m3'), cluster('pushed')]));
    await reportClusterStatus(m.plane, 'pushed', { conditions: [{ type: 'Ready', status: 'True' }] });

    // First round: a cluster with no Ready yet gets the first answer at once.
    expect((await probeClusters(m.plane)).changed.sort()).toEqual(['m1', 'm2', 'm3']);
    let { found, latency } = await points();
    expect(byCluster(found.cluster_probe_total)).toEqual({ 'm1/ok': 1, 'm2/notOk': 1, 'm3/unreachable': 1 });
    // Every listed cluster, probed or not: the pushed one reports its own Ready.
    expect(byCluster(found.cluster_ready_state)).toEqual({ m1: 1, m2: 0, m3: 0, pushed: 1 });
    expect(latency.map((p) => [p.attributes.cluster_name, p.value.count])).toEqual([
      ['m1', 1],
      ['m2', 1],
      ['m3', 1],
    ]);
    expect(latency.find((p) => p.attributes.cluster_name === 'm2')!.value.sum).toBeGreaterThanOrEqual(0.025);
    expect(latency[0].value.buckets.boundaries).toEqual(PROBE_LATENCY_BUCKETS);

    // m2 recovers: Ready flips only once the answer has held for the threshold; the counters add up.
    answers.m2 = { result: { outcome: 'ok' } };
    await probeClusters(m.plane);
    ({ found } = await points());
    expect(byCluster(found.cluster_probe_total)).toEqual({ 'm1/ok': 2, 'm2/notOk': 1, 'm2/ok': 1, 'm3/unreachable': 2 });
    expect(byCluster(found.cluster_ready_state)).toMatchObject({ m2: 0 });
    m.clock.advance(30_000);
    expect((await probeClusters(m.plane)).changed).toEqual(['m2']);
    ({ found, latency } = await points());
    expect(byCluster(found.cluster_ready_state)).toEqual({ m1: 1, m2: 1, m3: 0, pushed: 1 });
    expect(latency.map((p) => [p.attributes.cluster_name, p.value.count])).toEqual([
      ['m1', 3],
      ['m2', 3],
      ['m3', 3],
    ]);

    // A deleted cluster drops out of the next round's snapshot.
    const snapshot = vi.spyOn(m.plane.metrics.probes, 'setReadyStates');
    await m.clusters.delete('m3');
    await probeClusters(m.plane);
    expect(snapshot).toHaveBeenLastCalledWith({ m1: true, m2: true, pushed: true });
  });

  it('a cluster left out of the next snapshot (deleted) is no longer observed', async () => {
    const exporter = new InMemoryMetricExporter(AggregationTemporality.DELTA);
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
    provider = new MeterProvider({ readers: [reader] });
    const metrics = new FailoverMetrics(provider.getMeter('test'));
    const observed = async () => {
      await reader.forceFlush();
      const batches = exporter.getMetrics();
      const metric = batches[batches.length - 1].scopeMetrics.flatMap((s) => s.metrics).find((x) => x.descriptor.name === 'cluster_ready_state');
      return byCluster(metric?.dataPoints.map((p) => ({ attributes: p.attributes, value: p.value })));
    };
    metrics.probes.setReadyStates({ m1: true, m2: false });
    expect(await observed()).toEqual({ m1: 1, m2: 0 });
    metrics.probes.setReadyStates({ m1: false });
    expect(await observed()).toEqual({ m1: 0 });
  });
});
