import { type AddressInfo, createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP proxy in front of one HTTP server (an Azurite endpoint) that injects faults at random,
 * from a PRNG the caller seeds, for chaos runs. Unlike faultProxy.ts (deterministic: "cut the next K
 * responses"), every request and response draws its own fate:
 *
 * - `resetRequest`: the connection is reset after a random number of request bytes (0 to
 *   `resetRequestMaxBytes`) have gone upstream; if the request is shorter, at the first byte of its
 *   response. The server may have carried the request out or not: the client cannot know.
 * - `resetResponse`: the response is cut by a reset after a random number of its bytes (0 to
 *   `resetResponseMaxBytes`; a shorter response goes through whole and counts as no fault).
 * - `stall`: a random number of response bytes go through, then the rest is held for `stallMs`.
 * - `delay`: the whole response is held for `delayMs` before its first byte.
 *
 * Requests and responses alternate on a connection (the Azure SDKs speak HTTP/1.1 without pipelining or
 * `Expect: 100-continue`), so a response starts with the first upstream byte after the client has sent
 * (part of) a request. Faults are counted when they take effect.
 */

export type ChaosFaultKind = 'resetRequest' | 'resetResponse' | 'stall' | 'delay';
export const CHAOS_FAULT_KINDS: readonly ChaosFaultKind[] = ['resetRequest', 'resetResponse', 'stall', 'delay'];

export interface ChaosProxyOptions {
  target: { host: string; port: number };
  /** Uniform in [0, 1): seed it for a reproducible mix of faults. */
  random: () => number;
  /** Probability per request (resetRequest) or per response (the others). */
  rates: Record<ChaosFaultKind, number>;
  resetRequestMaxBytes?: number;
  resetResponseMaxBytes?: number;
  /** [min, max) milliseconds. */
  delayMs?: [number, number];
  stallMs?: [number, number];
}

/** One fault as it took effect: when, which, and the request it hit (its request line; for a batch, the operations inside). */
export interface ChaosFaultRecord {
  at: string;
  kind: ChaosFaultKind;
  /** Bytes of the request (resetRequest) or of the response (the others) forwarded before the fault acted. */
  bytes: number;
  holdMs?: number;
  request: string;
}

export interface TcpChaosProxy {
  readonly host: string;
  readonly port: number;
  /** Faults are injected only while enabled (the proxy forwards faithfully otherwise). */
  enabled: boolean;
  readonly stats: { connections: number; requests: number; responses: number; faults: Record<ChaosFaultKind, number> };
  /** The faults that took effect, oldest first (at most 20,000). */
  readonly log: readonly ChaosFaultRecord[];
  close(): Promise<void>;
}

const REQUEST_HEAD_BYTES = 4096;
const MAX_LOG = 20_000;

/** "METHOD /path" of a request, and for a table batch the operations it carries ("PUT events, POST events"). */
export function describeRequest(head: Buffer): string {
  const text = head.toString('latin1');
  const line = text.slice(0, Math.max(0, text.indexOf('\r\n'))).replace(/ HTTP\/1\.1$/, '');
  if (!line.includes('$batch')) return line;
  const inner = [...text.matchAll(/\r\n(PUT|POST|PATCH|MERGE|DELETE|GET) https?:\/\/[^/ ]+\/[^/ ]+\/([^ ?]+)/g)].map(
    (m) => `${m[1]} ${decodeURIComponent(m[2])}`,
  );
  return `${line} [${inner.join(', ')}${text.length >= REQUEST_HEAD_BYTES ? ', …' : ''}]`;
}

const between = (random: () => number, [min, max]: [number, number]) => Math.floor(min + random() * (max - min));
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** What happens to one response: forward `before` bytes, then reset, or hold `holdMs` and go on. */
interface ResponsePlan {
  kind?: ChaosFaultKind;
  /** Bytes still to forward before the fault acts (undefined: no fault pending). */
  before?: number;
  holdMs?: number;
}

export async function startTcpChaosProxy(options: ChaosProxyOptions): Promise<TcpChaosProxy> {
  const { random, rates } = options;
  const resetRequestMaxBytes = options.resetRequestMaxBytes ?? 600;
  const resetResponseMaxBytes = options.resetResponseMaxBytes ?? 1500;
  const delayMs = options.delayMs ?? [50, 600];
  const stallMs = options.stallMs ?? [2000, 4000];
  const faults = Object.fromEntries(CHAOS_FAULT_KINDS.map((k) => [k, 0])) as Record<ChaosFaultKind, number>;
  const stats = { connections: 0, requests: 0, responses: 0 };
  const sockets = new Set<Socket>();
  const proxy = { enabled: true };
  const log: ChaosFaultRecord[] = [];
  const record = (kind: ChaosFaultKind, bytes: number, request: Buffer, holdMs?: number) => {
    faults[kind]++;
    if (log.length < MAX_LOG)
      log.push({ at: new Date().toISOString(), kind, bytes, ...(holdMs !== undefined ? { holdMs } : {}), request: describeRequest(request) });
  };

  const server: Server = createServer((client) => {
    stats.connections++;
    const upstream = createConnection({ host: options.target.host, port: options.target.port });
    sockets.add(client).add(upstream);
    client.once('close', () => sockets.delete(client));
    upstream.once('close', () => sockets.delete(upstream));
    /** No more forwarding either way (a reset is on its way, or the connection is gone). */
    let dead = false;
    let killed = false;
    const kill = (reset: boolean) => {
      dead = true;
      if (killed) return;
      killed = true;
      if (reset) client.resetAndDestroy();
      else client.destroy();
      upstream.destroy();
    };
    // Either side going away takes the other with it; errors are the point of this proxy, not failures.
    client.on('error', () => kill(false));
    upstream.on('error', () => kill(false));
    client.on('end', () => upstream.end());
    client.on('close', () => kill(false));

    let phase: 'idle' | 'request' | 'response' = 'idle';
    /** Request bytes still to forward before the reset, when this request is to be reset. */
    let requestBudget: number | undefined;
    let plan: ResponsePlan = {};
    /** The first bytes of the current request, to name it in the fault log. */
    let requestHead = Buffer.alloc(0);
    /** Bytes of the current request forwarded so far. */
    let requestBytes = 0;
    /** Bytes of the current response forwarded so far. */
    let responseBytes = 0;

    // Upstream → client goes through one ordered queue, so that a held response holds what follows it.
    const queue: Array<Buffer | 'end'> = [];
    let pumping = false;

    /** Resets the client once what was forwarded is in its socket buffer, so it parses what it got first. */
    const resetSoon = () => {
      upstream.pause();
      client.pause();
      client.write(Buffer.alloc(0), () => setTimeout(() => kill(true), 20));
      dead = true;
      queue.length = 0;
    };

    const pump = async () => {
      if (pumping) return;
      pumping = true;
      try {
        while (queue.length > 0 && !dead) {
          const item = queue.shift()!;
          if (item === 'end') {
            client.end();
            continue;
          }
          let chunk = item;
          if (plan.kind === 'delay' && plan.holdMs !== undefined) {
            const hold = plan.holdMs;
            plan = {};
            record('delay', 0, requestHead, hold);
            upstream.pause();
            await sleep(hold);
            if (dead) return;
            upstream.resume();
          }
          if (plan.before !== undefined && (plan.kind === 'stall' || plan.kind === 'resetResponse')) {
            const head = chunk.subarray(0, plan.before);
            plan.before -= head.length;
            responseBytes += head.length;
            if (head.length > 0) client.write(head);
            if (plan.before > 0) continue; // the whole chunk went; the fault acts further on
            chunk = chunk.subarray(head.length);
            if (plan.kind === 'resetResponse') {
              record('resetResponse', responseBytes, requestHead);
              plan = {};
              resetSoon();
              return;
            }
            const hold = plan.holdMs ?? 0;
            record('stall', responseBytes, requestHead, hold);
            plan = {};
            upstream.pause();
            await sleep(hold);
            if (dead) return;
            upstream.resume();
          }
          responseBytes += chunk.length;
          if (chunk.length > 0) client.write(chunk);
        }
      } finally {
        pumping = false;
      }
    };

    client.on('data', (chunk: Buffer) => {
      if (dead) return;
      if (phase !== 'request') {
        phase = 'request';
        stats.requests++;
        requestHead = Buffer.alloc(0);
        requestBytes = 0;
        requestBudget = proxy.enabled && random() < rates.resetRequest ? between(random, [0, resetRequestMaxBytes]) : undefined;
      }
      if (requestHead.length < REQUEST_HEAD_BYTES) requestHead = Buffer.concat([requestHead, chunk.subarray(0, REQUEST_HEAD_BYTES - requestHead.length)]);
      if (requestBudget === undefined) {
        requestBytes += chunk.length;
        upstream.write(chunk);
        return;
      }
      const head = chunk.subarray(0, requestBudget);
      requestBudget -= head.length;
      requestBytes += head.length;
      if (head.length > 0) upstream.write(head);
      if (requestBudget > 0) return;
      record('resetRequest', requestBytes, requestHead);
      requestBudget = undefined;
      // Give the forwarded bytes a moment to reach the server, then reset both ends.
      upstream.write(Buffer.alloc(0), () => setTimeout(() => kill(true), 5));
      dead = true;
    });

    upstream.on('data', (chunk: Buffer) => {
      if (dead) return;
      if (phase === 'request') {
        phase = 'response';
        stats.responses++;
        if (requestBudget !== undefined) {
          // The request was shorter than its budget: it is reset as its response begins.
          record('resetRequest', requestBytes, requestHead);
          requestBudget = undefined;
          kill(true);
          return;
        }
        plan = {};
        responseBytes = 0;
        if (proxy.enabled) {
          const r = random();
          if (r < rates.resetResponse) plan = { kind: 'resetResponse', before: between(random, [0, resetResponseMaxBytes]) };
          else if (r < rates.resetResponse + rates.stall)
            plan = { kind: 'stall', before: between(random, [0, resetResponseMaxBytes]), holdMs: between(random, stallMs) };
          else if (r < rates.resetResponse + rates.stall + rates.delay) {
            plan = { kind: 'delay', holdMs: between(random, delayMs) };
          }
        }
      }
      queue.push(chunk);
      void pump();
    });
    upstream.on('end', () => {
      queue.push('end');
      void pump();
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    host: `127.0.0.1:${port}`,
    port,
    get enabled() {
      return proxy.enabled;
    },
    set enabled(value: boolean) {
      proxy.enabled = value;
    },
    get stats() {
      return { ...stats, faults: { ...faults } };
    },
    get log() {
      return log;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
