import diagnosticsChannel from 'node:diagnostics_channel';
import { TableClient, type TableServiceClientOptions } from '@azure/data-tables';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config';
import { reportClusterStatus } from '../../shared/controllers/clusters';
import { fleetCounts } from '../../shared/controllers/state/reads';
import { createControlPlane } from '../../shared/runtime';
import { statusOf } from '../../shared/store/ledger/transactions';
import { PartitionWrites } from '../../shared/store/partitionWrites';
import { ConcurrencyError } from '../../shared/store/ports';
import { TableDocumentStore, TableEventLog } from '../../shared/store/tableStorage';
import { silentLogger } from '../../shared/telemetry/log';
import { startTestStorage, TestStorage } from '../helpers/azurite';

let env: TestStorage;
let table = 0;
beforeAll(async () => {
  env = await startTestStorage();
});
afterAll(async () => env.close());

async function freshTable() {
  const name = `writes${table++}`;
  await env.storage.tableService().createTable(name);
  return env.storage.table(name);
}

/** The storage requests `run` sends, by kind: single-entity writes and transactions. */
async function counted<T>(run: () => Promise<T>): Promise<{ result: T; single: number; transactions: number }> {
  let single = 0;
  let transactions = 0;
  const count = (message: unknown) => {
    const { request } = message as { request: { method: string; path: string } };
    if (request.method === 'GET') return;
    if (request.path.includes('$batch')) transactions++;
    else single++;
  };
  diagnosticsChannel.subscribe('http.client.request.start', count);
  try {
    return { result: await run(), single, transactions };
  } finally {
    diagnosticsChannel.unsubscribe('http.client.request.start', count);
  }
}

const entity = (row: string, n: number) => ({ partitionKey: 'p', rowKey: row, n });

