import { TableClient, type TableServiceClientOptions, type TransactionAction } from '@azure/data-tables';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../shared/clock';
import { loadConfig } from '../../shared/config';
import { reportClusterStatus } from '../../shared/controllers/clusters';
import { evaluateCluster } from '../../shared/controllers/taintEvaluation';
import { applyTaintPolicy } from '../../shared/controllers/taintPolicies';
import { bindingKey, EvictionRecord, PlacementFacts } from '../../shared/failover/bindingModel';
import { createControlPlane } from '../../shared/runtime';
import { bucketOf } from '../../shared/store/buckets';
import { intentEntity } from '../../shared/store/ledger/journal';
import { submit, submitOrOneByOne } from '../../shared/store/ledger/transactions';
import { shardOf, TableLedger } from '../../shared/store/ledgerTable';
import { mutate, write } from '../../shared/store/optimistic';
import { ConcurrencyError } from '../../shared/store/ports';
import { TableDocumentStore, TableEventLog } from '../../shared/store/tableStorage';
import { silentLogger } from '../../shared/telemetry/log';
import { startTestStorage, TestStorage } from '../helpers/azurite';

let env: TestStorage;
beforeAll(async () => {
  env = await startTestStorage();
  await env.storage.tableService().createTable('scratch');
  await env.storage.tableService().createTable('ledgerjournal');
});
/** The write journal's table the ledgers of these tests share (the move test has its own). */
const sharedJournal = () => env.storage.table('ledgerjournal');
afterAll(async () => env.close());

