import { createServer, request, Server } from 'node:http';
import { startTestStorage } from '../test/helpers/azurite';

/**
 * A loopback HTTP proxy that forwards every request to a storage endpoint and counts them, so the bench can
 * say how many Table and Queue requests an eviction costs end to end.
 */
export interface CountingProxy {
  url: string;
  count: () => number;
  /** Requests by method and resource (table or queue, keys and query dropped), for BENCH_VERBOSE. */
  breakdown: () => Record<string, number>;
  /** Table entities returned by reads (entity reads and query pages), counted in the response bodies. */
  rowsRead: () => number;
  /** Milliseconds from request to the end of the answer, summed by the same kinds (where the emulator's one thread goes). */
  busyMs: () => Record<string, number>;
  reset: () => void;
  close: () => Promise<void>;
}

export async function startCountingProxy(target: string): Promise<CountingProxy> {
  const upstream = new URL(target);
  let count = 0;
  let rows = 0;
  let byKind = new Map<string, number>();
  let msByKind = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    count++;
    const path = (req.url ?? '').split('?')[0].split('/')[2] ?? '';
    // An entity (`table(PartitionKey=…,RowKey=…)`) apart from a query of the table (`table()`).
    const resource = path.replace(/\(.+\)$/, ' (entity)').replace(/\(\)$/, '');
    // A table query names its filter's shape (literals dropped): on Azurite each one scans the whole table.
    const filter = req.method === 'GET' && resource && !resource.endsWith('(entity)') ? new URL(req.url ?? '', 'http://x').searchParams.get('$filter') : null;
    const shape = filter ? ` [${filter.replace(/'(?:[^']|'')*'/g, '…').replace(/datetime…/g, '…')}]` : '';
    const kind = `${req.method} ${resource}${/\$batch/.test(req.url ?? '') ? ' (batch)' : ''}${shape}`;
    byKind.set(kind, (byKind.get(kind) ?? 0) + 1);
    const started = performance.now();
    const counted = msByKind;
    const forward = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } },
      (reply) => {
        res.writeHead(reply.statusCode ?? 502, reply.headers);
        if (req.method === 'GET') {
          // Each entity in a Table response carries one RowKey; a marker split across chunks is rare enough to ignore.
          reply.on('data', (chunk: Buffer) => (rows += chunk.toString('latin1').split('"RowKey"').length - 1));
        }
        reply.on('end', () => counted.set(kind, (counted.get(kind) ?? 0) + performance.now() - started));
        reply.pipe(res);
      },
    );
    forward.on('error', () => {
      res.statusCode = 502;
      res.end();
    });
    req.pipe(forward);
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    count: () => count,
    breakdown: () => Object.fromEntries([...byKind].sort((a, b) => b[1] - a[1])),
    rowsRead: () => rows,
    busyMs: () => Object.fromEntries([...msByKind].sort((a, b) => b[1] - a[1]).map(([kind, ms]) => [kind, Math.round(ms)])),
    reset: () => {
      count = 0;
      rows = 0;
      byKind = new Map();
      msByKind = new Map();
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A fresh Azurite whose Table and Queue endpoints are reached through counting proxies: `connection` is the
 * connection string a host uses to be counted; `env.storage` reaches Azurite directly (not counted).
 */
export async function countedStorage() {
  const env = await startTestStorage();
  const origin = (endpoint: string) => new URL(endpoint).origin;
  const tableProxy = await startCountingProxy(origin(env.azurite.tableEndpoint));
  const queueProxy = await startCountingProxy(origin(env.azurite.queueEndpoint));
  const connection = env.azurite.connectionString
    .replace(/QueueEndpoint=[^;]+/, `QueueEndpoint=${queueProxy.url}/devstoreaccount1`)
    .replace(/TableEndpoint=[^;]+/, `TableEndpoint=${tableProxy.url}/devstoreaccount1`);
  return { env, tableProxy, queueProxy, connection };
}
