import { describe, expect, it } from 'vitest';
import { decodeApplyDocuments, parseDocuments } from '../../shared/api/decode';
import { ApiError, FieldError } from '../../shared/api/errors';
import type { AnyTaintPolicy, ClusterFacts, ClusterTaint, Condition, KarmadaTaintPolicy, MatchCondition, TaintPolicy } from '../../shared/failover/model';
import { evaluateTaintPolicies, TaintEvaluation } from '../../shared/failover/taintPolicy';

/**
 * ClusterTaintPolicy of Karmada's shape (v1.14+: targetClusters, addOnConditions, removeOnConditions,
 * taints) beside the windowed shape: upstream semantics, this project's ownership, and validation.
 */

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000);
const iso = (seconds: number) => at(seconds).toISOString();
const cond = (type: string, status: Condition['status'], since = 0): Condition => ({ type, status, lastTransitionTime: iso(since) });
const ready = (status: Condition['status'], since = 0) => cond('Ready', status, since);

const KEY = 'cluster.karmada.io/not-ready';
const readyIn = (...statusValues: Condition['status'][]): MatchCondition => ({ conditionType: 'Ready', operator: 'In', statusValues });

/** Karmada's example: taint on Ready False/Unknown, remove on Ready True. */
const karmada = (overrides: Partial<KarmadaTaintPolicy> = {}): KarmadaTaintPolicy => ({
  shape: 'karmada',
  name: 'detect-not-ready',
  createdAt: iso(-100),
  addOnConditions: [readyIn('False', 'Unknown')],
  removeOnConditions: [readyIn('True')],
  taints: [{ key: KEY, effect: 'NoExecute' }],
  ...overrides,
});

const seed = (overrides: Partial<TaintPolicy> = {}, add = 10, remove = 5): TaintPolicy => ({
  name: 'seed-not-ready',
  matchConditions: [readyIn('False', 'Unknown')],
  taintsToAdd: [{ key: KEY, effect: 'NoExecute', addOnMatchSeconds: add, removeOnMismatchSeconds: remove }],
  ...overrides,
});

const facts = (conditions: Condition[], taints: ClusterTaint[] = [], extra: Partial<ClusterFacts> = {}): ClusterFacts => ({
  name: 'member1',
  labels: { env: 'prod' },
  conditions,
  taints,
  policyWindows: {},
  ...extra,
});

const taint = (overrides: Partial<ClusterTaint> = {}): ClusterTaint => ({
  key: KEY,
  effect: 'NoExecute',
  timeAdded: iso(-50),
  owners: [],
  manual: false,
  ...overrides,
});

/** A short text of each taint: key:effect[=value] {holders}. */
const show = (taints: ClusterTaint[]) =>
  taints.map(
    (t) =>
      `${t.key}:${t.effect}${t.value ? `=${t.value}` : ''} {${[...(t.manual ? ['manual'] : []), ...t.owners.map((o) => (t.karmadaOwners?.includes(o) ? `k:${o}` : `s:${o}`)), ...(t.leftBy ? [`left:${t.leftBy}`] : [])].join(' ')}}`,
  );
const changesOf = (result: TaintEvaluation) =>
  result.changes.map((c) => `${c.action} ${c.taint.key}:${c.taint.effect} by ${c.policy || '-'} (${c.shape}: ${c.rule})`);

/** Runs the evaluator over a timeline, carrying the stored state from step to step like the controller. */
function run(
  steps: Array<{ t: number; conditions?: Condition[]; policies?: AnyTaintPolicy[]; edit?: (taints: ClusterTaint[]) => ClusterTaint[] }>,
  start = facts([]),
) {
  let state = start;
  let policies: AnyTaintPolicy[] = [];
  const log: Array<{ t: number; taints: string[]; changes: string[] }> = [];
  for (const step of steps) {
    if (step.conditions) state = { ...state, conditions: step.conditions };
    if (step.policies) policies = step.policies;
    if (step.edit) state = { ...state, taints: step.edit(state.taints) };
    const result = evaluateTaintPolicies(state, policies, at(step.t));
    state = { ...state, taints: result.taints, policyWindows: result.policyWindows };
    log.push({ t: step.t, taints: show(result.taints), changes: changesOf(result) });
  }
  return { log, state };
}

