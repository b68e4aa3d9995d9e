import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A span as the OTLP/HTTP JSON encoding carries it, flattened. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  service?: string;
}

export interface OtlpReceiver {
  endpoint: string;
  spans: ReceivedSpan[];
  metricNames: Set<string>;
  close(): Promise<void>;
}

type KeyValue = { key: string; value: Record<string, unknown> };
const plain = (attributes: KeyValue[] = []) => Object.fromEntries(attributes.map((a) => [a.key, Object.values(a.value)[0]]));

/** A small OTLP/HTTP (JSON) collector on loopback: what an OpenTelemetry Collector would receive. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const metricNames = new Set<string>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        if (req.url === '/v1/traces') {
          for (const rs of body.resourceSpans ?? []) {
            const service = plain(rs.resource?.attributes)['service.name'] as string | undefined;
            for (const ss of rs.scopeSpans ?? [])
              for (const s of ss.spans ?? [])
                spans.push({
                  traceId: s.traceId,
                  spanId: s.spanId,
                  parentSpanId: s.parentSpanId || undefined,
                  name: s.name,
                  kind: s.kind,
                  attributes: plain(s.attributes),
                  service,
                });
          }
        } else if (req.url === '/v1/metrics') {
          for (const rm of body.resourceMetrics ?? []) for (const sm of rm.scopeMetrics ?? []) for (const m of sm.metrics ?? []) metricNames.add(m.name);
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } catch {
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    metricNames,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
