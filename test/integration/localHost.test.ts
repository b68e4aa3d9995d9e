import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installFunctionsCore, RegisteredFunction, registeredFunctions, triggerOf } from '../../shared/local/functionsCore';
installFunctionsCore();
import { app, InvocationContext } from '@azure/functions';
import { LocalFunctionsHost } from '../../shared/local/host';
import type { HostSettings } from '../../shared/local/hostJson';
import { RENEW_EVERY_MS, TAKE_EVERY_MS, TIMER_LEASE_MS } from '../../shared/local/timerRunner';
import { encodeMessage } from '../../shared/queue/encoding';
import type { LeaseStore } from '../../shared/store/ports';
import { TableLeaseStore, TABLES } from '../../shared/store/tableStorage';
import { jsonLogger, Logger, silentLogger } from '../../shared/telemetry/log';
import { startTestStorage, TestStorage } from '../helpers/azurite';

const settings: HostSettings = {
  routePrefix: 'api',
  functionTimeoutMs: 10_000,
  queues: { batchSize: 4, newBatchThreshold: 2, maxPollingIntervalMs: 200, visibilityTimeoutMs: 0, maxDequeueCount: 3, messageEncoding: 'base64' },
};

// Registered through the real @azure/functions `app.*` API, exactly as functions/ does.
const received: Array<{ message: unknown; dequeueCount: unknown }> = [];
let failures = 0;
let running = 0;
let peak = 0;
const timerRuns: Array<{ at: number }> = [];
app.storageQueue('echoQueue', {
  queueName: 'echo',
  connection: 'AzureWebJobsStorage',
  handler: async (message: unknown, ctx: InvocationContext) => {
    received.push({ message, dequeueCount: ctx.triggerMetadata?.dequeueCount });
  },
});
app.storageQueue('failingQueue', {
  queueName: 'failing',
  connection: 'AzureWebJobsStorage',
  handler: async () => {
    failures++;
    throw new Error('always fails');
  },
});
app.storageQueue('slowQueue', {
  queueName: 'slow',
  connection: 'AzureWebJobsStorage',
  handler: async () => {
    running++;
    peak = Math.max(peak, running);
    await new Promise((r) => setTimeout(r, 150));
    running--;
  },
});
app.http('things', {
  methods: ['GET', 'POST'],
  route: 'things/{id}/parts/{part?}',
  handler: async (req) => ({
    jsonBody: { id: req.params.id, part: req.params.part ?? null, q: req.query.get('q'), body: req.method === 'POST' ? await req.json() : null },
  }),
});
app.http('slowHttp', {
  methods: ['GET'],
  route: 'slow',
  handler: async () => {
    await new Promise((r) => setTimeout(r, 500));
    return { status: 200, body: 'done' };
  },
});

const testFunctions = (...names: string[]): RegisteredFunction[] => registeredFunctions().filter((f) => names.includes(f.name));

let env: TestStorage;
beforeAll(async () => {
  env = await startTestStorage(['echo', 'failing', 'slow']);
});
afterAll(async () => env.close());

function newHost(functions: RegisteredFunction[], overrides: Partial<HostSettings> = {}, log: Logger = silentLogger, leases?: LeaseStore) {
  return new LocalFunctionsHost({
    functions,
    settings: { ...settings, ...overrides },
    queue: (name) => env.storage.queue(name),
    leases: leases ?? new TableLeaseStore(env.storage.table(TABLES.leases)),
    log,
    port: 0,
  });
}

type LogLine = { level: string; msg: string; function?: string; trigger?: string; outcome?: string };

