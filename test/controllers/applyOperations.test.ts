import { describe, expect, it } from 'vitest';
import { decodeApplyDocuments } from '../../shared/api/decode';
import { ApiError } from '../../shared/api/errors';
import {
  appliesInBackground,
  applyChunks,
  CHUNK_OBJECTS,
  FINISHED_KEPT_MS,
  getApplyOperation,
  startApplyOperation,
} from '../../shared/controllers/applyOperations';
import type { ApplyChunkMessage } from '../../shared/controllers/ports';
import { cluster } from '../helpers/fleet';
import { MemoryPlane, memoryPlane } from '../helpers/memoryPlane';

/**
 * A large apply goes on in the background: validated and refused up front as a whole, stored in chunks,
 * applied a chunk per queue message in applyObjects' order, its progress and results kept for the caller
 * to poll. Redelivered and early messages change nothing twice.
 */
const deployment = (name: string, group: string) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: 'default', labels: { group } },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: name } },
    template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } },
  },
});
const policy = (group: string) => ({
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind: 'PropagationPolicy',
  metadata: { name: group, namespace: 'default' },
  spec: {
    resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment', labelSelector: { matchLabels: { group } } }],
    placement: { clusterAffinity: { clusterNames: ['m1', 'm2'] } },
  },
});

/** One chunk a message (no time for a second): what a message does when chunks are slow. */
const applyChunk = (m: MemoryPlane, message: ApplyChunkMessage) => applyChunks(m.plane, message, 0);

/** Runs the chunk messages as the queue would deliver them, until none is left. */
async function drain(m: MemoryPlane, budgetMs = 0): Promise<ApplyChunkMessage[]> {
  const handled: ApplyChunkMessage[] = [];
  for (let round = 0; round < 1000; round++) {
    const [next] = m.applyOperations.queue.takeAll();
    if (!next) return handled;
    handled.push(next.message);
    await applyChunks(m.plane, next.message, budgetMs);
  }
  throw new Error('the chunks did not end');
}