describe("Karmada's conditionMatches", () => {
  const cases: Array<{ name: string; addOn: MatchCondition[]; conditions: Condition[]; adds: boolean }> = [
    { name: 'In, status listed', addOn: [readyIn('False')], conditions: [ready('False')], adds: true },
    { name: 'In, status not listed', addOn: [readyIn('False')], conditions: [ready('True')], adds: false },
    {
      name: 'NotIn, status not listed',
      addOn: [{ conditionType: 'Ready', operator: 'NotIn', statusValues: ['True'] }],
      conditions: [ready('Unknown')],
      adds: true,
    },
    { name: 'NotIn, status listed', addOn: [{ conditionType: 'Ready', operator: 'NotIn', statusValues: ['True'] }], conditions: [ready('True')], adds: false },
    { name: 'In, condition absent', addOn: [readyIn('False')], conditions: [], adds: false },
    {
      name: 'NotIn, condition absent (matches neither)',
      addOn: [{ conditionType: 'Ready', operator: 'NotIn', statusValues: ['True'] }],
      conditions: [],
      adds: false,
    },
    {
      name: 'NotIn with no status values, condition present',
      addOn: [{ conditionType: 'Ready', operator: 'NotIn', statusValues: [] }],
      conditions: [ready('True')],
      adds: true,
    },
    {
      name: 'NotIn with no status values, condition absent',
      addOn: [{ conditionType: 'Ready', operator: 'NotIn', statusValues: [] }],
      conditions: [],
      adds: false,
    },
    { name: 'an empty addOnConditions never adds', addOn: [], conditions: [ready('False')], adds: false },
    {
      name: 'all must match (AND): both do',
      addOn: [readyIn('False'), { conditionType: 'Disk', operator: 'In', statusValues: ['False'] }],
      conditions: [ready('False'), cond('Disk', 'False')],
      adds: true,
    },
    {
      name: 'all must match (AND): one does not',
      addOn: [readyIn('False'), { conditionType: 'Disk', operator: 'In', statusValues: ['False'] }],
      conditions: [ready('False'), cond('Disk', 'True')],
      adds: false,
    },
  ];
  it.each(cases)('$name', ({ addOn, conditions, adds }) => {
    const result = evaluateTaintPolicies(facts(conditions), [karmada({ addOnConditions: addOn, removeOnConditions: [] })], at(0));
    expect(result.taints.length > 0).toBe(adds);
    expect(result.nextDeadline).toBeUndefined();
  });

  it('an empty removeOnConditions never removes', () => {
    const result = evaluateTaintPolicies(
      facts([ready('True')], [taint({ owners: ['detect-not-ready'], karmadaOwners: ['detect-not-ready'] })]),
      [karmada({ removeOnConditions: [] })],
      at(0),
    );
    expect(show(result.taints)).toEqual([`${KEY}:NoExecute {k:detect-not-ready}`]);
  });
});