/** What the host would print at `info` and at `debug`, from one run: each line goes to both loggers. */
function capturedLogs() {
  const atInfo: LogLine[] = [];
  const atDebug: LogLine[] = [];
  const info = jsonLogger({ write: (line) => atInfo.push(JSON.parse(line)), level: 'info' });
  const debug = jsonLogger({ write: (line) => atDebug.push(JSON.parse(line)), level: 'debug' });
  const both = (level: keyof Logger) => (message: string, fields?: Record<string, unknown>) => {
    info[level](message, fields);
    debug[level](message, fields);
  };
  const log: Logger = { debug: both('debug'), info: both('info'), warn: both('warn'), error: both('error') };
  return { log, atInfo, atDebug };
}

const invocations = (lines: LogLine[], fn: string) => lines.filter((l) => l.msg === 'invocation' && l.function === fn);

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000) {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 25));
  }
}

const depth = async (queue: string) => (await env.storage.queue(queue).getProperties()).approximateMessagesCount ?? 0;

describe('the app registrations', () => {
  it('are captured from the real @azure/functions API, with their bindings', async () => {
    await import('../../functions/index.js');
    const byName = Object.fromEntries(registeredFunctions().map((f) => [f.name, triggerOf(f)]));
    expect(byName.apply).toMatchObject({ type: 'httpTrigger', route: 'apply' });
    expect(byName.clusterStatus).toMatchObject({ type: 'httpTrigger', route: 'clusters/{name}/status' });
    expect(byName.clusterMonitor).toMatchObject({ type: 'timerTrigger', schedule: '*/5 * * * * *' });
    expect(byName.taintEvaluation).toMatchObject({ type: 'queueTrigger', queueName: 'taint-evaluations', connection: 'AzureWebJobsStorage' });
  });
});

describe('queue triggers', () => {
  it('decode base64 JSON, pass dequeueCount, and delete the message on success', async () => {
    const host = newHost(testFunctions('echoQueue'));
    await host.start();
    await env.storage.queue('echo').sendMessage(encodeMessage({ cluster: 'member1', n: 1 }));
    await until(() => received.length === 1);
    await host.stop();
    expect(received[0]).toEqual({ message: { cluster: 'member1', n: 1 }, dequeueCount: 1 });
    expect(await depth('echo')).toBe(0);
  });

  it('send a message that is not base64 straight to <queue>-poison without invoking the function', async () => {
    const before = received.length;
    const host = newHost(testFunctions('echoQueue'));
    await host.start();
    await env.storage.queue('echo').sendMessage('{"raw":"json"}');
    await until(async () => (await depth('echo-poison')) === 1);
    await host.stop();
    expect(received.length).toBe(before);
    const poisoned = await env.storage.queue('echo-poison').receiveMessages();
    expect(poisoned.receivedMessageItems[0].messageText).toBe('{"raw":"json"}');
  });

  it('retry a failing message maxDequeueCount times, then move it to <queue>-poison', async () => {
    const host = newHost(testFunctions('failingQueue'));
    await host.start();
    const text = encodeMessage({ bad: true });
    await env.storage.queue('failing').sendMessage(text);
    await until(async () => (await depth('failing-poison')) === 1);
    await host.stop();
    expect(failures).toBe(3);
    expect(await depth('failing')).toBe(0);
    const poisoned = await env.storage.queue('failing-poison').receiveMessages();
    expect(poisoned.receivedMessageItems[0].messageText).toBe(text);
  });

  it('run at most batchSize + newBatchThreshold messages at once', async () => {
    const host = newHost(testFunctions('slowQueue'));
    for (let i = 0; i < 12; i++) await env.storage.queue('slow').sendMessage(encodeMessage({ i }));
    await host.start();
    await until(async () => (await depth('slow')) === 0 && running === 0);
    await host.stop();
    expect(peak).toBeGreaterThan(1);
    expect(peak).toBeLessThanOrEqual(settings.queues.batchSize + settings.queues.newBatchThreshold);
  });
});

