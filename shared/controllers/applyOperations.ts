import { randomUUID } from 'node:crypto';
import type { ApplyOperationView } from '../api/contract/views';
import type { AppliedObject } from '../api/decode';
import { ApiError } from '../api/errors';
import { mapConcurrent } from '../concurrency';
import { keep, mutate, write } from '../store/optimistic';
import { ConcurrencyError } from '../store/ports';
import type { ApplyChunkRecord, ApplyOperationRecord } from '../store/records';
import { errorFields } from '../telemetry/log';
import { applyObjects, refuseUnstorable } from './apply';
import type { ApplyChunkMessage, ControlPlane } from './ports';

/**
 * A large apply in the background. A request whose objects could take longer than the host's HTTP time
 * limit (Azure's front end answers 504 after 230 s, while the request goes on or is cut) is validated and
 * refused up front as a whole, as any apply, then stored in chunks and answered 202 at once. Queue messages
 * apply the chunks one after another (each chunk's objects through the same `applyObjects`), recording each
 * chunk's results and the operation's progress. So a large request is never cut part-way without its caller
 * knowing where: the operation says how many objects are applied, and why it stopped if it did.
 *
 * Objects go in the order `applyObjects` gives them (the app's own kinds in the order given, then the
 * resource templates), so a chunk of templates comes after every policy of the request. A chunk whose
 * results are stored is not applied again; one applied but not yet stored (its invocation died) is applied
 * again, which changes nothing: applying is idempotent.
 */

/** Objects of one chunk at most: the unit of progress (a crash repeats at most one chunk). */
export const CHUNK_OBJECTS = 250;
/** JSON bytes of one chunk's objects at most (its document is one storage entity of 1 MiB, UTF-16 in places). */
const CHUNK_BYTES = 256 * 1024;
/** How long one message applies chunks back to back before it hands on to the next message. */
export const CHUNKS_BUDGET_MS = 30_000;
/** A message for a chunk whose turn has not come (the previous one's progress is not written yet) comes back after this. */
const NOT_YET_SECONDS = 1;

const chunkId = (operation: string, index: number) => `${operation}:${String(index).padStart(6, '0')}`;

/** Whether a request goes to the background: more objects than the inline limit, or its caller asked (`Prefer: respond-async`). */
export const appliesInBackground = (plane: ControlPlane, objects: readonly AppliedObject[], preferAsync: boolean): boolean =>
  objects.length > 0 && (preferAsync || objects.length > plane.config.applyInlineMaxObjects);

/** Stores the request's objects in chunks and sends the first chunk's message; the operation as started. */
export async function startApplyOperation(plane: ControlPlane, objects: AppliedObject[]): Promise<ApplyOperationView> {
  refuseUnstorable(plane, objects);
  const id = randomUUID();
  const ordered = objects.map((object, index) => ({ index, object }));
  // applyObjects' order: the app's own kinds as given, then the templates.
  const inOrder = [...ordered.filter((o) => o.object.kind !== 'ResourceTemplate'), ...ordered.filter((o) => o.object.kind === 'ResourceTemplate')];
  const chunks: Array<ApplyChunkRecord<AppliedObject>['objects']> = [];
  let bytes = 0;
  for (const item of inOrder) {
    const size = Buffer.byteLength(JSON.stringify(item.object));
    const last = chunks[chunks.length - 1];
    if (!last || last.length >= CHUNK_OBJECTS || bytes + size > CHUNK_BYTES) {
      chunks.push([item]);
      bytes = size;
    } else {
      last.push(item);
      bytes += size;
    }
  }
  // The chunks first, the operation after: an operation that exists has every chunk it names.
  await mapConcurrent(chunks, 8, (chunk, index) => plane.applyOperations.chunks.create(chunkId(id, index), { objects: chunk, results: [] }));
  const now = plane.clock.now().toISOString();
  const record: ApplyOperationRecord = {
    state: 'Running',
    createdAt: now,
    updatedAt: now,
    total: objects.length,
    chunks: chunks.length,
    chunksApplied: 0,
    applied: 0,
    counts: { created: 0, configured: 0, unchanged: 0 },
  };
  await plane.applyOperations.operations.create(id, record);
  await plane.applyOperations.queue.send({ operation: id, chunk: 0 });
  plane.log.info('apply operation started', { operation: id, objects: objects.length, chunks: chunks.length });
  await forgetFinished(plane);
  return view(id, record);
}

/** How long a finished operation and its results stay readable. */
export const FINISHED_KEPT_MS = 7 * 24 * 3600_000;

/**
 * Deletes the operations finished more than FINISHED_KEPT_MS ago, their chunks first (an operation without its
 * chunks is never left readable). Run when an operation starts: the table holds what the last week started.
 */
async function forgetFinished(plane: ControlPlane): Promise<void> {
  const before = plane.clock.now().getTime() - FINISHED_KEPT_MS;
  const old = await plane.applyOperations.operations.list((op) => op.state !== 'Running' && Date.parse(op.finishedAt ?? op.updatedAt) < before);
  for (const { id, value, etag } of old) {
    await mapConcurrent(
      Array.from({ length: value.chunks }, (_, index) => chunkId(id, index)),
      8,
      (chunk) => plane.applyOperations.chunks.delete(chunk),
    );
    // Deleted by another operation's start meanwhile: nothing left to do.
    await plane.applyOperations.operations.delete(id, etag).catch((error: unknown) => {
      if (!(error instanceof ConcurrencyError)) throw error;
    });
  }
}

