import { describe, expect, it } from 'vitest';
import { applyRowChange, applyRowChanges, planRows } from '../../shared/controllers/state/evictionRows';
import { type EvictionRecord, pendingEviction, type PlacementFacts } from '../../shared/failover/bindingModel';
import { abandon, plan, retry, schedule } from '../../shared/failover/evictionRow';
import { memoryPlane } from '../helpers/memoryPlane';

/**
 * The one apply of row changes, on the in-memory ledger (which refuses a cluster's batch as Azure Table's
 * transaction does when one of its rows changed): one conflict convention (undefined, never a throw), the
 * batch-then-row-by-row fallback, the retry at a new ETag, and due entries for rows that end pending.
 */

const NOW = '2026-01-01T00:00:00.000Z';

function placement(cluster: string, name: string): PlacementFacts {
  return { cluster, kind: 'ResourceBinding', namespace: 'default', name, resourceKind: 'apps/v1/Deployment', replicas: 1, tolerations: [], rev: 1 };
}

async function plannedRows(names: Array<[string, string]>) {
  const m = memoryPlane();
  const records = names.map(([cluster, name]) =>
    pendingEviction(placement(cluster, name), { reason: 'TaintUntolerated', why: 'w', taints: 't', dueAt: NOW }, NOW),
  );
  await planRows(
    m.plane,
    records.map((record) => ({ change: plan(record) })),
  );
  const read = async (record: EvictionRecord) => (await m.ledger.getEviction(record.cluster, record.bindingKey))!;
  return { m, rows: await Promise.all(records.map(read)), read };
}

describe('applyRowChanges', () => {
  it('writes a batch with the ETags and answers the new ones', async () => {
    const { m, rows, read } = await plannedRows([
      ['a', 'one'],
      ['a', 'two'],
      ['b', 'three'],
    ]);
    const etags = await applyRowChanges(
      m.plane,
      rows.map((row) => ({ etag: row.etag, change: abandon(row.record, 'recovered', NOW) })),
    );
    expect(etags.every((etag) => typeof etag === 'string')).toBe(true);
    for (const [i, row] of rows.entries()) expect(await read(row.record)).toMatchObject({ etag: etags[i], record: { state: 'abandoned' } });
  });

  it('a row that changed first is lost (undefined), its batch-mates are written alone, other clusters land', async () => {
    const { m, rows, read } = await plannedRows([
      ['a', 'one'],
      ['a', 'two'],
      ['b', 'three'],
    ]);
    // Another writer takes `two` first: cluster a's batch is refused as a whole.
    await m.ledger.updateEviction(schedule(rows[1].record, Date.parse(NOW) + 1000, NOW).record, rows[1].etag);
    const etags = await applyRowChanges(
      m.plane,
      rows.map((row) => ({ etag: row.etag, change: abandon(row.record, 'recovered', NOW) })),
    );
    expect(etags.map((etag) => etag !== undefined)).toEqual([true, false, true]);
    expect((await read(rows[0].record)).record.state).toBe('abandoned');
    expect((await read(rows[1].record)).record.state).toBe('scheduled');
    expect((await read(rows[2].record)).record.state).toBe('abandoned');
  });

  it('with `retry`, a lost row is changed again at its new ETag when the caller still wants it', async () => {
    const { m, rows, read } = await plannedRows([
      ['a', 'one'],
      ['a', 'two'],
    ]);
    const moved = await m.ledger.updateEviction({ ...rows[1].record, message: 'touched', updatedAt: NOW }, rows[1].etag);
    expect(moved).not.toBe(false);
    const asked: string[] = [];
    const etags = await applyRowChanges(
      m.plane,
      rows.map((row) => ({ etag: row.etag, change: abandon(row.record, 'recovered', NOW) })),
      {
        retry: (latest) => {
          asked.push(latest.record.name);
          return latest.record.state === 'pending' ? abandon(latest.record, 'recovered', NOW) : undefined;
        },
      },
    );
    expect(asked).toEqual(['two']);
    expect(etags.every((etag) => etag !== undefined)).toBe(true);
    expect((await read(rows[1].record)).record).toMatchObject({ state: 'abandoned', message: 'recovered' });
  });

  it('a single change that lost answers undefined, not an exception', async () => {
    const { m, rows } = await plannedRows([['a', 'one']]);
    await applyRowChange(m.plane, rows[0].etag, abandon(rows[0].record, 'first', NOW));
    expect(await applyRowChange(m.plane, rows[0].etag, abandon(rows[0].record, 'second', NOW))).toBeUndefined();
  });

  it('rows that end pending get their due entry (the pacer finds them)', async () => {
    const { m, rows } = await plannedRows([['a', 'one']]);
    const blocked = await m.ledger.updateEviction({ ...rows[0].record, state: 'blocked', dueAt: '2026-01-01T00:00:05.000Z' }, rows[0].etag);
    await m.ledger.deleteDue(await m.ledger.listDue('2026-01-02T00:00:00.000Z', 100));
    expect(await m.ledger.listDue('2026-01-02T00:00:00.000Z', 100)).toEqual([]);
    const later = '2026-01-01T00:01:00.000Z';
    const latest = (await m.ledger.getEviction('a', rows[0].record.bindingKey))!;
    expect(latest.etag).toBe(blocked);
    await applyRowChanges(m.plane, [{ etag: latest.etag, change: retry(latest.record, later) }]);
    expect((await m.ledger.listDue('2026-01-02T00:00:00.000Z', 100)).map((g) => [g.cluster, g.dueAt])).toEqual([['a', later]]);
  });
});
