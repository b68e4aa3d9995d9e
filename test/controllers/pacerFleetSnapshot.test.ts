import { afterEach, describe, expect, it, vi } from 'vitest';
import { decodeApplyDocuments } from '../../shared/api/decode';
import { applyObjects } from '../../shared/controllers/apply';
import { runPacer } from '../../shared/controllers/pacer';
import { manageCluster } from '../../shared/controllers/taintManager';
import { binding, cluster } from '../helpers/fleet';
import { memoryPlane, takeEvictions } from '../helpers/memoryPlane';

/**
 * The pacer must judge the fleet as it is when it claims rows, not from a snapshot that predates the
 * clusters those rows were decided on (state/reads.ts keeps the fleet for a second). Found as a flaky
 * test/e2e/evictionTiers.test.ts: right after the host started, the empty fleet (primary tier) was still
 * cached when the first rows of a halted fleet came due; they were scheduled at the primary rate, and the
 * worker's halt check (the tier in the pacer's row, a tick behind) let them through when the next tick was late.
 */
describe('the pacer and a fleet that changed within the last second', () => {
  // The cache ages by the wall clock: frozen here, so the second tick falls within the second however slow the run.
  afterEach(() => vi.useRealTimers());
  it('schedules nothing for a halted fleet whose clusters were written after the previous tick', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '10', SECONDARY_RESOURCE_EVICTION_RATE: '2' });
    // A tick while the fleet is still empty (a host that just started): primary tier, snapshot cached.
    expect(await runPacer(m.plane)).toMatchObject({ tier: 'primary', scheduled: 0 });
    // Within the next second: 10 clusters, 7 faulty (a small fleet above 55 %: halted), a binding on t1, planned.
    await applyObjects(m.plane, decodeApplyDocuments([...Array.from({ length: 10 }, (_, i) => cluster(`t${i + 1}`, i < 7)), binding('w0', ['t1'])]));
    expect((await manageCluster(m.plane, 't1')).planned).toBe(1);
    // The next tick, under a second later, must see the fleet as it is now.
    expect(await runPacer(m.plane)).toMatchObject({ tier: 'halted', rate: 0, scheduled: 0 });
    expect((await m.ledger.scanEvictions({ cluster: 't1' })).map((r) => r.record.state)).toEqual(['pending']);
    expect(takeEvictions(m)).toEqual([]);
  });
});
