import { describe, expect, it, vi } from 'vitest';
import { PlaneCaches } from '../../shared/cache';
import { deleteCluster } from '../../shared/controllers/clusters';
import { currentFleetHealth, FLEET_CHANGES_KEPT, fleetClusters, forgetFleet, noteFleetChange, recountFleet } from '../../shared/controllers/state/reads';
import { resyncAllClusters } from '../../shared/controllers/taintEvaluation';
import { manageCluster } from '../../shared/controllers/taintManager';
import { cluster } from '../helpers/fleet';
import { applyTo } from '../helpers/memoryLoop';
import { memoryPlane } from '../helpers/memoryPlane';

/**
 * Fleet health from the maintained summary: kept where a cluster is created, deleted, becomes faulty or
 * recovers, checked by the minute recount, and read without listing the fleet.
 */
const apply = (m: ReturnType<typeof memoryPlane>, objects: unknown[]) => applyTo(m, objects);
const summary = async (m: ReturnType<typeof memoryPlane>) => (await m.plane.fleetSummary.get('fleet'))?.value;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
type ClusterRead = ReturnType<ReturnType<typeof memoryPlane>['plane']['clusters']['get']>;
/** Puts `around` in front of every cluster point read (a slow or failing storage). */
const aroundClusterReads = (m: ReturnType<typeof memoryPlane>, around: (id: string, read: () => ClusterRead) => ClusterRead) => {
  const get = m.plane.clusters.get.bind(m.plane.clusters);
  vi.spyOn(m.plane.clusters, 'get').mockImplementation((id) => around(id, () => get(id)));
};

describe('the maintained fleet summary', () => {
  it('follows creations, failures, recoveries and deletions', async () => {
    const m = memoryPlane();
    await apply(m, [cluster('a'), cluster('b'), cluster('c', true)]);
    expect(await summary(m)).toMatchObject({ total: 3, faulty: ['c'] });
    await apply(m, [cluster('a', true)]);
    expect(await summary(m)).toMatchObject({ total: 3, faulty: ['a', 'c'] });
    await apply(m, [cluster('c', false)]);
    expect(await summary(m)).toMatchObject({ total: 3, faulty: ['a'] });
    await deleteCluster(m.plane, 'a');
    expect(await summary(m)).toMatchObject({ total: 2, faulty: [] });
    // Applying what is already there changes nothing.
    await apply(m, [cluster('b')]);
    expect(await summary(m)).toMatchObject({ total: 2, faulty: [] });
  });

  it('gives fleet health with one read, not a listing of the clusters', async () => {
    const m = memoryPlane();
    await apply(
      m,
      Array.from({ length: 12 }, (_, i) => cluster(`k${i}`, i < 7)),
    );
    const list = vi.spyOn(m.plane.clusters, 'list');
    const health = await currentFleetHealth(m.plane, 0);
    expect(health).toMatchObject({ total: 12, faulty: 7, tier: 'secondary' });
    expect(health.faultyClusters).toHaveLength(7);
    expect(list).not.toHaveBeenCalled();
  });

  it('is corrected by the recount when a change was lost (a crash between the cluster write and the summary)', async () => {
    const m = memoryPlane();
    await apply(m, [cluster('a'), cluster('b', true)]);
    const stored = (await m.plane.fleetSummary.get('fleet'))!;
    await m.plane.fleetSummary.replace('fleet', { total: 5, faulty: [] }, stored.etag);
    await resyncAllClusters(m.plane);
    expect(await summary(m)).toMatchObject({ total: 2, faulty: ['b'] });
    expect((await currentFleetHealth(m.plane, 0)).faulty).toBe(1);
  });

  it('counts a cluster once when its creation is noted after a recount already listed it', async () => {
    const m = memoryPlane();
    await apply(m, [cluster('a'), cluster('b')]);
    // A creation whose cluster row is written but whose note has not run yet when the recount lists.
    const a = (await m.plane.clusters.get('a'))!;
    await m.plane.clusters.create('c', { ...a.value, name: 'c' });
    await recountFleet(m.plane);
    expect(await summary(m)).toMatchObject({ total: 3, members: ['a', 'b', 'c'] });
    await noteFleetChange(m.plane, 'c', { created: true, faulty: false, unhealthy: false });
    await noteFleetChange(m.plane, 'c', { created: true, faulty: false, unhealthy: false });
    expect(await summary(m)).toMatchObject({ total: 3, members: ['a', 'b', 'c'] });
    expect((await currentFleetHealth(m.plane, 0)).total).toBe(3);
    await deleteCluster(m.plane, 'c');
    await noteFleetChange(m.plane, 'c', { deleted: true, faulty: false, unhealthy: false });
    expect(await summary(m)).toMatchObject({ total: 2, members: ['a', 'b'] });
  });

  it('counts a cluster whose first-use recount listed the fleet before its write (a concurrent creation won the summary)', async () => {
    const m = memoryPlane();
    await apply(m, [cluster('a'), cluster('b')]);
    // A fresh deployment: no summary yet; the first recount's listing is older than b's write.
    await m.plane.fleetSummary.delete('fleet');
    const listing = (await m.plane.clusters.list()).filter((entry) => entry.id !== 'b');
    vi.spyOn(m.plane.clusters, 'list').mockResolvedValueOnce(listing);
    await noteFleetChange(m.plane, 'b', { created: true, faulty: false, unhealthy: false });
    expect(await summary(m)).toMatchObject({ total: 2, members: ['a', 'b'] });
  });

  it('recounts a summary an older version wrote (a total without its member set) at the next note', async () => {
    const m = memoryPlane();
    await apply(m, [cluster('a'), cluster('b')]);
    const stored = (await m.plane.fleetSummary.get('fleet'))!;
    await m.plane.fleetSummary.replace('fleet', { total: 7, faulty: [] }, stored.etag);
    await apply(m, [cluster('d')]);
    expect(await summary(m)).toMatchObject({ total: 3, members: ['a', 'b', 'd'] });
  });

  it('a recount never undoes a change noted after its listing (the summary is read first, written with its ETag)', async () => {
    const m = memoryPlane();
    await apply(m, [cluster('a'), cluster('b')]);
    // The listing is taken, then a cluster fails (and is noted) before the recount writes.
    const list = m.plane.clusters.list.bind(m.plane.clusters);
    vi.spyOn(m.plane.clusters, 'list').mockImplementationOnce(async () => {
      const listed = await list();
      await apply(m, [cluster('a', true)]);
      return listed;
    });
    await recountFleet(m.plane);
    expect(await summary(m)).toMatchObject({ total: 2, faulty: ['a'] });
  });
});

