import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { decodeApplyDocuments } from '../../shared/api/decode';
import { loadConfig } from '../../shared/config';
import { applyObjects } from '../../shared/controllers/apply';
import { createControlPlane } from '../../shared/runtime';
import type { BindingFlag, BindingRecord } from '../../shared/store/records';
import { TableDocumentStore, TABLES } from '../../shared/store/tableStorage';
import { silentLogger } from '../../shared/telemetry/log';
import { startTestStorage, TestStorage } from '../helpers/azurite';
import { binding, cluster } from '../helpers/fleet';
import { storageSnapshot } from '../helpers/storageSnapshot';

/** Batched binding writes on Azurite: table transactions, a lost race in the middle, nothing half-written. */
let env: TestStorage;
beforeAll(async () => {
  env = await startTestStorage();
}, 30_000);
afterAll(async () => env?.close());

interface Doc {
  n: number;
}

describe('TableDocumentStore.writeMany', () => {
  it('writes 100 documents to a transaction, with their flags, and answers their ETags', async () => {
    const client = env.storage.table(TABLES.bindings);
    const store = new TableDocumentStore<Doc, 'odd'>(client, 'batch-test', (d) => ({ odd: d.n % 2 === 1 }));
    const submit = vi.spyOn(client, 'submitTransaction');
    const etags = await store.writeMany(Array.from({ length: 250 }, (_, n) => ({ id: `d${String(n).padStart(3, '0')}`, value: { n } })));
    expect(submit).toHaveBeenCalledTimes(3);
    submit.mockRestore();
    expect(etags.every((etag) => etag !== undefined)).toBe(true);
    const d7 = (await store.get('d007'))!;
    expect(d7).toEqual({ value: { n: 7 }, etag: etags[7] });
    expect((await store.listFlagged('odd')).length).toBe(125);
  });

  it('leaves out only the entries that lost a race: the rest of their transaction is written one at a time', async () => {
    const store = new TableDocumentStore<Doc>(env.storage.table(TABLES.bindings), 'race-test');
    const existing = await store.create('r120', { n: -1 });
    const stale = await store.create('r130', { n: -1 });
    await store.replace('r130', { n: -2 }, stale);
    const gone = await store.create('r140', { n: -1 });
    await store.delete('r140');
    const entries = Array.from({ length: 200 }, (_, n) => ({
      id: `r${String(n).padStart(3, '0')}`,
      value: { n },
      ...(n === 130 ? { etag: stale } : n === 140 ? { etag: gone } : {}),
    }));
    const etags = await store.writeMany(entries);
    expect(etags.map((etag, n) => (etag === undefined ? n : -1)).filter((n) => n >= 0)).toEqual([120, 130, 140]);
    expect((await store.get('r120'))!).toEqual({ value: { n: -1 }, etag: existing });
    expect((await store.get('r130'))!.value).toEqual({ n: -2 });
    expect(await store.get('r140')).toBeUndefined();
    expect((await store.get('r121'))!.value).toEqual({ n: 121 });
    expect((await store.get('r199'))!.value).toEqual({ n: 199 });
  });
});

describe('applying many bindings on Azurite', () => {
  it('applies a request of bindings in batches; one created meanwhile by another writer is applied over it', async () => {
    const plane = createControlPlane(env.storage, loadConfig({ FAILOVER_ENABLED: 'true' }), { log: silentLogger });
    const bindings = plane.bindings as TableDocumentStore<BindingRecord, BindingFlag>;
    await applyObjects(plane, decodeApplyDocuments([cluster('b1'), cluster('b2')]));
    const writeMany = bindings.writeMany.bind(bindings);
    let raced = false;
    // Another writer creates one binding of the request between the batch's reads and its write.
    vi.spyOn(bindings, 'writeMany').mockImplementation(async (entries) => {
      if (!raced) {
        raced = true;
        const theirs = entries.find((entry) => entry.id === 'rb:default:app-57')!;
        await bindings.create(theirs.id, { ...theirs.value, labels: { theirs: 'yes' } });
      }
      return writeMany(entries);
    });
    const docs = Array.from({ length: 150 }, (_, i) => binding(`app-${i}`, [i % 2 ? 'b1' : 'b2']));
    const results = await applyObjects(plane, decodeApplyDocuments(docs));
    expect(results.filter((r) => r.action !== 'created').map((r) => `${r.name} ${r.action}`)).toEqual(['default/app-57 configured']);
    const app57 = (await bindings.get('rb:default:app-57'))!.value;
    expect(app57.labels).toEqual({});
    expect(app57.generation).toBe(2);
    expect((await plane.ledger.listPlacements('b1')).length).toBe(75);
    expect((await plane.ledger.listPlacements('b2')).length).toBe(75);
    expect((await plane.events.list({ kind: 'ResourceBinding', name: 'default/app-3', limit: 10 })).map((e) => e.reason)).toEqual(['Created']);

    // All-or-nothing validation stays: one invalid document, nothing stored.
    const before = await storageSnapshot(env.storage);
    const invalid = [...Array.from({ length: 20 }, (_, i) => binding(`more-${i}`, ['b1'])), binding('bad', ['b1'], { replicas: -1 })];
    expect(() => decodeApplyDocuments(invalid)).toThrow(/nothing was applied/);
    expect(await storageSnapshot(env.storage)).toBe(before);
  });
});
