import { AsyncLocalStorage } from 'node:async_hooks';
import { sleep } from '../clock';
import { ConcurrencyError, DocumentStore, Versioned } from './ports';

export type Mutation<T, R> = { kind: 'write'; value: T; result: R } | { kind: 'delete'; result: R } | { kind: 'keep'; result: R };

export const write = <T, R>(value: T, result: R): Mutation<T, R> => ({ kind: 'write', value, result });
export const keep = <T, R>(result: R): Mutation<T, R> => ({ kind: 'keep', result });
export const remove = <T, R>(result: R): Mutation<T, R> => ({ kind: 'delete', result });

/**
 * Attempts against writers in other processes. Writers in this process take turns (below), so a lost race
 * means another process wrote; each loss is that process's progress, and a handful of them is plenty.
 */
const MAX_ATTEMPTS = 20;
/** The longest pause between attempts: jittered, growing with the attempt, so two processes fall out of step. */
const MAX_BACKOFF_MS = 100;

/**
 * Read-modify-write with ETags: `change` sees the current document (or undefined) and says what to do;
 * a lost race re-reads and calls `change` again, so it must be a function of what it is given.
 *
 * Writers of the same document in this process take turns: concurrent requests for one document (a burst
 * of applies of one object, reports racing on the fleet summary) queue here instead of failing each
 * other's ETags until one runs out of attempts. A mutate nested inside another of the same document runs
 * at once (it already holds the turn).
 */
export async function mutate<T, R>(
  store: DocumentStore<T>,
  id: string,
  change: (current: Versioned<T> | undefined, attempt: number) => Mutation<T, R> | Promise<Mutation<T, R>>,
  /**
   * A version the caller has just read: the first attempt uses it instead of reading again (unless it waited
   * its turn). `absent`: the caller expects no document, and the first attempt creates without a read (a
   * document there after all fails the create, and the next attempt reads it).
   */
  initial?: Versioned<T> | 'absent',
): Promise<{ result: R; etag?: string }> {
  return inTurn(store, id, async (waited) => {
    for (let attempt = 1; ; attempt++) {
      const assumed = attempt === 1 && initial !== undefined && !waited;
      const current = assumed ? (initial === 'absent' ? undefined : initial) : await store.get(id);
      const decision = await change(current, attempt);
      try {
        if (decision.kind === 'keep') return { result: decision.result, etag: current?.etag };
        if (decision.kind === 'delete') {
          if (current) await store.delete(id, current.etag);
          return { result: decision.result };
        }
        const etag = current ? await store.replace(id, decision.value, current.etag) : await store.create(id, decision.value);
        return { result: decision.result, etag };
      } catch (error) {
        if (!(error instanceof ConcurrencyError) || attempt >= MAX_ATTEMPTS) throw error;
        await sleep(Math.random() * Math.min(MAX_BACKOFF_MS, 10 * attempt));
      }
    }
  });
}

/** The documents whose turn the running async context holds (a nested mutate of one runs at once). */
const turnsHeld = new AsyncLocalStorage<ReadonlySet<string>>();
/** Per store, per document: the promise the next writer waits for. */
const queues = new WeakMap<object, Map<string, Promise<void>>>();
const storeNumbers = new WeakMap<object, number>();
let storesNumbered = 0;

async function inTurn<R>(store: object, id: string, run: (waited: boolean) => Promise<R>): Promise<R> {
  let storeNumber = storeNumbers.get(store);
  if (storeNumber === undefined) storeNumbers.set(store, (storeNumber = ++storesNumbered));
  const key = `${storeNumber}|${id}`;
  const held = turnsHeld.getStore();
  if (held?.has(key)) return run(false);
  let queue = queues.get(store);
  if (!queue) queues.set(store, (queue = new Map<string, Promise<void>>()));
  const before = queue.get(id);
  let release!: () => void;
  const mine = new Promise<void>((resolve) => (release = resolve));
  const tail = before ? before.then(() => mine) : mine;
  queue.set(id, tail);
  try {
    if (before) await before;
    return await turnsHeld.run(new Set([...(held ?? []), key]), () => run(before !== undefined));
  } finally {
    release();
    if (queue.get(id) === tail) queue.delete(id);
  }
}
