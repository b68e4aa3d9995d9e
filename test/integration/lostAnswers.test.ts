import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../shared/clock';
import { loadConfig } from '../../shared/config';
import { applyBinding } from '../../shared/controllers/bindings';
import { applyCluster, reportClusterStatus } from '../../shared/controllers/clusters';
import { executeEviction, repairInFlight } from '../../shared/controllers/evictionWorker';
import { runPacer } from '../../shared/controllers/pacer';
import type { EvictionBatch } from '../../shared/controllers/ports';
import { manageCluster } from '../../shared/controllers/taintManager';
import { decodeMessage } from '../../shared/queue/encoding';
import { QUEUES } from '../../shared/queue/storageQueue';
import { createControlPlane } from '../../shared/runtime';
import { storageFromConnectionString } from '../../shared/store/connection';
import { TableLedger } from '../../shared/store/ledgerTable';
import { TableEventLog, TABLES } from '../../shared/store/tableStorage';
import { silentLogger } from '../../shared/telemetry/log';
import { startTestStorage, TestStorage } from '../helpers/azurite';
import { FaultProxy, startFaultProxy } from '../helpers/faultProxy';
import { binding, cluster } from '../helpers/fleet';

/**
 * A storage request that Azurite carried out but whose answer was lost (found by `npm run chaos`): the retry
 * policy repeats it, and the repeat must not turn a success into a failure.
 */
let env: TestStorage;
let proxy: FaultProxy;
let storage: ReturnType<typeof storageFromConnectionString>;

beforeAll(async () => {
  env = await startTestStorage();
  const table = new URL(env.azurite.tableEndpoint);
  proxy = await startFaultProxy({ host: table.hostname, port: Number(table.port) });
  storage = storageFromConnectionString(env.azurite.connectionString.replace(env.azurite.tableEndpoint, `http://${proxy.host}${table.pathname}`));
}, 30_000);
afterAll(async () => {
  await proxy?.close();
  await env?.close();
});

describe('a lost answer, retried', () => {
  it('records an event once, instead of failing the step with 409 (the repeated transaction)', async () => {
    const events = new TableEventLog(storage.table(TABLES.events));
    proxy.cutResponses(1, { bytes: 0 });
    await events.append([
      { time: new Date().toISOString(), kind: 'Cluster', name: 'lost-answer', type: 'Normal', reason: 'Registered', message: 'registered' },
    ]);
    expect(await events.list({ kind: 'Cluster', name: 'lost-answer', limit: 10 })).toHaveLength(1);
  });

  it('opens a write intent whose create landed and whose answer was lost, instead of failing the apply with 409', async () => {
    const ledger = new TableLedger(storage.table(TABLES.ledger), storage.table(TABLES.journal));
    await ledger.getPacerState(); // the once-per-process layout check is not the request cut below
    const intent = { id: randomUUID(), openedAt: new Date().toISOString(), placements: [] };
    proxy.cutResponses(1, { bytes: 0 });
    const [etag] = await ledger.openIntents([intent]);
    const open = await ledger.listIntents();
    expect(open.find((o) => o.intent.id === intent.id)?.etag).toBe(etag);
    expect(await ledger.closeIntents([{ id: intent.id, etag }])).toEqual([true]);
  });

  it("finishes an eviction whose binding write landed (the worker's read-back finds its own mark), instead of abandoning it", async () => {
    const clock = new ManualClock(new Date());
    const plane = createControlPlane(storage, loadConfig({ FAILOVER_ENABLED: 'true', RESOURCE_EVICTION_RATE: '10' }), { clock, log: silentLogger });
    for (const name of ['c1', 'c2', 'c3']) {
      await applyCluster(plane, cluster(name) as never);
      await reportClusterStatus(plane, name, { conditions: [{ type: 'Ready', status: 'True' }] });
    }
    await applyBinding(plane, binding('web', ['c1'], { placement: { clusterAffinity: { clusterNames: ['c1', 'c2'] } } }) as never);
    await applyCluster(plane, cluster('c1', true) as never);
    await manageCluster(plane, 'c1');
    await runPacer(plane);
    const received = await env.storage.queue(QUEUES.evictions).receiveMessages({ numberOfMessages: 32 });
    const messages = received.receivedMessageItems.flatMap((m) => (decodeMessage(m.messageText) as { ok: true; value: EvictionBatch }).value.evictions);
    expect(messages).toHaveLength(1);
    clock.advance(5000);
    const replace = plane.bindings.replace.bind(plane.bindings);
    let armed = true;
    plane.bindings.replace = async (...args: Parameters<typeof replace>) => {
      if (armed) {
        armed = false;
        // The PUT reaches Azurite, its answer is lost; the retry gets 412 and the worker reads the binding back.
        proxy.cutResponses(1, { bytes: 0 });
      }
      return replace(...args);
    };
    expect(await executeEviction(plane, messages[0])).toBe('evicted');
    expect((await plane.ledger.getEviction('c1', 'rb:default:web'))?.record.state).toBe('done');
    const web = (await plane.bindings.get('rb:default:web'))!.value;
    expect(web.spec.clusters?.map((c) => c.name)).toEqual(['c2']);
    expect(web.spec.gracefulEvictionTasks?.map((t) => t.fromCluster)).toEqual(['c1']);
  });

  it('does not act on an eviction message the repair has overtaken (its row back in line for a new slot)', async () => {
    const own = await startTestStorage();
    try {
      const clock = new ManualClock(new Date());
      const plane = createControlPlane(own.storage, loadConfig({ FAILOVER_ENABLED: 'true', RESOURCE_EVICTION_RATE: '10' }), { clock, log: silentLogger });
      for (const name of ['c1', 'c2', 'c3']) {
        await applyCluster(plane, cluster(name) as never);
        await reportClusterStatus(plane, name, { conditions: [{ type: 'Ready', status: 'True' }] });
      }
      await applyBinding(plane, binding('late', ['c1'], { placement: { clusterAffinity: { clusterNames: ['c1', 'c2'] } } }) as never);
      await applyCluster(plane, cluster('c1', true) as never);
      await manageCluster(plane, 'c1');
      await runPacer(plane);
      // The worker holding the message died; 15 s after the slot the repair puts the row back in line.
      clock.advance(15_000);
      expect(await repairInFlight(plane)).toMatchObject({ requeued: 1 });
      const received = await own.storage.queue(QUEUES.evictions).receiveMessages({ numberOfMessages: 32 });
      const [message] = (decodeMessage(received.receivedMessageItems[0].messageText) as { ok: true; value: EvictionBatch }).value.evictions;
      // The dead worker's message comes back: it must not evict now, outside the pacing.
      expect(await executeEviction(plane, message)).toBe('duplicate');
      expect((await plane.ledger.getEviction('c1', 'rb:default:late'))?.record.state).toBe('pending');
      expect((await plane.bindings.get('rb:default:late'))!.value.spec.clusters?.map((c) => c.name)).toEqual(['c1']);
    } finally {
      await own.close();
    }
  });
});