describe('TableDocumentStore on Azurite', () => {
  it('creates, reads, replaces with the ETag and refuses a stale one', async () => {
    const store = new TableDocumentStore<{ n: number }>(env.storage.table('scratch'), 'a');
    const etag1 = await store.create('doc', { n: 1 });
    await expect(store.create('doc', { n: 9 })).rejects.toBeInstanceOf(ConcurrencyError);
    const etag2 = await store.replace('doc', { n: 2 }, etag1);
    await expect(store.replace('doc', { n: 3 }, etag1)).rejects.toBeInstanceOf(ConcurrencyError);
    expect((await store.get('doc'))?.value).toEqual({ n: 2 });
    await expect(store.delete('doc', etag1)).rejects.toBeInstanceOf(ConcurrencyError);
    expect(await store.delete('doc', etag2)).toBe(true);
    expect(await store.get('doc')).toBeUndefined();
  });

  it('spreads a bucketed kind over partitions, moving documents of the one-partition layout once, losing none', async () => {
    await env.storage.tableService().createTable('bucketed');
    const client = env.storage.table('bucketed');
    // Written by an earlier version: one partition `doc`, flags as columns.
    const old = new TableDocumentStore<{ n: number }, 'odd'>(client, 'doc', (v) => ({ odd: v.n % 2 === 1 }));
    await old.upsertMany(Array.from({ length: 150 }, (_, n) => ({ id: `d${String(n).padStart(3, '0')}`, value: { n } })));
    await new TableDocumentStore(client, 'other').create('untouched', { n: -1 });

    const store = new TableDocumentStore<{ n: number }, 'odd'>(client, 'doc', (v) => ({ odd: v.n % 2 === 1 }), 4);
    const listed = await store.list();
    expect(listed.map((e) => e.value.n)).toEqual(Array.from({ length: 150 }, (_, n) => n));
    expect((await store.listFlagged('odd')).map((e) => e.value.n)).toEqual(Array.from({ length: 75 }, (_, k) => 2 * k + 1));
    const partitions = new Map<string, number>();
    for await (const e of client.listEntities<Record<string, unknown>>())
      partitions.set(String(e.partitionKey), (partitions.get(String(e.partitionKey)) ?? 0) + 1);
    expect([...partitions.keys()].sort()).toEqual(['doc|00', 'doc|01', 'doc|02', 'doc|03', 'other', '~layout']);
    expect([0, 1, 2, 3].reduce((sum, b) => sum + partitions.get(`doc|0${b}`)!, 0)).toBe(150);
    // Reads, ETag writes and batches across buckets work as before.
    const d7 = (await store.get('d007'))!;
    await store.replace('d007', { n: 700 }, d7.etag);
    await expect(store.replace('d007', { n: 701 }, d7.etag)).rejects.toBeInstanceOf(ConcurrencyError);
    const etags = await store.writeMany([
      { id: 'new1', value: { n: 1000 } },
      { id: 'd008', value: { n: 800 }, etag: (await store.get('d008'))!.etag },
      { id: 'd009', value: { n: 900 }, etag: d7.etag },
    ]);
    expect(etags.map((e) => e !== undefined)).toEqual([true, true, false]);
    expect((await store.get('new1'))!.value.n).toBe(1000);
    expect(await store.get('untouched')).toBeUndefined();
    expect((await new TableDocumentStore(client, 'other').get('untouched'))!.value).toEqual({ n: -1 });
    expect((await client.getEntity('~layout', 'doc')).moved).toBe(150);
  });

  it('lists by key prefix across buckets: the documents under it and no other, sorted, filtered as read', async () => {
    await env.storage.tableService().createTable('prefixed');
    const client = env.storage.table('prefixed');
    const store = new TableDocumentStore<{ n: number }>(client, 'doc', undefined, 4);
    const ids = ['rb:a:x', 'rb:a:y', 'rb:ab:z', 'rb:b:x', 'crb:x', 'rb:a'];
    await store.upsertMany(ids.map((id, n) => ({ id, value: { n } })));
    await new TableDocumentStore(client, 'other').create('rb:a:other', { n: -1 });
    expect((await store.listPrefix('rb:a:')).map((e) => e.id)).toEqual(['rb:a:x', 'rb:a:y']);
    expect((await store.listPrefix('rb:a')).map((e) => e.id)).toEqual(['rb:a', 'rb:a:x', 'rb:a:y', 'rb:ab:z']);
    expect((await store.listPrefix('rb:a:', (v) => v.n > 0)).map((e) => e.id)).toEqual(['rb:a:y']);
    expect((await store.listPrefix('')).length).toBe(ids.length);
    expect(await store.listPrefix('zz')).toEqual([]);
  });

  it('writes nothing while a bucketed kind is empty (starting or reading is not a change to storage); its first write records the layout', async () => {
    await env.storage.tableService().createTable('bucketedempty');
    const client = env.storage.table('bucketedempty');
    const store = new TableDocumentStore<{ n: number }>(client, 'doc', undefined, 4);
    expect(await store.list()).toEqual([]);
    expect(await store.get('missing')).toBeUndefined();
    const rows = async () => {
      const keys: string[] = [];
      for await (const e of client.listEntities()) keys.push(`${e.partitionKey}/${e.rowKey}`);
      return keys.sort();
    };
    expect(await rows()).toEqual([]);
    // The first write records the layout with it, so the next process makes one point read.
    await store.create('d1', { n: 1 });
    expect(await rows()).toEqual([`doc|${bucketOf('d1', 4)}/d1`, '~layout/doc']);
    const next = new TableDocumentStore<{ n: number }>(client, 'doc', undefined, 4);
    expect((await next.get('d1'))!.value).toEqual({ n: 1 });
    expect(await rows()).toEqual([`doc|${bucketOf('d1', 4)}/d1`, '~layout/doc']);
    expect((await client.getEntity('~layout', 'doc')).moved).toBe(0);
  });

  it('stores documents larger than one property (64 KiB) in chunks', async () => {
    const store = new TableDocumentStore<{ text: string }>(env.storage.table('scratch'), 'big');
    const text = 'x'.repeat(200_000);
    await store.create('big', { text });
    expect((await store.get('big'))?.value.text).toHaveLength(200_000);
  });

  it('two writers: the one with the stale ETag loses, re-reads and retries, and no update is lost', async () => {
    const store = new TableDocumentStore<{ n: number; writers: string[] }>(env.storage.table('scratch'), 'race');
    // Writer B is another process's (its own adapter over the same table): writers in one process take turns.
    const otherProcess = new TableDocumentStore<{ n: number; writers: string[] }>(env.storage.table('scratch'), 'race');
    await store.create('counter', { n: 0, writers: [] });
    let firstAttempts = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // Writer A reads, then waits while B writes; A's ETag is then stale and it must retry.
    const a = mutate(store, 'counter', async (current, attempt) => {
      firstAttempts = attempt;
      if (attempt === 1) await gate;
      return write({ n: current!.value.n + 1, writers: [...current!.value.writers, `a${attempt}`] }, 'a');
    });
    await new Promise((r) => setTimeout(r, 50));
    await mutate(otherProcess, 'counter', (current) => write({ n: current!.value.n + 1, writers: [...current!.value.writers, 'b'] }, 'b'));
    release();
    await a;
    expect(firstAttempts).toBe(2);
    expect((await store.get('counter'))?.value).toEqual({ n: 2, writers: ['b', 'a2'] });
  });

  it('twenty concurrent read-modify-writes all land', async () => {
    const store = new TableDocumentStore<{ n: number }>(env.storage.table('scratch'), 'many');
    await store.create('counter', { n: 0 });
    await Promise.all(Array.from({ length: 20 }, () => mutate(store, 'counter', (current) => write({ n: current!.value.n + 1 }, null))));
    expect((await store.get('counter'))?.value.n).toBe(20);
  });
});

