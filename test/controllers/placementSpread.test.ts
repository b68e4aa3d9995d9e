import { afterEach, describe, expect, it, vi } from 'vitest';
import { PlaneCaches } from '../../shared/cache';
import { reportClusterStatus } from '../../shared/controllers/clusters';
import { executeEvictionBatch } from '../../shared/controllers/evictionWorker';
import { runPacer } from '../../shared/controllers/pacer';
import type { KarmadaPorts } from '../../shared/controllers/ports';
import { scheduleAll, scheduleBinding } from '../../shared/controllers/scheduler';
import { manageCluster } from '../../shared/controllers/taintManager';
import { whatIfFailure } from '../../shared/controllers/whatIf';
import { binding, cluster } from '../helpers/fleet';
import { applyTo, loopSecond, LoopState } from '../helpers/memoryLoop';
import { MemoryPlane, memoryPlane } from '../helpers/memoryPlane';

/**
 * Workloads leaving a failed cluster spread over the clusters they may go to (fewest placements first, ties
 * by name) instead of piling onto the first by name. 20 bindings on member1, each to run on one of
 * member1, member2, member3: member1 fails, 10 go to member2 and 10 to member3, whether the evictions run
 * one after another or side by side from one queue message, and what-if says so beforehand.
 */

const oneOf = {
  clusterAffinity: { clusterNames: ['member1', 'member2', 'member3'] },
  spreadConstraints: [{ spreadByField: 'cluster', maxGroups: 1, minGroups: 1 }],
};
/** Ready=False taints a cluster NoExecute a second later: what-if and the loop take the same path. */
const notReady = {
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind: 'ClusterTaintPolicy',
  metadata: { name: 'not-ready' },
  spec: {
    matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False'] }],
    taintsToAdd: [{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', addOnMatchSeconds: 1, removeOnMismatchSeconds: 60 }],
  },
};
const names = Array.from({ length: 20 }, (_, i) => `w${String(i).padStart(2, '0')}`);

async function fleet(rate: string, on: string[] = ['member1']): Promise<MemoryPlane> {
  const m = memoryPlane({ RESOURCE_EVICTION_RATE: rate });
  await applyTo(m, [cluster('member1'), cluster('member2'), cluster('member3'), ...names.map((n) => binding(n, on, { placement: oneOf }))]);
  return m;
}

async function placements(m: MemoryPlane): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const n of names) for (const c of (await m.bindings.get(`rb:default:${n}`))!.value.spec.clusters ?? []) counts[c.name] = (counts[c.name] ?? 0) + 1;
  return counts;
}

afterEach(() => vi.restoreAllMocks());

describe('placement spread', () => {
  it('20 evictions over two candidates, one after another: 10 and 10, as what-if predicted', async () => {
    const m = await fleet('10');
    await applyTo(m, [notReady]);
    const predicted = await whatIfFailure(m.plane, { failClusters: ['member1'] });
    const targets: Record<string, number> = {};
    for (const e of predicted.evictions) for (const t of e.targets) targets[t.name] = (targets[t.name] ?? 0) + 1;
    expect(targets).toEqual({ member2: 10, member3: 10 });

    await reportClusterStatus(m.plane, 'member1', { conditions: [{ type: 'Ready', status: 'False' }] });
    const state: LoopState = { evictions: [], evaluations: [] };
    let evicted = 0;
    for (let tick = 0; tick < 15 && evicted < names.length; tick++) evicted += (await loopSecond(m, state)).filter((r) => r.outcome === 'evicted').length;
    expect(evicted).toBe(20);
    expect(await placements(m)).toEqual({ member2: 10, member3: 10 });
  });

  it('16 evictions side by side from one queue message: 8 and 8', async () => {
    const m = await fleet('20');
    await applyTo(m, [cluster('member1', true)]);
    await manageCluster(m.plane, 'member1');
    await runPacer(m.plane);
    const [first] = m.evictions.takeAll();
    expect(first.message.evictions).toHaveLength(16);
    // Every slot of the message has come: its evictions run at once, as the worker runs them side by side.
    m.clock.set(new Date(Date.parse(first.message.evictions[15].slot) + 1));
    const outcomes = await executeEvictionBatch(m.plane, first.message);
    expect(outcomes.filter((o) => o === 'evicted')).toHaveLength(16);
    const counts = await placements(m);
    expect(counts).toEqual({ member1: 4, member2: 8, member3: 8 });
  });

  it('the scheduler spreads the bindings it places in one pass, counting what is already there', async () => {
    const m = await fleet('10', []);
    // Five already on member3 before the pass.
    await applyTo(
      m,
      Array.from({ length: 5 }, (_, i) => binding(`old${i}`, ['member3'], { placement: oneOf })),
    );
    expect(await scheduleAll(m.plane)).toBe(20);
    // member1 and member2 catch up with member3's 5 first, then the three take turns: 9, 8 and 8 in all.
    expect(await placements(m)).toEqual({ member1: 9, member2: 8, member3: 3 });
  });

  it('Karmada mode: our scheduler places nothing and counts nothing (placement is Karmada scheduler’s)', async () => {
    const m = await fleet('10', []);
    const listed = vi.spyOn(m.plane.ledger, 'listPlacements');
    const karmada = { ...m.plane, caches: new PlaneCaches(), karmada: {} as KarmadaPorts };
    expect(await scheduleBinding(karmada, 'rb:default:w00')).toBe('up-to-date');
    expect(await scheduleAll(karmada)).toBe(0);
    expect(listed).not.toHaveBeenCalled();
    expect((await m.bindings.get('rb:default:w00'))!.value.spec.clusters).toEqual([]);
  });
});
