import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { HttpRequest, HttpRequestInit, HttpResponse, HttpResponseInit } from '@azure/functions';
import { loadConfig } from '../config';
import { BufferedRequest } from './bufferedRequest';
import type { RegisteredFunction } from './functionsCore';
import { triggerOf } from './functionsCore';
import type { Invoke } from './invoke';
import type { HostLifecycle } from './lifecycle';
import { BadRouteError, dotSegmentOf, routeTable } from './routes';

/**
 * The local host's HTTP triggers: one node:http server that matches `<routePrefix>/<route>` templates,
 * checks the method, reads the body up to a limit, and runs the function with an @azure/functions
 * HttpRequest, as the Functions host's front end does.
 */

export interface HttpRunnerOptions {
  functions: readonly RegisteredFunction[];
  routePrefix: string;
  /** Upper bound on request bodies; MAX_REQUEST_BODY_BYTES when not given. */
  maxBodyBytes?: number;
  lifecycle: HostLifecycle;
  invoke: Invoke;
}

/** Azure's front end's own bound, used only when the app settings do not parse (the host reports those itself). */
const FRONT_END_BODY_LIMIT = 100 * 1024 * 1024;
/** How long a refused request's body is read and dropped, so that the client reads the answer, before its connection is dropped. */
const REFUSED_UPLOAD_GRACE_MS = 1000;

/** The limit the functions apply (MAX_REQUEST_BODY_BYTES): the host reads no more than they would accept. */
function configuredBodyLimit(): number {
  try {
    return loadConfig().maxRequestBodyBytes;
  } catch {
    return FRONT_END_BODY_LIMIT;
  }
}

class BodyTooLargeError extends Error {}

type Match = ReturnType<typeof routeTable<RegisteredFunction>>;

export class HttpRunner {
  private server?: Server;
  url = '';
  private readonly maxBodyBytes: number;

  constructor(private readonly options: HttpRunnerOptions) {
    this.maxBodyBytes = options.maxBodyBytes ?? configuredBodyLimit();
  }

  /** Listens on `port` (0 picks a free one) and sets `url`. */
  async listen(port: number, host = '127.0.0.1'): Promise<string> {
    const prefix = this.options.routePrefix.replace(/^\/+|\/+$/g, '');
    const match = routeTable(
      this.options.functions.map((fn) => ({ template: `${prefix ? prefix + '/' : ''}${String(triggerOf(fn).route ?? fn.name)}`, target: fn })),
    );
    const server = createServer((req, res) => {
      if (this.options.lifecycle.stopping) {
        refuse(req, res, 503, 'the host is shutting down');
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
    const target = req.url ?? '/';
    // Refused before URL parsing, which would resolve them: "x/evictiontasks/%2e%2e" must not become "x".
    const dot = dotSegmentOf(target);
    if (dot !== undefined) return refuse(req, res, 400, `the URL path may not hold the dot segment "${dot}" ("." or ".."): name the resource directly`);
    let url: URL;
    let found: ReturnType<Match>;
    try {
      // Appended to the origin, not resolved against it: a target starting with "//" stays a path.
      url = new URL(this.url + (target.startsWith('/') ? target : `/${target}`));
      found = match(url.pathname);
    } catch (error) {
      return refuse(req, res, 400, error instanceof BadRouteError ? error.message : 'the URL is not valid');
    }
    // The host's own address leads to the operator console, as the start log says.
    if (!found && url.pathname === '/' && (req.method === 'GET' || req.method === 'HEAD')) {
      const prefix = this.options.routePrefix.replace(/^\/+|\/+$/g, '');
      res.writeHead(302, { location: `/${prefix ? `${prefix}/` : ''}console/` }).end();
      return;
    }
    if (!found) return refuse(req, res, 404, `no function serves ${req.method} ${url.pathname}`);
    const fn = found.target;
    const methods = (triggerOf(fn).methods as string[] | undefined) ?? ['GET', 'POST'];
    if (!methods.includes((req.method ?? 'GET').toUpperCase())) {
      res.setHeader('allow', methods.join(', '));
      return refuse(req, res, 405, `method ${req.method} is not allowed here`);
    }
    const limit = this.maxBodyBytes;
    // A declared length over the limit is refused before a byte of the body is read.
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > limit) return refuse(req, res, 413, `request body is ${declared} bytes; the limit is ${limit} bytes`);
    let body: Buffer;
    try {
      body = await readAll(req, limit);
    } catch (error) {
      if (error instanceof BodyTooLargeError) return refuse(req, res, 413, `request body exceeds ${limit} bytes`);
      // The client went away mid-body: there is no one to answer.
      req.destroy();
      return;
    }
    // Built with fromEntries, so a header named like an inherited property ("__proto__") is data.
    const headers = Object.fromEntries(
      Object.entries(req.headers).flatMap(([key, value]) => (value === undefined ? [] : [[key, Array.isArray(value) ? value.join(', ') : value]])),
    );
    const method = req.method ?? 'GET';
    const href = url.toString();
    // `nativeRequest` is the Request that HttpRequest wraps: an init field it reads but does not declare
    // (the version is pinned; bufferedRequest.test.ts checks that HttpRequest still reads through it).
    const request = new HttpRequest({
      method,
      url: href,
      query: Object.fromEntries(url.searchParams.entries()),
      params: found.params,
      nativeRequest: new BufferedRequest(href, method, headers, method === 'GET' || method === 'HEAD' ? undefined : body) as unknown as Request,
    } as HttpRequestInit);
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
        // Reads are what the console and CLI poll: at info they drowned every decision in the log.
        quiet: () => (req.method === 'GET' || req.method === 'HEAD') && status < 400,
      })) as { headers: Array<[string, string]>; payload: Buffer };
      res.statusCode = status;
      for (const [key, value] of headers) res.setHeader(key, value);
      if (req.method === 'HEAD') {
        // The length GET would send, without the body.
        res.setHeader('content-length', payload.byteLength);
        res.end();
      } else res.end(payload);
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

/**
 * Answers before the function runs. A body still arriving is read and dropped, never kept: a client that
 * is still sending gets this answer rather than a reset connection (a socket closed with unread data
 * resets). The connection goes once the client is done, or after a moment if it is not.
 */
function refuse(req: IncomingMessage, res: ServerResponse, status: number, error: string): void {
  if (!req.complete) {
    const drop = setTimeout(() => req.socket.destroy(), REFUSED_UPLOAD_GRACE_MS).unref();
    req.once('end', () => clearTimeout(drop));
    req.removeAllListeners('data');
    req.resume();
  }
  sendJson(res, status, { error });
}

/** The body, or BodyTooLargeError as soon as more than `limit` bytes arrived (nothing after that is kept). */
function readAll(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        // Nothing more is kept: what was read goes, and the caller answers 413 (see refuse).
        chunks.length = 0;
        req.off('data', onData);
        reject(new BodyTooLargeError());
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
    req.on('close', () => {
      if (!req.complete) reject(new Error('the client closed the connection before the body was complete'));
    });
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
