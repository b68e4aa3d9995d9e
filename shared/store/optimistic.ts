import { sleep } from '../clock';
import { ConcurrencyError, DocumentStore, Versioned } from './ports';

export type Mutation<T, R> = { kind: 'write'; value: T; result: R } | { kind: 'delete'; result: R } | { kind: 'keep'; result: R };

export const write = <T, R>(value: T, result: R): Mutation<T, R> => ({ kind: 'write', value, result });
export const keep = <T, R>(result: R): Mutation<T, R> => ({ kind: 'keep', result });
export const remove = <T, R>(result: R): Mutation<T, R> => ({ kind: 'delete', result });

const MAX_ATTEMPTS = 12;

/**
 * Read-modify-write with ETags: `change` sees the current document (or undefined) and says what to do;
 * a lost race re-reads and calls `change` again, so it must be a function of what it is given.
 */
export async function mutate<T, R>(
  store: DocumentStore<T>,
  id: string,
  change: (current: Versioned<T> | undefined, attempt: number) => Mutation<T, R> | Promise<Mutation<T, R>>,
  /** A version the caller has just read: the first attempt uses it instead of reading again. */
  initial?: Versioned<T>,
): Promise<{ result: R; etag?: string }> {
  for (let attempt = 1; ; attempt++) {
    const current = attempt === 1 && initial ? initial : await store.get(id);
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
      // Back off a little, with jitter, so two writers do not collide again in lock-step.
      await sleep(Math.random() * 10 * attempt);
    }
  }
}
