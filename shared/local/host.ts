import { randomUUID } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { HttpRequest, HttpResponse, HttpResponseInit, InvocationContext } from '@azure/functions';
import type { QueueClient } from '@azure/storage-queue';
import { CronExpressionParser } from 'cron-parser';
import { decodeMessage } from '../queue/encoding';
import type { LeaseStore } from '../store/ports';
import { errorFields, Logger } from '../telemetry/log';
import type { RegisteredFunction } from './functionsCore';
import { triggerOf } from './functionsCore';
import type { HostSettings } from './hostJson';
import { routeTable } from './routes';

/**
 * The local stand-in for the Azure Functions host: it runs the registered functions (HTTP routes under
 * /api, NCRONTAB timers held by one host at a time through a lease, and Storage queue triggers with the
 * host's base64, batching, visibility, dequeue-count and poison semantics). Azure runs the same
 * registrations in production.
 */

export interface LocalHostOptions {
  functions: readonly RegisteredFunction[];
  settings: HostSettings;
  queue: (name: string) => QueueClient;
  leases: LeaseStore;
  log: Logger;
  port: number;
  host?: string;
  /** Upper bound on HTTP request bodies the host itself accepts (Azure's front end allows 100 MB). */
  maxHttpBodyBytes?: number;
  /** How long a dequeued message stays invisible while its function runs, renewed meanwhile (Azure: 600 s). */
  queueHoldSeconds?: number;
}

const TIMER_LEASE_MS = 15_000;
// The Functions host holds a dequeued message for 10 minutes while the function runs, renewing it.
const QUEUE_HOLD_SECONDS = 600;

type Invocation = Promise<unknown>;

export class LocalFunctionsHost {
  readonly id = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  private server?: Server;
  private readonly stopping = new AbortController();
  private readonly inFlight = new Set<Invocation>();
  private readonly loops: Promise<void>[] = [];
  private readonly heldLeases = new Set<string>();
  url = '';

  constructor(private readonly options: LocalHostOptions) {}

  private trigger(type: string): RegisteredFunction[] {
    return this.options.functions.filter((fn) => triggerOf(fn).type === type);
  }

  async start(): Promise<void> {
    await this.startHttp();
    for (const fn of this.trigger('timerTrigger')) this.loops.push(this.runTimer(fn));
    for (const fn of this.trigger('queueTrigger')) this.loops.push(this.pollQueue(fn));
  }

  /** Stops taking work, lets in-flight invocations finish, then releases timer leases. */
  async stop(): Promise<void> {
    if (this.stopping.signal.aborted) return;
    this.stopping.abort();
    const closed = new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.closeIdleConnections();
    await Promise.allSettled(this.loops);
    await Promise.allSettled([...this.inFlight]);
    this.server?.closeAllConnections();
    await closed;
    await Promise.allSettled([...this.heldLeases].map((name) => this.options.leases.release(name, this.id)));
  }

  private track<T>(work: Promise<T>): Promise<T> {
    this.inFlight.add(work);
    work.then(
      () => this.inFlight.delete(work),
      () => this.inFlight.delete(work),
    );
    return work;
  }