describe('event log on Azurite', () => {
  it('filters by kind, name and since, oldest first, newest kept under the limit', async () => {
    const log = new TableEventLog(env.storage.table('events'));
    const event = (kind: string, name: string, time: string, reason: string) => ({ kind, name, time, reason, type: 'Normal' as const, message: reason });
    await log.append([
      event('Cluster', 'm1', '2026-01-01T00:00:01.000Z', 'one'),
      event('Cluster', 'm1', '2026-01-01T00:00:03.000Z', 'three'),
      event('Cluster', 'm2', '2026-01-01T00:00:02.000Z', 'two'),
      event('ClusterTaintPolicy', 'p', '2026-01-01T00:00:04.000Z', 'four'),
    ]);
    expect((await log.list({ limit: 100 })).map((e) => e.reason)).toEqual(['one', 'two', 'three', 'four']);
    expect((await log.list({ kind: 'Cluster', limit: 100 })).map((e) => e.reason)).toEqual(['one', 'two', 'three']);
    expect((await log.list({ kind: 'Cluster', name: 'm1', limit: 100 })).map((e) => e.reason)).toEqual(['one', 'three']);
    expect((await log.list({ since: '2026-01-01T00:00:02.500Z', limit: 100 })).map((e) => e.reason)).toEqual(['three', 'four']);
    expect((await log.list({ limit: 2 })).map((e) => e.reason)).toEqual(['three', 'four']);
  });

  it("writes many objects' events in a few transactions, keeps each object's apart and still reads the one-partition-per-object layout", async () => {
    const client = env.storage.table('events');
    const log = new TableEventLog(client);
    const time = '2026-02-01T00:00:00.000Z';
    // An event as versions before buckets stored it: the object's own partition, the time as the row key.
    const before = '2026-01-31T23:59:59.999Z';
    await client.upsertEntity({
      partitionKey: 'ResourceBinding_apps:web',
      rowKey: `${before}-old`,
      time: before,
      kind: 'ResourceBinding',
      name: 'apps/web',
      type: 'Normal',
      reason: 'Old',
      message: 'old',
      details: '',
    });
    const transactions = vi.spyOn(client, 'submitTransaction');
    const singles = vi.spyOn(client, 'upsertEntity');
    const events = Array.from({ length: 300 }, (_, i) => ({
      kind: 'ResourceBinding',
      name: `apps/web${i === 0 ? '' : `-${i}`}`,
      time,
      reason: `R${i}`,
      type: 'Normal' as const,
      message: 'm',
    }));
    await log.append(events);
    // 300 objects in 16 buckets: at most 16 partitions, 4 transactions at most in each (here ~19 events per bucket: one each).
    expect(transactions.mock.calls.length + singles.mock.calls.length).toBeLessThanOrEqual(32);
    transactions.mockRestore();
    singles.mockRestore();
    expect((await log.list({ kind: 'ResourceBinding', name: 'apps/web', limit: 100 })).map((e) => e.reason)).toEqual(['Old', 'R0']);
    expect((await log.list({ kind: 'ResourceBinding', name: 'apps/web-1', limit: 100 })).map((e) => e.reason)).toEqual(['R1']);
    expect((await log.list({ kind: 'ResourceBinding', since: before, limit: 1000 })).map((e) => e.reason)).toEqual(['Old', ...events.map((e) => e.reason)]);
    expect((await log.list({ name: 'apps/web-299', limit: 100 })).map((e) => e.reason)).toEqual(['R299']);
  });
});

describe('two hosts evaluating the same cluster', () => {
  it('add the taint once and record one TaintAdded event', async () => {
    const clock = new ManualClock('2026-03-01T00:00:00.000Z');
    const config = loadConfig({});
    const planeA = createControlPlane(env.storage, config, { clock, log: silentLogger });
    const planeB = createControlPlane(env.storage, config, { clock, log: silentLogger });
    await applyTaintPolicy(planeA, {
      apiVersion: 'policy.karmada.io/v1alpha1',
      kind: 'ClusterTaintPolicy',
      metadata: { name: 'race-policy' },
      spec: {
        targetCluster: { clusterNames: ['race1'] },
        matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False'] }],
        taintsToAdd: [{ key: 'race', effect: 'NoExecute', addOnMatchSeconds: 5, removeOnMismatchSeconds: 5 }],
      },
    });
    await reportClusterStatus(planeA, 'race1', { conditions: [{ type: 'Ready', status: 'False' }] });
    clock.advance(5000);
    const results = await Promise.all([
      evaluateCluster(planeA, 'race1'),
      evaluateCluster(planeB, 'race1'),
      evaluateCluster(planeA, 'race1'),
      evaluateCluster(planeB, 'race1'),
    ]);
    expect(results.flat().filter((c) => c.action === 'added')).toHaveLength(1);
    const stored = await planeA.clusters.get('race1');
    expect(stored?.value.taints.map((t) => t.key)).toEqual(['race']);
    const events = await planeA.events.list({ kind: 'Cluster', name: 'race1', limit: 100 });
    expect(events.filter((e) => e.reason === 'TaintAdded')).toHaveLength(1);
  });
});