describe('apply in the background', () => {
  it('goes to the background above APPLY_INLINE_MAX_OBJECTS, or when the caller prefers it', () => {
    const m = memoryPlane({ APPLY_INLINE_MAX_OBJECTS: '2' });
    const two = decodeApplyDocuments([cluster('a'), cluster('b')]);
    expect(appliesInBackground(m.plane, two, false)).toBe(false);
    expect(appliesInBackground(m.plane, two, true)).toBe(true);
    expect(appliesInBackground(m.plane, decodeApplyDocuments([cluster('a'), cluster('b'), cluster('c')]), false)).toBe(true);
  });

  it('applies every chunk in order (policies before the templates they claim) and answers the results in the order given', async () => {
    const m = memoryPlane();
    const count = CHUNK_OBJECTS * 2 + 10;
    // The templates come first in the request, their policy last: the policy is still applied first.
    const objects = decodeApplyDocuments([...Array.from({ length: count }, (_, i) => deployment(`web-${i}`, 'g')), cluster('m1'), cluster('m2'), policy('g')]);
    const started = await startApplyOperation(m.plane, objects);
    expect(started).toMatchObject({ state: 'Running', total: count + 3, applied: 0 });
    // One chunk a message when each takes the whole budget (at most a message per chunk).
    expect((await drain(m)).map((message) => message.chunk)).toEqual([0, 1, 2]);
    const done = await getApplyOperation(m.plane, started.id);
    expect(done).toMatchObject({ state: 'Succeeded', total: count + 3, applied: count + 3, counts: { created: count + 3, configured: 0, unchanged: 0 } });
    expect(done!.results!.map((r) => `${r.kind}/${r.name}`)).toEqual(objects.map((o) => `${o.kind === 'ResourceTemplate' ? o.object.kind : o.kind}/${o.name}`));
    // Every template was claimed by the policy applied before it: one binding each.
    expect((await m.bindings.list()).length).toBe(count);
    expect((await m.applyOperations.chunks.list()).every((chunk) => chunk.value.objects.length === 0)).toBe(true);
  });

  it('applies the chunks back to back within its time budget: one message for a request whose chunks are quick', async () => {
    const m = memoryPlane();
    const objects = decodeApplyDocuments(Array.from({ length: CHUNK_OBJECTS * 2 + 1 }, (_, i) => cluster(`c-${i}`)));
    const { id } = await startApplyOperation(m.plane, objects);
    expect((await drain(m, 60_000)).map((message) => message.chunk)).toEqual([0]);
    expect(await getApplyOperation(m.plane, id)).toMatchObject({ state: 'Succeeded', applied: CHUNK_OBJECTS * 2 + 1 });
  });

  it('a message before its turn is sent again a second later; a redelivered one resumes where the operation stands, applying nothing twice', async () => {
    const m = memoryPlane();
    const objects = decodeApplyDocuments(Array.from({ length: CHUNK_OBJECTS * 2 + 1 }, (_, i) => cluster(`c-${i}`)));
    const { id } = await startApplyOperation(m.plane, objects);
    const [first] = m.applyOperations.queue.takeAll();
    // The second chunk's message arrives before the first was applied: back in the queue, delayed.
    await applyChunk(m, { operation: id, chunk: 1 });
    expect(m.applyOperations.queue.takeAll().map((s) => [s.message.chunk, s.delaySeconds])).toEqual([[1, 1]]);
    await applyChunk(m, first.message);
    expect(await getApplyOperation(m.plane, id)).toMatchObject({ state: 'Running', applied: CHUNK_OBJECTS });
    expect(m.applyOperations.queue.takeAll().map((s) => s.message.chunk)).toEqual([1]);
    // The first chunk's message again (redelivered: its invocation died after recording): it goes on from chunk 1.
    await applyChunk(m, first.message);
    await drain(m);
    expect(await getApplyOperation(m.plane, id)).toMatchObject({
      state: 'Succeeded',
      applied: CHUNK_OBJECTS * 2 + 1,
      counts: { created: CHUNK_OBJECTS * 2 + 1, unchanged: 0 },
    });
  });

  it('a chunk whose progress was not recorded (the process died) is not applied again: its stored results count, and the operation goes on', async () => {
    const m = memoryPlane();
    const objects = decodeApplyDocuments(Array.from({ length: CHUNK_OBJECTS + 1 }, (_, i) => cluster(`c-${i}`)));
    const { id } = await startApplyOperation(m.plane, objects);
    const [first] = m.applyOperations.queue.takeAll();
    // The chunk's results are written, then the process dies before the progress.
    const replace = m.applyOperations.operations.replace.bind(m.applyOperations.operations);
    m.applyOperations.operations.replace = () => Promise.reject(new Error('the process died'));
    await expect(applyChunk(m, first.message)).rejects.toThrow('the process died');
    m.applyOperations.operations.replace = replace;
    m.applyOperations.queue.takeAll();
    await applyChunk(m, first.message);
    await drain(m);
    expect(await getApplyOperation(m.plane, id)).toMatchObject({ state: 'Succeeded', applied: CHUNK_OBJECTS + 1, counts: { created: CHUNK_OBJECTS + 1 } });
  });

  it('stops as Failed, saying why, when the apply refuses a chunk; the chunks after it are not applied', async () => {
    const m = memoryPlane();
    const objects = decodeApplyDocuments(Array.from({ length: CHUNK_OBJECTS * 2 }, (_, i) => cluster(`c-${i}`)));
    const { id } = await startApplyOperation(m.plane, objects);
    await applyChunk(m, m.applyOperations.queue.takeAll()[0].message);
    const create = m.clusters.create.bind(m.clusters);
    m.clusters.create = () => Promise.reject(new ApiError(409, 'Cluster c-250 changed while it was applied'));
    await drain(m);
    m.clusters.create = create;
    const failed = await getApplyOperation(m.plane, id);
    expect(failed).toMatchObject({ state: 'Failed', applied: CHUNK_OBJECTS, error: { status: 409, error: 'Cluster c-250 changed while it was applied' } });
    expect(failed!.results).toHaveLength(CHUNK_OBJECTS);
    expect(await m.clusters.get(`c-${CHUNK_OBJECTS * 2 - 1}`)).toBeUndefined();
  });

  it('forgets operations finished more than FINISHED_KEPT_MS ago, with their chunks, when another starts', async () => {
    const m = memoryPlane();
    const { id } = await startApplyOperation(m.plane, decodeApplyDocuments([cluster('a')]));
    await drain(m);
    m.clock.advance(FINISHED_KEPT_MS - 1000);
    const { id: second } = await startApplyOperation(m.plane, decodeApplyDocuments([cluster('b')]));
    expect(await getApplyOperation(m.plane, id)).toMatchObject({ state: 'Succeeded' });
    await drain(m);
    m.clock.advance(2000);
    await startApplyOperation(m.plane, decodeApplyDocuments([cluster('c')]));
    expect(await getApplyOperation(m.plane, id)).toBeUndefined();
    expect((await m.applyOperations.chunks.list()).some((chunk) => chunk.id.startsWith(id))).toBe(false);
    expect(await getApplyOperation(m.plane, second)).toMatchObject({ state: 'Succeeded' });
  });

  it('refuses up front, as a whole, what it could not store', async () => {
    const m = memoryPlane();
    m.plane.templates.measure = (value) => ({ bytes: JSON.stringify(value).length, limit: 70_000 });
    const big = { ...deployment('big', 'g'), metadata: { name: 'big', namespace: 'default', annotations: { blob: 'x'.repeat(10_000) } } };
    await expect(startApplyOperation(m.plane, decodeApplyDocuments([cluster('a'), big]))).rejects.toMatchObject({ status: 413 });
    expect(await m.applyOperations.operations.list()).toEqual([]);
    expect(m.applyOperations.queue.takeAll()).toEqual([]);
  });
});
