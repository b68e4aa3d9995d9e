import { afterEach, describe, expect, it, vi } from 'vitest';
import { decodeApplyDocuments } from '../../shared/api/decode';
import { PlaneCaches } from '../../shared/cache';
import { applyObjects } from '../../shared/controllers/apply';
import { scheduleBinding } from '../../shared/controllers/scheduler';
import { fleetClusters } from '../../shared/controllers/state/reads';
import { binding, cluster } from '../helpers/fleet';
import { memoryPlane } from '../helpers/memoryPlane';

describe('scheduler on the fleet view', () => {
  // The kept view ages by the wall clock: frozen, so it is surely still kept when the binding is placed.
  afterEach(() => vi.useRealTimers());

  it('places from the view it keeps for a second, and decides a no-fit again on a fresh one (a cluster another host just registered)', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const m = memoryPlane();
    // Another process on the same storage: its own plane, its own caches.
    const other = { ...m.plane, caches: new PlaneCaches() };
    await applyObjects(m.plane, decodeApplyDocuments([cluster('m1', true)]));
    expect((await fleetClusters(m.plane)).map((c) => c.name)).toEqual(['m1']);
    await applyObjects(other, decodeApplyDocuments([cluster('m2'), binding('web', [], { placement: { clusterAffinity: { clusterNames: ['m1', 'm2'] } } })]));
    // This process's view still lacks m2: the first decision is a no-fit, decided again on a fresh view.
    expect(await scheduleBinding(m.plane, 'rb:default:web')).toBe('scheduled');
    const web = (await m.bindings.get('rb:default:web'))!.value;
    expect(web.spec.clusters?.map((c) => c.name)).toEqual(['m2']);
    expect((await m.events.all()).filter((e) => e.reason === 'NoClusterFit')).toEqual([]);
  });

  it('records a no-fit when the fresh view has no fit either', async () => {
    const m = memoryPlane();
    await applyObjects(m.plane, decodeApplyDocuments([cluster('m1', true), binding('web', [], { placement: { clusterAffinity: { clusterNames: ['m1'] } } })]));
    expect(await scheduleBinding(m.plane, 'rb:default:web')).toBe('no-fit');
    expect((await m.events.all()).filter((e) => e.reason === 'NoClusterFit')).toHaveLength(1);
  });
});
