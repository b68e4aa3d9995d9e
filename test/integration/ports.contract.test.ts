import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindingKey, EvictionRecord, PlacementFacts } from '../../shared/failover/bindingModel';
import { shardOf, SHARDS, TableLedger } from '../../shared/store/ledgerTable';
import { MemoryDocumentStore, MemoryEventLog, MemoryLeaseStore, MemoryLedger } from '../../shared/store/memory';
import { mutate, write } from '../../shared/store/optimistic';
import { ConcurrencyError, DocumentStore, EventLog, EventRecord, EvictionLedger, LeaseStore, PacerState } from '../../shared/store/ports';
import { TableDocumentStore, TableEventLog, TableLeaseStore } from '../../shared/store/tableStorage';
import { startTestStorage, TestStorage } from '../helpers/azurite';

/**
 * One table of assertions about the storage ports, run against the Table adapters on Azurite and against
 * the in-memory adapters: what the memory adapters promise is what the Table ones do.
 */

interface Subject {
  docs<T>(): Promise<DocumentStore<T>>;
  events(): Promise<EventLog>;
  leases(now: () => Date): Promise<LeaseStore>;
  ledger(): Promise<EvictionLedger>;
}

let tables = 0;
function tableSubject(env: () => TestStorage): Subject {
  // A fresh table (or partition) per test, so the tests do not see each other's rows.
  const freshTable = async () => {
    const name = `contract${process.pid}x${tables++}`;
    await env().storage.tableService().createTable(name);
    return env().storage.table(name);
  };
  return {
    docs: async <T>() => new TableDocumentStore<T>(env().storage.table('scratch'), `docs${tables++}`),
    events: async () => new TableEventLog(await freshTable()),
    leases: async (now) => new TableLeaseStore(await freshTable(), now),
    ledger: async () => new TableLedger(await freshTable(), await freshTable()),
  };
}

const memorySubject: Subject = {
  docs: async <T>() => new MemoryDocumentStore<T>(),
  events: async () => new MemoryEventLog(),
  leases: async (now) => new MemoryLeaseStore(now),
  ledger: async () => new MemoryLedger(),
};

// ----------------------------------------------------------------------------------- fixtures

const placement = (cluster: string, name: string, rev = 1, extra: Partial<PlacementFacts> = {}): PlacementFacts => ({
  cluster,
  kind: 'ResourceBinding',
  namespace: 'ns',
  name,
  resourceKind: 'apps/v1/Deployment',
  replicas: 2,
  tolerations: [{ key: 'fail', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 }],
  rev,
  ...extra,
});

const record = (cluster: string, name: string, extra: Partial<EvictionRecord> = {}): EvictionRecord => ({
  cluster,
  kind: 'ResourceBinding',
  namespace: 'ns',
  name,
  bindingKey: bindingKey({ kind: 'ResourceBinding', namespace: 'ns', name }),
  resourceKind: 'apps/v1/Deployment',
  replicas: 2,
  state: 'pending',
  reason: 'TaintUntolerated',
  purgeMode: 'Gracefully',
  why: 'cluster tainted fail:NoExecute',
  taints: 'fail:NoExecute',
  dueAt: '2026-01-01T00:01:00.000Z',
  decidedAt: '2026-01-01T00:00:00.000Z',
  decisionRev: 1,
  attempts: 0,
  updatedAt: '2026-01-01T00:00:00.000Z',
  ...extra,
});

const keyOf = (name: string) => bindingKey({ kind: 'ResourceBinding', namespace: 'ns', name });

/** `count` binding names whose rows share one shard (one partition per cluster), and its shard. */
function sameShard(count: number, prefix = 's'): { names: string[]; shard: string } {
  const byShard = new Map<string, string[]>();
  for (let i = 0; ; i++) {
    const name = `${prefix}${i}`;
    const shard = shardOf(keyOf(name));
    const names = [...(byShard.get(shard) ?? []), name];
    byShard.set(shard, names);
    if (names.length === count) return { names, shard };
  }
}

/** A binding name whose shard differs from `shard` (with one shard per cluster: any other name). */
function otherShard(shard: string, prefix = 'o'): string {
  for (let i = 0; ; i++) if ((SHARDS as number) === 1 || shardOf(keyOf(`${prefix}${i}`)) !== shard) return `${prefix}${i}`;
}

