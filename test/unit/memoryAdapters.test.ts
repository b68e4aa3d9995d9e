import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../shared/clock';
import { bindingKey, EvictionRecord } from '../../shared/failover/bindingModel';
import { shardOf } from '../../shared/store/ledger/keys';
import { MemoryDocumentStore, MemoryLeaseStore, MemoryLedger, MemoryMessageQueue, MemoryStorageError, MemoryTable } from '../../shared/store/memory';
import { ConcurrencyError } from '../../shared/store/ports';

/** What only the memory adapters have: fault hooks, the queue's record of sent messages, table rules. The rest is in test/integration/ports.contract.test.ts. */

const record = (name: string, extra: Partial<EvictionRecord> = {}): EvictionRecord => ({
  cluster: 'm1',
  kind: 'ResourceBinding',
  namespace: 'ns',
  name,
  bindingKey: bindingKey({ kind: 'ResourceBinding', namespace: 'ns', name }),
  resourceKind: 'apps/v1/Deployment',
  replicas: 1,
  state: 'scheduled',
  reason: 'TaintUntolerated',
  purgeMode: 'Gracefully',
  why: 'w',
  taints: 't',
  dueAt: '2026-01-01T00:01:00.000Z',
  decidedAt: '2026-01-01T00:00:00.000Z',
  decisionRev: 1,
  attempts: 0,
  updatedAt: '2026-01-01T00:00:00.000Z',
  ...extra,
});

describe('MemoryLedger faults', () => {
  it("failNext 'before': the call rejects and nothing is written; the next call goes through", async () => {
    const ledger = new MemoryLedger();
    await ledger.recordEvictions([{ record: record('a') }]);
    const a = (await ledger.getEviction('m1', record('a').bindingKey))!;
    const fault = new Error('storage down');
    ledger.failNext('commitEviction', fault);
    await expect(ledger.commitEviction({ ...a.record, state: 'done' }, a.etag)).rejects.toBe(fault);
    expect(await ledger.getEviction('m1', a.record.bindingKey)).toEqual(a);
    expect(ledger.faults.pending).toEqual([]);
    expect(await ledger.commitEviction({ ...a.record, state: 'done' }, a.etag)).toBe(true);
  });

  it("failNext 'after': the write lands but the caller sees the error (a crash after the commit)", async () => {
    const ledger = new MemoryLedger();
    await ledger.recordEvictions([{ record: record('a') }]);
    const a = (await ledger.getEviction('m1', record('a').bindingKey))!;
    ledger.failNext('updateEviction', new Error('lost response'), { when: 'after' });
    await expect(ledger.updateEviction({ ...a.record, attempts: 1 }, a.etag)).rejects.toThrow('lost response');
    const after = (await ledger.getEviction('m1', a.record.bindingKey))!;
    expect(after.record.attempts).toBe(1);
    expect(after.etag).not.toBe(a.etag);
  });

  it('skip lets calls through first; faults fire once each, in order; reads can fail too', async () => {
    const ledger = new MemoryLedger();
    ledger.failNext('getPacerState', new Error('third'), { skip: 2 });
    ledger.failNext('listDue', new Error('listDue'));
    await ledger.getPacerState();
    await ledger.getPacerState();
    expect(ledger.faults.pending).toEqual([
      { method: 'getPacerState', when: 'before', skip: 0 },
      { method: 'listDue', when: 'before', skip: 0 },
    ]);
    await expect(ledger.getPacerState()).rejects.toThrow('third');
    await ledger.getPacerState();
    await expect(ledger.listDue('2026', 1)).rejects.toThrow('listDue');
    expect(await ledger.listDue('2026', 1)).toEqual([]);
  });

  it('beforeWrite sees every write with its arguments (not reads, not internal steps) and can fail one', async () => {
    const seen: string[] = [];
    const ledger = new MemoryLedger({
      beforeWrite: (method, args) => {
        seen.push(method);
        if (method === 'putPacerState' && (args[0] as { paused: boolean }).paused) throw new Error('no pausing');
      },
    });
    await ledger.recordEvictions([{ record: record('a', { state: 'pending' }) }]);
    await ledger.listEvictions('m1');
    const { state } = await ledger.getPacerState();
    expect(await ledger.putPacerState(state, undefined)).toBe(true);
    const { etag } = await ledger.getPacerState();
    await expect(ledger.putPacerState({ ...state, paused: true }, etag)).rejects.toThrow('no pausing');
    expect((await ledger.getPacerState()).state.paused).toBe(false);
    expect(seen).toEqual(['recordEvictions', 'putPacerState', 'putPacerState']);
    // recordEvictions wrote its due group without a separate addDue call.
    expect(await ledger.listDue('2026-01-01T00:01:00.000Z', 10)).toHaveLength(1);
    ledger.beforeWrite = undefined;
    expect(await ledger.putPacerState({ ...state, paused: true }, etag)).toBe(true);
  });

  it('updateEvictions with a stale row in one partition: rejects, the other partitions are written', async () => {
    const ledger = new MemoryLedger();
    const names = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    // Two clusters: two partitions, two transactions.
    await ledger.recordEvictions(names.map((n, i) => ({ record: { ...record(n), cluster: i < 4 ? 'm1' : 'm2' } })));
    const rows = [...(await ledger.listEvictions('m1')), ...(await ledger.listEvictions('m2'))];
    const stale = rows[3];
    await ledger.updateEviction({ ...stale.record, attempts: 5 }, stale.etag);
    await expect(ledger.updateEvictions(rows.map((r) => ({ record: { ...r.record, state: 'done' as const }, etag: r.etag })))).rejects.toBeInstanceOf(
      MemoryStorageError,
    );
    // The stale row's partition (its cluster and shard) is refused whole; every other partition is written.
    const partition = (r: { record: { cluster: string; bindingKey: string } }) => `${r.record.cluster}|${shardOf(r.record.bindingKey)}`;
    const after = [...(await ledger.listEvictions('m1')), ...(await ledger.listEvictions('m2'))];
    expect(after.map((r) => [r.record.bindingKey, r.record.state])).toEqual(
      rows.map((r) => [r.record.bindingKey, partition(r) === partition(stale) ? 'scheduled' : 'done']),
    );
    expect(after.filter((r) => r.record.state === 'done').length).toBeGreaterThan(0);
  });
});

