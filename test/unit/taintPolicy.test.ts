import { describe, expect, it } from 'vitest';
import type { ClusterFacts, ClusterTaint, Condition, TaintPolicy } from '../../shared/failover/model';
import { evaluateTaintPolicies } from '../../shared/failover/taintPolicy';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000);
const iso = (seconds: number) => at(seconds).toISOString();

const ready = (status: Condition['status'], since: number): Condition => ({ type: 'Ready', status, lastTransitionTime: iso(since) });

const notReady = (overrides: Partial<TaintPolicy> = {}, add = 10, remove = 5): TaintPolicy => ({
  name: 'not-ready',
  matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False', 'Unknown'] }],
  taintsToAdd: [{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', addOnMatchSeconds: add, removeOnMismatchSeconds: remove }],
  ...overrides,
});

const cluster = (conditions: Condition[], taints: ClusterTaint[] = [], extra: Partial<ClusterFacts> = {}): ClusterFacts => ({
  name: 'member1',
  labels: {},
  conditions,
  taints,
  policyWindows: {},
  ...extra,
});

/** Runs the evaluator over a timeline, carrying the stored state from step to step like the controller. */
function run(steps: Array<{ t: number; conditions?: Condition[]; policies?: TaintPolicy[] }>, start: ClusterFacts = cluster([])) {
  let facts = start;
  let policies: TaintPolicy[] = [];
  const log: Array<{ t: number; taints: string[]; next?: number; changes: string[] }> = [];
  for (const step of steps) {
    if (step.conditions) facts = { ...facts, conditions: step.conditions };
    if (step.policies) policies = step.policies;
    const result = evaluateTaintPolicies(facts, policies, at(step.t));
    facts = { ...facts, taints: result.taints, policyWindows: result.policyWindows };
    log.push({
      t: step.t,
      taints: result.taints.map((x) => `${x.key}:${x.effect}`),
      next: result.nextDeadline ? (result.nextDeadline.getTime() - T0) / 1000 : undefined,
      changes: result.changes.map((c) => `${c.action} ${c.taint.key}:${c.taint.effect} by ${c.policy}`),
    });
  }
  return { log, facts };
}

describe('taint windows', () => {
  const cases: Array<{
    name: string;
    steps: Parameters<typeof run>[0];
    expectTaintedAt: Record<number, boolean>;
    nextAt?: Record<number, number | undefined>;
  }> = [
    {
      name: 'adds exactly when the match has lasted addOnMatchSeconds, not a moment earlier',
      steps: [{ t: 0, conditions: [ready('False', 0)], policies: [notReady()] }, { t: 9.999 }, { t: 10 }],
      expectTaintedAt: { 0: false, 9.999: false, 10: true },
      nextAt: { 0: 10, 9.999: 10, 10: undefined },
    },
    {
      name: 'removes once the mismatch has lasted removeOnMismatchSeconds',
      steps: [{ t: 0, conditions: [ready('False', 0)], policies: [notReady()] }, { t: 10 }, { t: 20, conditions: [ready('True', 20)] }, { t: 24.9 }, { t: 25 }],
      expectTaintedAt: { 10: true, 20: true, 24.9: true, 25: false },
      nextAt: { 20: 25, 25: undefined },
    },
    {
      name: 'a flap shorter than the add window changes nothing and restarts the window',
      steps: [
        { t: 0, conditions: [ready('False', 0)], policies: [notReady()] },
        { t: 6, conditions: [ready('True', 6)] },
        { t: 7, conditions: [ready('False', 7)] },
        { t: 10 },
        { t: 16.9 },
        { t: 17 },
      ],
      expectTaintedAt: { 6: false, 7: false, 10: false, 16.9: false, 17: true },
      nextAt: { 7: 17 },
    },
    {
      name: 'a recovery shorter than the remove window keeps the taint',
      steps: [
        { t: 0, conditions: [ready('False', 0)], policies: [notReady()] },
        { t: 10 },
        { t: 12, conditions: [ready('True', 12)] },
        { t: 14, conditions: [ready('False', 14)] },
        { t: 30 },
      ],
      expectTaintedAt: { 10: true, 12: true, 14: true, 30: true },
      nextAt: { 12: 17, 14: undefined },
    },
    {
      name: 'False → Unknown inside the In set is one continuous match',
      steps: [{ t: 0, conditions: [ready('False', 0)], policies: [notReady()] }, { t: 5, conditions: [ready('Unknown', 5)] }, { t: 10 }],
      expectTaintedAt: { 5: false, 10: true },
    },
    {
      name: 'a report observed in the past counts from its observation time',
      steps: [{ t: 30, conditions: [ready('False', 0)], policies: [notReady()] }],
      expectTaintedAt: { 30: true },
    },
    {
      name: 'an absent condition matches neither In nor NotIn',
      steps: [
        {
          t: 0,
          conditions: [],
          policies: [notReady(), notReady({ name: 'not-in', matchConditions: [{ conditionType: 'Ready', operator: 'NotIn', statusValues: ['True'] }] })],
        },
        { t: 100 },
      ],
      expectTaintedAt: { 0: false, 100: false },
    },
  ];
  it.each(cases)('$name', ({ steps, expectTaintedAt, nextAt }) => {
    const { log } = run(steps);
    for (const entry of log) {
      if (entry.t in expectTaintedAt) expect({ t: entry.t, tainted: entry.taints.length > 0 }).toEqual({ t: entry.t, tainted: expectTaintedAt[entry.t] });
      if (nextAt && entry.t in nextAt) expect({ t: entry.t, next: entry.next }).toEqual({ t: entry.t, next: nextAt[entry.t] });
    }
  });

  it('takes the deadline from persisted state: re-evaluating later (after a restart) does not move it', () => {
    const first = evaluateTaintPolicies(cluster([ready('False', 0)]), [notReady()], at(3));
    // A new process reads the same stored windows at t=8: the deadline is still t=10.
    const restarted = evaluateTaintPolicies(cluster([ready('False', 0)], [], { policyWindows: first.policyWindows }), [notReady()], at(8));
    expect(restarted.nextDeadline?.toISOString()).toBe(iso(10));
    const atDeadline = evaluateTaintPolicies(cluster([ready('False', 0)], [], { policyWindows: first.policyWindows }), [notReady()], at(10));
    expect(atDeadline.taints.map((t) => t.key)).toEqual(['cluster.karmada.io/not-ready']);
    expect(atDeadline.taints[0].timeAdded).toBe(iso(10));
  });

  it('a policy edit that changes its conditions restarts its window', () => {
    const first = evaluateTaintPolicies(cluster([ready('False', 0)]), [notReady()], at(20));
    const edited = notReady({ matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False'] }] });
    const second = evaluateTaintPolicies(cluster([ready('False', 0)], first.taints, { policyWindows: first.policyWindows }), [edited], at(21));
    expect(second.policyWindows['not-ready'].since).toBe(iso(0));
    expect(second.policyWindows['not-ready'].fingerprint).not.toBe(first.policyWindows['not-ready'].fingerprint);
  });
});

describe('targets', () => {
  const cases = [
    { name: 'listed cluster', targetCluster: { clusterNames: ['member1'] }, tainted: true },
    { name: 'unlisted cluster', targetCluster: { clusterNames: ['member2'] }, tainted: false },
    { name: 'excluded cluster', targetCluster: { exclude: ['member1'] }, tainted: false },
    { name: 'label match', targetCluster: { labelSelector: { matchLabels: { env: 'prod' } } }, tainted: true },
    { name: 'label mismatch', targetCluster: { labelSelector: { matchLabels: { env: 'dev' } } }, tainted: false },
    { name: 'no target = every cluster', targetCluster: undefined, tainted: true },
  ];
  it.each(cases)('$name', ({ targetCluster, tainted }) => {
    const facts = cluster([ready('False', 0)], [], { labels: { env: 'prod' } });
    const result = evaluateTaintPolicies(facts, [notReady({ targetCluster })], at(60));
    expect(result.taints.length > 0).toBe(tainted);
  });
});

describe('ownership (design decision 3)', () => {
  const manualTaint: ClusterTaint = { key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', timeAdded: iso(0), owners: [], manual: true };

  it('never removes a taint added by hand, even when a policy for the same key mismatches', () => {
    const result = evaluateTaintPolicies(cluster([ready('True', 0)], [manualTaint]), [notReady()], at(1000));
    expect(result.taints).toHaveLength(1);
    expect(result.changes).toEqual([]);
  });

  it('removes only its own taints: another effect or key stays', () => {
    const other: ClusterTaint = { key: 'cluster.karmada.io/not-ready', effect: 'NoSchedule', timeAdded: iso(0), owners: ['someone-else'], manual: false };
    const otherPolicy = notReady({
      name: 'someone-else',
      matchConditions: [{ conditionType: 'Disk', operator: 'In', statusValues: ['False'] }],
      taintsToAdd: [{ key: 'cluster.karmada.io/not-ready', effect: 'NoSchedule', addOnMatchSeconds: 1, removeOnMismatchSeconds: 1000 }],
    });
    const { facts } = run([{ t: 0, conditions: [ready('False', 0)], policies: [notReady(), otherPolicy] }, { t: 10 }], cluster([], [other]));
    expect(facts.taints.map((t) => t.effect).sort()).toEqual(['NoExecute', 'NoSchedule']);
  });

  it('keeps a taint another matching policy still wants, and that policy then holds it', () => {
    const a = notReady({ name: 'a' });
    const b = notReady({ name: 'b', matchConditions: [{ conditionType: 'Network', operator: 'In', statusValues: ['False'] }] });
    const net = (status: Condition['status'], since: number): Condition => ({ type: 'Network', status, lastTransitionTime: iso(since) });
    const { log, facts } = run([
      { t: 0, conditions: [ready('False', 0), net('True', 0)], policies: [a, b] },
      { t: 10 },
      { t: 11, conditions: [ready('True', 11), net('False', 11)] },
      { t: 16 },
      { t: 100 },
    ]);
    expect(log.map((l) => l.taints.length)).toEqual([0, 1, 1, 1, 1]);
    expect(facts.taints[0].owners).toEqual(['b']);
  });

  it('releases at once the taints of a deleted policy', () => {
    const { facts } = run([{ t: 0, conditions: [ready('False', 0)], policies: [notReady()] }, { t: 10 }]);
    const result = evaluateTaintPolicies(facts, [], at(11));
    expect(result.taints).toEqual([]);
    expect(result.changes[0]).toMatchObject({ action: 'removed', policy: 'not-ready', reason: 'the policy was deleted' });
  });

  it('a manual taint is also held by a matching policy, so dropping it by hand leaves it while the policy wants it', () => {
    const result = evaluateTaintPolicies(cluster([ready('False', 0)], [manualTaint]), [notReady()], at(20));
    expect(result.taints[0].owners).toEqual(['not-ready']);
    const unpinned = evaluateTaintPolicies(
      cluster([ready('False', 0)], [{ ...result.taints[0], manual: false }], { policyWindows: result.policyWindows }),
      [notReady()],
      at(21),
    );
    expect(unpinned.taints).toHaveLength(1);
  });
});

describe('ordering', () => {
  it('gives the same taints, values and events whatever the order of policies', () => {
    const p1 = notReady({ name: 'p1', taintsToAdd: [{ key: 'k', value: 'one', effect: 'NoExecute', addOnMatchSeconds: 5, removeOnMismatchSeconds: 5 }] });
    const p2 = notReady({
      name: 'p2',
      taintsToAdd: [
        { key: 'k', value: 'two', effect: 'NoExecute', addOnMatchSeconds: 5, removeOnMismatchSeconds: 5 },
        { key: 'j', effect: 'NoSchedule', addOnMatchSeconds: 3, removeOnMismatchSeconds: 5 },
      ],
    });
    const p3 = notReady({ name: 'p3', taintsToAdd: [{ key: 'k', value: 'three', effect: 'NoExecute', addOnMatchSeconds: 4, removeOnMismatchSeconds: 5 }] });
    const orders = [
      [p1, p2, p3],
      [p3, p2, p1],
      [p2, p1, p3],
      [p3, p1, p2],
    ];
    const results = orders.map((policies) => evaluateTaintPolicies(cluster([ready('False', 0)]), policies, at(10)));
    for (const result of results) expect(result).toEqual(results[0]);
    // The earliest due policy adds (p3: 4 s), every matching policy that lists it holds it.
    const k = results[0].taints.find((t) => t.key === 'k')!;
    expect(k.value).toBe('three');
    expect(k.owners).toEqual(['p1', 'p2', 'p3']);
  });
});
