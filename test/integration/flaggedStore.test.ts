import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TableDocumentStore, TABLES } from '../../shared/store/tableStorage';
import { startTestStorage, TestStorage } from '../helpers/azurite';

/** Flag columns on Azurite: written with the document, queried without reading the other documents. */
let env: TestStorage;
beforeAll(async () => {
  env = await startTestStorage();
}, 30_000);
afterAll(async () => env?.close());

interface Doc {
  tasks: number;
}

describe('TableDocumentStore flags', () => {
  it('lists only the documents whose flag is set, and follows every write', async () => {
    const store = new TableDocumentStore<Doc, 'busy'>(env.storage.table(TABLES.bindings), 'flag-test', (d) => ({ busy: d.tasks > 0 }));
    const etags = new Map<string, string>();
    for (let i = 0; i < 30; i++) etags.set(`d${i}`, await store.create(`d${i}`, { tasks: i % 10 === 0 ? 1 : 0 }));
    expect((await store.listFlagged('busy')).map((e) => e.id).sort()).toEqual(['d0', 'd10', 'd20']);
    await store.replace('d10', { tasks: 0 }, etags.get('d10')!);
    await store.replace('d5', { tasks: 3 }, etags.get('d5')!);
    await store.upsertMany([{ id: 'd7', value: { tasks: 2 } }]);
    await store.delete('d20');
    const flagged = await store.listFlagged('busy');
    expect(flagged.map((e) => e.id).sort()).toEqual(['d0', 'd5', 'd7']);
    expect(flagged.find((e) => e.id === 'd5')?.value).toEqual({ tasks: 3 });
    // A store without flags answers the plain list, and a document written without the column is not flagged.
    const plain = new TableDocumentStore<Doc>(env.storage.table(TABLES.bindings), 'flag-test');
    await plain.create('old', { tasks: 9 });
    expect((await store.listFlagged('busy')).map((e) => e.id)).not.toContain('old');
  });
});