describe('heartbeat coalescing', () => {
  it('writes an unchanged report at most once per freshness window (10 s at the default grace period), and a change at once', async () => {
    const clock = new ManualClock('2026-04-01T00:00:00.000Z');
    const plane = createControlPlane(env.storage, loadConfig({}), { clock, log: silentLogger });
    const ready = (status: 'True' | 'False') => ({ conditions: [{ type: 'Ready', status }] as Array<{ type: string; status: 'True' | 'False' }> });
    await reportClusterStatus(plane, 'beat1', ready('True'));
    const first = (await plane.clusters.get('beat1'))!;
    clock.advance(500);
    await reportClusterStatus(plane, 'beat1', ready('True'));
    expect((await plane.clusters.get('beat1'))!.etag).toBe(first.etag);
    clock.advance(9000);
    await reportClusterStatus(plane, 'beat1', ready('True'));
    expect((await plane.clusters.get('beat1'))!.etag).toBe(first.etag);
    clock.advance(600);
    await reportClusterStatus(plane, 'beat1', ready('True'));
    const second = (await plane.clusters.get('beat1'))!;
    expect(second.etag).not.toBe(first.etag);
    expect(second.value.lastReportAt).toBe('2026-04-01T00:00:10.100Z');
    clock.advance(100);
    await reportClusterStatus(plane, 'beat1', ready('False'));
    expect((await plane.clusters.get('beat1'))!.value.conditions[0].status).toBe('False');
  });
});

