import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { maxInFlightProblem, parsePercentage } from '../../shared/api/resources';
import { admitEviction, budgetSelects, BudgetSubject, resolveMaxInFlight, roomIn } from '../../shared/failover/budget';
import { FAILOVER_BUDGETS } from '../../shared/store/karmada/budgetStore';

/** FailoverBudget arithmetic (pure): maxInFlight against the matching count, selection, admission. */

describe('resolveMaxInFlight: an integer as given, a percentage of the matching bindings rounded up, at least 1', () => {
  const cases: Array<[number | string, number, number]> = [
    [5, 200, 5],
    [5, 0, 5],
    [1, 1000, 1],
    ['10%', 200, 20],
    ['10%', 30, 3], // exactly 3, not 3.0000000000000004 rounded up to 4
    ['10%', 31, 4],
    ['10%', 5, 1], // 0.5 rounds up
    ['10%', 0, 1], // nothing matches: still at least 1
    ['1%', 1, 1],
    ['33%', 10, 4],
    ['50%', 7, 4],
    ['100%', 7, 7],
    ['0.5%', 1000, 5],
    ['12.5%', 8, 1],
    ['12.5%', 9, 2],
    ['2.5%', 200, 5],
  ];
  it.each(cases)('%s of %i matching → %i', (maxInFlight, matching, expected) => {
    expect(resolveMaxInFlight(maxInFlight, matching)).toBe(expected);
  });

  it('refuses to resolve what the edge would refuse', () => {
    expect(() => resolveMaxInFlight('150%', 10)).toThrow('invalid maxInFlight');
  });
});

describe('maxInFlight at the edge: a whole number ≥ 1 or a percentage up to 100%', () => {
  const cases: Array<[unknown, string | undefined]> = [
    [1, undefined],
    [5, undefined],
    ['10%', undefined],
    ['100%', undefined],
    ['0.5%', undefined],
    [0, 'must be at least 1 (got 0)'],
    [-3, 'must be at least 1 (got -3)'],
    [1.5, 'must be a whole number or a percentage such as "10%" (got 1.5)'],
    ['150%', 'must not be more than 100% (got 150%)'],
    ['100.1%', 'must not be more than 100% (got 100.1%)'],
    ['0%', 'must be more than 0% (got 0%)'],
    ['10', 'must be a whole number or a percentage such as "10%" (got "10")'],
    ['ten%', 'must be a whole number or a percentage such as "10%" (got "ten%")'],
    ['-5%', 'must be a whole number or a percentage such as "10%" (got "-5%")'],
    [true, 'must be a whole number or a percentage such as "10%"'],
    [null, 'must be a whole number or a percentage such as "10%"'],
  ];
  it.each(cases)('%j → %s', (value, problem) => {
    expect(maxInFlightProblem(value)).toBe(problem);
  });

  it('parsePercentage reads only valid percentages', () => {
    expect(['10%', '100%', '0.25%', '101%', '0%', '10', '%'].map(parsePercentage)).toEqual([10, 100, 0.25, undefined, undefined, undefined, undefined]);
  });
});

describe('which bindings a budget selects: the ResourceBindings of its namespace that its label selector matches', () => {
  const rb = (labels: Record<string, string>, namespace = 'shop'): BudgetSubject => ({ kind: 'ResourceBinding', namespace, labels });
  const cases: Array<[string, Parameters<typeof budgetSelects>[0]['selector'], BudgetSubject, boolean]> = [
    ['empty selector: every binding of the namespace', {}, rb({}), true],
    ['another namespace: never', {}, rb({}, 'other'), false],
    ['a ClusterResourceBinding: never (a budget is namespaced)', {}, { kind: 'ClusterResourceBinding', labels: {} }, false],
    ['matchLabels equal', { matchLabels: { app: 'web' } }, rb({ app: 'web', tier: 'front' }), true],
    ['matchLabels different', { matchLabels: { app: 'web' } }, rb({ app: 'db' }), false],
    ['In', { matchExpressions: [{ key: 'tier', operator: 'In', values: ['front', 'edge'] }] }, rb({ tier: 'edge' }), true],
    ['In, label absent', { matchExpressions: [{ key: 'tier', operator: 'In', values: ['front'] }] }, rb({}), false],
    ['NotIn, label absent', { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['front'] }] }, rb({}), true],
    ['Exists', { matchExpressions: [{ key: 'critical', operator: 'Exists' }] }, rb({ critical: '' }), true],
    ['DoesNotExist', { matchExpressions: [{ key: 'critical', operator: 'DoesNotExist' }] }, rb({ critical: 'yes' }), false],
    [
      'matchLabels and matchExpressions are ANDed',
      { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['front'] }] },
      rb({ app: 'web', tier: 'back' }),
      false,
    ],
  ];
  it.each(cases)('%s', (_name, selector, subject, selected) => {
    expect(budgetSelects({ namespace: 'shop', selector }, subject)).toBe(selected);
  });
});

