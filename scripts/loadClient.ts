import { Agent, request as httpRequest } from 'node:http';

/**
 * A load generator's POST over keep-alive connections (at most `sockets` at once): answers the status code,
 * drains the body. node:http rather than fetch, so the benches measure the host, not the client's pool.
 */
export function keepAlivePost(base: string, sockets: number) {
  const url = new URL(base);
  const agent = new Agent({ keepAlive: true, maxSockets: sockets });
  const post = (path: string, headers: Record<string, string>, body: string) =>
    new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        { host: url.hostname, port: url.port, path, method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } },
        (reply) => {
          reply.resume();
          reply.on('end', () => resolve(reply.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  return { post, close: () => agent.destroy() };
}