describe('one Karmada-shape policy over time (no windows, add before remove)', () => {
  const cases: Array<{ name: string; steps: Parameters<typeof run>[0]; expect: Array<[number, string[], string[]]> }> = [
    {
      name: 'adds at once when addOnConditions match, removes at once when removeOnConditions match',
      steps: [{ t: 0, conditions: [ready('False', 0)], policies: [karmada()] }, { t: 1 }, { t: 2, conditions: [ready('True', 2)] }],
      expect: [
        [0, [`${KEY}:NoExecute {k:detect-not-ready}`], [`added ${KEY}:NoExecute by detect-not-ready (karmada: addOnConditions)`]],
        [1, [`${KEY}:NoExecute {k:detect-not-ready}`], []],
        [2, [], [`removed ${KEY}:NoExecute by detect-not-ready (karmada: removeOnConditions)`]],
      ],
    },
    {
      name: 'keeps the taint while neither list matches (hysteresis)',
      steps: [
        { t: 0, conditions: [ready('False', 0)], policies: [karmada({ addOnConditions: [readyIn('False')] })] },
        { t: 1, conditions: [ready('Unknown', 1)] },
        { t: 2, conditions: [] },
      ],
      expect: [
        [0, [`${KEY}:NoExecute {k:detect-not-ready}`], [`added ${KEY}:NoExecute by detect-not-ready (karmada: addOnConditions)`]],
        [1, [`${KEY}:NoExecute {k:detect-not-ready}`], []],
        [2, [`${KEY}:NoExecute {k:detect-not-ready}`], []],
      ],
    },
    {
      name: 'both lists match: add runs first, then remove, so the net result is removal',
      steps: [
        { t: 0, conditions: [ready('False', 0)], policies: [karmada({ removeOnConditions: [readyIn('False')] })] },
        { t: 1, policies: [karmada({ removeOnConditions: [] })] },
        { t: 2, policies: [karmada({ removeOnConditions: [readyIn('False')] })] },
      ],
      expect: [
        [0, [], []],
        [1, [`${KEY}:NoExecute {k:detect-not-ready}`], [`added ${KEY}:NoExecute by detect-not-ready (karmada: addOnConditions)`]],
        [2, [], [`removed ${KEY}:NoExecute by detect-not-ready (karmada: removeOnConditions)`]],
      ],
    },
    {
      name: 'a cluster the policy does not target is left alone',
      steps: [{ t: 0, conditions: [ready('False', 0)], policies: [karmada({ targetClusters: { clusterNames: ['member2'] } })] }],
      expect: [[0, [], []]],
    },
    {
      name: 'a cluster that stops being targeted keeps its taint, and removeOnConditions no longer reach it',
      steps: [
        { t: 0, conditions: [ready('False', 0)], policies: [karmada()] },
        { t: 1, policies: [karmada({ targetClusters: { labelSelector: { matchLabels: { env: 'dev' } } } })] },
        { t: 2, conditions: [ready('True', 2)] },
      ],
      expect: [
        [0, [`${KEY}:NoExecute {k:detect-not-ready}`], [`added ${KEY}:NoExecute by detect-not-ready (karmada: addOnConditions)`]],
        [1, [`${KEY}:NoExecute {left:detect-not-ready}`], []],
        [2, [`${KEY}:NoExecute {left:detect-not-ready}`], []],
      ],
    },
    {
      name: 'deleting the policy keeps its taint (upstream: never automatically removed)',
      steps: [
        { t: 0, conditions: [ready('False', 0)], policies: [karmada()] },
        { t: 1, policies: [] },
        { t: 2, conditions: [ready('True', 2)] },
      ],
      expect: [
        [0, [`${KEY}:NoExecute {k:detect-not-ready}`], [`added ${KEY}:NoExecute by detect-not-ready (karmada: addOnConditions)`]],
        [1, [`${KEY}:NoExecute {left:detect-not-ready}`], []],
        [2, [`${KEY}:NoExecute {left:detect-not-ready}`], []],
      ],
    },
    {
      name: 'a taint the policy no longer lists stays; the new list applies from the next evaluation',
      steps: [
        { t: 0, conditions: [ready('False', 0)], policies: [karmada()] },
        { t: 1, policies: [karmada({ taints: [{ key: KEY, effect: 'NoSchedule' }] })] },
        { t: 2, conditions: [ready('True', 2)] },
      ],
      expect: [
        [0, [`${KEY}:NoExecute {k:detect-not-ready}`], [`added ${KEY}:NoExecute by detect-not-ready (karmada: addOnConditions)`]],
        [
          1,
          [`${KEY}:NoExecute {left:detect-not-ready}`, `${KEY}:NoSchedule {k:detect-not-ready}`],
          [`added ${KEY}:NoSchedule by detect-not-ready (karmada: addOnConditions)`],
        ],
        [2, [`${KEY}:NoExecute {left:detect-not-ready}`], [`removed ${KEY}:NoSchedule by detect-not-ready (karmada: removeOnConditions)`]],
      ],
    },
    {
      name: 'a deleted windowed-shape policy, by contrast, releases its taint',
      steps: [{ t: 0, conditions: [ready('False', 0)], policies: [seed({}, 1)] }, { t: 1 }, { t: 2, policies: [] }],
      expect: [
        [0, [], []],
        [1, [`${KEY}:NoExecute {s:seed-not-ready}`], [`added ${KEY}:NoExecute by seed-not-ready (seed: addOnMatchSeconds)`]],
        [2, [], [`removed ${KEY}:NoExecute by seed-not-ready (seed: policyDeleted)`]],
      ],
    },
  ];
  it.each(cases)('$name', ({ steps, expect: expected }) => {
    const { log } = run(steps);
    expect(log.map((l) => [l.t, l.taints, l.changes])).toEqual(expected);
  });

  it('adds with the policy value and timeAdded = now; an existing key+effect keeps its value and timeAdded', () => {
    const policy = karmada({ taints: [{ key: KEY, effect: 'NoExecute', value: 'by-policy' }] });
    const fresh = evaluateTaintPolicies(facts([ready('False')]), [policy], at(7));
    expect(fresh.taints[0]).toMatchObject({ value: 'by-policy', timeAdded: iso(7) });
    const existing = evaluateTaintPolicies(facts([ready('False')], [taint({ value: 'other', manual: true })]), [policy], at(8));
    expect(existing.taints).toEqual([taint({ value: 'other', manual: true, owners: ['detect-not-ready'], karmadaOwners: ['detect-not-ready'] })]);
    expect(existing.changes).toEqual([]);
  });
});