/** Rows of a cluster in the order the service lists them: by shard (partition), then binding key. */
const shardOrder = (names: string[]) => [...names].sort((a, b) => (shardOf(keyOf(a)) + keyOf(a) < shardOf(keyOf(b)) + keyOf(b) ? -1 : 1));

const pacer = (extra: Partial<PacerState> = {}): PacerState => ({
  nextSlotAt: '2026-01-01T00:00:05.000Z',
  paused: false,
  tier: 'primary',
  rate: 5,
  total: 4,
  unhealthy: 1,
  updatedAt: '2026-01-01T00:00:00.000Z',
  draining: [],
  ...extra,
});

// ----------------------------------------------------------------------------------- the contract

type Case = [name: string, run: (subject: Subject) => Promise<void>];

const documentStore: Case[] = [
  [
    'create conflicts when the id exists; get and list return the value with its ETag, ids in order',
    async (s) => {
      const store = await s.docs<{ n: number }>();
      const etag = await store.create('b', { n: 1 });
      await expect(store.create('b', { n: 2 })).rejects.toBeInstanceOf(ConcurrencyError);
      await store.create('a', { n: 0 });
      expect(await store.get('b')).toEqual({ value: { n: 1 }, etag });
      expect(await store.get('missing')).toBeUndefined();
      expect((await store.list()).map((d) => [d.id, d.value.n])).toEqual([
        ['a', 0],
        ['b', 1],
      ]);
      expect((await store.list()).find((d) => d.id === 'b')?.etag).toBe(etag);
    },
  ],
  [
    'replace needs the current ETag: a stale one or a missing document is a ConcurrencyError',
    async (s) => {
      const store = await s.docs<{ n: number }>();
      const etag1 = await store.create('doc', { n: 1 });
      const etag2 = await store.replace('doc', { n: 2 }, etag1);
      expect(etag2).not.toBe(etag1);
      await expect(store.replace('doc', { n: 3 }, etag1)).rejects.toBeInstanceOf(ConcurrencyError);
      await expect(store.replace('gone', { n: 3 }, etag1)).rejects.toBeInstanceOf(ConcurrencyError);
      expect(await store.get('doc')).toEqual({ value: { n: 2 }, etag: etag2 });
    },
  ],
  [
    'delete: false when absent, ConcurrencyError on a stale ETag or a document deleted since it was read',
    async (s) => {
      const store = await s.docs<{ n: number }>();
      expect(await store.delete('none')).toBe(false);
      const etag1 = await store.create('doc', { n: 1 });
      const etag2 = await store.replace('doc', { n: 2 }, etag1);
      await expect(store.delete('doc', etag1)).rejects.toBeInstanceOf(ConcurrencyError);
      expect(await store.delete('doc', etag2)).toBe(true);
      expect(await store.get('doc')).toBeUndefined();
      await expect(store.delete('doc', etag2)).rejects.toBeInstanceOf(ConcurrencyError);
      await store.create('doc', { n: 3 });
      expect(await store.delete('doc')).toBe(true);
    },
  ],
  [
    'stores JSON: a value read or written is a copy, and what JSON drops is dropped',
    async (s) => {
      const store = await s.docs<{ list: number[]; at?: unknown; gone?: undefined }>();
      const value = { list: [1], at: new Date('2026-01-01T00:00:00.000Z'), gone: undefined };
      await store.create('doc', value);
      value.list.push(2);
      const read = (await store.get('doc'))!.value;
      expect(read).toStrictEqual({ list: [1], at: '2026-01-01T00:00:00.000Z' });
      read.list.push(3);
      expect((await store.get('doc'))!.value.list).toEqual([1]);
    },
  ],
  [
    'refuses an id a row key may not hold (400)',
    async (s) => {
      const store = await s.docs<{ n: number }>();
      await expect(store.create('ns/name', { n: 1 })).rejects.toMatchObject({ statusCode: 400 });
    },
  ],
  [
    'concurrent read-modify-writes (mutate) all land',
    async (s) => {
      const store = await s.docs<{ n: number }>();
      await store.create('counter', { n: 0 });
      await Promise.all(Array.from({ length: 8 }, () => mutate(store, 'counter', (current) => write({ n: current!.value.n + 1 }, null))));
      expect((await store.get('counter'))?.value.n).toBe(8);
    },
  ],
];

