import { TableClient } from '@azure/data-tables';
import { QueueServiceClient } from '@azure/storage-queue';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedAzurite, startAzurite } from '../../shared/local/azurite';
import { StorageClients, storageFromConnectionString } from '../../shared/store/connection';
import { ConcurrencyError } from '../../shared/store/ports';
import { TableDocumentStore } from '../../shared/store/tableStorage';
import { FaultProxy, startFaultProxy } from '../helpers/faultProxy';

/**
 * The storage retry policy against real connection resets: Azurite behind a loopback TCP proxy that cuts
 * chosen responses short with a RST. Each fault is armed for an exact number of responses, so the tries
 * are counted, not sampled.
 */

const TABLE = 'retrytest';
const QUEUE = 'retry-test';
const MID_BODY = { bodyBytes: 10 };

let azurite: EmbeddedAzurite;
let tableProxy: FaultProxy;
let queueProxy: FaultProxy;
/** The connection string with both endpoints pointing at the proxies. */
let proxied: string;
let storage: StorageClients;

beforeAll(async () => {
  azurite = await startAzurite();
  const table = new URL(azurite.tableEndpoint);
  const queue = new URL(azurite.queueEndpoint);
  tableProxy = await startFaultProxy({ host: table.hostname, port: Number(table.port) });
  queueProxy = await startFaultProxy({ host: queue.hostname, port: Number(queue.port) });
  proxied = azurite.connectionString
    .replace(azurite.tableEndpoint, `http://${tableProxy.host}${table.pathname}`)
    .replace(azurite.queueEndpoint, `http://${queueProxy.host}${queue.pathname}`);
  expect(proxied).not.toBe(azurite.connectionString);
  storage = storageFromConnectionString(proxied);
  await storage.tableService().createTable(TABLE);
  await storage.queue(QUEUE).create();
  const client = storage.table(TABLE);
  for (let i = 0; i < 5; i++) await client.createEntity({ partitionKey: 'p', rowKey: `r${i}`, value: `v${i}` });
});

afterEach(() => {
  // Every armed fault was used: the calls went through the proxy as many times as the test says.
  expect([tableProxy.pending, queueProxy.pending]).toEqual([0, 0]);
});

afterAll(async () => {
  await tableProxy?.close();
  await queueProxy?.close();
  await azurite?.close();
});

/** Runs `call` and returns how many responses the proxy saw start meanwhile (one per try). */
async function tries<T>(proxy: FaultProxy, call: () => Promise<T>): Promise<{ result: T; tries: number }> {
  const before = proxy.stats.responses;
  const result = await call();
  return { result, tries: proxy.stats.responses - before };
}

describe('without the policy (the SDKs as they come)', () => {
  it('a table read cut off mid-body fails with "aborted", after one try', async () => {
    const plain = TableClient.fromConnectionString(proxied, TABLE, { allowInsecureConnection: true });
    tableProxy.cutResponses(1, MID_BODY);
    const before = tableProxy.stats.responses;
    await expect(plain.getEntity('p', 'r0')).rejects.toThrow('Error reading response as text: aborted');
    expect(tableProxy.stats.responses - before).toBe(1);
  });

  it('a queue send cut off mid-body fails with "aborted", after one try', async () => {
    const plain = QueueServiceClient.fromConnectionString(proxied).getQueueClient(QUEUE);
    queueProxy.cutResponses(1, MID_BODY);
    const before = queueProxy.stats.responses;
    await expect(plain.sendMessage('plain')).rejects.toThrow('Error reading response as text: aborted');
    expect(queueProxy.stats.responses - before).toBe(1);
    await plain.clearMessages();
  });
});

describe('with the policy (storageFromConnectionString)', () => {
  it('getEntity succeeds through two mid-body resets, on the third try', async () => {
    tableProxy.cutResponses(2, MID_BODY);
    const { result, tries: n } = await tries(tableProxy, () => storage.table(TABLE).getEntity<{ value: string }>('p', 'r3'));
    expect(result.value).toBe('v3');
    expect(n).toBe(3);
  });

  it('listEntities succeeds through a reset of a later page, and returns every row once', async () => {
    const pages = storage.table(TABLE).listEntities<{ value: string }>().byPage({ maxPageSize: 2 });
    const rows: string[] = [];
    const first = await pages.next();
    rows.push(...(first.value as Array<{ rowKey: string }>).map((e) => e.rowKey));
    tableProxy.cutResponses(1, MID_BODY);
    const before = tableProxy.stats.responses;
    for (let page = await pages.next(); !page.done; page = await pages.next()) rows.push(...(page.value as Array<{ rowKey: string }>).map((e) => e.rowKey));
    expect(rows).toEqual(['r0', 'r1', 'r2', 'r3', 'r4']);
    expect(tableProxy.stats.responses - before).toBe(3); // pages 2 (twice) and 3
  });

  it('sendMessage succeeds through a mid-body reset; the lost first send leaves a duplicate (handlers are idempotent)', async () => {
    const queue = storage.queue(QUEUE);
    await queue.clearMessages();
    queueProxy.cutResponses(1, MID_BODY);
    const { tries: n } = await tries(queueProxy, () => queue.sendMessage('hello'));
    expect(n).toBe(2);
    const peeked = await queue.peekMessages({ numberOfMessages: 32 });
    expect(peeked.peekedMessageItems.map((m) => m.messageText)).toEqual(['hello', 'hello']);
    await queue.clearMessages();
  });

  it('a reset before the status line is retried too', async () => {
    tableProxy.cutResponses(1, { bytes: 5 });
    const { result, tries: n } = await tries(tableProxy, () => storage.table(TABLE).getEntity<{ value: string }>('p', 'r1'));
    expect(result.value).toBe('v1');
    expect(n).toBe(2);
  });

  it('gives up after 5 tries with the reset error', async () => {
    tableProxy.cutResponses(5, MID_BODY);
    const before = tableProxy.stats.responses;
    await expect(storage.table(TABLE).getEntity('p', 'r0')).rejects.toThrow('Error reading response as text: aborted');
    expect(tableProxy.stats.responses - before).toBe(5);
  });

  it('a create whose response was lost comes back as 409 on the retry: the caller sees a lost race (documented)', async () => {
    const documents = new TableDocumentStore<{ n: number }>(storage.table(TABLE), 'docs');
    // 204 No Content has no body to cut into: cut inside the status line.
    tableProxy.cutResponses(1, { bytes: 12 });
    const { result, tries: n } = await tries(tableProxy, () =>
      documents.create('lost', { n: 1 }).then(
        () => 'created',
        (error: unknown) => error,
      ),
    );
    expect(n).toBe(2);
    expect(result).toBeInstanceOf(ConcurrencyError);
    // The row is there, written by the first try: reading again finds it.
    expect((await documents.get('lost'))?.value).toEqual({ n: 1 });
  });
});