describe('several Karmada-shape policies: creationTimestamp order, as upstream', () => {
  const adder = (createdAt: number, name = 'adder') =>
    karmada({ name, createdAt: iso(createdAt), addOnConditions: [readyIn('False')], removeOnConditions: [] });
  const remover = (createdAt: number, name = 'remover') =>
    karmada({ name, createdAt: iso(createdAt), addOnConditions: [], removeOnConditions: [readyIn('False')] });
  const cases: Array<{ name: string; policies: KarmadaTaintPolicy[]; before: ClusterTaint[]; after: string[]; changes: string[] }> = [
    { name: 'older adds, newer removes: net removed (absent stays absent)', policies: [adder(1), remover(2)], before: [], after: [], changes: [] },
    {
      name: 'older adds, newer removes: net removed (present goes)',
      policies: [adder(1), remover(2)],
      before: [taint({ owners: ['adder'], karmadaOwners: ['adder'] })],
      after: [],
      changes: [`removed ${KEY}:NoExecute by remover (karmada: removeOnConditions)`],
    },
    {
      name: 'older removes, newer adds: net added',
      policies: [remover(1), adder(2)],
      before: [],
      after: [`${KEY}:NoExecute {k:adder}`],
      changes: [`added ${KEY}:NoExecute by adder (karmada: addOnConditions)`],
    },
    {
      name: 'older removes, newer adds a present taint: it stays, with its timeAdded',
      policies: [remover(1), adder(2)],
      before: [taint({ owners: ['adder'], karmadaOwners: ['adder'] })],
      after: [`${KEY}:NoExecute {k:adder}`],
      changes: [],
    },
    { name: 'created in the same instant: by name (adder before remover)', policies: [adder(1), remover(1)], before: [], after: [], changes: [] },
    {
      name: 'created in the same instant: by name (a-remover before b-adder)',
      policies: [remover(1, 'a-remover'), adder(1, 'b-adder')],
      before: [],
      after: [`${KEY}:NoExecute {k:b-adder}`],
      changes: [`added ${KEY}:NoExecute by b-adder (karmada: addOnConditions)`],
    },
  ];
  it.each(cases)('$name', ({ policies, before, after, changes }) => {
    for (const order of [policies, [...policies].reverse()]) {
      const result = evaluateTaintPolicies(facts([ready('False')], before), order, at(0));
      expect({ taints: show(result.taints), changes: changesOf(result) }).toEqual({ taints: after, changes });
    }
  });

  it('the first policy (by creationTimestamp) that adds sets the value', () => {
    const older = karmada({ name: 'z-older', createdAt: iso(1), taints: [{ key: KEY, effect: 'NoExecute', value: 'older' }] });
    const newer = karmada({ name: 'a-newer', createdAt: iso(2), taints: [{ key: KEY, effect: 'NoExecute', value: 'newer' }] });
    for (const order of [
      [older, newer],
      [newer, older],
    ]) {
      const result = evaluateTaintPolicies(facts([ready('False')]), order, at(0));
      expect(result.taints).toEqual([taint({ value: 'older', timeAdded: iso(0), owners: ['a-newer', 'z-older'], karmadaOwners: ['a-newer', 'z-older'] })]);
      expect(changesOf(result)).toEqual([`added ${KEY}:NoExecute by z-older (karmada: addOnConditions)`]);
    }
  });
});