describe('admitEviction: released only when every budget that selects the binding has room', () => {
  const load = (key: string, limit: number, inFlight: string[]) => ({ key, limit, inFlight: new Set(inFlight) });
  const cases: Array<[string, Parameters<typeof admitEviction>[1], ReturnType<typeof admitEviction>]> = [
    ['no budget selects it', [], { allowed: true }],
    ['room left', [load('shop/web', 5, ['a', 'b'])], { allowed: true }],
    ['full', [load('shop/web', 2, ['a', 'b'])], { allowed: false, blockedBy: 'shop/web', limit: 2, inFlight: 2 }],
    ['full, but the binding is already in flight (leaving a second cluster): counted once', [load('shop/web', 2, ['a', 'x'])], { allowed: true }],
    [
      'two budgets: the full one blocks',
      [load('shop/all', 10, ['a']), load('shop/web', 1, ['b'])],
      { allowed: false, blockedBy: 'shop/web', limit: 1, inFlight: 1 },
    ],
    [
      'two full budgets: the first one names why',
      [load('shop/all', 1, ['a']), load('shop/web', 1, ['b'])],
      { allowed: false, blockedBy: 'shop/all', limit: 1, inFlight: 1 },
    ],
    ['over the limit (the limit shrank): full', [load('shop/web', 2, ['a', 'b', 'c'])], { allowed: false, blockedBy: 'shop/web', limit: 2, inFlight: 3 }],
  ];
  it.each(cases)('%s', (_name, budgets, expected) => {
    expect(admitEviction('x', budgets)).toEqual(expected);
  });

  it('never exceeds a budget over a run of candidates admitted one by one', () => {
    const budget = load('shop/web', resolveMaxInFlight('2.5%', 200), []);
    const inFlight = budget.inFlight;
    let admitted = 0;
    for (let i = 0; i < 200; i++) {
      if (admitEviction(`b${i}`, [budget]).allowed) {
        inFlight.add(`b${i}`);
        admitted++;
      }
      expect(inFlight.size).toBeLessThanOrEqual(5);
    }
    expect(admitted).toBe(5);
    expect(roomIn(budget)).toBe(0);
  });
});

describe('the CRD shipped for Karmada mode (infra/failoverbudget-crd.yaml)', () => {
  const crd = parse(readFileSync(join(__dirname, '..', '..', 'infra', 'failoverbudget-crd.yaml'), 'utf8')) as {
    spec: { group: string; scope: string; names: { kind: string; plural: string }; versions: Array<{ name: string; schema: { openAPIV3Schema: any } }> };
  };
  it('serves the kind the app reads', () => {
    expect(crd.spec).toMatchObject({
      group: FAILOVER_BUDGETS.group,
      scope: 'Namespaced',
      names: { kind: FAILOVER_BUDGETS.kind, plural: FAILOVER_BUDGETS.plural },
    });
    expect(crd.spec.versions.map((v) => v.name)).toEqual([FAILOVER_BUDGETS.version]);
  });
  it('validates what our apply validates: the selector operators and maxInFlight', () => {
    const spec = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec;
    expect(spec.required).toEqual(['selector', 'maxInFlight']);
    expect(spec.properties.selector.properties.matchExpressions.items.properties.operator.enum).toEqual(['In', 'NotIn', 'Exists', 'DoesNotExist']);
    const maxInFlight = spec.properties.maxInFlight;
    // Structural (a real API server refuses anything else): int-or-string with the two bare types, the value checked by CEL.
    expect(maxInFlight['x-kubernetes-int-or-string']).toBe(true);
    expect(maxInFlight.anyOf).toEqual([{ type: 'integer' }, { type: 'string' }]);
    const rule = String(maxInFlight['x-kubernetes-validations'][0].rule);
    expect(rule).toContain('self >= 1');
    // The CEL string literal's escapes, undone: the regular expression the API server applies.
    const pattern = new RegExp(/matches\('(.+)'\)/.exec(rule)![1].replace(/\\\\/g, '\\'));
    expect(['10%', '0.5%', '100%'].every((v) => pattern.test(v))).toBe(true);
    expect(['10', 'ten%', '1x5%'].some((v) => pattern.test(v))).toBe(false);
  });
});