/**
 * A chunk's message: applies the operation's chunks one after another, from where the operation stands,
 * for up to CHUNKS_BUDGET_MS, then sends the next chunk's message (a queue poll per chunk would add up to a
 * second each). Each chunk: its objects applied, their results kept (the objects emptied), then the progress
 * recorded (ETag-checked, only by the chunk the operation is at). A message redelivered after a crash resumes
 * where the operation stands; one for a chunk whose turn has not come is sent again a second later. An object
 * the apply refuses (4xx) ends the operation as Failed, saying why; any other error is thrown (the queue tries
 * the message again).
 */
export async function applyChunks(plane: ControlPlane, message: ApplyChunkMessage, budgetMs = CHUNKS_BUDGET_MS): Promise<void> {
  const { operation } = message;
  const started = Date.now();
  for (;;) {
    const current = await plane.applyOperations.operations.get(operation);
    if (!current || current.value.state !== 'Running') return;
    if (message.chunk > current.value.chunksApplied) {
      await plane.applyOperations.queue.send(message, { delaySeconds: NOT_YET_SECONDS });
      return;
    }
    const chunk = current.value.chunksApplied;
    if (!(await applyOneChunk(plane, operation, chunk))) return;
    if (chunk + 1 >= current.value.chunks) {
      plane.log.info('apply operation succeeded', { operation, objects: current.value.total });
      return;
    }
    if (Date.now() - started >= budgetMs) {
      await plane.applyOperations.queue.send({ operation, chunk: chunk + 1 });
      return;
    }
  }
}

/** One chunk applied and recorded; false when the operation stopped (Failed) on it. */
async function applyOneChunk(plane: ControlPlane, operation: string, chunk: number): Promise<boolean> {
  const id = chunkId(operation, chunk);
  const stored = await plane.applyOperations.chunks.get(id);
  if (!stored) throw new Error(`apply operation ${operation}: chunk ${chunk} is missing`);
  let results: ApplyChunkRecord['results'];
  if (stored.value.objects.length === 0) results = stored.value.results;
  else {
    try {
      const applied = await applyObjects(
        plane,
        stored.value.objects.map((o) => o.object),
      );
      results = applied.map((result, k) => ({ index: stored.value.objects[k].index, ...result }));
    } catch (error) {
      if (!(error instanceof ApiError) || error.status >= 500) throw error;
      await finish(plane, operation, chunk, { status: error.status, error: error.message, ...(error.errors.length > 0 ? { errors: error.errors } : {}) });
      plane.log.warn('apply operation failed', { operation, chunk, ...errorFields(error) });
      return false;
    }
    // The results replace the objects: a redelivered message finds them and applies nothing again.
    await plane.applyOperations.chunks.replace(id, { objects: [], results }, stored.etag);
  }
  await mutate(plane.applyOperations.operations, operation, (latest) => {
    if (!latest || latest.value.chunksApplied !== chunk) return keep(undefined);
    const counts = { ...latest.value.counts };
    for (const r of results) counts[r.action]++;
    const now = plane.clock.now().toISOString();
    const last = chunk + 1 >= latest.value.chunks;
    return write(
      {
        ...latest.value,
        chunksApplied: chunk + 1,
        applied: latest.value.applied + results.length,
        counts,
        updatedAt: now,
        ...(last ? { state: 'Succeeded' as const, finishedAt: now } : {}),
      },
      undefined,
    );
  });
  return true;
}

async function finish(plane: ControlPlane, operation: string, chunk: number, error: NonNullable<ApplyOperationRecord['error']>): Promise<void> {
  await mutate(plane.applyOperations.operations, operation, (latest) => {
    if (!latest || latest.value.state !== 'Running' || latest.value.chunksApplied !== chunk) return keep(undefined);
    const now = plane.clock.now().toISOString();
    return write({ ...latest.value, state: 'Failed' as const, updatedAt: now, finishedAt: now, error }, undefined);
  });
}

/** GET /api/apply/operations/{id}: the operation, with every result once it has finished. */
export async function getApplyOperation(plane: ControlPlane, id: string): Promise<ApplyOperationView | undefined> {
  const found = await plane.applyOperations.operations.get(id);
  if (!found) return undefined;
  if (found.value.state === 'Running') return view(id, found.value);
  const chunks = await Promise.all(Array.from({ length: found.value.chunksApplied }, (_, index) => plane.applyOperations.chunks.get(chunkId(id, index))));
  const results = chunks
    .flatMap((chunk) => chunk?.value.results ?? [])
    .sort((a, b) => a.index - b.index)
    .map(({ kind, name, action }) => ({ kind, name, action }));
  return { ...view(id, found.value), results };
}

function view(id: string, record: ApplyOperationRecord): ApplyOperationView {
  const { chunks: _chunks, chunksApplied: _applied, ...rest } = record;
  return { id, ...rest };
}