describe('MemoryDocumentStore', () => {
  it('failNext and beforeWrite fail one exact call', async () => {
    const store = new MemoryDocumentStore<{ n: number }>();
    const etag = await store.create('doc', { n: 1 });
    store.failNext('replace', new Error('boom'));
    await expect(store.replace('doc', { n: 2 }, etag)).rejects.toThrow('boom');
    expect((await store.get('doc'))!.value.n).toBe(1);
    store.beforeWrite = (method, args) => {
      if (method === 'delete' && args[0] === 'doc') throw new Error('keep it');
    };
    await expect(store.delete('doc')).rejects.toThrow('keep it');
    const next = await store.replace('doc', { n: 2 }, etag);
    expect(next).not.toBe(etag);
    await expect(store.replace('doc', { n: 3 }, etag)).rejects.toBeInstanceOf(ConcurrencyError);
  });

  it('refuses documents the Table adapter cannot store', async () => {
    const store = new MemoryDocumentStore<{ text: string }>();
    await expect(store.create('big', { text: 'x'.repeat(900_001) })).rejects.toThrow(/too large/);
    await store.create('ok', { text: 'x'.repeat(200_000) });
    expect((await store.get('ok'))!.value.text).toHaveLength(200_000);
  });
});

describe('MemoryTable', () => {
  it('a transaction applies whole or not at all, with the status of its first failing action', () => {
    const table = new MemoryTable();
    table.transaction([{ type: 'create', entity: { partitionKey: 'p', rowKey: 'a', n: 1 } }]);
    expect(() =>
      table.transaction([
        { type: 'upsert', entity: { partitionKey: 'p', rowKey: 'b' } },
        { type: 'update', entity: { partitionKey: 'p', rowKey: 'a', n: 2 }, etag: 'W/"stale"' },
        { type: 'delete', partitionKey: 'p', rowKey: 'missing' },
      ]),
    ).toThrow(expect.objectContaining({ statusCode: 412 }));
    expect(table.dump().map((e) => [e.rowKey, e.n])).toEqual([['a', 1]]);
    expect(() => table.transaction([{ type: 'create', entity: { partitionKey: 'p', rowKey: 'a/b' } }])).toThrow(expect.objectContaining({ statusCode: 400 }));
    expect(() => table.transaction([{ type: 'create', entity: { partitionKey: 'p', rowKey: 'big', s: 'x'.repeat(32_769) } }])).toThrow(
      expect.objectContaining({ code: 'PropertyValueTooLarge' }),
    );
    expect(() =>
      table.transaction([
        { type: 'upsert', entity: { partitionKey: 'p', rowKey: 'c' } },
        { type: 'upsert', entity: { partitionKey: 'q', rowKey: 'c' } },
      ]),
    ).toThrow(expect.objectContaining({ statusCode: 400 }));
  });

  it('every write gets a new ETag; undefined and null properties are not stored', () => {
    const table = new MemoryTable();
    const [e1] = table.transaction([{ type: 'upsert', entity: { partitionKey: 'p', rowKey: 'a', gone: undefined, none: null, n: 1 } }]);
    const [e2] = table.transaction([{ type: 'upsert', entity: { partitionKey: 'p', rowKey: 'a', n: 1 } }]);
    expect(e1).not.toBe(e2);
    expect(table.get('p', 'a')).toEqual({ partitionKey: 'p', rowKey: 'a', n: 1, etag: e2 });
    expect(Object.keys(table.get('p', 'a')!)).not.toContain('gone');
  });
});

