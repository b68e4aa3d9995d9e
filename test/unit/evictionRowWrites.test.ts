import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Every change of an eviction row's state goes through the state machine (shared/failover/evictionRow.ts)
 * and its one apply (shared/controllers/state/evictionRows.ts): no other module writes a ledger row, and no
 * other module builds a row in a new state by hand.
 */
const ROOT = resolve(__dirname, '../..');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

const files = ['shared', 'functions', 'scripts', 'cli'].flatMap((dir) => sources(join(ROOT, dir))).map((f) => relative(ROOT, f));
const text = (file: string) => readFileSync(join(ROOT, file), 'utf8');

/** Where the ledger's row writes may be called: the one apply, and the adapters that implement them. */
const WRITERS = (file: string) => file === 'shared/controllers/state/evictionRows.ts' || file.startsWith('shared/store/');
const ROW_WRITE = /\.(updateEviction|updateEvictions|commitEviction|recordEvictions)\(/g;
/** A record copied with a new state: `{ ...record, state: 'done' }`. */
const HAND_MADE_STATE = /\{\s*\.\.\.[\w.]+,[^{}]*\bstate:\s*'(pending|scheduled|blocked|done|abandoned|failed)'/g;

describe('eviction row writes', () => {
  it('sees the files that change rows (the check is not vacuous)', () => {
    expect(files).toContain('shared/controllers/pacer.ts');
    expect(text('shared/controllers/state/evictionRows.ts')).toMatch(ROW_WRITE);
    expect("{ ...row.record, state: 'abandoned', message }").toMatch(HAND_MADE_STATE);
  });

  it('only the state layer calls the ledger row writes', () => {
    const calls = files.filter((f) => !WRITERS(f)).flatMap((f) => [...text(f).matchAll(ROW_WRITE)].map((m) => `${f}: ${m[1]}`));
    expect(calls).toEqual([]);
  });

  it('only the state machine sets a row state on a copy', () => {
    const made = files
      .filter((f) => f !== 'shared/failover/evictionRow.ts' && !f.startsWith('shared/store/'))
      .flatMap((f) => [...text(f).matchAll(HAND_MADE_STATE)].map((m) => `${f}: ${m[0].slice(0, 60)}`));
    expect(made).toEqual([]);
  });
});