describe('timer triggers', () => {
  it('run each occurrence on one host only when two hosts share the storage account', async () => {
    const name = `everySecond${Date.now()}`;
    app.timer(name, {
      schedule: '* * * * * *',
      handler: async () => {
        timerRuns.push({ at: Date.now() });
      },
    });
    const fn = testFunctions(name);
    const a = newHost(fn);
    const b = newHost(fn);
    await Promise.all([a.start(), b.start()]);
    await new Promise((r) => setTimeout(r, 3500));
    await Promise.all([a.stop(), b.stop()]);
    const seconds = timerRuns.map((r) => Math.floor(r.at / 1000));
    expect(timerRuns.length).toBeGreaterThanOrEqual(3);
    expect(new Set(seconds).size).toBe(seconds.length);
  });
});

describe('timer leases', () => {
  /** Two timers (every second, every 4 s) and hosts that run them, each recording who ran what. */
  function timersOnHosts() {
    const everySecond = `handover${Date.now()}`;
    const everyFour = `sparse${Date.now()}`;
    app.timer(everySecond, { schedule: '* * * * * *', handler: async () => {} });
    app.timer(everyFour, { schedule: '*/4 * * * * *', handler: async () => {} });
    const runs: Array<{ fn: string; host: string; at: number; following: number }> = [];
    const on = (host: string) =>
      testFunctions(everySecond, everyFour).map((fn) => ({
        ...fn,
        handler: (...args: unknown[]) => {
          // The occurrence after this one (scheduleStatus.next) names this one.
          runs.push({ fn: fn.name, host, at: Date.now(), following: Date.parse((args[0] as { scheduleStatus: { next: string } }).scheduleStatus.next) });
          return fn.handler(...args);
        },
      }));
    const ran = (fn: string, host?: string) => runs.filter((r) => r.fn === fn && (host === undefined || r.host === host));
    /** A host whose lease calls are counted, and whose storage `kill` cuts off: it then neither renews nor releases, as a killed process. */
    const host = (name: string) => {
      const table = new TableLeaseStore(env.storage.table(TABLES.leases));
      const calls = { acquire: 0, renew: 0, release: 0 };
      let dead = false;
      const gone = () => Promise.reject(new Error(`host ${name} is gone`));
      const leases: LeaseStore = {
        acquire: (...args) => {
          calls.acquire++;
          return dead ? gone() : table.acquire(...args);
        },
        renew: (...args) => {
          calls.renew++;
          return dead ? gone() : table.renew(...args);
        },
        release: async (...args) => {
          calls.release++;
          if (!dead) await table.release(...args);
        },
      };
      return {
        host: newHost(on(name), {}, silentLogger, leases),
        calls,
        kill: () => {
          dead = true;
        },
      };
    };
    return { everySecond, everyFour, runs, ran, host };
  }

  it('stay with a live leader, at about one request a second, and pass to another host within seconds when it dies without releasing them', async () => {
    const { everySecond, everyFour, runs, ran, host } = timersOnHosts();
    const a = host('a');
    const b = host('b');
    try {
      await a.host.start();
      await until(() => ran(everySecond, 'a').length >= 2);
      await b.host.start();
      // A live leader keeps the lease, also across the 4 s between two runs of the sparse timer (longer
      // than the lease itself): b runs nothing.
      const bStarted = Date.now();
      const before = { ...a.calls };
      await until(() => ran(everyFour, 'a').filter((r) => r.at > bStarted).length >= 2, 12_000);
      expect(runs.filter((r) => r.host === 'b')).toEqual([]);
      // Idle cost: the leader renews once a second (one write, no read); the standby reads it every TAKE_EVERY_MS.
      const seconds = (Date.now() - bStarted) / 1000;
      const leader = a.calls.renew - before.renew + a.calls.acquire - before.acquire;
      console.log(
        `timer lease calls over ${seconds.toFixed(1)} s: leader ${(leader / seconds).toFixed(2)}/s, standby ${(b.calls.acquire / seconds).toFixed(2)}/s`,
      );
      expect(a.calls.acquire).toBe(before.acquire);
      expect(leader).toBeLessThanOrEqual(Math.ceil((seconds * 1000) / RENEW_EVERY_MS) + 1);
      expect(b.calls.acquire).toBeLessThanOrEqual(Math.ceil((seconds * 1000) / TAKE_EVERY_MS) + 1);
      expect(b.calls.renew).toBe(0);

      a.kill();
      const killed = Date.now();
      await a.host.stop();
      await until(() => ran(everySecond, 'b').length >= 3, 10_000);
      const handoverMs = ran(everySecond, 'b')[0].at - killed;
      console.log(`timer lease handover after the leader died: ${handoverMs} ms`);
      // The lease runs out at most TIMER_LEASE_MS after a's last renewal; b reads it when it runs out and
      // takes it, then runs the next occurrence.
      expect(handoverMs).toBeLessThanOrEqual(TIMER_LEASE_MS + 1000 + 500);
      // Then b runs every occurrence of both timers, and no occurrence ran twice.
      const taken = ran(everySecond, 'b').map((r) => r.following);
      expect([taken[1] - taken[0], taken[2] - taken[1]]).toEqual([1000, 1000]);
      for (const fn of [everySecond, everyFour]) {
        const occurrences = ran(fn).map((r) => r.following);
        expect(new Set(occurrences).size).toBe(occurrences.length);
      }
    } finally {
      await Promise.all([a.host.stop(), b.host.stop()]);
    }
  }, 30_000);

  it('pass to another host sooner when the leader stops and releases them', async () => {
    const { everySecond, ran, host } = timersOnHosts();
    const a = host('a');
    const b = host('b');
    try {
      await a.host.start();
      await until(() => ran(everySecond, 'a').length >= 1);
      await b.host.start();
      await until(() => ran(everySecond, 'a').length >= 3);
      const stopped = Date.now();
      await a.host.stop();
      expect(a.calls.release).toBe(1);
      await until(() => ran(everySecond, 'b').length >= 2, 10_000);
      const handoverMs = ran(everySecond, 'b')[0].at - stopped;
      console.log(`timer lease handover after the leader stopped: ${handoverMs} ms`);
      // b reads the lease at least every TAKE_EVERY_MS, takes it once released, then runs the next occurrence.
      expect(handoverMs).toBeLessThanOrEqual(TAKE_EVERY_MS + 1000 + 500);
      const occurrences = ran(everySecond).map((r) => r.following);
      expect(new Set(occurrences).size).toBe(occurrences.length);
    } finally {
      await Promise.all([a.host.stop(), b.host.stop()]);
    }
  }, 30_000);
});

