import { describe, expect, it } from 'vitest';
import { sleep } from '../../shared/clock';
import { MemoryDocumentStore } from '../../shared/store/memory/documentStore';
import { keep, mutate, write } from '../../shared/store/optimistic';

describe('mutate: read-modify-write with ETags', () => {
  it('50 writers of one document in one process all succeed, each change applied once', async () => {
    const store = new MemoryDocumentStore<{ seen: number[] }>();
    const attempts: number[] = [];
    await Promise.all(
      Array.from({ length: 50 }, (_, n) =>
        mutate(store, 'doc', async (current, attempt) => {
          attempts.push(attempt);
          // A read-modify-write that takes a while, as one against storage does.
          await sleep(1);
          return write({ seen: [...(current?.value.seen ?? []), n] }, undefined);
        }),
      ),
    );
    const stored = (await store.get('doc'))!.value.seen;
    expect([...stored].sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, n) => n));
    // They took turns: none lost a race to another writer of this process.
    expect(Math.max(...attempts)).toBe(1);
  });

  it('writers of different documents do not wait for each other', async () => {
    const store = new MemoryDocumentStore<number>();
    const order: string[] = [];
    await Promise.all([
      mutate(store, 'slow', async () => {
        await sleep(30);
        order.push('slow');
        return write(1, undefined);
      }),
      mutate(store, 'fast', () => {
        order.push('fast');
        return write(2, undefined);
      }),
    ]);
    expect(order).toEqual(['fast', 'slow']);
  });

  it('a mutate nested in another of the same document runs at once instead of waiting for itself', async () => {
    const store = new MemoryDocumentStore<number>();
    const { result } = await mutate(store, 'doc', async () => {
      const inner = await mutate(store, 'doc', () => keep('inner ran'));
      return keep(inner.result);
    });
    expect(result).toBe('inner ran');
  });

  it('a writer that waited its turn reads again instead of using the version it was given', async () => {
    const store = new MemoryDocumentStore<number>();
    await store.create('doc', 0);
    const given = (await store.get('doc'))!;
    const first = mutate(store, 'doc', async (current) => {
      await sleep(5);
      return write((current?.value ?? 0) + 1, undefined);
    });
    const seen: number[] = [];
    const second = mutate(
      store,
      'doc',
      (current, attempt) => {
        seen.push(attempt);
        return write((current?.value ?? 0) + 1, undefined);
      },
      given,
    );
    await Promise.all([first, second]);
    expect((await store.get('doc'))!.value).toBe(2);
    expect(seen).toEqual([1]);
  });

  it('a failing writer releases its turn', async () => {
    const store = new MemoryDocumentStore<number>();
    await expect(mutate(store, 'doc', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(mutate(store, 'doc', () => write(1, 'written'))).resolves.toMatchObject({ result: 'written' });
  });
});