describe('TableLedger storage layout', () => {
  const keyOf = (name: string) => bindingKey({ kind: 'ResourceBinding', namespace: 'ns', name });
  const placement = (name: string): PlacementFacts => ({
    cluster: 'm1',
    kind: 'ResourceBinding',
    namespace: 'ns',
    name,
    resourceKind: 'apps/v1/Deployment',
    replicas: 2,
    tolerations: [{ key: 'k', operator: 'Exists' }],
    rev: 3,
  });
  const record = (name: string, extra: Partial<EvictionRecord> = {}): EvictionRecord => ({
    cluster: 'm1',
    kind: 'ResourceBinding',
    namespace: 'ns',
    name,
    bindingKey: keyOf(name),
    resourceKind: 'apps/v1/Deployment',
    replicas: 2,
    state: 'pending',
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
  /** `count` binding names in one shard. */
  const sameShard = (count: number) => {
    const byShard = new Map<string, string[]>();
    for (let i = 0; ; i++) {
      const names = [...(byShard.get(shardOf(keyOf(`n${i}`))) ?? []), `n${i}`];
      byShard.set(shardOf(keyOf(`n${i}`)), names);
      if (names.length === count) return names;
    }
  };

  it('creates absent placement rows, per partition batch, and never overwrites a stored one', async () => {
    await env.storage.tableService().createTable('ledgercreate');
    const ledger = new TableLedger(env.storage.table('ledgercreate'), sharedJournal());
    const [x, y, z] = sameShard(3);
    const other = ['a', 'b', 'c', 'd'].find((n) => shardOf(keyOf(n)) !== shardOf(keyOf(x)))!;
    await ledger.upsertPlacements([{ ...placement(x), replicas: 7, rev: 9 }]);
    // x is stored: its partition's batch (x, y, z) creates nothing; the other partition's row is created.
    expect(await ledger.createPlacements([placement(x), placement(y), placement(z), placement(other)])).toEqual([false, false, false, true]);
    const rows = new Map((await ledger.listPlacements('m1')).map((row) => [row.name, row]));
    expect([...rows.keys()].sort()).toEqual([other, x].sort());
    expect(rows.get(x)).toMatchObject({ replicas: 7, rev: 9 });
    expect(await ledger.createPlacements([placement(y), placement(z)])).toEqual([true, true]);
  });

  it('keeps its shard hash, keys and properties (stored rows outlive the code)', async () => {
    expect(['rb:ns:a', 'rb:default:web', 'crb:global'].map(shardOf)).toEqual(['07', '02', '03']);
    await env.storage.tableService().createTable('ledgerlayout');
    const client = env.storage.table('ledgerlayout');
    const ledger = new TableLedger(client, sharedJournal());
    await ledger.upsertPlacements([placement('a')]);
    await ledger.recordEvictions([{ record: record('a', { traceparent: 'tp' }) }]);
    const state = {
      nextSlotAt: '2026-01-01T00:00:05.000Z',
      paused: false,
      tier: 'primary',
      rate: 5,
      total: 4,
      unhealthy: 1,
      updatedAt: '2026-01-01T00:00:00.000Z',
      draining: ['m2'],
    };
    await ledger.putPacerState(state, undefined);
    const rows: Array<Record<string, unknown>> = [];
    for await (const { etag: _etag, timestamp: _timestamp, ...entity } of client.listEntities<Record<string, unknown>>()) rows.push(entity);
    const { decision, ...eviction } = rows.find((r) => String(r.rowKey).startsWith('e:'))!;
    expect(rows.map((r) => [r.partitionKey, r.rowKey])).toEqual([
      ['m1|07', 'b:rb:ns:a'],
      ['m1|07', 'e:rb:ns:a'],
      ['~due', '2026-01-01T00:01:00.000Z|m1|07'],
      ['~pacer', 'layout'],
      ['~pacer', 'state'],
    ]);
    expect(rows[0]).toEqual({
      partitionKey: 'm1|07',
      rowKey: 'b:rb:ns:a',
      cluster: 'm1',
      kind: 'ResourceBinding',
      namespace: 'ns',
      name: 'a',
      resourceKind: 'apps/v1/Deployment',
      replicas: 2,
      tolerations: '[{"key":"k","operator":"Exists"}]',
      failoverCluster: '',
      rev: 3,
    });
    expect(eviction).toEqual({
      partitionKey: 'm1|07',
      rowKey: 'e:rb:ns:a',
      state: 'pending',
      dueAt: '2026-01-01T00:01:00.000Z',
      attempts: 0,
      updatedAt: '2026-01-01T00:00:00.000Z',
    });
    expect(JSON.parse(String(decision))).toEqual({
      resourceKind: 'apps/v1/Deployment',
      replicas: 2,
      reason: 'TaintUntolerated',
      purgeMode: 'Gracefully',
      why: 'w',
      taints: 't',
      decidedAt: '2026-01-01T00:00:00.000Z',
      decisionRev: 1,
      traceparent: 'tp',
    });
    expect(rows[2]).toEqual({ partitionKey: '~due', rowKey: '2026-01-01T00:01:00.000Z|m1|07', dueAt: '2026-01-01T00:01:00.000Z', cluster: 'm1', shard: '07' });
    expect(rows[3]).toMatchObject({ partitionKey: '~pacer', rowKey: 'layout', shards: 8, moved: 0 });
    expect(rows[4]).toEqual({ partitionKey: '~pacer', rowKey: 'state', ...state, draining: '["m2"]' });
  });

  it('moves rows written under 64 shards into the eight-partition layout on first use, losing none, and then costs one read', async () => {
    await env.storage.tableService().createTable('ledgermove');
    const client = env.storage.table('ledgermove');
    // What a store written by the 64-shard layout holds: rows of m1 in shards 27 and 3b, a due entry, the pacer row.
    const old = new TableLedger(client, sharedJournal());
    await old.upsertPlacements([placement('a'), placement('b')]);
    await old.recordEvictions([{ record: record('a') }]);
    const written: Array<Record<string, unknown>> = [];
    for await (const { etag: _e, timestamp: _t, ...entity } of client.listEntities<Record<string, unknown>>()) written.push(entity);
    for (const entity of written.filter((e) => String(e.partitionKey).startsWith('m1|'))) {
      const legacyShard = String(entity.rowKey).endsWith(':a') ? '27' : '3b';
      await client.deleteEntity(String(entity.partitionKey), String(entity.rowKey));
      await client.createEntity({ ...entity, partitionKey: `m1|${legacyShard}`, rowKey: String(entity.rowKey) });
    }
    await client.deleteEntity('~pacer', 'layout');

    const upgraded = new TableLedger(client, sharedJournal());
    expect((await upgraded.listPlacements('m1')).map((p) => p.name).sort()).toEqual(['a', 'b']);
    const a = (await upgraded.getEviction('m1', keyOf('a')))!;
    expect(a.record).toEqual(record('a'));
    expect(await upgraded.commitEviction({ ...a.record, state: 'done' }, a.etag)).toBe(true);
    expect((await upgraded.listPlacements('m1')).map((p) => p.name)).toEqual(['b']);
    const keys: string[] = [];
    for await (const entity of client.listEntities<Record<string, unknown>>()) keys.push(`${entity.partitionKey}/${entity.rowKey}`);
    expect(keys.filter((k) => k.startsWith('m1|')).sort()).toEqual([`m1|${shardOf(keyOf('b'))}/b:rb:ns:b`, `m1|${shardOf(keyOf('a'))}/e:rb:ns:a`].sort());
    expect((await client.getEntity('~pacer', 'layout')).moved).toBe(3);
    // The old due entry still leads the pacer to the cluster's pending rows (read across its partitions).
    expect(keys).toContain(`~due/2026-01-01T00:01:00.000Z|m1|${shardOf(keyOf('a'))}`);
  });

  it('moves the open intents an older version kept in the ledger table into the journal table, once, losing none', async () => {
    await env.storage.tableService().createTable('ledgerintents');
    await env.storage.tableService().createTable('ledgerintentsjournal');
    const client = env.storage.table('ledgerintents');
    const journal = env.storage.table('ledgerintentsjournal');
    // What the older layout holds: the current shard count, and two intents in the ledger's own `~journal` partition.
    const older = [
      { id: 'i1', openedAt: '2026-01-01T00:00:00.000Z', placements: [{ key: keyOf('a'), rev: 2, clusters: ['m1', 'm2'] }] },
      { id: 'i2', openedAt: '2026-01-01T00:00:01.000Z', claimedAt: '2026-01-01T00:00:30.000Z', derive: true as const },
    ];
    await client.createEntity({ partitionKey: '~pacer', rowKey: 'layout', shards: 8, moved: 0 });
    for (const intent of older) await client.createEntity(intentEntity(intent));

    const upgraded = new TableLedger(client, journal);
    const listed = await upgraded.listIntents();
    expect(listed.map(({ intent }) => intent).sort((a, b) => a.id.localeCompare(b.id))).toEqual(older);
    const left: string[] = [];
    for await (const entity of client.listEntities<Record<string, unknown>>()) left.push(`${entity.partitionKey}/${entity.rowKey}`);
    expect(left).toEqual(['~pacer/layout']);
    expect(await client.getEntity('~pacer', 'layout')).toMatchObject({ shards: 8, journalTable: true, moved: 2 });
    // The moved intents are the journal's own: closed at the ETags it lists.
    expect(await upgraded.closeIntents(listed.map(({ intent, etag }) => ({ id: intent.id, etag })))).toEqual([true, true]);
    // A second process finds the layout current and moves nothing.
    await client.createEntity(intentEntity({ id: 'i3', openedAt: '2026-01-01T00:00:02.000Z' }));
    expect(await new TableLedger(client, journal).listIntents()).toEqual([]);
  });

  it('checks the layout once per process: one read when it is current', async () => {
    await env.storage.tableService().createTable('ledgercurrent');
    await new TableLedger(env.storage.table('ledgercurrent'), sharedJournal()).getPacerState();
    let requests = 0;
    const client = TableClient.fromConnectionString(env.azurite.connectionString, 'ledgercurrent', {
      allowInsecureConnection: true,
      additionalPolicies: [{ policy: { name: 'count', sendRequest: (request, next) => (requests++, next(request)) }, position: 'perCall' }],
    });
    const ledger = new TableLedger(client, sharedJournal());
    await ledger.getPacerState();
    expect(requests).toBe(2);
    await ledger.getPacerState();
    await ledger.listDue('2026-01-01T00:00:00.000Z', 10);
    expect(requests).toBe(4);
  });

  it('says the rows are stored (with their ETags) before it writes their due entries', async () => {
    await env.storage.tableService().createTable('ledgerstored');
    const sent: string[] = [];
    const client = TableClient.fromConnectionString(env.azurite.connectionString, 'ledgerstored', {
      allowInsecureConnection: true,
      additionalPolicies: [
        { policy: { name: 'log', sendRequest: (request, next) => (sent.push(decodeURIComponent(request.url)), next(request)) }, position: 'perCall' },
      ],
    });
    const ledger = new TableLedger(client, sharedJournal());
    await ledger.getPacerState(); // the layout check
    sent.length = 0;
    let stored: Array<string | undefined> = [];
    const etags = await ledger.recordEvictions([{ record: record('s1') }, { record: record('s2') }], {
      onStored: (given) => {
        stored = given;
        sent.push('stored');
      },
    });
    expect(stored).toEqual(etags);
    expect(etags.every((etag) => typeof etag === 'string')).toBe(true);
    const at = sent.indexOf('stored');
    expect(at).toBeGreaterThan(0);
    expect(sent.slice(0, at).some((url) => url.includes('~due'))).toBe(false);
    expect(sent.slice(at + 1).length).toBeGreaterThan(0);
    expect((await ledger.listDue('2026-01-01T00:02:00.000Z', 10)).map((group) => group.cluster)).toContain('m1');
  });

  it('costs the same storage requests per call: one transaction per partition and 100 rows', async () => {
    await env.storage.tableService().createTable('ledgerrequests');
    let requests = 0;
    const counter: NonNullable<TableServiceClientOptions['additionalPolicies']>[number]['policy'] = {
      name: 'count',
      sendRequest: (request, next) => (requests++, next(request)),
    };
    const client = TableClient.fromConnectionString(env.azurite.connectionString, 'ledgerrequests', {
      allowInsecureConnection: true,
      additionalPolicies: [{ policy: counter, position: 'perCall' }],
    });
    const ledger = new TableLedger(client, sharedJournal());
    await ledger.getPacerState(); // the once-per-process layout check is not part of any call's cost
    const cost = async (call: () => Promise<unknown>) => {
      const before = requests;
      await call();
      return requests - before;
    };
    /** Transactions for rows of these bindings: one per partition (cluster shard) and 100 rows. */
    const transactions = (names: string[]) => {
      const perShard = new Map<string, number>();
      for (const n of names) perShard.set(shardOf(keyOf(n)), (perShard.get(shardOf(keyOf(n))) ?? 0) + 1);
      return [...perShard.values()].reduce((sum, count) => sum + Math.ceil(count / 100), 0);
    };
    const big = sameShard(101);
    const spread = ['a', 'b', 'c', 'd'];
    const partitions = transactions(spread);
    expect(await cost(() => ledger.upsertPlacements([...big, ...spread].map(placement)))).toBe(transactions([...big, ...spread]));
    // Rows per partition, and the due groups (all in `~due`) in one more.
    expect(await cost(() => ledger.recordEvictions(spread.map((n) => ({ record: record(n) }))))).toBe(partitions + 1);
    // 'a' exists: its transaction is refused (the others land); refused alone, it is not tried again.
    expect(shardOf(keyOf('a'))).not.toBe(shardOf(keyOf(big[0])));
    expect(await cost(() => ledger.recordEvictions([...big.map((n) => ({ record: record(n, { state: 'blocked' }) })), { record: record('a') }]))).toBe(
      transactions([...big, 'a']) + 1,
    );
    expect(await cost(() => ledger.listClusterRows('m1'))).toBe(1);
    expect(await cost(() => ledger.listEvictions('m1', ['pending']))).toBe(1);
    expect(await cost(() => ledger.scanEvictions({ state: 'blocked' }))).toBe(1);
    const rows = await ledger.pendingDue('m1', '2026-01-01T00:01:00.000Z', 10);
    expect(rows).toHaveLength(4);
    expect(await cost(() => ledger.updateEvictions(rows.map((r) => ({ record: { ...r.record, state: 'scheduled' }, etag: r.etag }))))).toBe(partitions);
    const a = (await ledger.getEviction('m1', keyOf('a')))!;
    expect(await cost(() => ledger.updateEviction({ ...a.record, attempts: 1 }, a.etag))).toBe(1);
    const fresh = (await ledger.getEviction('m1', keyOf('a')))!;
    expect(await cost(() => ledger.commitEviction({ ...fresh.record, state: 'done' }, fresh.etag))).toBe(1);
    const b = (await ledger.getEviction('m1', keyOf('b')))!;
    await ledger.removePlacement('m1', keyOf('b'), 3);
    expect(await cost(() => ledger.commitEviction({ ...b.record, state: 'done' }, b.etag))).toBe(2);
    expect(await cost(() => ledger.removePlacement('m1', keyOf('c'), 3))).toBe(2);
    const groups = await ledger.listDue('2026-01-01T00:01:00.000Z', 100);
    expect(await cost(() => ledger.deleteDue(groups.slice(0, 1)))).toBe(1);
    // One conditional delete each (a transaction's deletes carry no ETag).
    expect(await cost(() => ledger.deleteDue(groups))).toBe(groups.length);
    expect(await cost(() => ledger.addDue([record('a'), record('a')]))).toBe(1);
    expect(await cost(() => ledger.getPacerState())).toBe(1);
  });
});

describe("the ledger's listings of a cluster's rows", () => {
  it("go one at a time per process, so the requests behind them wait for one scan, not for every planner's", async () => {
    let inFlight = 0;
    let most = 0;
    const gauge: NonNullable<TableServiceClientOptions['additionalPolicies']>[number]['policy'] = {
      name: 'gauge',
      sendRequest: async (request, next) => {
        const listing = request.method === 'GET' && request.url.includes('RowKey');
        if (listing) most = Math.max(most, ++inFlight);
        try {
          return await next(request);
        } finally {
          if (listing) inFlight--;
        }
      },
    };
    const client = TableClient.fromConnectionString(env.azurite.connectionString, 'ledgerlistings', {
      allowInsecureConnection: true,
      additionalPolicies: [{ policy: gauge, position: 'perCall' }],
    });
    await env.storage.tableService().createTable('ledgerlistings');
    const ledger = new TableLedger(client, sharedJournal());
    const clusters = ['c1', 'c2', 'c3', 'c4'];
    const placement = (cluster: string, name: string): PlacementFacts => ({
      cluster,
      kind: 'ResourceBinding',
      namespace: 'ns',
      name,
      resourceKind: 'apps/v1/Deployment',
      replicas: 1,
      tolerations: [],
      rev: 1,
    });
    await ledger.upsertPlacements(clusters.flatMap((c) => Array.from({ length: 5 }, (_, i) => placement(c, `app${i}`))));
    const listed = await Promise.all(clusters.map((c) => ledger.listClusterRows(c)));
    expect(listed.map((rows) => rows.placements.length)).toEqual([5, 5, 5, 5]);
    expect(most).toBe(1);
  });
});

describe('ledger transactions of one action', () => {
  it('are sent as the action alone, with the effect, ETags and errors of a transaction of one', async () => {
    await env.storage.tableService().createTable('singleactions');
    const client = env.storage.table('singleactions');
    let batches = 0;
    const counted = TableClient.fromConnectionString(env.azurite.connectionString, 'singleactions', {
      allowInsecureConnection: true,
      additionalPolicies: [
        { policy: { name: 'count', sendRequest: (request, next) => (request.url.includes('$batch') && batches++, next(request)) }, position: 'perCall' },
      ],
    });
    const [created] = await submit(counted, [['create', { partitionKey: 'p', rowKey: 'a', n: 1 }]]);
    expect(created).toBe((await client.getEntity('p', 'a')).etag);
    await expect(submit(counted, [['create', { partitionKey: 'p', rowKey: 'a', n: 2 }]])).rejects.toMatchObject({ statusCode: 409 });
    const [updated] = await submit(counted, [['update', { partitionKey: 'p', rowKey: 'a', n: 3 }, 'Replace', { etag: created }]]);
    await expect(submit(counted, [['update', { partitionKey: 'p', rowKey: 'a', n: 4 }, 'Replace', { etag: created }]])).rejects.toMatchObject({
      statusCode: 412,
    });
    expect((await client.getEntity<{ n: number }>('p', 'a')).n).toBe(3);
    await submit(counted, [['upsert', { partitionKey: 'p', rowKey: 'b', m: 1 }]]);
    await submit(counted, [['upsert', { partitionKey: 'p', rowKey: 'b', n: 5 }]]);
    // Merge, the default of a transaction's upsert: the other property stays.
    expect(await client.getEntity('p', 'b')).toMatchObject({ m: 1, n: 5 });
    await submit(counted, [['delete', { partitionKey: 'p', rowKey: 'a' }]]);
    await expect(client.getEntity('p', 'a')).rejects.toMatchObject({ statusCode: 404 });
    await expect(submit(counted, [['delete', { partitionKey: 'p', rowKey: 'a' }]])).rejects.toMatchObject({ statusCode: 404 });
    expect(updated).toBeDefined();
    expect(batches).toBe(0);
    // Two actions of one partition are still one transaction.
    await submit(counted, [
      ['create', { partitionKey: 'p', rowKey: 'c' }],
      ['create', { partitionKey: 'p', rowKey: 'd' }],
    ]);
    expect(batches).toBe(1);
  });
});

describe('ledger writes that may meet rows already there (submitOrOneByOne)', () => {
  it('write every row that is not there, keep the ones that are, and try alone only the refused transaction', async () => {
    await env.storage.tableService().createTable('refusedonly');
    const client = env.storage.table('refusedonly');
    await client.createEntity({ partitionKey: 'p1', rowKey: 'r05', n: 0 });
    let alone = 0;
    const counted = TableClient.fromConnectionString(env.azurite.connectionString, 'refusedonly', {
      allowInsecureConnection: true,
      additionalPolicies: [
        { policy: { name: 'count', sendRequest: (request, next) => (!request.url.includes('$batch') && alone++, next(request)) }, position: 'perCall' },
      ],
    });
    // Three partitions of ten rows; one stored row in p1 refuses p1's transaction.
    const actions: TransactionAction[] = ['p0', 'p1', 'p2'].flatMap((partitionKey) =>
      Array.from({ length: 10 }, (_, i): TransactionAction => ['create', { partitionKey, rowKey: `r${String(i).padStart(2, '0')}`, n: 1 }]),
    );
    await submitOrOneByOne(counted, actions);
    const stored = new Map<string, number>();
    for await (const e of client.listEntities<{ n: number }>()) stored.set(`${e.partitionKey}/${e.rowKey}`, e.n);
    expect(stored.size).toBe(30);
    expect(stored.get('p1/r05')).toBe(0);
    expect([...stored.values()].filter((n) => n === 1)).toHaveLength(29);
    // p1's ten actions alone (nine created, one refused); p0 and p2 stood as one transaction each.
    expect(alone).toBe(10);
  });
});
