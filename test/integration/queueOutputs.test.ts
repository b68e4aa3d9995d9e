import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installFunctionsCore, RegisteredFunction, registeredFunctions } from '../../shared/local/functionsCore';
installFunctionsCore();
import { app, HttpRequest, InvocationContext } from '@azure/functions';
import { LocalFunctionsHost } from '../../shared/local/host';
import type { HostSettings } from '../../shared/local/hostJson';
import { decodeMessage } from '../../shared/queue/encoding';
import { handingOff, outboxOf, taintManagerOutput } from '../../shared/queue/handOff';
import { QUEUES, StorageMessageQueue } from '../../shared/queue/storageQueue';
import { TableLeaseStore, TABLES } from '../../shared/store/tableStorage';
import { silentLogger } from '../../shared/telemetry/log';
import { startTestStorage, TestStorage } from '../helpers/azurite';

/**
 * Taint-manager messages handed to the host through the queue output binding (shared/queue/handOff.ts): the
 * local host writes them when the function returns and wakes its own listener of the queue at once, as the
 * Functions host does for messages its bindings wrote; a function that fails sends them itself.
 */

const settings: HostSettings = {
  routePrefix: 'api',
  functionTimeoutMs: 10_000,
  // Long enough that an idle listener would be seconds away from its next poll.
  queues: { batchSize: 4, newBatchThreshold: 2, maxPollingIntervalMs: 60_000, visibilityTimeoutMs: 0, maxDequeueCount: 3, messageEncoding: 'base64' },
};

let env: TestStorage;
let taintManager: StorageMessageQueue<{ cluster: string }>;
/** The queue as a trigger's plane has it: through the invocation's outbox. */
const handingOffQueue = (ctx: InvocationContext) => taintManager.through(outboxOf(ctx)!);
const received: Array<{ message: unknown; at: number }> = [];

app.http('handOffHttp', {
  methods: ['POST'],
  route: 'handoff',
  ...handingOff(async (req: HttpRequest, ctx: InvocationContext) => {
    const body = (await req.json()) as { clusters: string[]; fail?: boolean; delaySeconds?: number };
    for (const cluster of body.clusters) await handingOffQueue(ctx).send({ cluster }, { delaySeconds: body.delaySeconds });
    if (body.fail) throw new Error('failed after sending');
    return { status: 202 };
  }),
});
app.storageQueue('taintManagerEcho', {
  queueName: QUEUES.taintManager,
  connection: 'AzureWebJobsStorage',
  handler: async (message: unknown) => {
    received.push({ message, at: performance.now() });
  },
});

const testFunctions = (...names: string[]): RegisteredFunction[] => registeredFunctions().filter((f) => names.includes(f.name));
const newHost = (...names: string[]) =>
  new LocalFunctionsHost({
    functions: testFunctions(...names),
    settings,
    queue: (name) => env.storage.queue(name),
    leases: new TableLeaseStore(env.storage.table(TABLES.leases)),
    log: silentLogger,
    port: 0,
  });
const post = (host: LocalFunctionsHost, body: unknown) => fetch(`${host.url}/api/handoff`, { method: 'POST', body: JSON.stringify(body) });
const peekAll = async () =>
  (await env.storage.queue(QUEUES.taintManager).peekMessages({ numberOfMessages: 32 })).peekedMessageItems.map((m) => decodeMessage(m.messageText));
const depth = async () => (await env.storage.queue(QUEUES.taintManager).getProperties()).approximateMessagesCount ?? 0;
const clear = () => env.storage.queue(QUEUES.taintManager).clearMessages();

beforeAll(async () => {
  env = await startTestStorage();
  taintManager = new StorageMessageQueue(env.storage.queue(QUEUES.taintManager));
});
afterAll(async () => env.close());

describe('queue output bindings on the local host', () => {
  it('declare the taint-manager queue as an output of the functions that hand messages off', async () => {
    const [fn] = testFunctions('handOffHttp');
    expect(Object.values(fn.bindings)).toContainEqual(expect.objectContaining({ direction: 'out', type: 'queue', queueName: QUEUES.taintManager }));
    expect(taintManagerOutput.queueName).toBe(QUEUES.taintManager);
  });

  it('are written when the function returns, and an idle listener of the queue polls at once', async () => {
    await clear();
    const host = newHost('handOffHttp', 'taintManagerEcho');
    await host.start();
    try {
      // Sixteen seconds of empty polls: the listener's back-off (100 ms doubling, ±20 %) is then in a sleep
      // that lasts until at least 21 s, five seconds after the post.
      await new Promise((r) => setTimeout(r, 16_000));
      const posted = performance.now();
      expect((await post(host, { clusters: ['m1', 'm2'] })).status).toBe(202);
      const deadline = Date.now() + 4_000;
      while (received.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(received.map((r) => (r.message as { cluster: string }).cluster).sort()).toEqual(['m1', 'm2']);
      // Well before the listener's own next poll (at least 5 s away).
      expect(Math.max(...received.map((r) => r.at - posted))).toBeLessThan(3_000);
    } finally {
      await host.stop();
    }
  }, 30_000);

  it('are sent by the app itself when the function fails after sending (what they announce is stored)', async () => {
    await clear();
    const host = newHost('handOffHttp');
    await host.start();
    try {
      expect((await post(host, { clusters: ['m3'], fail: true })).status).toBe(500);
      expect(await peekAll()).toEqual([{ ok: true, value: expect.objectContaining({ cluster: 'm3' }) }]);
    } finally {
      await host.stop();
    }
  });

  it('hold a message once however often one invocation sends it', async () => {
    const ctx = new InvocationContext({ functionName: 'repeats' });
    await handingOff(async (_trigger: unknown, invocation: InvocationContext) => {
      for (const cluster of ['a', 'b', 'a', 'a']) await handingOffQueue(invocation).send({ cluster });
    }).handler(undefined, ctx);
    expect(ctx.extraOutputs.get(taintManagerOutput)).toEqual([expect.objectContaining({ cluster: 'a' }), expect.objectContaining({ cluster: 'b' })]);
  });

  it('carry no delayed message: one with a visibility delay is sent by the app itself', async () => {
    await clear();
    const ctx = new InvocationContext({ functionName: 'direct' });
    const handler = handingOff(async (_trigger: unknown, invocation: InvocationContext) => {
      await handingOffQueue(invocation).send({ cluster: 'later' }, { delaySeconds: 30 });
      await handingOffQueue(invocation).send({ cluster: 'now' });
    }).handler;
    await handler(undefined, ctx);
    expect(ctx.extraOutputs.get(taintManagerOutput)).toEqual([expect.objectContaining({ cluster: 'now' })]);
    // The delayed one is in the queue already (invisible for 30 s); the other waits for the host.
    expect(await depth()).toBe(1);
    expect(await peekAll()).toEqual([]);
  });

  it('are not used outside an invocation that declared them: the message is sent at once', async () => {
    await clear();
    await taintManager.send({ cluster: 'direct' });
    expect(await peekAll()).toEqual([{ ok: true, value: expect.objectContaining({ cluster: 'direct' }) }]);
  });
});