describe('the fleet view (scheduler, pre-check, pacer)', () => {
  it('is listed once while the fleet is unchanged, in each process, and catches up on a change by reading the changed cluster alone', async () => {
    const m = memoryPlane();
    await apply(m, [cluster('a'), cluster('b'), cluster('c')]);
    // Another process on the same storage: its own copy (the cache is per control plane).
    const other = { ...m.plane, caches: new PlaneCaches() };
    const list = vi.spyOn(m.plane.clusters, 'list');
    const get = vi.spyOn(m.plane.clusters, 'get');
    expect((await fleetClusters(other, 0)).map((c) => c.name)).toEqual(['a', 'b', 'c']);
    expect(list).toHaveBeenCalledTimes(1);
    // Fresh reads (maxAge 0) read the summary only: a placement or an eviction costs no listing.
    for (let i = 0; i < 5; i++) await fleetClusters(other, 0);
    expect(list).toHaveBeenCalledTimes(1);
    // A report that changes nothing the view holds (same labels, no taint) does not move the version.
    await apply(m, [cluster('b')]);
    get.mockClear();
    await fleetClusters(other, 0);
    expect(get).not.toHaveBeenCalled();
    // New labels, a new taint, a new cluster, a deletion: the next read sees each, from that cluster's read.
    await apply(m, [cluster('a', false, { zone: 'z1' })]);
    get.mockClear();
    expect((await fleetClusters(other, 0)).find((c) => c.name === 'a')?.labels).toEqual({ zone: 'z1' });
    expect(get.mock.calls).toEqual([['a']]);
    await apply(m, [cluster('b', true)]);
    expect((await fleetClusters(other, 0)).find((c) => c.name === 'b')?.taints.length).toBeGreaterThan(0);
    await apply(m, [cluster('d')]);
    expect((await fleetClusters(other, 0)).map((c) => c.name)).toEqual(['a', 'b', 'c', 'd']);
    await deleteCluster(m.plane, 'c');
    expect((await fleetClusters(other, 0)).map((c) => c.name)).toEqual(['a', 'b', 'd']);
    // Two changes between reads: both clusters read, still no listing.
    await apply(m, [cluster('a', true), cluster('d', true)]);
    get.mockClear();
    expect((await fleetClusters(other, 0)).filter((c) => c.taints.length > 0).map((c) => c.name)).toEqual(['a', 'b', 'd']);
    expect(get.mock.calls.map(([name]) => name).sort()).toEqual(['a', 'd']);
    expect(list).toHaveBeenCalledTimes(1);
    // More changes than the summary names: listed again.
    for (let i = 0; i <= FLEET_CHANGES_KEPT; i++) await apply(m, [cluster('a', false, { round: String(i) })]);
    expect((await fleetClusters(other, 0)).find((c) => c.name === 'a')?.labels).toEqual({ round: String(FLEET_CHANGES_KEPT) });
    expect(list).toHaveBeenCalledTimes(2);
    expect((await m.plane.fleetSummary.get('fleet'))?.value.viewChanges).toHaveLength(FLEET_CHANGES_KEPT);
  });

  it('is brought up to date once for the callers that find it behind together', async () => {
    const m = memoryPlane();
    await apply(m, [cluster('a'), cluster('b'), cluster('c')]);
    const other = { ...m.plane, caches: new PlaneCaches() };
    await fleetClusters(other, 0);
    await apply(m, [cluster('b', true)]);
    const get = vi.spyOn(m.plane.clusters, 'get');
    const views = await Promise.all(Array.from({ length: 10 }, () => fleetClusters(other, 0)));
    expect(views.every((v) => v.find((c) => c.name === 'b')!.taints.length === 1)).toBe(true);
    expect(get.mock.calls).toEqual([['b']]);
  });

  it("keeps a process's own writes when its refreshes overlap (a slow read does not overwrite a later refresh)", async () => {
    const m = memoryPlane();
    await apply(m, [cluster('a'), cluster('b')]);
    await fleetClusters(m.plane, 0);
    // This process's writes as updateCluster makes them: the row, then forgetFleet(name); the summary's bump later.
    const label = async (name: string, v: string) => {
      const current = (await m.plane.clusters.get(name))!;
      await m.plane.clusters.replace(name, { ...current.value, labels: { v } }, current.etag);
      forgetFleet(m.plane, name);
    };
    aroundClusterReads(m, async (id, read) => {
      const answer = await read();
      await pause(id === 'a' ? 50 : 1);
      return answer;
    });
    await label('a', '1');
    const first = fleetClusters(m.plane, 0);
    await pause(5);
    await label('b', '1');
    expect((await fleetClusters(m.plane, 0)).find((c) => c.name === 'b')?.labels).toEqual({ v: '1' });
    await first;
    const view = await fleetClusters(m.plane, 0);
    expect(view.map((c) => [c.name, c.labels])).toEqual([
      ['a', { v: '1' }],
      ['b', { v: '1' }],
    ]);
  });

  it('is listed again when the recount finds a change that was never noted (a process stopped between the two writes)', async () => {
    const m = memoryPlane();
    await apply(m, [cluster('a'), cluster('b')]);
    const other = { ...m.plane, caches: new PlaneCaches() };
    await fleetClusters(other, 0);
    // Written straight to the store: the summary never hears of it.
    const b = (await m.plane.clusters.get('b'))!;
    await m.plane.clusters.replace(
      'b',
      { ...b.value, taints: [{ key: 'k', effect: 'NoExecute', timeAdded: new Date().toISOString(), owners: [], manual: false }] },
      b.etag,
    );
    expect((await fleetClusters(other, 0)).find((c) => c.name === 'b')?.taints).toEqual([]);
    await recountFleet(m.plane);
    expect((await fleetClusters(other, 0)).find((c) => c.name === 'b')?.taints).toEqual([{ key: 'k', value: undefined, effect: 'NoExecute' }]);
  });
});

