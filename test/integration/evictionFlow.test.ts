import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../shared/clock';
import { loadConfig } from '../../shared/config';
import { applyBinding } from '../../shared/controllers/bindings';
import { applyCluster, reportClusterStatus } from '../../shared/controllers/clusters';
import { executeEviction } from '../../shared/controllers/evictionWorker';
import { runPacer } from '../../shared/controllers/pacer';
import type { ControlPlane, EvictionBatch, EvictionMessage } from '../../shared/controllers/ports';
import { writeBinding } from '../../shared/controllers/state/bindingWrites';
import { manageCluster, resyncTaintManager } from '../../shared/controllers/taintManager';
import { decodeMessage } from '../../shared/queue/encoding';
import { QUEUES } from '../../shared/queue/storageQueue';
import { createControlPlane } from '../../shared/runtime';
import { write } from '../../shared/store/optimistic';
import { silentLogger } from '../../shared/telemetry/log';
import { FailoverMetrics } from '../../shared/telemetry/metrics';
import { startTestStorage, TestStorage } from '../helpers/azurite';
import { binding, cluster } from '../helpers/fleet';

let env: TestStorage;
let plane: ControlPlane;
let clock: ManualClock;
let reader: PeriodicExportingMetricReader;
let exporter: InMemoryMetricExporter;

beforeAll(async () => {
  env = await startTestStorage();
  clock = new ManualClock(new Date());
  exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
  const provider = new MeterProvider({ readers: [reader] });
  plane = createControlPlane(
    env.storage,
    { ...loadConfig({ FAILOVER_ENABLED: 'true', RESOURCE_EVICTION_RATE: '10' }) },
    {
      clock,
      log: silentLogger,
      metrics: new FailoverMetrics(provider.getMeter('test')),
    },
  );
});
afterAll(async () => env.close());

async function metricPoints() {
  await reader.forceFlush();
  const batches = exporter.getMetrics();
  const latest = batches[batches.length - 1];
  const points: Record<string, Array<{ attributes: Record<string, unknown>; value: unknown }>> = {};
  for (const scope of latest.scopeMetrics)
    for (const metric of scope.metrics) points[metric.descriptor.name] = metric.dataPoints.map((p) => ({ attributes: p.attributes, value: p.value }));
  return points;
}

async function drainEvictions(): Promise<EvictionMessage[]> {
  const received = await env.storage.queue(QUEUES.evictions).receiveMessages({ numberOfMessages: 32 });
  return received.receivedMessageItems.flatMap((m) => {
    const decoded = decodeMessage(m.messageText);
    if (!decoded.ok) throw new Error(decoded.reason);
    return (decoded.value as EvictionBatch).evictions;
  });
}

describe('the eviction path on Azurite, step by step', () => {
  it('plans, paces, evicts exactly once, and reports the seed 004 metrics', async () => {
    for (const name of ['c1', 'c2', 'c3']) {
      await applyCluster(plane, cluster(name) as never);
      await reportClusterStatus(plane, name, { conditions: [{ type: 'Ready', status: 'True' }] });
    }
    await applyBinding(plane, binding('web', ['c1']) as never);
    await applyBinding(plane, binding('db', ['c1'], { failover: { cluster: { purgeMode: 'Directly', tolerationSeconds: 0 } } }) as never);
    await applyCluster(plane, cluster('c1', true) as never);

    expect(await manageCluster(plane, 'c1')).toMatchObject({ faulty: true, planned: 2 });
    // Re-running the manager never duplicates a row.
    expect(await manageCluster(plane, 'c1')).toMatchObject({ planned: 0, alreadyDecided: 2 });

    expect(await runPacer(plane)).toMatchObject({ tier: 'primary', rate: 10, scheduled: 2 });
    const messages = await drainEvictions();
    expect(messages).toHaveLength(2);
    clock.advance(5000);
    const outcomes = await Promise.all(messages.map((m) => executeEviction(plane, m)));
    expect(outcomes).toEqual(['evicted', 'evicted']);
    // At-least-once delivery: the same messages again change nothing.
    expect(await Promise.all(messages.map((m) => executeEviction(plane, m)))).toEqual(['duplicate', 'duplicate']);

    // The worker places the binding again at once (Duplicated: every healthy cluster) and the sweep that
    // follows clears the Directly task; the Gracefully one waits for the new copies to be healthy.
    const db = (await plane.bindings.get('rb:default:db'))!.value;
    expect(db.spec.clusters).toEqual([
      { name: 'c2', replicas: 2 },
      { name: 'c3', replicas: 2 },
    ]);
    expect(db.status.schedulerObservedGeneration).toBe(db.generation);
    expect(db.spec.gracefulEvictionTasks).toEqual([]);
    const web = (await plane.bindings.get('rb:default:web'))!.value;
    expect(web.spec.gracefulEvictionTasks).toEqual([expect.objectContaining({ fromCluster: 'c1', purgeMode: 'Gracefully', reason: 'TaintUntolerated' })]);
    expect(await plane.ledger.listPlacements('c1')).toEqual([]);
    expect((await plane.ledger.listPlacements('c2')).map((p) => p.name).sort()).toEqual(['db', 'web']);

    await resyncTaintManager(plane);
    const points = await metricPoints();
    expect(points.eviction_processing_total).toEqual([{ attributes: { queue_name: 'resource-binding', result: 'success' }, value: 2 }]);
    expect(points.eviction_processing_latency_seconds[0].attributes).toEqual({ queue_name: 'resource-binding' });
    expect((points.eviction_processing_latency_seconds[0].value as { count: number }).count).toBe(2);
    expect(points.cluster_fault_num).toEqual([{ attributes: {}, value: 1 }]);
    expect(points.cluster_failure_rate[0].value).toBeCloseTo(1 / 3);
    expect(points.eviction_rate).toEqual([{ attributes: {}, value: 10 }]);
  });

  it('reports queue depth by queue and by cluster and resource kind', async () => {
    // c2 holds `queued` plus the two bindings the first test moved there.
    await applyBinding(plane, binding('queued', ['c2']) as never);
    await applyCluster(plane, cluster('c2', true) as never);
    await manageCluster(plane, 'c2');
    await resyncTaintManager(plane);
    const points = await metricPoints();
    expect(points.eviction_total).toEqual([{ attributes: { queue_name: 'resource-binding' }, value: 3 }]);
    expect(points.evict_kind_total).toEqual([{ attributes: { cluster_name: 'c2', resource_kind: 'apps/v1/Deployment' }, value: 3 }]);
  });
});

describe('the placement index', () => {
  it('stays in step with spec.clusters under concurrent writers', async () => {
    await applyBinding(plane, binding('moving', ['c1']) as never);
    const targets = [['c1', 'c2'], ['c2'], ['c3'], ['c1', 'c3'], ['c2', 'c3'], ['c1']];
    await Promise.all(
      targets.map((clusters) =>
        writeBinding(plane, 'rb:default:moving', (current) => {
          current!.spec.clusters = clusters.map((name) => ({ name, replicas: 1 }));
          return write(current!, null);
        }),
      ),
    );
    const final = (await plane.bindings.get('rb:default:moving'))!.value.spec.clusters!.map((c) => c.name).sort();
    const indexed: string[] = [];
    for (const name of ['c1', 'c2', 'c3']) if ((await plane.ledger.listPlacements(name)).some((p) => p.name === 'moving')) indexed.push(name);
    expect(indexed).toEqual(final);
  });
});