describe('ownership across shapes', () => {
  const k = (name: string, overrides: Partial<KarmadaTaintPolicy> = {}) => karmada({ name, ...overrides });
  const removeOnly = (name: string, effect: ClusterTaint['effect'] = 'NoExecute') =>
    k(name, { addOnConditions: [], removeOnConditions: [readyIn('True')], taints: [{ key: KEY, effect }] });
  const cases: Array<{ name: string; before: ClusterTaint[]; conditions: Condition[]; policies: AnyTaintPolicy[]; after: string[]; changes: string[] }> = [
    {
      name: 'a manual taint: a Karmada-shape removeOnConditions does not remove it',
      before: [taint({ manual: true })],
      conditions: [ready('True')],
      policies: [removeOnly('r')],
      after: [`${KEY}:NoExecute {manual}`],
      changes: [],
    },
    {
      name: 'a manual taint a Karmada-shape policy also holds: removal drops the policy hold, the person keeps it',
      before: [taint({ manual: true, owners: ['k1'], karmadaOwners: ['k1'] })],
      conditions: [ready('True')],
      policies: [k('k1')],
      after: [`${KEY}:NoExecute {manual}`],
      changes: [],
    },
    {
      name: 'a Karmada-shape policy adopts a manual taint it would add; the person dropping it leaves it held',
      before: [taint({ manual: true })],
      conditions: [ready('False')],
      policies: [k('k1')],
      after: [`${KEY}:NoExecute {manual k:k1}`],
      changes: [],
    },
    {
      name: 'a taint a matching windowed-shape policy holds: a Karmada-shape removal does not override it',
      before: [taint({ owners: ['s1', 'k1'], karmadaOwners: ['k1'] })],
      conditions: [ready('True'), cond('Disk', 'False')],
      policies: [seed({ name: 's1', matchConditions: [{ conditionType: 'Disk', operator: 'In', statusValues: ['False'] }] }), k('k1')],
      after: [`${KEY}:NoExecute {s:s1}`],
      changes: [],
    },
    {
      name: 'a taint another Karmada-shape policy added: removed by any Karmada-shape policy that lists its key and effect (upstream)',
      before: [taint({ owners: ['k1'], karmadaOwners: ['k1'] })],
      conditions: [ready('True')],
      policies: [k('k1', { removeOnConditions: [] }), removeOnly('r')],
      after: [],
      changes: [`removed ${KEY}:NoExecute by r (karmada: removeOnConditions)`],
    },
    {
      name: 'identity is key and effect: a removal of another effect leaves it',
      before: [taint({ owners: ['k1'], karmadaOwners: ['k1'] })],
      conditions: [ready('True')],
      policies: [k('k1', { removeOnConditions: [] }), removeOnly('r', 'NoSchedule')],
      after: [`${KEY}:NoExecute {k:k1}`],
      changes: [],
    },
    {
      name: 'a taint a windowed-shape policy added: a matching Karmada-shape policy holds it too, so it outlives the seed window',
      before: [taint({ owners: ['s1'] })],
      conditions: [ready('True', 0), cond('Disk', 'False')],
      policies: [
        seed({ name: 's1' }),
        k('k1', { addOnConditions: [{ conditionType: 'Disk', operator: 'In', statusValues: ['False'] }], removeOnConditions: [] }),
      ],
      after: [`${KEY}:NoExecute {k:k1}`],
      changes: [],
    },
    {
      name: 'a taint left by a deleted Karmada-shape policy: removed by another Karmada-shape policy',
      before: [taint({ leftBy: 'gone' })],
      conditions: [ready('True')],
      policies: [removeOnly('r')],
      after: [],
      changes: [`removed ${KEY}:NoExecute by r (karmada: removeOnConditions)`],
    },
    {
      name: 'a taint left by a deleted Karmada-shape policy: a windowed-shape policy never removes it',
      before: [taint({ leftBy: 'gone' })],
      conditions: [ready('True', 0)],
      policies: [seed({ name: 's1' })],
      after: [`${KEY}:NoExecute {left:gone}`],
      changes: [],
    },
    {
      name: "an absent taint both shapes want: Karmada's acts at once, the seed policy (not yet due) holds it too",
      before: [],
      conditions: [ready('False', 0)],
      policies: [
        seed({ name: 's1', taintsToAdd: [{ key: KEY, effect: 'NoExecute', value: 'seed', addOnMatchSeconds: 300, removeOnMismatchSeconds: 5 }] }),
        k('k1', { taints: [{ key: KEY, effect: 'NoExecute', value: 'karmada' }] }),
      ],
      after: [`${KEY}:NoExecute=karmada {k:k1 s:s1}`],
      changes: [`added ${KEY}:NoExecute by k1 (karmada: addOnConditions)`],
    },
    {
      name: 'a Karmada-shape adder and remover cancel out; a windowed-shape policy that is due still adds',
      before: [],
      conditions: [ready('False', 0)],
      policies: [
        seed({ name: 's1' }, 1),
        k('k1', { createdAt: iso(-2), removeOnConditions: [] }),
        k('k2', { createdAt: iso(-1), addOnConditions: [], removeOnConditions: [readyIn('False')] }),
      ],
      after: [`${KEY}:NoExecute {s:s1}`],
      changes: [`added ${KEY}:NoExecute by s1 (seed: addOnMatchSeconds)`],
    },
    {
      name: 'a windowed-shape hold by a policy that is now of Karmada shape is released; the Karmada rule decides from then on',
      before: [taint({ owners: ['p'] })],
      conditions: [ready('True')],
      policies: [k('p', { removeOnConditions: [] })],
      after: [],
      changes: [`removed ${KEY}:NoExecute by p (seed: policyDeleted)`],
    },
    {
      name: 'a Karmada-shape hold by a policy that is now of the windowed shape is left, as upstream leaves it',
      before: [taint({ owners: ['p'], karmadaOwners: ['p'] })],
      conditions: [ready('True', 0)],
      policies: [seed({ name: 'p' })],
      after: [`${KEY}:NoExecute {left:p}`],
      changes: [],
    },
  ];
  it.each(cases)('$name', ({ before, conditions, policies, after, changes }) => {
    const result = evaluateTaintPolicies(facts(conditions, before), policies, at(20));
    expect({ taints: show(result.taints), changes: changesOf(result) }).toEqual({ taints: after, changes });
  });

  it('a manual taint the person later drops goes only when no policy holds it', () => {
    const { log } = run([
      { t: 0, conditions: [ready('False', 0)], policies: [karmada()] },
      { t: 1, edit: (taints) => taints.map((t) => ({ ...t, manual: true })) },
      { t: 2, conditions: [ready('True', 2)] },
      { t: 3, edit: (taints) => taints.map((t) => ({ ...t, manual: false })) },
    ]);
    expect(log.map((l) => [l.t, l.taints, l.changes])).toEqual([
      [0, [`${KEY}:NoExecute {k:detect-not-ready}`], [`added ${KEY}:NoExecute by detect-not-ready (karmada: addOnConditions)`]],
      [1, [`${KEY}:NoExecute {manual k:detect-not-ready}`], []],
      [2, [`${KEY}:NoExecute {manual}`], []],
      [3, [], [`removed ${KEY}:NoExecute by - (seed: noHolder)`]],
    ]);
  });

  it('the windowed shape keeps its windows beside Karmada-shape policies; Karmada-shape policies have none', () => {
    const result = evaluateTaintPolicies(
      facts([ready('False', 0)]),
      [seed({ name: 's1' }), karmada({ name: 'k1', taints: [{ key: 'other', effect: 'NoSchedule' }] })],
      at(3),
    );
    expect(Object.keys(result.policyWindows)).toEqual(['s1']);
    expect(result.nextDeadline?.toISOString()).toBe(iso(10));
    expect(show(result.taints)).toEqual(['other:NoSchedule {k:k1}']);
  });
});

