import { BatchDocumentStore, ConcurrencyError, DocumentStore, FlaggedDocumentStore, Versioned } from '../ports';
import { checkKey, nextEtag } from './errors';
import { BeforeWrite, FaultOptions, Faults } from './faults';

export type DocumentMethod = keyof DocumentStore<unknown> | 'writeMany';

// The Table adapter's limit: 30 properties of 30,000 characters.
const MAX_JSON = 30 * 30_000;

/**
 * Documents in memory with the Table adapter's semantics: ids sort like row keys (and are refused where a
 * row key would be), `create` conflicts, `replace` and `delete` check the ETag, ETags change on every
 * write. Values are stored as JSON, the Table adapter's stored form: a write keeps a copy (so later changes
 * to the caller's object do not reach the store), a read returns a new copy, and what does not survive
 * JSON (undefined properties, Dates, class instances) comes back as it would from the Table.
 * `failNext` and `beforeWrite` make chosen calls fail (see `Faults`).
 */
export class MemoryDocumentStore<T, F extends string = never> implements FlaggedDocumentStore<T, F>, BatchDocumentStore<T> {
  private readonly docs = new Map<string, { json: string; etag: string }>();
  readonly faults = new Faults<DocumentMethod>();
  private readonly flags?: (value: T) => Record<F, boolean>;

  constructor(options: { beforeWrite?: BeforeWrite<DocumentMethod>; flags?: (value: T) => Record<F, boolean> } = {}) {
    this.faults.beforeWrite = options.beforeWrite;
    this.flags = options.flags;
  }

  /** As the Table adapter: the documents whose flag (computed as it was written) is set. */
  async listFlagged(flag: F): Promise<Array<Versioned<T> & { id: string }>> {
    const all = await this.list();
    return this.flags ? all.filter((entry) => this.flags!(entry.value)[flag]) : [];
  }

  failNext(method: DocumentMethod, error: Error, options?: FaultOptions): void {
    this.faults.failNext(method, error, options);
  }

  set beforeWrite(hook: BeforeWrite<DocumentMethod> | undefined) {
    this.faults.beforeWrite = hook;
  }
  get beforeWrite(): BeforeWrite<DocumentMethod> | undefined {
    return this.faults.beforeWrite;
  }

  get(id: string): Promise<Versioned<T> | undefined> {
    return this.faults.run('get', [id], false, () => {
      const doc = this.docs.get(id);
      return doc && { value: JSON.parse(doc.json) as T, etag: doc.etag };
    });
  }

  list(where?: (value: T) => boolean): Promise<Array<Versioned<T> & { id: string }>> {
    return this.faults.run('list', [], false, () => this.read(() => true, where));
  }

  listPrefix(prefix: string, where?: (value: T) => boolean): Promise<Array<Versioned<T> & { id: string }>> {
    return this.faults.run('list', [], false, () => this.read((id) => id.startsWith(prefix), where));
  }

  /** The documents whose id `selects` and whose value `where` accepts, by id. */
  private read(selects: (id: string) => boolean, where?: (value: T) => boolean): Array<Versioned<T> & { id: string }> {
    return [...this.docs.keys()]
      .filter(selects)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .map((id) => ({ id, value: JSON.parse(this.docs.get(id)!.json) as T, etag: this.docs.get(id)!.etag }))
      .filter((entry) => !where || where(entry.value));
  }

  create(id: string, value: T): Promise<string> {
    return this.faults.run('create', [id, value], true, () => {
      const json = encode(id, value);
      if (this.docs.has(id)) throw new ConcurrencyError(`${id} already exists`);
      return this.put(id, json);
    });
  }

  replace(id: string, value: T, etag: string): Promise<string> {
    return this.faults.run('replace', [id, value, etag], true, () => {
      const json = encode(id, value);
      const current = this.docs.get(id);
      if (!current || (etag !== '*' && etag !== current.etag)) throw new ConcurrencyError(`${id} changed since it was read`);
      return this.put(id, json);
    });
  }

  /** As the Table adapter: each entry created or replaced at its ETag; undefined for one that lost a race. */
  writeMany(entries: Array<{ id: string; value: T; etag?: string }>): Promise<Array<string | undefined>> {
    return this.faults.run('writeMany', [entries], true, () => {
      // Encoded first, as the Table adapter does: a document it would refuse fails the call with nothing written.
      const encoded = entries.map(({ id, value }) => encode(id, value));
      return entries.map(({ id, etag }, i) => {
        const current = this.docs.get(id);
        const lost = etag === undefined ? current !== undefined : !current || (etag !== '*' && etag !== current.etag);
        return lost ? undefined : this.put(id, encoded[i]);
      });
    });
  }

  delete(id: string, etag?: string): Promise<boolean> {
    return this.faults.run('delete', [id, etag], true, () => {
      const current = this.docs.get(id);
      if (!current) {
        if (etag) throw new ConcurrencyError(`${id} was deleted since it was read`);
        return false;
      }
      if (etag && etag !== '*' && etag !== current.etag) throw new ConcurrencyError(`${id} changed since it was read`);
      this.docs.delete(id);
      return true;
    });
  }

  private put(id: string, json: string): string {
    const etag = nextEtag();
    this.docs.set(id, { json, etag });
    return etag;
  }
}

function encode(id: string, value: unknown): string {
  const json = JSON.stringify(value);
  if (json.length > MAX_JSON) throw new Error(`document ${id} is too large to store (${json.length} characters)`);
  checkKey(id, 'RowKey');
  return json;
}
