import { afterAll, beforeAll, expect, it } from 'vitest';
import { applyObjects, binding, cluster } from '../helpers/fleet';
import { api, HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';
import { OtlpReceiver, ReceivedSpan, startOtlpReceiver } from '../helpers/otlpReceiver';

let receiver: OtlpReceiver;
let host: HostProcess | undefined;
beforeAll(async () => {
  receiver = await startOtlpReceiver();
});
afterAll(async () => {
  await host?.stop();
  await receiver.close();
});

/** The span names of one failure story, in the order the work happens. */
const STORY = [
  'POST clusterStatus',
  'send taint-evaluations',
  'process taint-evaluations',
  'taint.evaluate',
  'send taint-manager',
  'process taint-manager',
  'taintManager.plan',
  'pacer.schedule',
  // The first second of a failure's evictions runs in the invocation that planned it (no queue in between);
  // at 20/s that is all three here.
  'eviction.execute',
  'scheduler.place',
  'gracefulEviction.sweep',
];

it('exports one trace per failure, from the health webhook to the last moved workload, over OTLP', async () => {
  host = await startHostProcess({
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_SERVICE_NAME: 'cluster-failover-e2e',
    OTEL_BSP_SCHEDULE_DELAY: '200',
    OTEL_METRIC_EXPORT_INTERVAL: '500',
    FAILOVER_ENABLED: 'true',
    RESOURCE_EVICTION_RATE: '20',
  });
  await applyObjects(host.url, [
    {
      apiVersion: 'policy.karmada.io/v1alpha1',
      kind: 'ClusterTaintPolicy',
      metadata: { name: 'traced-not-ready' },
      spec: {
        targetCluster: { clusterNames: ['tr1'] },
        matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False'] }],
        taintsToAdd: [{ key: 'traced/not-ready', effect: 'NoExecute', addOnMatchSeconds: 1 }],
      },
    },
    cluster('tr1'),
    cluster('tr2'),
    ...['web', 'api', 'db'].map((name) =>
      binding(`traced-${name}`, ['tr1'], {
        placement: { clusterAffinity: { clusterNames: ['tr1', 'tr2'] } },
        failover: { cluster: { purgeMode: 'Directly', tolerationSeconds: 0 } },
      }),
    ),
  ]);
  const failing = await api(host.url, 'POST', 'clusters/tr1/status', { conditions: [{ type: 'Ready', status: 'False', reason: 'Unreachable' }] });
  expect(failing.status).toBe(200);
  await waitFor(
    async () => {
      const items = (await api(host!.url, 'GET', 'resourcebindings/default')).body.items as Array<{
        metadata: { name: string };
        spec: { clusters: Array<{ name: string }>; gracefulEvictionTasks?: unknown[] };
      }>;
      const moved = items.filter(
        (b) =>
          b.metadata.name.startsWith('traced-') && b.spec.clusters.map((c) => c.name).join() === 'tr2' && (b.spec.gracefulEvictionTasks ?? []).length === 0,
      );
      return moved.length === 3 ? true : undefined;
    },
    20_000,
    100,
  );
  // Stopping flushes what is still buffered.
  expect(await host.stop()).toBe(0);
  const logs = host.output();
  host = undefined;

  // The failure's report: the clusters' agents reported Ready=True before it, each in a trace of its own.
  const tainted = receiver.spans.find((s) => s.name === 'taint.evaluate' && String(s.attributes['failover.taint'] ?? '').startsWith('added'));
  const webhook = receiver.spans.find(
    (s) => s.name === 'POST clusterStatus' && s.attributes['http.response.status_code'] === 200 && s.traceId === tainted?.traceId,
  );
  expect(webhook, 'the webhook span was exported').toBeDefined();
  const story = receiver.spans.filter((s) => s.traceId === webhook!.traceId);
  const names = new Set(story.map((s) => s.name));
  for (const name of STORY) expect(names.has(name), `span "${name}" is in the failure's trace`).toBe(true);
  expect(story.every((s) => s.service === 'cluster-failover-e2e')).toBe(true);
  // Every span but the webhook's hangs off another span of the same trace.
  const ids = new Set(story.map((s) => s.spanId));
  expect(story.filter((s) => s.parentSpanId && !ids.has(s.parentSpanId))).toEqual([]);
  expect(story.filter((s) => !s.parentSpanId).map((s) => s.name)).toEqual(['POST clusterStatus']);

  const executed = story.filter((s) => s.name === 'eviction.execute');
  expect(executed.map((s) => s.attributes['failover.binding']).sort()).toEqual(['rb:default:traced-api', 'rb:default:traced-db', 'rb:default:traced-web']);
  expect(executed.every((s) => s.attributes['failover.outcome'] === 'evicted' && s.attributes['failover.cluster'] === 'tr1')).toBe(true);
  const scheduled = story.filter((s) => s.name === 'pacer.schedule');
  expect(scheduled.every((s) => s.attributes['failover.tier'] === 'primary' && s.attributes['failover.rate'] === 20)).toBe(true);
  expect(story.find((s) => s.name === 'taint.evaluate' && s.attributes['failover.taint'])?.attributes['failover.taint']).toBe(
    'added traced/not-ready:NoExecute',
  );

  // The decision log lines carry the same trace id.
  const evictedLines = logs
    .split('\n')
    .filter((l) => l.includes('"msg":"evicted"'))
    .map((l) => JSON.parse(l));
  expect(evictedLines.length).toBe(3);
  expect(evictedLines.every((l) => l.traceId === webhook!.traceId)).toBe(true);

  // The failover metrics went out through the same exporter.
  for (const metric of ['eviction_processing_total', 'eviction_processing_latency_seconds', 'cluster_fault_num', 'cluster_failure_rate', 'eviction_rate'])
    expect(receiver.metricNames.has(metric), metric).toBe(true);

  // Printed for reference: the span and metric names as exported.
  const summary = [...new Map(story.map((s: ReceivedSpan) => [s.name, Object.keys(s.attributes).sort().join(',')])).entries()];
  console.log(JSON.stringify({ traceId: webhook!.traceId, spans: story.length, names: summary, metrics: [...receiver.metricNames].sort() }));
}, 60_000);