  private context(fn: RegisteredFunction, triggerMetadata?: Record<string, unknown>): InvocationContext {
    const invocationId = randomUUID();
    return new InvocationContext({
      invocationId,
      functionName: fn.name,
      triggerMetadata,
      options: { trigger: triggerOf(fn) as never },
      logHandler: (level, ...args) => {
        const message = args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' ');
        const write = level === 'error' || level === 'critical' ? this.options.log.error : level === 'warning' ? this.options.log.warn : this.options.log.info;
        write(message, { function: fn.name, invocationId });
      },
    });
  }

  /** Runs one invocation with the functionTimeout, logging one line: function, trigger, duration, outcome. */
  private async invoke(fn: RegisteredFunction, trigger: string, args: unknown[], ctx: InvocationContext, extra: () => Record<string, unknown> = () => ({})): Promise<unknown> {
    const started = performance.now();
    let outcome = 'succeeded';
    const timeoutMs = this.options.settings.functionTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        Promise.resolve().then(() => fn.handler(...args, ctx)),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`function timed out after ${timeoutMs} ms (functionTimeout)`)), timeoutMs);
        }),
      ]);
    } catch (error) {
      outcome = 'failed';
      this.options.log.error('function failed', { function: fn.name, invocationId: ctx.invocationId, ...errorFields(error) });
      throw error;
    } finally {
      clearTimeout(timer);
      this.options.log.info('invocation', {
        function: fn.name,
        trigger,
        invocationId: ctx.invocationId,
        durationMs: Math.round((performance.now() - started) * 10) / 10,
        outcome,
        ...extra(),
      });
    }
  }

  // ------------------------------------------------------------------------------------------- HTTP

  private async startHttp(): Promise<void> {
    const prefix = this.options.settings.routePrefix.replace(/^\/+|\/+$/g, '');
    const match = routeTable(
      this.trigger('httpTrigger').map((fn) => ({ template: `${prefix ? prefix + '/' : ''}${String(triggerOf(fn).route ?? fn.name)}`, target: fn })),
    );
    this.server = createServer((req, res) => {
      if (this.stopping.signal.aborted) {
        sendJson(res, 503, { error: 'the host is shutting down' });
        return;
      }
      void this.track(this.serveHttp(req, res, match));
    });
    this.server.keepAliveTimeout = 5_000;
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(this.options.port, this.options.host ?? '127.0.0.1', () => resolve());
    });
    const address = this.server.address();
    const port = typeof address === 'object' && address ? address.port : this.options.port;
    this.url = `http://${this.options.host ?? '127.0.0.1'}:${port}`;
  }

  private async serveHttp(req: IncomingMessage, res: ServerResponse, match: ReturnType<typeof routeTable<RegisteredFunction>>): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    let found: ReturnType<typeof match>;
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
    const limit = this.options.maxHttpBodyBytes ?? 100 * 1024 * 1024;
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
    const ctx = this.context(fn);
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
      const { headers, payload } = (await this.invoke({ ...fn, handler: respond }, 'http', [request], ctx, () => ({ method: req.method, path: url.pathname, status }))) as {
        headers: Array<[string, string]>;
        payload: Buffer;
      };
      res.statusCode = status;
      for (const [key, value] of headers) res.setHeader(key, value);
      res.end(req.method === 'HEAD' ? undefined : payload);
    } catch {
      status = 500;
      if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
    }
  }

  // ------------------------------------------------------------------------------------------- timers

  private async runTimer(fn: RegisteredFunction): Promise<void> {
    const schedule = String(triggerOf(fn).schedule);
    if (schedule.trim().split(/\s+/).length !== 6) throw new Error(`timer ${fn.name}: schedule "${schedule}" is not a 6-field NCRONTAB expression`);
    let last: Date | undefined;
    while (!this.stopping.signal.aborted) {
      const next = CronExpressionParser.parse(schedule, { currentDate: new Date(), tz: 'UTC' }).next().toDate();
      try {
        await delay(Math.max(0, next.getTime() - Date.now()), undefined, { signal: this.stopping.signal });
      } catch {
        return;
      }
      // One host at a time runs a timer, as the Functions host does with its blob lease.
      let held = false;
      try {
        held = await this.options.leases.acquire(`timer-${fn.name}`, this.id, TIMER_LEASE_MS);
      } catch (error) {
        this.options.log.warn('timer lease check failed', { function: fn.name, ...errorFields(error) });
      }
      if (!held) continue;
      this.heldLeases.add(`timer-${fn.name}`);
      const renew = setInterval(() => void this.options.leases.acquire(`timer-${fn.name}`, this.id, TIMER_LEASE_MS).catch(() => undefined), TIMER_LEASE_MS / 3);
      const isPastDue = Date.now() - next.getTime() > 1000;
      const following = CronExpressionParser.parse(schedule, { currentDate: next, tz: 'UTC' }).next().toDate();
      const timer = { isPastDue, scheduleStatus: { last: (last ?? next).toISOString(), next: following.toISOString(), lastUpdated: new Date().toISOString() } };
      try {
        await this.track(this.invoke(fn, 'timer', [timer], this.context(fn)));
      } catch {
        // Logged by invoke; a timer without a retry policy simply waits for its next occurrence.
      } finally {
        clearInterval(renew);
      }
      last = next;
    }
  }

  // ------------------------------------------------------------------------------------------- queues

  private async pollQueue(fn: RegisteredFunction): Promise<void> {
    const queueName = String(triggerOf(fn).queueName);
    const client = this.options.queue(queueName);
    const poison = queueName.endsWith('-poison') ? undefined : this.options.queue(`${queueName}-poison`);
    const { batchSize, newBatchThreshold, maxPollingIntervalMs } = this.options.settings.queues;
    const mine = new Set<Promise<void>>();
    let backoff = 0;
    while (!this.stopping.signal.aborted) {
      // Fetch another batch only when in-flight work has dropped to newBatchThreshold, as the host does.
      while (mine.size > newBatchThreshold && !this.stopping.signal.aborted) await Promise.race(mine);
      if (this.stopping.signal.aborted) break;
      let received;
      try {
        received = await client.receiveMessages({ numberOfMessages: batchSize, visibilityTimeout: this.options.queueHoldSeconds ?? QUEUE_HOLD_SECONDS });
      } catch (error) {
        this.options.log.warn('queue poll failed', { queue: queueName, ...errorFields(error) });
        received = undefined;
      }
      const messages = received?.receivedMessageItems ?? [];
      if (messages.length === 0) {
        // Randomized exponential back-off between empty polls, from 100 ms up to maxPollingInterval.
        backoff = Math.min(maxPollingIntervalMs, backoff === 0 ? 100 : backoff * 2);
        const wait = backoff / 2 + Math.random() * (backoff / 2);
        try {
          await delay(wait, undefined, { signal: this.stopping.signal });
        } catch {
          break;
        }
        continue;
      }
      backoff = 0;
      for (const message of messages) {
        const work = this.track(this.processMessage(fn, client, poison, message));
        mine.add(work);
        void work.finally(() => mine.delete(work));
      }
    }
    await Promise.allSettled([...mine]);
  }

  private async processMessage(
    fn: RegisteredFunction,
    client: QueueClient,
    poison: QueueClient | undefined,
    message: { messageId: string; popReceipt: string; messageText: string; dequeueCount: number; insertedOn: Date; expiresOn: Date; nextVisibleOn: Date },
  ): Promise<void> {
    const { maxDequeueCount, visibilityTimeoutMs, messageEncoding } = this.options.settings.queues;
    const queueName = client.name;
    // Keep the message invisible while the function runs, as the host does; each renewal changes the receipt.
    const hold = this.options.queueHoldSeconds ?? QUEUE_HOLD_SECONDS;
    let renewing = Promise.resolve();
    const renewal = setInterval(() => {
      renewing = renewing.then(async () => {
        try {
          const updated = await client.updateMessage(message.messageId, message.popReceipt, undefined, hold);
          if (updated.popReceipt) message.popReceipt = updated.popReceipt;
        } catch (error) {
          this.options.log.warn('could not renew message visibility', { queue: queueName, ...errorFields(error) });
        }
      });
    }, (hold * 1000) / 3);
    const stopRenewing = async () => {
      clearInterval(renewal);
      await renewing;
    };
    const toPoison = async (why: string) => {
      await stopRenewing();
      if (poison) {
        await poison.createIfNotExists();
        await poison.sendMessage(message.messageText, { messageTimeToLive: -1 });
      }
      await client.deleteMessage(message.messageId, message.popReceipt);
      this.options.log.warn('message moved to poison queue', { queue: queueName, messageId: message.messageId, dequeueCount: message.dequeueCount, reason: why });
    };
    let value: unknown = message.messageText;
    if (messageEncoding === 'base64') {
      const decoded = decodeMessage(message.messageText);
      if (!decoded.ok) return toPoison(decoded.reason);
      value = decoded.value;
    }
    const ctx = this.context(fn, {
      id: message.messageId,
      popReceipt: message.popReceipt,
      dequeueCount: message.dequeueCount,
      insertionTime: message.insertedOn.toISOString(),
      expirationTime: message.expiresOn.toISOString(),
      nextVisibleTime: message.nextVisibleOn.toISOString(),
      queueTrigger: typeof value === 'string' ? value : JSON.stringify(value),
    });
    try {
      await this.invoke(fn, 'queue', [value], ctx, () => ({ queue: queueName, dequeueCount: message.dequeueCount }));
    } catch (error) {
      await stopRenewing();
      try {
        if (message.dequeueCount >= maxDequeueCount) await toPoison(`failed ${message.dequeueCount} time(s): ${(error as Error)?.message ?? error}`);
        else await client.updateMessage(message.messageId, message.popReceipt, undefined, Math.round(visibilityTimeoutMs / 1000));
      } catch (releaseError) {
        this.options.log.warn('could not release failed message', { queue: queueName, ...errorFields(releaseError) });
      }
      return;
    }
    await stopRenewing();
    try {
      await client.deleteMessage(message.messageId, message.popReceipt);
    } catch (error) {
      this.options.log.warn('could not delete processed message', { queue: queueName, ...errorFields(error) });
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
function plainJsonResponse(result: HttpResponseInit | HttpResponse | undefined): { status: number; headers: Array<[string, string]>; payload: Buffer } | undefined {
  if (!result || result instanceof HttpResponse || result.body !== undefined || result.cookies || result.jsonBody === undefined) return undefined;
  const given = result.headers;
  if (!given || typeof given !== 'object' || Array.isArray(given) || given instanceof Headers) return undefined;
  const headers = Object.entries(given as Record<string, string>).map(([key, value]): [string, string] => [key.toLowerCase(), String(value)]);
  if (!headers.some(([key]) => key === 'content-type')) return undefined;
  return { status: result.status ?? 200, headers, payload: Buffer.from(JSON.stringify(result.jsonBody)) };
}
