import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer, Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, expect, it } from 'vitest';

/**
 * The Application Insights path, end to end on loopback: the Azure Monitor exporter always posts over
 * HTTPS to `<IngestionEndpoint>/v2.1/track`, so a stand-in ingestion server with a throw-away certificate
 * receives what Application Insights would.
 */
interface Envelope {
  name: string;
  tags: Record<string, string>;
  data: { baseType: string; baseData: { name?: string; metrics?: Array<{ name: string }>; properties?: Record<string, string> } };
}

let server: Server;
const envelopes: Envelope[] = [];
const bad: string[] = [];
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ai-ingest-'));
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=127.0.0.1'],
    { stdio: 'ignore' },
  );
  server = createServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let items: Envelope[] = [];
      try {
        const gzipped = raw[0] === 0x1f && raw[1] === 0x8b;
        const text = (gzipped ? gunzipSync(raw) : raw).toString('utf8').trim();
        items = text.startsWith('[')
          ? JSON.parse(text)
          : text
              .split('\n')
              .filter(Boolean)
              .map((l) => JSON.parse(l));
      } catch (error) {
        bad.push(`${req.url} ${req.headers['content-encoding']} ${raw.subarray(0, 16).toString('hex')}: ${String(error)}`);
      }
      envelopes.push(...items);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ itemsReceived: items.length, itemsAccepted: items.length, errors: [] }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** Runs test/helpers/telemetryProbe.ts with these settings; returns what it printed. */
async function runProbe(env: Record<string, string>): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, '..', 'helpers', 'telemetryProbe.ts')], {
    env: { ...process.env, APPLICATIONINSIGHTS_CONNECTION_STRING: '', OTEL_EXPORTER_OTLP_ENDPOINT: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(code, out.slice(0, 2000).replace(/[^\x20-\x7e\n]/g, '?')).toBe(0);
  return out;
}

it('exports every trace (no sampling) and the metrics to Application Insights when its connection string is set', async () => {
  const port = (server.address() as AddressInfo).port;
  const out = await runProbe({
    APPLICATIONINSIGHTS_CONNECTION_STRING: `InstrumentationKey=00000000-0000-0000-0000-000000000000;IngestionEndpoint=https://127.0.0.1:${port}/`,
    // The stand-in's certificate is self-signed.
    NODE_TLS_REJECT_UNAUTHORIZED: '0',
    APPLICATIONINSIGHTS_STATSBEAT_DISABLED: 'true',
  });
  expect(out).toContain('{"exporter":"azure-monitor"}');
  expect(bad).toEqual([]);

  const spans = envelopes.filter((e) => e.data.baseType === 'RemoteDependencyData' || e.data.baseType === 'RequestData');
  // 20 stories of 3 spans each: none sampled away (the distro's default would keep about 5 traces/s).
  const planned = spans.filter((e) => e.data.baseData.name === 'taintManager.plan');
  expect(planned).toHaveLength(20);
  for (const plan of planned) {
    const operation = plan.tags['ai.operation.id'];
    const story = spans.filter((e) => e.tags['ai.operation.id'] === operation);
    expect(story.map((e) => `${e.data.baseType}:${e.data.baseData.name ?? ''}`).sort()).toEqual([
      'RemoteDependencyData:send evictions',
      'RemoteDependencyData:taintManager.plan',
      'RequestData:',
    ]);
    // The consumer (the queue handler) hangs off the producer, as across a real queue hop.
    const send = story.find((e) => e.data.baseData.name === 'send evictions')!;
    const consumer = story.find((e) => e.data.baseType === 'RequestData')!;
    expect(consumer.tags['ai.operation.parentId']).toBe((send.data.baseData as { id?: string }).id);
    expect(story.every((e) => (e as { sampleRate?: number }).sampleRate === 100 && e.tags['ai.cloud.role'] === 'cluster-failover')).toBe(true);
  }
  expect(planned[0].data.baseData.properties?.['failover.cluster']).toMatch(/^probe-/);
  const metricNames = new Set(envelopes.filter((e) => e.data.baseType === 'MetricData').flatMap((e) => e.data.baseData.metrics?.map((m) => m.name) ?? []));
  expect(metricNames.has('eviction_processing_total')).toBe(true);
}, 60_000);

it('exports over OTLP/HTTP with protobuf, the default protocol', async () => {
  const bodies: Array<{ path: string; type: string; body: Buffer }> = [];
  const collector = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push({ path: req.url ?? '', type: String(req.headers['content-type']), body: Buffer.concat(chunks) });
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  try {
    const out = await runProbe({
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}`,
      OTEL_SERVICE_NAME: 'probe-protobuf',
    });
    expect(out).toContain('{"exporter":"otlp"}');
  } finally {
    await new Promise<void>((resolve) => collector.close(() => resolve()));
  }
  const traces = bodies.filter((b) => b.path === '/v1/traces');
  const metrics = bodies.filter((b) => b.path === '/v1/metrics');
  expect(traces.length).toBeGreaterThan(0);
  expect(metrics.length).toBeGreaterThan(0);
  expect([...traces, ...metrics].every((b) => b.type === 'application/x-protobuf')).toBe(true);
  // Protobuf strings are raw UTF-8 on the wire: the span names, the service and the metric are there.
  const traceBytes = Buffer.concat(traces.map((t) => t.body));
  for (const name of ['taintManager.plan', 'send evictions', 'process evictions', 'probe-protobuf'])
    expect(traceBytes.includes(Buffer.from(name)), name).toBe(true);
  // Not JSON: an ExportTraceServiceRequest starts with field 1 (resource_spans), length-delimited.
  expect(traces.every((t) => t.body[0] === 0x0a)).toBe(true);
  expect(Buffer.concat(metrics.map((m) => m.body)).includes(Buffer.from('eviction_processing_total'))).toBe(true);
}, 60_000);