describe('order of the policy list', () => {
  it('gives the same taints, holders, values and changes whatever the order, over a timeline of both shapes', () => {
    const policies: AnyTaintPolicy[] = [
      seed({ name: 's1', taintsToAdd: [{ key: 'k', value: 'seed', effect: 'NoExecute', addOnMatchSeconds: 2, removeOnMismatchSeconds: 2 }] }),
      seed({
        name: 's2',
        matchConditions: [{ conditionType: 'Disk', operator: 'In', statusValues: ['False'] }],
        taintsToAdd: [{ key: 'j', effect: 'NoSchedule', addOnMatchSeconds: 1, removeOnMismatchSeconds: 1 }],
      }),
      karmada({
        name: 'k1',
        createdAt: iso(-3),
        taints: [
          { key: 'k', value: 'k1', effect: 'NoExecute' },
          { key: 'j', effect: 'NoSchedule' },
        ],
      }),
      karmada({
        name: 'k2',
        createdAt: iso(-2),
        addOnConditions: [],
        removeOnConditions: [{ conditionType: 'Disk', operator: 'In', statusValues: ['True'] }],
        taints: [{ key: 'j', effect: 'NoSchedule' }],
      }),
      karmada({
        name: 'k3',
        createdAt: iso(-1),
        addOnConditions: [{ conditionType: 'Disk', operator: 'In', statusValues: ['False'] }],
        removeOnConditions: [readyIn('True')],
        taints: [{ key: 'k', value: 'k3', effect: 'NoExecute' }],
      }),
    ];
    const timeline = (list: AnyTaintPolicy[]) =>
      run([
        { t: 0, conditions: [ready('False', 0), cond('Disk', 'True', 0)], policies: list, edit: () => [taint({ key: 'm', manual: true })] },
        { t: 1, conditions: [ready('False', 0), cond('Disk', 'False', 1)] },
        { t: 3 },
        { t: 4, conditions: [ready('True', 4), cond('Disk', 'False', 1)] },
        { t: 5, conditions: [ready('True', 4), cond('Disk', 'True', 5)] },
        { t: 9 },
      ]).log;
    const permutations = [
      policies,
      [...policies].reverse(),
      [policies[2], policies[0], policies[4], policies[1], policies[3]],
      [policies[3], policies[4], policies[0], policies[2], policies[1]],
    ];
    const logs = permutations.map(timeline);
    for (const log of logs) expect(log).toEqual(logs[0]);
    // And what it is, at t=0: k1 adds k (its value) and j, then k2 (created later) removes j in the same
    // pass, so j never appears; s1 (not yet due) holds k too. The manual taint is nobody's business.
    expect(logs[0][0].taints).toEqual(['m:NoExecute {manual}', 'k:NoExecute=k1 {k:k1 s:s1}']);
    expect(logs[0][0].changes).toEqual(['added k:NoExecute by k1 (karmada: addOnConditions)']);
  });
});

