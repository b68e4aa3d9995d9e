import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { HttpRequest, HttpResponse, HttpResponseInit } from '@azure/functions';
import type { RegisteredFunction } from './functionsCore';
import { triggerOf } from './functionsCore';
import type { Invoke } from './invoke';
import type { HostLifecycle } from './lifecycle';
import { routeTable } from './routes';

/**
 * The local host's HTTP triggers: one node:http server that matches `<routePrefix>/<route>` templates,
 * checks the method, reads the body up to a limit, and runs the function with an @azure/functions
 * HttpRequest, as the Functions host's front end does.
 */

export interface HttpRunnerOptions {
  functions: readonly RegisteredFunction[];
  routePrefix: string;
  /** Upper bound on request bodies (Azure's front end allows 100 MB). */
  maxBodyBytes?: number;
  lifecycle: HostLifecycle;
  invoke: Invoke;
}

type Match = ReturnType<typeof routeTable<RegisteredFunction>>;

export class HttpRunner {
  private server?: Server;
  url = '';

  constructor(private readonly options: HttpRunnerOptions) {}

  /** Listens on `port` (0 picks a free one) and sets `url`. */
  async listen(port: number, host = '127.0.0.1'): Promise<string> {
    const prefix = this.options.routePrefix.replace(/^\/+|\/+$/g, '');
    const match = routeTable(
      this.options.functions.map((fn) => ({ template: `${prefix ? prefix + '/' : ''}${String(triggerOf(fn).route ?? fn.name)}`, target: fn })),
    );
    const server = createServer((req, res) => {
      if (this.options.lifecycle.stopping) {
        sendJson(res, 503, { error: 'the host is shutting down' });
        return;
      }
      void this.options.lifecycle.track(this.serve(req, res, match));
    });
    this.server = server;
    server.keepAliveTimeout = 5_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    const address = server.address();
    this.url = `http://${host}:${typeof address === 'object' && address ? address.port : port}`;
    return this.url;
  }

  /**
   * Stops accepting connections and closes the idle ones; the promise settles once every connection is
   * gone. Requests in flight keep their connection until `closeAllConnections`.
   */
  close(): Promise<void> {
    const server = this.server;
    if (!server) return Promise.resolve();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    return closed;
  }

  /** After in-flight requests are answered: drops the keep-alive connections that would hold `close` open. */
  closeAllConnections(): void {
    this.server?.closeAllConnections();
  }

  private async serve(req: IncomingMessage, res: ServerResponse, match: Match): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    let found: ReturnType<Match>;
    try {
      found = match(url.pathname);
    } catch {
      return sendJson(res, 400, { error: 'the URL path is not valid percent-encoding' });
    }
    if (!found) return sendJson(res, 404, { error: `no function serves ${req.method} ${url.pathname}` });
    const fn = found.target;
    const methods = (triggerOf(fn).methods as string[] | undefined) ?? ['GET', 'POST'];
    if (!methods.includes((req.method ?? 'GET').toUpperCase())) {
      res.setHeader('allow', methods.join(', '));
      return sendJson(res, 405, { error: `method ${req.method} is not allowed here` });
    }
    const limit = this.options.maxBodyBytes ?? 100 * 1024 * 1024;
    let body: Buffer;
    try {
      body = await readAll(req, limit);
    } catch {
      return sendJson(res, 413, { error: `request body exceeds ${limit} bytes` });
    }
    const headers: Record<string, string> = {};
    for (const [key, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[key] = Array.isArray(value) ? value.join(', ') : value;
    }
    const request = new HttpRequest({
      method: req.method ?? 'GET',
      url: url.toString(),
      headers,
      query: Object.fromEntries(url.searchParams.entries()),
      params: found.params,
      body: { bytes: body },
    });
    let status = 500;
    // The response is built inside the invocation so its log line carries the real status.
    const respond = async (...args: unknown[]) => {
      const result = (await fn.handler(...args)) as HttpResponseInit | HttpResponse | undefined;
      const plain = plainJsonResponse(result);
      if (plain) {
        status = plain.status;
        return plain;
      }
      const response = result instanceof HttpResponse ? result : new HttpResponse(result ?? {});
      status = response.status;
      const headers: Array<[string, string]> = [];
      response.headers.forEach((value, key) => headers.push([key, value]));
      return { status, headers, payload: Buffer.from(await response.arrayBuffer()) };
    };
    try {
      const { headers, payload } = (await this.options.invoke({ ...fn, handler: respond }, [request], {
        trigger: 'http',
        fields: () => ({ method: req.method, path: url.pathname, status }),
      })) as { headers: Array<[string, string]>; payload: Buffer };
      res.statusCode = status;
      for (const [key, value] of headers) res.setHeader(key, value);
      res.end(req.method === 'HEAD' ? undefined : payload);
    } catch {
      status = 500;
      if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
    }
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.end(JSON.stringify(body));
}

function readAll(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new Error('too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * The common case, a plain `{ status, jsonBody, headers }` with a content type, serialized the way
 * HttpResponse would (JSON.stringify) without building a web-streams Response per request; anything else
 * (bodies, cookies, HttpResponse objects) goes through HttpResponse.
 */
function plainJsonResponse(
  result: HttpResponseInit | HttpResponse | undefined,
): { status: number; headers: Array<[string, string]>; payload: Buffer } | undefined {
  if (!result || result instanceof HttpResponse || result.body !== undefined || result.cookies || result.jsonBody === undefined) return undefined;
  const given = result.headers;
  if (!given || typeof given !== 'object' || Array.isArray(given) || given instanceof Headers) return undefined;
  const headers = Object.entries(given).map(([key, value]): [string, string] => [key.toLowerCase(), String(value)]);
  if (!headers.some(([key]) => key === 'content-type')) return undefined;
  return { status: result.status ?? 200, headers, payload: Buffer.from(JSON.stringify(result.jsonBody)) };
}
