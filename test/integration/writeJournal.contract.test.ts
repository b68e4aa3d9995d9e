import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlacementFacts } from '../../shared/failover/bindingModel';
import { MAX_INTENT_CHARS, WriteIntent } from '../../shared/store/ledger/journal';
import { TableLedger } from '../../shared/store/ledgerTable';
import { MemoryLedger } from '../../shared/store/memory';
import { startTestStorage, TestStorage } from '../helpers/azurite';

/**
 * The write journal and the single-row placement writes the repair uses, on the Table ledger (Azurite) and
 * the memory ledger: the same answers from both, and the journal out of every ledger range.
 */

type Ledger = TableLedger | MemoryLedger;

const placement = (cluster: string, name: string, rev = 1, replicas = 2): PlacementFacts => ({
  cluster,
  kind: 'ResourceBinding',
  namespace: 'ns',
  name,
  resourceKind: 'apps/v1/Deployment',
  replicas,
  tolerations: [],
  rev,
});
const intent = (id: string, extra: Partial<WriteIntent> = {}): WriteIntent => ({ id, openedAt: '2026-01-01T00:00:00.000Z', ...extra });

function cases(ledger: () => Promise<Ledger>) {
  it('opens, lists, claims and closes intents at their ETags; a claimed one does not close at its old ETag', async () => {
    const l = await ledger();
    const big = Array.from({ length: 2000 }, (_, i) => ({ key: `rb:ns:app-${i}`, rev: 3, clusters: ['m1', 'm2', 'm3'] }));
    expect(JSON.stringify(big).length).toBeGreaterThan(30_000);
    expect(JSON.stringify(big).length).toBeLessThan(MAX_INTENT_CHARS);
    const written = [intent('a', { placements: big }), intent('b', { derive: true })];
    const [a, b] = await l.openIntents(written);
    const listed = await l.listIntents();
    expect(listed.map((v) => v.intent)).toEqual(written);
    const claimed = await l.updateIntent({ ...written[0], claimedAt: '2026-01-01T00:01:00.000Z' }, a);
    expect(claimed).not.toBe(false);
    expect(await l.updateIntent(written[0], a)).toBe(false);
    expect(
      await l.closeIntents([
        { id: 'a', etag: a },
        { id: 'b', etag: b },
      ]),
    ).toEqual([false, true]);
    expect((await l.listIntents()).map((v) => v.intent.claimedAt)).toEqual(['2026-01-01T00:01:00.000Z']);
    expect(await l.closeIntents([{ id: 'a', etag: claimed as string }])).toEqual([true]);
    expect(await l.closeIntents([{ id: 'a', etag: claimed as string }])).toEqual([false]);
    expect(await l.listIntents()).toEqual([]);
  });

  it('reads, replaces and deletes one placement row at its ETag; the journal is in no cluster or ledger range', async () => {
    const l = await ledger();
    await l.openIntents([intent('c', { placements: [{ key: 'rb:ns:a', rev: 1, clusters: ['m1'] }] })]);
    await l.upsertPlacements([placement('m1', 'a'), placement('m1', 'b')]);
    const read = (await l.getPlacement('m1', 'rb:ns:a'))!;
    expect(read.row).toEqual(placement('m1', 'a'));
    expect(await l.getPlacement('m2', 'rb:ns:a')).toBeUndefined();
    expect(await l.replacePlacement(placement('m1', 'a', 2, 5), read.etag)).toBe(true);
    expect(await l.replacePlacement(placement('m1', 'a', 3, 7), read.etag)).toBe(false);
    expect(await l.deletePlacement('m1', 'rb:ns:a', read.etag)).toBe(false);
    const again = (await l.getPlacement('m1', 'rb:ns:a'))!;
    expect(again.row.replicas).toBe(5);
    expect(await l.deletePlacement('m1', 'rb:ns:a', again.etag)).toBe(true);
    expect(await l.deletePlacement('m1', 'rb:ns:a', again.etag)).toBe(false);
    expect((await l.listPlacements('m1')).map((p) => p.name)).toEqual(['b']);
    expect(await l.scanEvictions({})).toEqual([]);
    expect((await l.listClusterRows('m1')).evictions).toEqual([]);
  });
}

let env: TestStorage;
let tables = 0;
describe('Table ledger on Azurite', () => {
  beforeAll(async () => {
    env = await startTestStorage();
  });
  afterAll(async () => env?.close());
  cases(async () => {
    const name = `journal${process.pid}x${tables++}`;
    await env.storage.tableService().createTable(name);
    await env.storage.tableService().createTable(`${name}intents`);
    return new TableLedger(env.storage.table(name), env.storage.table(`${name}intents`));
  });
});

describe('memory ledger', () => {
  cases(async () => new MemoryLedger());
});
