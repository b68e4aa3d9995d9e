import { HttpRequest, InvocationContext } from '@azure/functions';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../shared/api/errors';
import { ConfigError } from '../../shared/config';
import { manageCluster, resyncTaintManager } from '../../shared/controllers/taintManager';
import { httpFunction, json } from '../../shared/http/respond';
import { jsonLogger } from '../../shared/telemetry/log';
import { startTelemetry } from '../../shared/telemetry/setup';
import { annotate, currentTraceCarrier, inSpan, traceIds } from '../../shared/telemetry/tracing';
import { tracedQueueHandler } from '../../shared/telemetry/triggers';
import { binding, cluster } from '../helpers/fleet';
import { applyTo } from '../helpers/memoryLoop';
import { memoryPlane } from '../helpers/memoryPlane';

// An in-memory exporter stands in for Application Insights / OTLP.
const exporter = new InMemorySpanExporter();
beforeAll(() => {
  // As the OTLP setup does: global provider, async context manager, W3C propagator.
  new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).register();
});
beforeEach(() => exporter.reset());

const spans = () => exporter.getFinishedSpans();
const ctx = (functionName: string) => new InvocationContext({ functionName, invocationId: 'test' });

describe('trace context across a queue hop', () => {
  it('a consumer continues the trace its message carries', async () => {
    let message: Record<string, unknown> = {};
    await inSpan('producer', {}, async () => {
      message = { cluster: 'member1', ...currentTraceCarrier() };
    });
    expect(message.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    await tracedQueueHandler('taint-manager', async () => annotate({ 'failover.cluster': 'member1' }))(message, ctx('taintManager'));
    const [producer, consumer] = spans();
    expect(consumer.name).toBe('process taint-manager');
    expect(consumer.spanContext().traceId).toBe(producer.spanContext().traceId);
    expect(consumer.parentSpanContext?.spanId).toBe(producer.spanContext().spanId);
    expect(consumer.attributes).toMatchObject({ 'messaging.destination.name': 'taint-manager', 'faas.name': 'taintManager', 'failover.cluster': 'member1' });
  });
  it('a message without traceparent starts a new trace', async () => {
    await tracedQueueHandler('scheduler', async () => {})({ binding: 'rb:a:b' }, ctx('scheduler'));
    expect(spans()[0].parentSpanContext).toBeUndefined();
  });
  it('marks a failed handler as an error and rethrows', async () => {
    await expect(tracedQueueHandler('evictions', async () => Promise.reject(new Error('storage down')))({}, ctx('evictionWorker'))).rejects.toThrow(
      'storage down',
    );
    expect(spans()[0].status).toMatchObject({ code: 2, message: 'storage down' });
  });
});

describe('HTTP spans', () => {
  const handler = httpFunction(async (req) => {
    if (req.query.get('fail')) throw new ApiError(404, 'nope');
    return json(200, { ok: true });
  });
  it('names the span by method and function, and continues a caller traceparent', async () => {
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    await handler(new HttpRequest({ method: 'POST', url: 'http://localhost/api/clusters/m1/status', headers: { traceparent } }), ctx('clusterStatus'));
    const [span] = spans();
    expect(span.name).toBe('POST clusterStatus');
    expect(span.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(span.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.response.status_code': 200 });
  });
  it('records the status of a refused request', async () => {
    const res = await handler(new HttpRequest({ method: 'GET', url: 'http://localhost/api/x?fail=1' }), ctx('clusters'));
    expect(res.status).toBe(404);
    expect(spans()[0].attributes['http.response.status_code']).toBe(404);
  });
});

describe('logs', () => {
  it('carry the trace and span ids inside a span, and none outside', async () => {
    const lines: string[] = [];
    const log = jsonLogger((line) => lines.push(line));
    log.info('outside');
    await inSpan('decision', {}, async () => log.info('evicted', { cluster: 'm1' }));
    const [outside, inside] = lines.map((l) => JSON.parse(l));
    expect(outside.traceId).toBeUndefined();
    expect(inside).toMatchObject({ msg: 'evicted', cluster: 'm1', traceId: spans()[0].spanContext().traceId, spanId: spans()[0].spanContext().spanId });
    expect(traceIds()).toEqual({});
  });
});

describe('exporter choice', () => {
  // First: the choice is made once per process.
  it('exports nothing, and fails on nothing, with neither Application Insights nor OTLP set', async () => {
    const telemetry = startTelemetry({});
    expect(telemetry.exporter).toBe('none');
    await telemetry.shutdown();
  });
  it.each([
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
      'OTEL_EXPORTER_OTLP_PROTOCOL: must be http/protobuf or http/json (grpc is not bundled)',
    ],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, 'OTEL_EXPORTER_OTLP_ENDPOINT: must be an http(s) URL such as http://collector:4318'],
  ])('refuses invalid settings naming the setting: %j', (env, message) => {
    expect(() => startTelemetry(env)).toThrow(ConfigError);
    expect(() => startTelemetry(env)).toThrow(message);
  });
});

describe('one trace per failure, whoever plans it', () => {
  it("the taint manager's resync plans a failure's rows in the trace of the write that tainted the cluster", async () => {
    const m = memoryPlane();
    await applyTo(m, [cluster('t1'), cluster('t2'), binding('web', ['t1'])]);
    let failureTrace = '';
    await inSpan('failure', {}, async () => {
      failureTrace = traceIds().traceId!;
      await applyTo(m, [cluster('t1', true)]);
    });
    expect((await m.plane.clusters.get('t1'))?.value.faultTraceparent).toContain(failureTrace);
    // The taint manager's message was lost: the timer's resync plans, in a trace of its own.
    let resyncTrace = '';
    await inSpan('resync timer', {}, async () => {
      resyncTrace = traceIds().traceId!;
      expect((await resyncTaintManager(m.plane)).planned).toBe(1);
    });
    expect(resyncTrace).not.toBe(failureTrace);
    const [row] = await m.ledger.scanEvictions({ cluster: 't1' });
    expect(row.record.traceparent?.split('-')[1]).toBe(failureTrace);
    // The recovery clears it: the next failure is a trace of its own.
    await applyTo(m, [cluster('t1')]);
    expect((await m.plane.clusters.get('t1'))?.value.faultTraceparent).toBeUndefined();
  });

  it('does not plan a later episode in an earlier trace when the taints changed without our write (Karmada changed them)', async () => {
    const m = memoryPlane();
    await applyTo(m, [cluster('k1'), cluster('k2'), binding('api', ['k1'])]);
    await inSpan('first failure', {}, () => applyTo(m, [cluster('k1', true)]));
    const stored = (await m.plane.clusters.get('k1'))!;
    // The taint went and came back outside our writes: a new episode, the recorded trace left behind.
    const later = new Date(Date.parse(stored.value.taints[0].timeAdded) + 60_000).toISOString();
    await m.plane.clusters.replace('k1', { ...stored.value, taints: stored.value.taints.map((t) => ({ ...t, timeAdded: later })) }, stored.etag);
    let planTrace = '';
    await inSpan('taint-manager message', {}, async () => {
      planTrace = traceIds().traceId!;
      expect((await manageCluster(m.plane, 'k1')).planned).toBe(1);
    });
    const [row] = await m.ledger.scanEvictions({ cluster: 'k1' });
    expect(row.record.traceparent?.split('-')[1]).toBe(planTrace);
  });
});
