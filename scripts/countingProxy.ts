import { createServer, request, Server } from 'node:http';

/**
 * A loopback HTTP proxy that forwards every request to a storage endpoint and counts them, so the bench can
 * say how many Table and Queue requests an eviction costs end to end.
 */
export interface CountingProxy {
  url: string;
  count: () => number;
  reset: () => void;
  close: () => Promise<void>;
}

export async function startCountingProxy(target: string): Promise<CountingProxy> {
  const upstream = new URL(target);
  let count = 0;
  const server: Server = createServer((req, res) => {
    count++;
    const forward = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } },
      (reply) => {
        res.writeHead(reply.statusCode ?? 502, reply.headers);
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
    reset: () => (count = 0),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