describe('invocation log lines', () => {
  it('log a timer occurrence that did nothing at debug only (silent at info), and one that logged at info', async () => {
    const idle = `idleTimer${Date.now()}`;
    const busy = `busyTimer${Date.now()}`;
    app.timer(idle, { schedule: '* * * * * *', handler: async () => {} });
    app.timer(busy, { schedule: '* * * * * *', handler: async (_timer, ctx) => ctx.log('did something') });
    const { log, atInfo, atDebug } = capturedLogs();
    const host = newHost(testFunctions(idle, busy), {}, log);
    await host.start();
    await until(() => invocations(atDebug, idle).length >= 2 && invocations(atDebug, busy).length >= 2);
    await host.stop();
    expect(invocations(atInfo, idle)).toEqual([]);
    expect(atInfo.filter((l) => l.function === idle)).toEqual([]);
    expect(invocations(atDebug, idle).every((l) => l.level === 'debug' && l.trigger === 'timer' && l.outcome === 'succeeded')).toBe(true);
    expect(invocations(atInfo, busy).length).toBeGreaterThanOrEqual(2);
    expect(invocations(atInfo, busy).every((l) => l.level === 'info')).toBe(true);
    expect(atInfo.some((l) => l.function === busy && l.msg === 'did something' && l.level === 'info')).toBe(true);
  });

  it('keep a failing timer at error (and its invocation line at info)', async () => {
    const failing = `failingTimer${Date.now()}`;
    app.timer(failing, {
      schedule: '* * * * * *',
      handler: async () => {
        throw new Error('boom');
      },
    });
    const { log, atInfo } = capturedLogs();
    const host = newHost(testFunctions(failing), {}, log);
    await host.start();
    await until(() => invocations(atInfo, failing).length >= 1);
    await host.stop();
    expect(atInfo.some((l) => l.function === failing && l.msg === 'function failed' && l.level === 'error')).toBe(true);
    expect(invocations(atInfo, failing)[0]).toMatchObject({ level: 'info', outcome: 'failed' });
  });

  it('keep HTTP writes, failed reads and queue invocations at info even when the function logs nothing; good reads at debug', async () => {
    const { log, atInfo } = capturedLogs();
    const host = newHost(testFunctions('things', 'echoQueue'), {}, log);
    await host.start();
    const before = received.length;
    await fetch(`${host.url}/api/things/a/parts`);
    await fetch(`${host.url}/api/things/a/parts`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    await env.storage.queue('echo').sendMessage(encodeMessage({ quiet: true }));
    await until(() => received.length > before && invocations(atInfo, 'echoQueue').length === 1);
    await host.stop();
    expect(invocations(atInfo, 'things')).toEqual([expect.objectContaining({ level: 'info', trigger: 'http', method: 'POST', status: 200 })]);
    expect(invocations(atInfo, 'echoQueue')).toEqual([expect.objectContaining({ level: 'info', trigger: 'queue', outcome: 'succeeded' })]);
  });
});

describe('host start and stop', () => {
  it('run many timer and queue loops without a MaxListenersExceededWarning, and stop them at once', async () => {
    // Daily schedules and empty queues: every loop sleeps at once, which is when abort listeners piled up
    // on the host's one AbortSignal (12 timers + 3 queues here; the app has 7 + 5).
    const names = Array.from({ length: 12 }, (_, i) => `sleepyTimer${i}x${Date.now()}`);
    for (const name of names) app.timer(name, { schedule: '0 0 0 * * *', handler: async () => {} });
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const host = newHost([...testFunctions(...names), ...testFunctions('echoQueue', 'slowQueue', 'failingQueue')]);
      await host.start();
      await new Promise((r) => setTimeout(r, 300));
      const stopping = Date.now();
      await host.stop();
      expect(Date.now() - stopping).toBeLessThan(2000);
      await new Promise((r) => setImmediate(r));
      expect(warnings.map((w) => `${w.name}: ${w.message}`)).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});

describe('HTTP triggers', () => {
  it('route by template with optional parameters, query and JSON bodies; 404 and 405 otherwise', async () => {
    const host = newHost(testFunctions('things'));
    await host.start();
    const get = await fetch(`${host.url}/api/things/a%20b/parts?q=1`);
    expect(await get.json()).toEqual({ id: 'a b', part: null, q: '1', body: null });
    const post = await fetch(`${host.url}/api/things/x/parts/y`, { method: 'POST', body: '{"v":2}', headers: { 'content-type': 'application/json' } });
    expect(await post.json()).toEqual({ id: 'x', part: 'y', q: null, body: { v: 2 } });
    expect((await fetch(`${host.url}/api/nothing`)).status).toBe(404);
    const wrong = await fetch(`${host.url}/api/things/x/parts`, { method: 'DELETE' });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('GET, POST');
    await host.stop();
  });

  it('finish an in-flight request when the host is asked to stop', async () => {
    const host = newHost(testFunctions('slowHttp'));
    await host.start();
    const pending = fetch(`${host.url}/api/slow`).then(async (r) => ({ status: r.status, text: await r.text() }));
    await new Promise((r) => setTimeout(r, 100));
    await host.stop();
    expect(await pending).toEqual({ status: 200, text: 'done' });
  });
});