describe('a lost summary note', () => {
  it('is repaired by the taint manager, which plans from the same cluster read', async () => {
    const m = memoryPlane();
    await apply(m, [cluster('a'), cluster('b')]);
    // A crash between the cluster's write and the summary's: the cluster is faulty, the summary does not know.
    const stored = (await m.plane.fleetSummary.get('fleet'))!;
    await apply(m, [cluster('a', true)]);
    const after = (await m.plane.fleetSummary.get('fleet'))!;
    await m.plane.fleetSummary.replace('fleet', stored.value, after.etag);
    expect((await currentFleetHealth(m.plane, 0)).faulty).toBe(0);
    await manageCluster(m.plane, 'a');
    expect((await currentFleetHealth(m.plane, 0)).faulty).toBe(1);
  });
});

describe('applying a run of Clusters', () => {
  it('stops at a failing Cluster: none is started after it, and the request answers once those started have finished', async () => {
    const m = memoryPlane();
    let started = 0;
    let finished = 0;
    aroundClusterReads(m, async (id, read) => {
      started++;
      await pause(id === 'f1' ? 1 : 20);
      if (id === 'f1') throw new Error('storage unavailable');
      const answer = await read();
      finished++;
      return answer;
    });
    await expect(
      apply(
        m,
        Array.from({ length: 20 }, (_, i) => cluster(`f${i}`)),
      ),
    ).rejects.toThrow('storage unavailable');
    const stored = (await m.plane.clusters.list()).length;
    await pause(100);
    // Nothing more is written after the answer, and the run stopped with the first eight.
    expect((await m.plane.clusters.list()).length).toBe(stored);
    expect(started).toBeLessThanOrEqual(9);
    expect(finished).toBeLessThanOrEqual(7);
  });

  it('applies consecutive Clusters side by side (the summary still counts each once, results in the order given)', async () => {
    const m = memoryPlane();
    // Each cluster read waits a moment, so clusters applied one after another never overlap.
    let reading = 0;
    let mostAtOnce = 0;
    aroundClusterReads(m, async (_id, read) => {
      mostAtOnce = Math.max(mostAtOnce, ++reading);
      await pause(5);
      reading--;
      return read();
    });
    await apply(m, [cluster('r0')]);
    const results = await apply(
      m,
      Array.from({ length: 10 }, (_, i) => cluster(`r${i}`, i < 4)),
    );
    expect(mostAtOnce).toBeGreaterThan(1);
    expect(results.map((r) => `${r.name}:${r.action}`)).toEqual(['r0:configured', ...Array.from({ length: 9 }, (_, i) => `r${i + 1}:created`)]);
    expect(await summary(m)).toMatchObject({ total: 10, faulty: ['r0', 'r1', 'r2', 'r3'] });
    expect((await m.plane.clusters.get('r0'))?.value.taints.map((t) => t.key)).toEqual(['test/failed']);
  });
});

describe("a process's next note", () => {
  it('writes on the copy its last note wrote, with no read; a summary changed since is read and the note applied to it', async () => {
    const m = memoryPlane();
    await apply(m, [cluster('a'), cluster('b')]);
    await noteFleetChange(m.plane, 'a', { faulty: true, unhealthy: true });
    const reads = vi.spyOn(m.plane.fleetSummary, 'get');
    await noteFleetChange(m.plane, 'b', { faulty: true, unhealthy: true });
    expect(reads).not.toHaveBeenCalled();
    expect((await summary(m))?.faulty).toEqual(['a', 'b']);
    // Another process wrote the summary since: the copy's write fails its ETag, and the note lands on what is stored.
    const stored = (await m.plane.fleetSummary.get('fleet'))!;
    await m.plane.fleetSummary.replace('fleet', { ...stored.value, faulty: ['a', 'b', 'x'] }, stored.etag);
    await noteFleetChange(m.plane, 'a', { faulty: false, unhealthy: false });
    expect((await summary(m))?.faulty).toEqual(['b', 'x']);
  });
});