describe('MemoryMessageQueue', () => {
  it('records each message with its delay (whole seconds, 0 to 7 days) and when it becomes visible', async () => {
    const clock = new ManualClock('2026-01-01T00:00:00.000Z');
    const queue = new MemoryMessageQueue<{ id: string; at?: unknown }>(() => clock.now());
    await queue.send({ id: 'late' }, { delaySeconds: 5.9 });
    await queue.send({ id: 'now' });
    await queue.send({ id: 'negative' }, { delaySeconds: -3 });
    await queue.send({ id: 'far' }, { delaySeconds: 10 * 86_400 });
    expect(queue.messages().map((m) => [m.message.id, m.delaySeconds, m.visibleAt.toISOString()])).toEqual([
      ['late', 5, '2026-01-01T00:00:05.000Z'],
      ['now', 0, '2026-01-01T00:00:00.000Z'],
      ['negative', 0, '2026-01-01T00:00:00.000Z'],
      ['far', 604_800, '2026-01-08T00:00:00.000Z'],
    ]);
    expect(queue.takeVisible().map((m) => m.message.id)).toEqual(['now', 'negative']);
    expect(queue.nextVisibleAt()?.toISOString()).toBe('2026-01-01T00:00:05.000Z');
    clock.advance(4_999);
    expect(queue.takeVisible()).toEqual([]);
    clock.advance(1);
    expect(queue.visible().map((m) => m.message.id)).toEqual(['late']);
    expect(queue.takeVisible().map((m) => [m.message.id, m.sentAt.toISOString()])).toEqual([['late', '2026-01-01T00:00:00.000Z']]);
    expect(queue.size).toBe(1);
    expect(queue.takeAll().map((m) => m.message.id)).toEqual(['far']);
    expect(queue.size).toBe(0);
    expect(queue.sent).toBe(4);
  });

  it('keeps a JSON copy; refuses messages over 64 KiB; failNext fails one send', async () => {
    const queue = new MemoryMessageQueue<{ list: number[]; at?: unknown }>();
    const message = { list: [1], at: new Date('2026-01-01T00:00:00.000Z') };
    await queue.send(message);
    message.list.push(2);
    expect(queue.messages()[0].message).toStrictEqual({ list: [1], at: '2026-01-01T00:00:00.000Z' });
    await expect(queue.send({ list: Array.from({ length: 30_000 }, (_, i) => i) })).rejects.toMatchObject({ statusCode: 413 });
    queue.failNext('send', new Error('queue down'));
    await expect(queue.send({ list: [] })).rejects.toThrow('queue down');
    expect(queue.size).toBe(1);
  });
});

describe('MemoryLeaseStore', () => {
  it('uses the injected clock for the ttl', async () => {
    const clock = new ManualClock('2026-01-01T00:00:00.000Z');
    const leases = new MemoryLeaseStore(() => clock.now());
    const a = await leases.acquire('resync', 'a', 1000);
    expect(a).toMatchObject({ taken: true });
    expect(leases.holder('resync')).toBe('a');
    expect(await leases.acquire('resync', 'b', 1000)).toEqual({ taken: false, heldUntil: new Date('2026-01-01T00:00:01.000Z') });
    clock.advance(1000);
    expect(leases.holder('resync')).toBeUndefined();
    expect(await leases.acquire('resync', 'b', 1000)).toMatchObject({ taken: true });
    await leases.release('resync', 'a');
    expect(leases.holder('resync')).toBe('b');
    // a's last write was overwritten by b's: its ETag renews nothing.
    if (a.taken) expect(await leases.renew('resync', 'a', 1000, a.etag)).toBeUndefined();
    expect(leases.holder('resync')).toBe('b');
  });
});