describe('validation of the Karmada shape', () => {
  const doc = (spec: string) => `apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterTaintPolicy\nmetadata:\n  name: detect-cluster-notready\nspec:\n${spec}`;
  /** Karmada's documentation example, as written. */
  const UPSTREAM = doc(`  targetClusters:
    clusterNames:
    - member1
    - member2
  addOnConditions:
  - conditionType: Ready
    operator: NotIn
    statusValues:
    - "True"
  - conditionType: NetworkAvailable
    operator: In
    statusValues:
    - "False"
  removeOnConditions:
  - conditionType: Ready
    operator: In
    statusValues:
    - "True"
  taints:
  - key: not-ready
    effect: NoSchedule
  - key: not-ready
    effect: NoExecute
`);
  const errorsOf = (text: string): FieldError[] => {
    try {
      decodeApplyDocuments(parseDocuments(text, 'yaml'));
    } catch (error) {
      if (error instanceof ApiError && error.status === 400) return error.errors.map(({ path, message }) => ({ path, message }));
      throw error;
    }
    throw new Error('expected a 400');
  };

  it("applies Karmada's example as written, keeping its shape", () => {
    const [policy] = decodeApplyDocuments(parseDocuments(UPSTREAM, 'yaml'));
    expect(policy.kind === 'ClusterTaintPolicy' && policy.object.spec).toEqual({
      targetClusters: { clusterNames: ['member1', 'member2'] },
      addOnConditions: [
        { conditionType: 'Ready', operator: 'NotIn', statusValues: ['True'] },
        { conditionType: 'NetworkAvailable', operator: 'In', statusValues: ['False'] },
      ],
      removeOnConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['True'] }],
      taints: [
        { key: 'not-ready', effect: 'NoSchedule' },
        { key: 'not-ready', effect: 'NoExecute' },
      ],
    });
  });

  it('accepts the minimal Karmada shape (taints only), the same key with two effects, and NotIn with no status values', () => {
    expect(() =>
      decodeApplyDocuments(parseDocuments(doc('  taints:\n  - {key: a, effect: NoExecute}\n  - {key: a, effect: NoSchedule}\n'), 'yaml')),
    ).not.toThrow();
    expect(() => decodeApplyDocuments(parseDocuments(doc('  taints:\n  - {key: a, effect: NoSchedule}\n'), 'yaml'))).not.toThrow();
    expect(() =>
      decodeApplyDocuments(
        parseDocuments(
          doc('  addOnConditions:\n  - {conditionType: Ready, operator: NotIn, statusValues: []}\n  taints:\n  - {key: a, effect: PreferNoExecute}\n'),
          'yaml',
        ),
      ),
    ).not.toThrow();
  });

  const cases: Array<{ name: string; spec: string; errors: FieldError[] }> = [
    {
      name: 'taintsToAdd with taints',
      spec: '  taintsToAdd:\n  - {key: a, effect: NoSchedule}\n  taints:\n  - {key: a, effect: NoSchedule}\n',
      errors: [
        { path: 'spec.taints', message: 'Karmada-shape field "taints" cannot be mixed with windowed-shape field "taintsToAdd"; a policy uses one shape' },
      ],
    },
    {
      name: 'matchConditions with addOnConditions (Karmada fields are fewer)',
      spec: '  matchConditions: []\n  addOnConditions: []\n  taintsToAdd:\n  - {key: a, effect: NoSchedule}\n',
      errors: [
        {
          path: 'spec.addOnConditions',
          message: 'Karmada-shape field "addOnConditions" cannot be mixed with windowed-shape fields "matchConditions", "taintsToAdd"; a policy uses one shape',
        },
      ],
    },
    {
      name: 'targetCluster with targetClusters',
      spec: '  targetCluster: {}\n  targetClusters: {}\n  taints:\n  - {key: a, effect: NoSchedule}\n',
      errors: [
        {
          path: 'spec.targetCluster',
          message: 'windowed-shape field "targetCluster" cannot be mixed with Karmada-shape fields "targetClusters", "taints"; a policy uses one shape',
        },
      ],
    },
    {
      name: "Karmada's spelling in a windowed-shape policy, with the seed spelling",
      spec: '  targetClusters: {}\n  matchConditions: []\n  taintsToAdd:\n  - {key: a, effect: NoSchedule}\n',
      errors: [
        {
          path: 'spec.targetClusters',
          message:
            'Karmada-shape field "targetClusters" cannot be mixed with windowed-shape fields "matchConditions", "taintsToAdd"; a policy uses one shape (the windowed shape spells it "targetCluster")',
        },
      ],
    },
    {
      name: "the seed's spelling in a Karmada-shape policy, with Karmada's spelling",
      spec: '  matchConditions: []\n  removeOnConditions: []\n  taints:\n  - {key: a, effect: NoSchedule}\n',
      errors: [
        {
          path: 'spec.matchConditions',
          message:
            'windowed-shape field "matchConditions" cannot be mixed with Karmada-shape fields "removeOnConditions", "taints"; a policy uses one shape (the Karmada shape spells it "addOnConditions")',
        },
      ],
    },
    {
      name: 'a mix reported together with a bad field',
      spec: '  taintsToAdd:\n  - {key: a, effect: NoSchedule}\n  taints:\n  - {key: a, effect: Evict}\n',
      errors: [
        { path: 'spec.taints[0].effect', message: 'must be one of "NoSchedule", "PreferNoSchedule", "PreferNoExecute", "NoExecute"' },
        { path: 'spec.taints', message: 'Karmada-shape field "taints" cannot be mixed with windowed-shape field "taintsToAdd"; a policy uses one shape' },
      ],
    },
    {
      name: 'a duplicate key+effect in taints (value ignored)',
      spec: '  taints:\n  - {key: a, effect: NoExecute, value: x}\n  - {key: b, effect: NoExecute}\n  - {key: a, effect: NoExecute, value: y}\n',
      errors: [{ path: 'spec.taints[2]', message: 'duplicate taint a:NoExecute (also at spec.taints[0]); taints are unique by key and effect' }],
    },
    {
      name: 'an unknown field, with the closest known name',
      spec: '  addOnCondition: []\n  taints:\n  - {key: a, effect: NoSchedule}\n',
      errors: [{ path: 'spec.addOnCondition', message: 'unknown field; did you mean "addOnConditions"?' }],
    },
    {
      name: 'an unknown taint field (windows belong to the windowed shape)',
      spec: '  taints:\n  - {key: a, effect: NoSchedule, addOnMatchSeconds: 5}\n',
      errors: [{ path: 'spec.taints[0].addOnMatchSeconds', message: 'unknown field' }],
    },
    {
      name: 'an effect outside the four',
      spec: '  taints:\n  - {key: a, effect: Evict}\n',
      errors: [{ path: 'spec.taints[0].effect', message: 'must be one of "NoSchedule", "PreferNoSchedule", "PreferNoExecute", "NoExecute"' }],
    },
    {
      name: 'no taints',
      spec: '  taints: []\n',
      errors: [{ path: 'spec.taints', message: 'must list at least one taint' }],
    },
    {
      name: 'a missing taints list in a Karmada-shape policy',
      spec: '  addOnConditions:\n  - {conditionType: Ready, operator: In, statusValues: ["False"]}\n',
      errors: [{ path: 'spec.taints', message: 'required field is missing (expected array)' }],
    },
    {
      name: 'an empty spec (either list of taints would do)',
      spec: '  {}\n',
      errors: [{ path: 'spec.taintsToAdd', message: 'required field is missing (expected array); Karmada\'s shape lists "taints" instead' }],
    },
    {
      name: 'an operator outside In/NotIn',
      spec: '  removeOnConditions:\n  - {conditionType: Ready, operator: Exists, statusValues: ["True"]}\n  taints:\n  - {key: a, effect: NoSchedule}\n',
      errors: [{ path: 'spec.removeOnConditions[0].operator', message: 'must be one of "In", "NotIn"' }],
    },
    {
      name: 'In with no status values',
      spec: '  addOnConditions:\n  - {conditionType: Ready, operator: In, statusValues: []}\n  taints:\n  - {key: a, effect: NoSchedule}\n',
      errors: [{ path: 'spec.addOnConditions[0].statusValues', message: 'must list at least one status when operator is In (In with none never matches)' }],
    },
    {
      name: 'a status value outside True/False/Unknown',
      spec: '  addOnConditions:\n  - {conditionType: Ready, operator: In, statusValues: ["false"]}\n  taints:\n  - {key: a, effect: NoSchedule}\n',
      errors: [{ path: 'spec.addOnConditions[0].statusValues[0]', message: 'must be one of "True", "False", "Unknown"' }],
    },
    {
      name: 'a missing statusValues',
      spec: '  addOnConditions:\n  - {conditionType: Ready, operator: NotIn}\n  taints:\n  - {key: a, effect: NoSchedule}\n',
      errors: [{ path: 'spec.addOnConditions[0].statusValues', message: 'required field is missing (expected array)' }],
    },
    {
      name: 'a bad targetClusters selector',
      spec: '  targetClusters:\n    labelSelector:\n      matchExpressions:\n      - {key: env, operator: In}\n  taints:\n  - {key: a, effect: NoSchedule}\n',
      errors: [{ path: 'spec.targetClusters.labelSelector.matchExpressions[0].values', message: 'must not be empty when operator is In' }],
    },
    {
      name: 'a bad taint key',
      spec: '  taints:\n  - {key: "not ready", effect: NoSchedule}\n',
      errors: [{ path: 'spec.taints[0].key', message: 'must be a qualified name such as "example.com/name" or "name"' }],
    },
  ];
  it.each(cases)('rejects $name, naming the field', ({ spec, errors }) => {
    expect(errorsOf(doc(spec))).toEqual(errors);
  });
});
