import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The import graph of shared/ and functions/: no cycle anywhere, and each layer imports only downward
 * (functions → use-cases → state and ports → pure decisions). Read from the sources, so a new import
 * that breaks a rule fails here, named.
 */
const ROOT = resolve(__dirname, '../..');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'/g), ...text.matchAll(/(?:^|\n)\s*import\s+'(\.[^']+)'/g)].map(
    (m) => m[1],
  );
  return specifiers.map((spec) => {
    const base = resolve(dirname(file), spec.replace(/\.js$/, ''));
    for (const candidate of [`${base}.ts`, join(base, 'index.ts')]) {
      try {
        if (statSync(candidate).isFile()) return relative(ROOT, candidate);
      } catch {
        // try the next form
      }
    }
    throw new Error(`${relative(ROOT, file)}: cannot resolve ${spec}`);
  });
}

const files = [...sources(join(ROOT, 'shared')), ...sources(join(ROOT, 'functions'))].map((f) => relative(ROOT, f));
const graph = new Map(files.map((f) => [f, importsOf(join(ROOT, f))]));

/** Strongly connected components with more than one file (or a file importing itself): the cycles. */
function cycles(): string[][] {
  let index = 0;
  const indexes = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    indexes.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!indexes.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, indexes.get(w)!));
    }
    if (low.get(v) === indexes.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const f of files) if (!indexes.has(f)) visit(f);
  return found;
}

const under = (prefix: string) => (f: string) => f.startsWith(prefix);
const is =
  (...names: string[]) =>
  (f: string) =>
    names.includes(f);
const C = 'shared/controllers/';
const useCase = (f: string) => f.startsWith(C) && !f.startsWith(`${C}state/`) && !is(`${C}ports.ts`, `${C}views.ts`)(f);
/** The stored records: the shapes every layer from the adapters up reads and writes. */
const RECORDS = 'shared/store/records.ts';

/** [who, may not import, why]. */
const RULES: Array<[string, (f: string) => boolean, (f: string) => boolean, string]> = [
  [
    'pure decisions',
    under('shared/failover/'),
    (t) => !under('shared/failover/')(t) && !under('shared/api/')(t) && t !== 'shared/clock.ts',
    'decisions are pure: only other decisions and the resource shapes',
  ],
  ['resource shapes', under('shared/api/'), (t) => !under('shared/api/')(t) && !under('shared/failover/')(t), 'schemas and decoding need no I/O'],
  [
    'adapters',
    (f) => under('shared/store/')(f) || under('shared/queue/')(f) || under('shared/kube/')(f),
    (t) => under('shared/controllers/')(t) || under('shared/local/')(t),
    'adapters implement ports; they do not call controllers',
  ],
  [
    'ports and records',
    (f) => f === `${C}ports.ts` || f === RECORDS,
    (t) => under(C)(t) && t !== `${C}ports.ts`,
    'ports and records sit below the state layer',
  ],
  ['views', is(`${C}views.ts`), (t) => under(C)(t), 'views map records to API shapes'],
  ['state layer', under(`${C}state/`), (t) => useCase(t) || t === `${C}views.ts`, 'the state layer imports only ports, records, decisions and adapters'],
  [
    'use-cases',
    (f) => useCase(f) && f !== `${C}karmadaSync.ts`,
    (t) => under('shared/store/')(t) && !['shared/store/ports.ts', RECORDS, 'shared/store/optimistic.ts'].includes(t),
    'use-cases reach storage through its ports (the Karmada change feed alone maps watched objects with the mapping of the Karmada adapters)',
  ],
  ['shared/', under('shared/'), under('functions/'), 'functions/ sits on top'],
  ['functions/', under('functions/'), under(`${C}state/`), 'triggers call use-cases, not the state layer'],
];

describe('architecture', () => {
  it('has no import cycle in shared/ and functions/', () => {
    expect(cycles()).toEqual([]);
  });

  it.each(RULES)('%s import only downward', (_who, who, forbidden) => {
    const broken = files.filter(who).flatMap((f) =>
      graph
        .get(f)!
        .filter(forbidden)
        .map((t) => `${f} -> ${t}`),
    );
    expect(broken).toEqual([]);
  });

  it('use-cases import each other one way only (no two-way pair)', () => {
    const pairs = files.filter(useCase).flatMap((f) =>
      graph
        .get(f)!
        .filter(useCase)
        .filter((t) => graph.get(t)!.includes(f))
        .map((t) => `${f} <-> ${t}`),
    );
    expect(pairs).toEqual([]);
  });

  it('sees the whole tree (the checks above are not vacuous)', () => {
    expect(files.length).toBeGreaterThan(60);
    expect(graph.get('shared/controllers/evictionEffect.ts')).toContain('shared/controllers/scheduler.ts');
  });
});
