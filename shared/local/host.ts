import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { InvocationContext } from '@azure/functions';
import type { QueueClient } from '@azure/storage-queue';
import { encodeMessage } from '../queue/encoding';
import { signalShutdown } from '../shutdown';
import type { LeaseStore } from '../store/ports';
import type { Logger } from '../telemetry/log';
import type { RegisteredFunction } from './functionsCore';
import { triggerOf } from './functionsCore';
import type { HostSettings } from './hostJson';
import { HttpRunner } from './httpRunner';
import { createInvoker } from './invoke';
import { HostLifecycle } from './lifecycle';
import { QueueRunner } from './queueRunner';
import { TimerRunner } from './timerRunner';

/**
 * The local stand-in for the Azure Functions host: it runs the registered functions through three runners,
 * HTTP routes under /api (httpRunner.ts), NCRONTAB timers held by one host at a time through a lease
 * (timerRunner.ts) and Storage queue triggers with the host's semantics (queueRunner.ts). Azure runs the
 * same registrations in production.
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

export class LocalFunctionsHost {
  readonly id = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  private readonly lifecycle = new HostLifecycle();
  private readonly http: HttpRunner;
  private readonly timers: TimerRunner;
  private readonly queues: QueueRunner;
  private readonly loops: Promise<void>[] = [];

  constructor(private readonly options: LocalHostOptions) {
    const { settings, log } = options;
    const shared = { lifecycle: this.lifecycle, invoke: createInvoker(log, settings.functionTimeoutMs, (fn, ctx) => this.writeQueueOutputs(fn, ctx)) };
    this.http = new HttpRunner({
      ...shared,
      functions: this.trigger('httpTrigger'),
      routePrefix: settings.routePrefix,
      maxBodyBytes: options.maxHttpBodyBytes,
    });
    this.timers = new TimerRunner({ ...shared, hostId: this.id, leases: options.leases, log });
    this.queues = new QueueRunner({ ...shared, queue: options.queue, settings: settings.queues, holdSeconds: options.queueHoldSeconds, log });
  }

  /**
   * A function's queue output bindings: each message written with the host.json messageEncoding, then the
   * queue's listener here is woken to poll at once (WebJobs' SharedQueueWatcher does this for messages its
   * own bindings wrote), instead of waiting out its idle back-off.
   */
  private async writeQueueOutputs(fn: RegisteredFunction, ctx: InvocationContext): Promise<void> {
    const { messageEncoding } = this.options.settings.queues;
    for (const [name, binding] of Object.entries(fn.bindings)) {
      if (binding.direction !== 'out' || binding.type !== 'queue') continue;
      const value: unknown = ctx.extraOutputs.get(name);
      if (value === undefined || value === null) continue;
      const queueName = String(binding.queueName);
      const client = this.options.queue(queueName);
      const messages = Array.isArray(value) ? (value as unknown[]) : [value];
      await Promise.all(
        messages.map((message) =>
          client.sendMessage(messageEncoding === 'base64' ? encodeMessage(message) : typeof message === 'string' ? message : JSON.stringify(message)),
        ),
      );
      this.queues.notify(queueName);
    }
  }

  /** The base URL the HTTP triggers listen on, once started. */
  get url(): string {
    return this.http.url;
  }

  private trigger(type: string): RegisteredFunction[] {
    return this.options.functions.filter((fn) => triggerOf(fn).type === type);
  }

  async start(): Promise<void> {
    await this.http.listen(this.options.port, this.options.host);
    for (const fn of this.trigger('timerTrigger')) this.loops.push(this.timers.run(fn));
    for (const fn of this.trigger('queueTrigger')) this.loops.push(this.queues.run(fn));
  }

  /** Stops taking work, lets in-flight invocations finish, then releases timer leases. */
  async stop(): Promise<void> {
    if (this.lifecycle.stopping) return;
    this.lifecycle.stop();
    signalShutdown();
    const closed = this.http.close();
    await Promise.allSettled(this.loops);
    await this.lifecycle.drain();
    this.http.closeAllConnections();
    await closed;
    await this.timers.releaseLeases();
  }
}