const event = (kind: string, name: string, time: string, reason: string, extra: Partial<EventRecord> = {}): EventRecord => ({
  kind,
  name,
  time,
  reason,
  type: 'Normal',
  message: reason,
  ...extra,
});

const eventLog: Case[] = [
  [
    'lists oldest first, filters by kind, name, kind+name and since, keeps the newest under the limit',
    async (s) => {
      const log = await s.events();
      await log.append([
        event('Cluster', 'm1', '2026-01-01T00:00:01.000Z', 'one'),
        event('Cluster', 'm1', '2026-01-01T00:00:03.000Z', 'three'),
        event('Cluster', 'm2', '2026-01-01T00:00:02.000Z', 'two'),
        event('ClusterTaintPolicy', 'm1', '2026-01-01T00:00:04.000Z', 'four', { type: 'Warning', details: { a: [1, 2] } }),
      ]);
      const reasons = async (query: Parameters<EventLog['list']>[0]) => (await log.list(query)).map((e) => e.reason);
      expect(await reasons({ limit: 100 })).toEqual(['one', 'two', 'three', 'four']);
      expect(await reasons({ kind: 'Cluster', limit: 100 })).toEqual(['one', 'two', 'three']);
      expect(await reasons({ name: 'm1', limit: 100 })).toEqual(['one', 'three', 'four']);
      expect(await reasons({ kind: 'Cluster', name: 'm1', limit: 100 })).toEqual(['one', 'three']);
      expect(await reasons({ since: '2026-01-01T00:00:02.500Z', limit: 100 })).toEqual(['three', 'four']);
      expect(await reasons({ since: '2026-01-01T00:00:03.000Z', limit: 100 })).toEqual(['three', 'four']);
      expect(await reasons({ limit: 2 })).toEqual(['three', 'four']);
      expect(await reasons({ kind: 'Cluster', limit: 0 })).toEqual([]);
      expect((await log.list({ kind: 'ClusterTaintPolicy', limit: 1 }))[0]).toEqual(
        event('ClusterTaintPolicy', 'm1', '2026-01-01T00:00:04.000Z', 'four', { type: 'Warning', details: { a: [1, 2] } }),
      );
    },
  ],
  [
    'events at the same time keep their write order; namespaced names are found by kind and name',
    async (s) => {
      const log = await s.events();
      const time = '2026-01-01T00:00:01.000Z';
      await log.append([event('Binding', 'ns/b', time, 'a'), event('Binding', 'ns/b', time, 'b')]);
      await log.append([event('Binding', 'ns/b', time, 'c'), event('Binding', 'ns/c', time, 'x')]);
      expect((await log.list({ kind: 'Binding', name: 'ns/b', limit: 10 })).map((e) => e.reason)).toEqual(['a', 'b', 'c']);
      expect((await log.list({ name: 'ns/c', limit: 10 })).map((e) => e.reason)).toEqual(['x']);
      expect((await log.list({ kind: 'Binding', name: 'ns/b', limit: 2 })).map((e) => e.reason)).toEqual(['b', 'c']);
    },
  ],
];

