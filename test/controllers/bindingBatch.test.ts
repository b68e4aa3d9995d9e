import { describe, expect, it, vi } from 'vitest';
import { decodeApplyDocuments } from '../../shared/api/decode';
import { applyObjects } from '../../shared/controllers/apply';
import { applyBinding, BindingInput } from '../../shared/controllers/bindings';
import { bindingsOf } from '../../shared/controllers/ports';
import type { BindingRecord } from '../../shared/store/records';
import { binding, cluster } from '../helpers/fleet';
import { MemoryPlane, memoryPlane } from '../helpers/memoryPlane';

const CLUSTERS = ['m1', 'm2', 'm3'];

/** What a plane holds after applying: bindings (without what is random), placements, events, messages. */
async function state(m: MemoryPlane) {
  const bindings = (await m.bindings.list()).map(({ id, value }) => {
    const { uid: _uid, ...rest } = value;
    return { id, ...rest };
  });
  const placements = (await Promise.all(CLUSTERS.map((name) => m.ledger.listPlacements(name)))).flat();
  const events = (await m.events.all()).filter((e) => e.kind !== 'Cluster').map((e) => `${e.kind}/${e.name} ${e.reason} ${e.message}`);
  const scheduled = m.scheduler.messages().flatMap((s) => bindingsOf(s.message));
  const notified = [...new Set(m.taintManager.messages().map((s) => `${s.message.cluster} ${s.message.reason}`))].sort();
  return { bindings, placements, events, scheduled, notified };
}

const clusterRb = (name: string, clusters: string[]) => ({
  apiVersion: 'work.karmada.io/v1alpha2',
  kind: 'ClusterResourceBinding',
  metadata: { name },
  spec: { resource: { apiVersion: 'v1', kind: 'Namespace', name }, clusters: clusters.map((c) => ({ name: c })) },
});

// A request of many bindings: new ones (placed, unplaced, on a faulty cluster, cluster-scoped) and, applied
// over an earlier request, an unchanged one and a moved one.
const first = [binding('kept', ['m1']), binding('moved', ['m1'])];
const second = [
  ...Array.from({ length: 30 }, (_, i) => binding(`app-${i}`, [CLUSTERS[i % 3]])),
  binding('unplaced', [], { placement: { clusterAffinity: { clusterNames: ['m1'] } } }),
  clusterRb('shared', ['m2']),
  binding('kept', ['m1']),
  binding('moved', ['m2']),
];