describe('PartitionWrites on Azurite', () => {
  it('sends a write that meets none alone, and the writes made together as one transaction, each with its own ETag', async () => {
    const client = await freshTable();
    const writes = new PartitionWrites(client);
    const alone = await counted(() => writes.write(['create', entity('solo', 0)]));
    expect({ single: alone.single, transactions: alone.transactions }).toEqual({ single: 1, transactions: 0 });

    const together = await counted(() => Promise.all(Array.from({ length: 40 }, (_, i) => writes.write(['create', entity(`r${i}`, i)]))));
    expect({ single: together.single, transactions: together.transactions }).toEqual({ single: 0, transactions: 1 });
    // Each write's ETag is its row's: a replace at it succeeds.
    const etags = together.result;
    expect(etags.every((etag) => typeof etag === 'string')).toBe(true);
    await Promise.all(etags.map((etag, i) => client.updateEntity(entity(`r${i}`, i + 100), 'Replace', { etag })));
    const stored = [];
    for await (const e of client.listEntities<{ n: number }>()) stored.push(e.n);
    expect(stored.filter((n) => n >= 100)).toHaveLength(40);
  });

  it('answers each write of a refused transaction on its own: the conflicting one fails, the others are written', async () => {
    const client = await freshTable();
    const writes = new PartitionWrites(client);
    await client.createEntity(entity('taken', 1));
    const outcomes = await Promise.allSettled([
      writes.write(['create', entity('a', 1)]),
      writes.write(['create', entity('taken', 2)]),
      writes.write(['create', entity('b', 1)]),
      writes.write(['update', entity('missing', 1), 'Replace', { etag: 'W/"datetime\'2020-01-01T00%3A00%3A00Z\'"' }]),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected']);
    expect(statusOf((outcomes[1] as PromiseRejectedResult).reason)).toBe(409);
    expect(statusOf((outcomes[3] as PromiseRejectedResult).reason)).toBe(404);
    expect((await client.getEntity<{ n: number }>('p', 'taken')).n).toBe(1);
    expect((await client.getEntity<{ n: number }>('p', 'a')).n).toBe(1);
    expect((await client.getEntity<{ n: number }>('p', 'b')).n).toBe(1);
  });

  it('writes one row twice in the order made (never in one transaction), and more than 100 writes as several', async () => {
    const client = await freshTable();
    const writes = new PartitionWrites(client);
    const run = await counted(() =>
      Promise.all([
        writes.write(['upsert', entity('twice', 1), 'Replace']),
        ...Array.from({ length: 150 }, (_, i) => writes.write(['upsert', entity(`u${i}`, i), 'Replace'])),
        writes.write(['upsert', entity('twice', 2), 'Replace']),
      ]),
    );
    expect((await client.getEntity<{ n: number }>('p', 'twice')).n).toBe(2);
    let rows = 0;
    for await (const _ of client.listEntities()) rows++;
    expect(rows).toBe(151);
    // Two transactions at once for the 151 rows, then the second write of `twice` alone.
    expect(run.transactions).toBe(2);
    expect(run.single).toBe(1);
  });

  it('answers every write of a transaction the service failed with that failure, without sending them again one by one', async () => {
    const name = `writes${table++}`;
    await env.storage.tableService().createTable(name);
    let singles = 0;
    const failing: NonNullable<TableServiceClientOptions['additionalPolicies']>[number]['policy'] = {
      name: 'failBatches',
      sendRequest: async (request, next) => {
        if (!request.url.includes('$batch')) {
          if (request.method !== 'GET') singles++;
          return next(request);
        }
        // The request's own headers object stands in for the answer's (the app does not depend on core-rest-pipeline).
        return { request, status: 503, headers: request.headers, bodyAsText: '{"odata.error":{"code":"ServerBusy","message":{"value":"busy"}}}' };
      },
    };
    const client = TableClient.fromConnectionString(env.azurite.connectionString, name, {
      allowInsecureConnection: true,
      retryOptions: { maxRetries: 0 },
      additionalPolicies: [{ policy: failing, position: 'perCall' }],
    });
    const writes = new PartitionWrites(client);
    await writes.write(['create', entity('first', 0)]);
    singles = 0;
    const outcomes = await Promise.allSettled(Array.from({ length: 5 }, (_, i) => writes.write(['create', entity(`r${i}`, i)])));
    expect(outcomes.map((o) => o.status === 'rejected' && statusOf(o.reason))).toEqual([503, 503, 503, 503, 503]);
    expect(singles).toBe(0);
  });

  it('keeps writes to different partitions apart, each partition one round', async () => {
    const client = await freshTable();
    const writes = new PartitionWrites(client);
    const run = await counted(() =>
      Promise.all(['x', 'y', 'z'].flatMap((p) => Array.from({ length: 5 }, (_, i) => writes.write(['create', { partitionKey: p, rowKey: `r${i}` }])))),
    );
    expect(run.transactions).toBe(3);
    expect(run.result.every((etag) => typeof etag === 'string')).toBe(true);
  });
});

describe('writes that meet, through the adapters', () => {
  it('a document store with grouped writes answers each create and replace as its own, losing races as ConcurrencyError', async () => {
    const store = new TableDocumentStore<{ n: number }>(await freshTable(), 'doc', undefined, 1, { groupWrites: true });
    const etags = await Promise.all(Array.from({ length: 20 }, (_, n) => store.create(`d${n}`, { n })));
    await store.replace('d5', { n: 5 }, etags[5]);
    const outcomes = await Promise.allSettled([
      store.create('d3', { n: 33 }),
      store.replace('d4', { n: 44 }, etags[4]),
      // Read before the replace above: stale.
      store.replace('d5', { n: 55 }, etags[5]),
    ]);
    expect(outcomes[0]).toMatchObject({ status: 'rejected', reason: expect.any(ConcurrencyError) });
    expect(outcomes[1].status).toBe('fulfilled');
    expect(outcomes[2]).toMatchObject({ status: 'rejected', reason: expect.any(ConcurrencyError) });
    expect((await store.get('d4'))?.value.n).toBe(44);
    expect((await store.get('d5'))?.value.n).toBe(5);
    expect((await store.get('d3'))?.value.n).toBe(3);
  });

  it('the event log writes concurrent appends together and records an event with an id once', async () => {
    const log = new TableEventLog(await freshTable());
    const time = new Date().toISOString();
    const event = (name: string, id?: string) => ({
      time,
      kind: 'Cluster',
      name,
      type: 'Normal' as const,
      reason: 'Registered',
      message: name,
      ...(id ? { id } : {}),
    });
    const run = await counted(() =>
      Promise.all([
        ...Array.from({ length: 60 }, (_, i) => log.append([event(`c${i}`)])),
        log.append([event('once', 'step-1')]),
        log.append([event('once', 'step-1')]),
      ]),
    );
    expect(run.single + run.transactions).toBeLessThan(40);
    const listed = await log.list({ kind: 'Cluster', limit: 1000 });
    expect(listed.filter((e) => e.name === 'once')).toHaveLength(1);
    expect(listed).toHaveLength(61);
  });

  it('two hosts registering clusters at once keep an exact fleet summary (a host writes on its last copy; a stale one is read again)', async () => {
    const storage = await startTestStorage();
    try {
      const planes = [0, 1].map(() => createControlPlane(storage.storage, loadConfig({}), { log: silentLogger }));
      const report = { conditions: [{ type: 'Ready', status: 'True' as const }] };
      await Promise.all(Array.from({ length: 60 }, (_, i) => reportClusterStatus(planes[i % 2], `c${i}`, report)));
      const counts = await fleetCounts(planes[0], 0);
      expect(counts.total).toBe(60);
      expect([...(counts.members ?? [])].sort()).toEqual(Array.from({ length: 60 }, (_, i) => `c${i}`).sort());
      const events = await planes[1].events.list({ kind: 'Cluster', limit: 1000 });
      expect(events.filter((e) => e.reason === 'Registered')).toHaveLength(60);
      expect(events.find((e) => e.name === 'c7')?.message).toBe('cluster registered by its first health report (Ready=True)');
    } finally {
      await storage.close();
    }
  });
});