const leaseStore: Case[] = [
  [
    'one holder at a time: renewable by its owner, free after the ttl or a release',
    async (s) => {
      let now = Date.parse('2026-01-01T00:00:00.000Z');
      const leases = await s.leases(() => new Date(now));
      expect(await leases.acquire('pacer', 'a', 10_000)).toEqual({ taken: true, etag: expect.any(String) });
      expect(await leases.acquire('pacer', 'b', 10_000)).toEqual({ taken: false, heldUntil: new Date(now + 10_000) });
      now += 5_000;
      expect(await leases.acquire('pacer', 'a', 10_000)).toMatchObject({ taken: true });
      now += 9_999;
      expect(await leases.acquire('pacer', 'b', 10_000)).toEqual({ taken: false, heldUntil: new Date(now + 1) });
      now += 1;
      expect(await leases.acquire('pacer', 'b', 10_000)).toMatchObject({ taken: true });
      await leases.release('pacer', 'a');
      expect(await leases.acquire('pacer', 'a', 10_000)).toMatchObject({ taken: false });
      await leases.release('pacer', 'b');
      expect(await leases.acquire('pacer', 'a', 10_000)).toMatchObject({ taken: true });
    },
  ],
  [
    "renewed on the ETag of the holder's last write, until another owner writes it; released on that ETag",
    async (s) => {
      let now = Date.parse('2026-01-01T00:00:00.000Z');
      const leases = await s.leases(() => new Date(now));
      const taken = await leases.acquire('timers', 'a', 3000);
      if (!taken.taken) throw new Error('not taken');
      now += 1000;
      const renewed = await leases.renew('timers', 'a', 3000, taken.etag);
      expect(renewed).toEqual(expect.any(String));
      expect(renewed).not.toBe(taken.etag);
      // Only the last write's ETag renews it.
      expect(await leases.renew('timers', 'a', 3000, taken.etag)).toBeUndefined();
      now += 2999;
      expect(await leases.acquire('timers', 'b', 3000)).toEqual({ taken: false, heldUntil: new Date(now + 1) });
      // Run out, but written by no one since: the holder's renewal still goes through.
      now += 1000;
      const late = await leases.renew('timers', 'a', 3000, renewed!);
      expect(late).toEqual(expect.any(String));
      expect(await leases.acquire('timers', 'b', 3000)).toEqual({ taken: false, heldUntil: new Date(now + 3000) });
      // Once another owner took it, the former holder's renewal fails, and its release leaves the lease alone.
      now += 3000;
      const b = await leases.acquire('timers', 'b', 3000);
      if (!b.taken) throw new Error('not taken');
      expect(await leases.renew('timers', 'a', 3000, late!)).toBeUndefined();
      await leases.release('timers', 'a', late);
      expect(await leases.acquire('timers', 'c', 3000)).toMatchObject({ taken: false });
      // The holder's release on its ETag frees it at once; a released lease is not renewed.
      await leases.release('timers', 'b', b.etag);
      expect(await leases.renew('timers', 'b', 3000, b.etag)).toBeUndefined();
      expect(await leases.acquire('timers', 'c', 3000)).toMatchObject({ taken: true });
      expect(await leases.renew('timers', 'b', 3000, b.etag)).toBeUndefined();
    },
  ],
];