describe('applying many bindings at once', () => {
  it('stores, indexes, records and sends what applying them one at a time does', async () => {
    const batched = memoryPlane();
    const single = memoryPlane();
    for (const m of [batched, single]) await applyObjects(m.plane, decodeApplyDocuments([cluster('m1'), cluster('m2'), cluster('m3', true)]));
    await applyObjects(batched.plane, decodeApplyDocuments(first));
    const batchedResults = await applyObjects(batched.plane, decodeApplyDocuments(second));
    const singleResults = [];
    for (const doc of first) await applyBinding(single.plane, decodeApplyDocuments([doc])[0].object as BindingInput);
    for (const doc of second) singleResults.push(await applyBinding(single.plane, decodeApplyDocuments([doc])[0].object as BindingInput));

    expect(batchedResults.map((r) => r.action)).toEqual(singleResults);
    expect(batchedResults.slice(-3).map((r) => `${r.name} ${r.action}`)).toEqual(['shared created', 'default/kept unchanged', 'default/moved configured']);
    expect(await state(batched)).toEqual(await state(single));
    // One taint-manager message per faulty cluster, not one per binding placed there.
    expect(batched.taintManager.messages().filter((s) => s.message.reason === 'binding-changed')).toHaveLength(1);
    expect(single.taintManager.messages().filter((s) => s.message.reason === 'binding-changed')).toHaveLength(10);
    expect((await batched.ledger.listPlacements('m1')).map((p) => p.name)).not.toContain('moved');
  });

  it('creates new bindings without reading any: placement rows, then the bindings, in one batched call each, listing none', async () => {
    const m = memoryPlane();
    await applyObjects(m.plane, decodeApplyDocuments(CLUSTERS.map((name) => cluster(name))));
    const get = vi.spyOn(m.bindings, 'get');
    const list = vi.spyOn(m.bindings, 'list');
    const writeMany = vi.spyOn(m.bindings, 'writeMany');
    const create = vi.spyOn(m.bindings, 'create');
    const createPlacements = vi.spyOn(m.ledger, 'createPlacements');
    const upsertPlacements = vi.spyOn(m.ledger, 'upsertPlacements');
    const append = vi.spyOn(m.events, 'append');
    const docs = Array.from({ length: 120 }, (_, i) => binding(`app-${i}`, [CLUSTERS[i % 3]]));
    const results = await applyObjects(m.plane, decodeApplyDocuments(docs));
    expect(results.every((r) => r.action === 'created')).toBe(true);
    expect(get).not.toHaveBeenCalled();
    expect(list).not.toHaveBeenCalled();
    expect(writeMany).toHaveBeenCalledTimes(1);
    expect(create).not.toHaveBeenCalled();
    expect(createPlacements).toHaveBeenCalledTimes(1);
    expect(upsertPlacements).not.toHaveBeenCalled();
    expect(append.mock.calls.map(([events]) => events.length)).toEqual([120]);
    expect((await m.ledger.listPlacements('m1')).map((p) => p.name)).toHaveLength(40);
  });

  it('applies stored bindings from a read, and reads first for the rest of a request once a batch found many stored', async () => {
    const batched = memoryPlane();
    const single = memoryPlane();
    const before = Array.from({ length: 700 }, (_, i) => binding(`app-${i}`, [CLUSTERS[i % 3]]));
    // Every stored binding moves to the next cluster; a few new ones come in between.
    const after = Array.from({ length: 720 }, (_, i) => binding(`app-${i}`, [CLUSTERS[(i + 1) % 3]]));
    for (const m of [batched, single]) {
      await applyObjects(m.plane, decodeApplyDocuments(CLUSTERS.map((name) => cluster(name))));
      await applyObjects(m.plane, decodeApplyDocuments(before));
    }
    const createPlacements = vi.spyOn(batched.ledger, 'createPlacements');
    const get = vi.spyOn(batched.bindings, 'get');
    const batchedResults = await applyObjects(batched.plane, decodeApplyDocuments(after));
    const singleResults = [];
    for (const doc of after) singleResults.push(await applyBinding(single.plane, decodeApplyDocuments([doc])[0].object as BindingInput));
    expect(batchedResults.map((r) => r.action)).toEqual(singleResults);
    expect(singleResults.filter((r) => r === 'configured')).toHaveLength(700);
    expect(await state(batched)).toEqual(await state(single));
    // The first batch of 500 tried creating and found them stored; the second read first.
    expect(createPlacements).toHaveBeenCalledTimes(1);
    expect(get).toHaveBeenCalledTimes(720);
  });

  it('applies a binding created or changed by someone else since it was read alone, over theirs, and the rest in the batch', async () => {
    const m = memoryPlane();
    await applyObjects(m.plane, decodeApplyDocuments(CLUSTERS.map((name) => cluster(name))));
    await applyObjects(m.plane, decodeApplyDocuments([binding('app-2', ['m1'])]));
    const theirs = await storedElsewhere('app-1', ['m3']);
    m.bindings.beforeWrite = async (method) => {
      if (method !== 'writeMany') return;
      m.bindings.beforeWrite = undefined;
      // Between the batch's reads and its write, another writer creates app-1 and changes app-2.
      await m.bindings.create('rb:default:app-1', theirs);
      const two = (await m.bindings.get('rb:default:app-2'))!;
      await m.bindings.replace('rb:default:app-2', { ...two.value, labels: { theirs: 'yes' } }, two.etag);
    };
    const results = await applyObjects(m.plane, decodeApplyDocuments([binding('app-0', ['m1']), binding('app-1', ['m2']), binding('app-2', ['m2'])]));
    expect(results.map((r) => `${r.name} ${r.action}`)).toEqual(['default/app-0 created', 'default/app-1 configured', 'default/app-2 configured']);
    const one = (await m.bindings.get('rb:default:app-1'))!.value;
    expect(one.uid).toBe(theirs.uid);
    expect(one.spec.clusters).toEqual([{ name: 'm2', replicas: 2 }]);
    const two = (await m.bindings.get('rb:default:app-2'))!.value;
    expect(two.spec.clusters).toEqual([{ name: 'm2', replicas: 2 }]);
    expect(two.labels).toEqual({});
    expect(two.generation).toBe(2);
    expect((await m.ledger.listPlacements('m2')).map((p) => p.name).sort()).toEqual(['app-1', 'app-2']);
    expect((await m.ledger.listPlacements('m1')).map((p) => p.name)).toEqual(['app-0']);
    const events = (await m.events.all()).filter((e) => e.kind !== 'Cluster').map((e) => `${e.name} ${e.reason}`);
    expect(events).toEqual(['default/app-2 Created', 'default/app-0 Created', 'default/app-1 Configured', 'default/app-2 Configured']);
  });
});

/** A binding as another writer stored it (applied on a plane of its own). */
async function storedElsewhere(name: string, clusters: string[]): Promise<BindingRecord> {
  const other = memoryPlane();
  await applyObjects(other.plane, decodeApplyDocuments([binding(name, clusters)]));
  return (await other.bindings.get(`rb:default:${name}`))!.value;
}