const ledger: Case[] = [
  [
    'recordEvictions creates rows; get, list (by state, shard order), scan (cluster, state, states) and listClusterRows read them',
    async (s) => {
      const l = await s.ledger();
      const names = ['a', 'b', 'c', 'd', 'e', 'f'];
      await l.upsertPlacements([
        ...names.map((n) => placement('m1', n)),
        placement('m2', 'a', 4, { failoverCluster: { purgeMode: 'Directly', tolerationSeconds: 5 } }),
      ]);
      await l.recordEvictions([
        ...names.map((n, i) => ({ record: record('m1', n, i % 2 ? { state: 'blocked' as const, message: 'why not' } : {}) })),
        { record: record('m2', 'a') },
      ]);
      const got = await l.getEviction('m1', keyOf('b'));
      expect(got?.record).toEqual(record('m1', 'b', { state: 'blocked', message: 'why not' }));
      expect(got?.etag).toEqual(expect.any(String));
      expect(await l.getEviction('m1', keyOf('zz'))).toBeUndefined();
      expect(await l.getEviction('m3', keyOf('a'))).toBeUndefined();
      const all = await l.listEvictions('m1');
      expect(all.map((r) => r.record.name)).toEqual(shardOrder(names));
      expect(all.find((r) => r.record.name === 'b')?.etag).toBe(got?.etag);
      expect((await l.listEvictions('m1', ['blocked'])).map((r) => r.record.name)).toEqual(shardOrder(['b', 'd', 'f']));
      expect((await l.listEvictions('m1', ['pending', 'blocked'])).length).toBe(6);
      expect(await l.listEvictions('m1', ['done'])).toEqual([]);
      expect((await l.scanEvictions({})).length).toBe(7);
      expect((await l.scanEvictions({ cluster: 'm2' })).map((r) => r.record)).toEqual([record('m2', 'a')]);
      expect((await l.scanEvictions({ state: 'pending' })).map((r) => `${r.record.cluster}/${r.record.name}`)).toEqual([
        ...shardOrder(['a', 'c', 'e']).map((n) => `m1/${n}`),
        'm2/a',
      ]);
      expect((await l.scanEvictions({ cluster: 'm1', states: ['blocked', 'done'] })).length).toBe(3);
      const rows = await l.listClusterRows('m1');
      expect(rows.placements.map((p) => p.name)).toEqual(shardOrder(names));
      expect(rows.placements[0]).toEqual(placement('m1', rows.placements[0].name));
      expect(rows.evictions).toEqual(all);
      expect(await l.listPlacements('m2')).toEqual([placement('m2', 'a', 4, { failoverCluster: { purgeMode: 'Directly', tolerationSeconds: 5 } })]);
      expect(await l.listPlacements('m3')).toEqual([]);
    },
  ],
  [
    'recordEvictions keeps existing rows, replaces a row given with its ETag, skips one with a stale ETag',
    async (s) => {
      const l = await s.ledger();
      await l.recordEvictions([{ record: record('m1', 'a', { state: 'done' }) }, { record: record('m1', 'b', { state: 'done' }) }]);
      const a = (await l.getEviction('m1', keyOf('a')))!;
      const b = (await l.getEviction('m1', keyOf('b')))!;
      await l.updateEviction({ ...b.record, attempts: 1 }, b.etag);
      await l.recordEvictions([
        { record: record('m1', 'a', { decisionRev: 2 }), replaceEtag: a.etag },
        { record: record('m1', 'b', { decisionRev: 2 }), replaceEtag: b.etag },
        { record: record('m1', 'c') },
      ]);
      await l.recordEvictions([{ record: record('m1', 'c', { decisionRev: 3 }) }, { record: record('m1', 'd') }]);
      const rows = Object.fromEntries((await l.listEvictions('m1')).map((r) => [r.record.name, r.record]));
      expect(rows.a).toEqual(record('m1', 'a', { decisionRev: 2 }));
      expect(rows.b).toEqual(record('m1', 'b', { state: 'done', attempts: 1 }));
      expect(rows.c).toEqual(record('m1', 'c'));
      expect(rows.d).toEqual(record('m1', 'd'));
    },
  ],
  [
    'a record read is a copy: changing it changes nothing stored',
    async (s) => {
      const l = await s.ledger();
      const row = record('m1', 'a');
      await l.recordEvictions([{ record: row }]);
      row.state = 'done';
      const read = (await l.getEviction('m1', keyOf('a')))!;
      expect(read.record.state).toBe('pending');
      read.record.state = 'failed';
      expect((await l.getEviction('m1', keyOf('a')))!.record.state).toBe('pending');
    },
  ],
  [
    'upsertPlacements replaces rows; removePlacement keeps a row written by a newer revision',
    async (s) => {
      const l = await s.ledger();
      await l.upsertPlacements([placement('m1', 'a', 1), placement('m1', 'b', 1)]);
      await l.upsertPlacements([placement('m1', 'a', 3, { replicas: 7 })]);
      expect((await l.listPlacements('m1')).find((p) => p.name === 'a')).toEqual(placement('m1', 'a', 3, { replicas: 7 }));
      await l.removePlacement('m1', keyOf('a'), 2);
      await l.removePlacement('m1', keyOf('b'), 1);
      await l.removePlacement('m1', keyOf('zz'), 1);
      expect((await l.listPlacements('m1')).map((p) => p.name)).toEqual(['a']);
      await l.removePlacement('m1', keyOf('a'), 3);
      expect(await l.listPlacements('m1')).toEqual([]);
    },
  ],
  [
    'upsertPlacements refuses the same row twice in one call (400: one entity per transaction)',
    async (s) => {
      const l = await s.ledger();
      await expect(l.upsertPlacements([placement('m1', 'a', 1), placement('m1', 'a', 2)])).rejects.toMatchObject({ statusCode: 400 });
    },
  ],
  [
    'updateEviction: a new ETag; false with a stale ETag or a missing row',
    async (s) => {
      const l = await s.ledger();
      await l.recordEvictions([{ record: record('m1', 'a') }]);
      const a = (await l.getEviction('m1', keyOf('a')))!;
      const etag = await l.updateEviction({ ...a.record, state: 'scheduled', scheduledFor: '2026-01-01T00:01:05.000Z' }, a.etag);
      expect(etag).toEqual(expect.any(String));
      expect(etag).not.toBe(a.etag);
      expect(await l.updateEviction({ ...a.record, state: 'abandoned' }, a.etag)).toBe(false);
      expect(await l.updateEviction(record('m1', 'zz'), a.etag)).toBe(false);
      expect(await l.getEviction('m1', keyOf('a'))).toEqual({
        record: record('m1', 'a', { state: 'scheduled', scheduledFor: '2026-01-01T00:01:05.000Z' }),
        etag,
      });
    },
  ],
  [
    'updateEvictions returns the new ETags in order, and rejects (412) when one is stale: its transaction (one partition, up to 100 rows) is not written, other partitions are',
    async (s) => {
      const l = await s.ledger();
      const { names } = sameShard(3);
      // `other` is on another cluster: another partition, another transaction.
      const rows = [...names.map((n) => ['m1', n]), ['m2', 'o']] as const;
      await l.recordEvictions(rows.map(([c, n]) => ({ record: record(c, n) })));
      const read = await Promise.all(rows.map(async ([c, n]) => (await l.getEviction(c, keyOf(n)))!));
      const etags = await l.updateEvictions(read.map((r) => ({ record: { ...r.record, attempts: 1 }, etag: r.etag })));
      expect(etags).toHaveLength(4);
      for (const [i, r] of read.entries()) expect((await l.getEviction(r.record.cluster, r.record.bindingKey))!.etag).toBe(etags[i]);
      // names[1] goes stale.
      const stale = await l.updateEviction({ ...read[1].record, attempts: 2 }, etags[1]!);
      const updates = read.map((r, i) => ({ record: { ...r.record, state: 'scheduled' as const }, etag: i === 1 ? etags[1]! : etags[i]! }));
      await expect(l.updateEvictions(updates)).rejects.toMatchObject({ statusCode: 412 });
      const after = Object.fromEntries((await l.listEvictions('m1')).map((r) => [r.record.name, r]));
      expect(names.map((n) => after[n].record.state)).toEqual(['pending', 'pending', 'pending']);
      expect(after[names[1]].etag).toBe(stale);
      expect((await l.getEviction('m2', keyOf('o')))!.record.state).toBe('scheduled');
    },
  ],
  [
    'updateEvictions over 100 rows of one shard: each transaction of 100 is whole, the one with the stale row is not written',
    async (s) => {
      const l = await s.ledger();
      const { names } = sameShard(130, 'big');
      await l.recordEvictions(names.map((n) => ({ record: record('m1', n, { state: 'blocked' }) })));
      const read = await l.listEvictions('m1');
      const byName = new Map(read.map((r) => [r.record.name, r]));
      // Input order decides the transactions: names[0..99] and names[100..129]; names[120] goes stale.
      await l.updateEviction({ ...byName.get(names[120])!.record, attempts: 9 }, byName.get(names[120])!.etag);
      const updates = names.map((n) => ({ record: { ...byName.get(n)!.record, state: 'pending' as const }, etag: byName.get(n)!.etag }));
      await expect(l.updateEvictions(updates)).rejects.toMatchObject({ statusCode: 412 });
      const states = new Map((await l.listEvictions('m1')).map((r) => [r.record.name, r.record.state]));
      expect(names.slice(0, 100).every((n) => states.get(n) === 'pending')).toBe(true);
      expect(names.slice(100).every((n) => states.get(n) === 'blocked')).toBe(true);
    },
  ],
  [
    'commitEviction moves the row and removes the placement row together; a stale ETag changes neither',
    async (s) => {
      const l = await s.ledger();
      await l.upsertPlacements([placement('m1', 'a'), placement('m1', 'b'), placement('m2', 'a')]);
      await l.recordEvictions([{ record: record('m1', 'a', { state: 'scheduled' }) }, { record: record('m1', 'b', { state: 'scheduled' }) }]);
      const a = (await l.getEviction('m1', keyOf('a')))!;
      const b = (await l.getEviction('m1', keyOf('b')))!;
      await l.updateEviction({ ...b.record, state: 'abandoned' }, b.etag);
      expect(await l.commitEviction({ ...b.record, state: 'done' }, b.etag)).toBe(false);
      expect((await l.getEviction('m1', keyOf('b')))!.record.state).toBe('abandoned');
      expect(await l.commitEviction({ ...a.record, state: 'done', executedAt: '2026-01-01T00:01:06.000Z' }, a.etag)).toBe(true);
      expect((await l.getEviction('m1', keyOf('a')))!.record).toEqual(record('m1', 'a', { state: 'done', executedAt: '2026-01-01T00:01:06.000Z' }));
      expect((await l.listPlacements('m1')).map((p) => p.name)).toEqual(['b']);
      expect((await l.listPlacements('m2')).map((p) => p.name)).toEqual(['a']);
      expect(await l.commitEviction({ ...a.record, state: 'done' }, a.etag)).toBe(false);
    },
  ],
  [
    'commitEviction without a placement row commits the row alone; false when the row is gone',
    async (s) => {
      const l = await s.ledger();
      await l.recordEvictions([{ record: record('m1', 'a', { state: 'scheduled' }) }]);
      const a = (await l.getEviction('m1', keyOf('a')))!;
      expect(await l.commitEviction({ ...a.record, state: 'done' }, a.etag)).toBe(true);
      expect((await l.getEviction('m1', keyOf('a')))!.record.state).toBe('done');
      expect(await l.commitEviction(record('m1', 'zz', { state: 'done' }), a.etag)).toBe(false);
    },
  ],
  [
    'due order: one group per cluster shard and due time, listed in due order up to the horizon and limit; pendingDue in shard order',
    async (s) => {
      const l = await s.ledger();
      const { names, shard } = sameShard(2, 'd');
      const other = otherShard(shard, 'x');
      const t1 = '2026-01-01T00:01:00.000Z';
      const t2 = '2026-01-01T00:02:00.000Z';
      await l.recordEvictions([
        ...[...names, other].map((n) => ({ record: record('m1', n, { dueAt: t1 }) })),
        { record: record('m1', 'later', { dueAt: t2 }) },
        { record: record('m2', 'a', { dueAt: t1 }) },
        { record: record('m1', 'blocked', { dueAt: t1, state: 'blocked' }) },
      ]);
      const group = (cluster: string, dueAt: string, name: string) => ({
        token: l.dueGroupOf(record(cluster, name, { dueAt })),
        dueAt,
        cluster,
      });
      const expected = [
        ...new Map([group('m1', t1, names[0]), group('m1', t1, other), group('m2', t1, 'a'), group('m1', t2, 'later')].map((g) => [g.token, g])).values(),
      ].sort((a, b) => (a.token < b.token ? -1 : 1));
      // Each group comes with the version it was listed at.
      const listed = async (horizon: string, limit: number) => (await l.listDue(horizon, limit)).map(({ etag, ...rest }) => (expect(etag).toBeTruthy(), rest));
      expect(await listed(t2, 100)).toEqual(expected);
      expect(await listed(t1, 100)).toEqual(expected.filter((g) => g.dueAt === t1));
      expect(await listed('2026-01-01T00:00:59.999Z', 100)).toEqual([]);
      expect(await listed(t2, 2)).toEqual(expected.slice(0, 2));
      const pending = await l.pendingDue('m1', t1, 10);
      expect(pending.map((r) => r.record.name)).toEqual(shardOrder([...names, other]));
      expect(pending.every((r) => r.record.state === 'pending' && r.etag)).toBe(true);
      expect((await l.pendingDue('m1', t1, 2)).map((r) => r.record.name)).toEqual(shardOrder([...names, other]).slice(0, 2));
      expect(await l.pendingDue('m3', t1, 10)).toEqual([]);
    },
  ],
  [
    'groupsBefore: of a bucket read in shard order, the groups before the next row to read (all of them without one)',
    async (s) => {
      const l = await s.ledger();
      const { names, shard } = sameShard(1, 'g');
      const other = otherShard(shard, 'h');
      const t1 = '2026-01-01T00:01:00.000Z';
      await l.recordEvictions([names[0], other].map((n) => ({ record: record('m1', n, { dueAt: t1 }) })));
      const bucket = await l.listDue(t1, 100);
      expect(bucket).toHaveLength(2);
      const rows = await l.pendingDue('m1', t1, 10);
      expect(l.groupsBefore(bucket, undefined)).toEqual(bucket);
      expect(l.groupsBefore(bucket, rows[0].record)).toEqual([]);
      expect(l.groupsBefore(bucket, rows[1].record).map((g) => g.token)).toEqual([l.dueGroupOf(rows[0].record)]);
    },
  ],
  [
    'deleteDue removes groups at the version listed (and tolerates ones already gone or written since); addDue restores them once',
    async (s) => {
      const l = await s.ledger();
      const t1 = '2026-01-01T00:01:00.000Z';
      await l.addDue([record('m1', 'a', { dueAt: t1 }), record('m1', 'a', { dueAt: t1 }), record('m2', 'b', { dueAt: t1 })]);
      const groups = await l.listDue(t1, 100);
      expect(groups).toHaveLength(2);
      await l.deleteDue([groups[0]]);
      expect(await l.listDue(t1, 100)).toEqual([groups[1]]);
      await l.deleteDue(groups);
      await l.deleteDue([]);
      expect(await l.listDue(t1, 100)).toEqual([]);
      await l.addDue([record('m1', 'a', { dueAt: t1 })]);
      await l.addDue([record('m1', 'a', { dueAt: t1 })]);
      const again = await l.listDue(t1, 100);
      expect(again.map((g) => g.token)).toEqual([groups[0].token]);
      // Rows added to a group after it was listed write it again: a delete at the version listed leaves it.
      await l.addDue([record('m1', 'a', { dueAt: t1 })]);
      await l.deleteDue(again);
      expect((await l.listDue(t1, 100)).map((g) => g.token)).toEqual([groups[0].token]);
    },
  ],
  [
    'pacer row: a default without an ETag; create once (a second create is false); replace with the ETag, false when stale',
    async (s) => {
      const l = await s.ledger();
      const initial = await l.getPacerState();
      expect(initial).toEqual({
        state: {
          nextSlotAt: '1970-01-01T00:00:00.000Z',
          paused: false,
          tier: 'primary',
          rate: 0,
          total: 0,
          unhealthy: 0,
          updatedAt: '1970-01-01T00:00:00.000Z',
          draining: [],
        },
      });
      expect(await l.putPacerState(pacer(), undefined)).toBe(true);
      expect(await l.putPacerState(pacer({ rate: 9 }), undefined)).toBe(false);
      const created = await l.getPacerState();
      expect(created.state).toEqual(pacer());
      expect(created.etag).toEqual(expect.any(String));
      expect(await l.putPacerState(pacer({ paused: true }), created.etag)).toBe(true);
      expect(await l.putPacerState(pacer({ rate: 1 }), created.etag)).toBe(false);
      const after = await l.getPacerState();
      expect(after.state).toEqual(pacer({ paused: true }));
      expect(after.etag).not.toBe(created.etag);
      // The cluster that took the last slot is kept, and dropped again when a state leaves it out.
      expect(await l.putPacerState(pacer({ lastCluster: 'm1' }), after.etag)).toBe(true);
      const withLast = await l.getPacerState();
      expect(withLast.state).toEqual(pacer({ lastCluster: 'm1' }));
      expect(await l.putPacerState(pacer(), withLast.etag)).toBe(true);
      expect((await l.getPacerState()).state).toEqual(pacer());
    },
  ],
];

const contract: Array<[port: string, cases: Case[]]> = [
  ['DocumentStore', documentStore],
  ['EventLog', eventLog],
  ['LeaseStore', leaseStore],
  ['EvictionLedger', ledger],
];

function runContract(subject: () => Subject) {
  for (const [port, cases] of contract) {
    describe(port, () => {
      for (const [name, run] of cases) it(name, () => run(subject()));
    });
  }
}

describe('Table adapters on Azurite', () => {
  let env: TestStorage;
  beforeAll(async () => {
    env = await startTestStorage();
    await env.storage.tableService().createTable('scratch');
  });
  afterAll(async () => env?.close());
  const subject = tableSubject(() => env);
  runContract(() => subject);
});

describe('memory adapters', () => {
  runContract(() => memorySubject);
});
