import { describe, expect, it } from 'vitest';
import { acknowledge, blastRadiusLimit, emptyGuard, PolicyGuard, recount, reserve, setHeld, settle } from '../../shared/failover/blastRadius';
import type { ClusterFacts, Condition, KarmadaTaintPolicy, TaintPolicy } from '../../shared/failover/model';
import { blastRadiusExceeded, evictionInProgress, policyConditions } from '../../shared/failover/policyStatus';
import { evaluateTaintPolicies } from '../../shared/failover/taintPolicy';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000);
const iso = (seconds: number) => at(seconds).toISOString();
const holding = (...clusters: string[]): PolicyGuard => ({ held: Object.fromEntries(clusters.map((c) => [c, iso(0)])) });
const names = (n: number) => Array.from({ length: n }, (_, i) => `c${i + 1}`);

describe('blastRadiusLimit: maxShare × fleet, rounded down, at least one cluster', () => {
  it.each([
    [10, 0.5, 5],
    [11, 0.5, 5],
    [5, 0.5, 2],
    [4, 0.5, 2],
    [3, 0.5, 1],
    [2, 0.5, 1],
    [1, 0.5, 1],
    [0, 0.5, 1],
    [100, 0.29, 29],
    [10, 0.3, 3],
    [10, 1, 10],
    [1000, 0.001, 1],
  ])('fleet %i at %f: %i', (total, share, limit) => {
    expect(blastRadiusLimit(total, share)).toBe(limit);
  });
});

describe('reserve: the threshold exactly at and above the share', () => {
  const cases: Array<{ name: string; guard: PolicyGuard; cluster: string; total: number; share: number; allowed: boolean; held: number }> = [
    { name: 'below the share: allowed', guard: holding(...names(3)), cluster: 'c4', total: 10, share: 0.5, allowed: true, held: 4 },
    { name: 'exactly at the share (5 of 10 at 0.5): allowed', guard: holding(...names(4)), cluster: 'c5', total: 10, share: 0.5, allowed: true, held: 5 },
    { name: 'one above the share (6 of 10 at 0.5): refused', guard: holding(...names(5)), cluster: 'c6', total: 10, share: 0.5, allowed: false, held: 5 },
    { name: 'a cluster already held: allowed even at the share', guard: holding(...names(5)), cluster: 'c3', total: 10, share: 0.5, allowed: true, held: 5 },
    { name: 'share 1: the whole fleet', guard: holding(...names(9)), cluster: 'c10', total: 10, share: 1, allowed: true, held: 10 },
    { name: 'fractional share × fleet (2.5 of 5): 2 allowed, not 3', guard: holding('c1', 'c2'), cluster: 'c3', total: 5, share: 0.5, allowed: false, held: 2 },
    { name: 'a fleet of one: its one cluster', guard: emptyGuard(), cluster: 'c1', total: 1, share: 0.5, allowed: true, held: 1 },
    {
      name: 'acknowledged: beyond the share',
      guard: { ...holding(...names(5)), acknowledged: { at: iso(0), refused: [] } },
      cluster: 'c6',
      total: 10,
      share: 0.5,
      allowed: true,
      held: 6,
    },
  ];
  it.each(cases)('$name', ({ guard, cluster, total, share, allowed, held }) => {
    const result = reserve(guard, cluster, total, share, at(1));
    expect(result.allowed).toBe(allowed);
    expect(result.allowed ? result.held : result.held).toBe(held);
    expect(Object.keys(result.guard.held).length).toBe(held);
  });

  it('a refusal sets the exceeded episode and remembers the cluster once; a later place clears it from the refused list', () => {
    const first = reserve(holding(...names(5)), 'c6', 10, 0.5, at(1));
    expect(first).toMatchObject({ allowed: false, newlyRefused: true, changed: true });
    expect(first.guard.exceeded).toEqual({ since: iso(1), refused: ['c6'] });
    const again = reserve(first.guard, 'c6', 10, 0.5, at(2));
    expect(again).toMatchObject({ allowed: false, newlyRefused: false, changed: false });
    const second = reserve(first.guard, 'c7', 10, 0.5, at(3));
    expect(second.guard.exceeded).toEqual({ since: iso(1), refused: ['c6', 'c7'] });
    // c1 recovers: a place is free, c6 takes it; the episode stays exceeded until acknowledged.
    const freed = setHeld(second.guard, 'c1', false, 10, 0.5, at(4)).guard;
    const retaken = reserve(freed, 'c6', 10, 0.5, at(5));
    expect(retaken.allowed).toBe(true);
    expect(retaken.guard.exceeded).toEqual({ since: iso(1), refused: ['c7'] });
  });
});

describe('acknowledge and its expiry', () => {
  const exceeded: PolicyGuard = { ...holding(...names(5)), exceeded: { since: iso(1), refused: ['c6', 'c7'] } };
  it('turns the exceeded episode into an acknowledged one; idempotent; nothing to acknowledge without an episode', () => {
    const acked = acknowledge(exceeded, at(10));
    expect(acked).toMatchObject({ changed: true, refused: ['c6', 'c7'] });
    expect(acked.guard.exceeded).toBeUndefined();
    expect(acked.guard.acknowledged).toEqual({ at: iso(10), refused: ['c6', 'c7'] });
    expect(acknowledge(acked.guard, at(11))).toMatchObject({ changed: false, refused: [] });
    expect(acknowledge(holding('c1'), at(11))).toMatchObject({ changed: false });
  });
  it('lasts while the policy holds at least the share, expires once it holds fewer', () => {
    let guard = acknowledge(exceeded, at(10)).guard;
    guard = reserve(guard, 'c6', 10, 0.5, at(11)).guard;
    guard = reserve(guard, 'c7', 10, 0.5, at(11)).guard;
    expect(Object.keys(guard.held)).toHaveLength(7);
    const steps: Array<[string, boolean]> = [
      ['c1', false],
      ['c2', false],
      ['c3', true],
    ];
    for (const [cluster, expired] of steps) {
      const next = setHeld(guard, cluster, false, 10, 0.5, at(12));
      expect(next.expired, `releasing ${cluster}`).toBe(expired);
      guard = next.guard;
    }
    expect(guard.acknowledged).toBeUndefined();
    // The next crossing needs a new acknowledgement.
    guard = reserve(guard, 'c1', 10, 0.5, at(13)).guard;
    expect(reserve(guard, 'c2', 10, 0.5, at(13)).allowed).toBe(false);
  });
  it('settle expires an acknowledgement the fleet outgrew', () => {
    const acked = { ...holding(...names(6)), acknowledged: { at: iso(0), refused: [] } };
    expect(settle(acked, 10, 0.5).expired).toBe(false);
    expect(settle(acked, 20, 0.5).expired).toBe(true);
  });
});

describe('recount', () => {
  it('takes the listing, keeps places taken since it was made, drops the rest', () => {
    const guard: PolicyGuard = { held: { c1: iso(0), c2: iso(0), c9: iso(0), c10: iso(20) } };
    const result = recount(guard, ['c1', 'c3'], at(10), 10, 0.5);
    expect(Object.keys(result.guard.held)).toEqual(['c1', 'c10', 'c3']);
    expect(result.guard.held.c1).toBe(iso(0));
  });
});

describe('policy conditions', () => {
  it('EvictionInProgress from the counts; lastTransitionTime moves only with the status', () => {
    const busy = policyConditions([], [evictionInProgress({ pending: 3, scheduled: 1, clusters: 1 }, 2)], at(0));
    expect(busy).toEqual([
      {
        type: 'EvictionInProgress',
        status: 'True',
        reason: 'EvictionsPending',
        message: '3 pending, 1 scheduled eviction(s) on 1 cluster where the policy holds NoExecute or PreferNoExecute taints',
        lastTransitionTime: iso(0),
      },
    ]);
    const fewer = policyConditions(busy, [evictionInProgress({ pending: 0, scheduled: 1, clusters: 1 }, 2)], at(5));
    expect(fewer[0]).toMatchObject({ status: 'True', lastTransitionTime: iso(0), message: expect.stringMatching(/^0 pending, 1 scheduled/) });
    const done = policyConditions(fewer, [evictionInProgress({ pending: 0, scheduled: 0, clusters: 0 }, 2)], at(9));
    expect(done[0]).toMatchObject({ status: 'False', reason: 'NoPendingEvictions', lastTransitionTime: iso(9) });
  });
  it('BlastRadiusExceeded: True while exceeded, False once acknowledged or within the share', () => {
    expect(blastRadiusExceeded({ ...holding(...names(5)), exceeded: { since: iso(0), refused: ['c6'] } }, 10, 0.5)).toMatchObject({
      status: 'True',
      reason: 'PolicyBlastRadiusExceeded',
      message: expect.stringContaining('not written on c6'),
    });
    expect(blastRadiusExceeded({ ...holding(...names(6)), acknowledged: { at: iso(0), refused: ['c6'] } }, 10, 0.5)).toMatchObject({
      status: 'False',
      reason: 'Acknowledged',
    });
    expect(blastRadiusExceeded(holding('c1'), 10, 0.5)).toMatchObject({
      status: 'False',
      reason: 'WithinShare',
      message: expect.stringMatching(/^holds .* on 1 of 10 clusters \(at most 5/),
    });
  });
});

describe('the guard as an input of the taint evaluation', () => {
  const ready = (status: Condition['status'], since: number): Condition => ({ type: 'Ready', status, lastTransitionTime: iso(since) });
  const facts: ClusterFacts = { name: 'member1', labels: {}, conditions: [ready('False', 0)], taints: [], policyWindows: {} };
  const seedPolicy = (name: string, effect: 'NoExecute' | 'NoSchedule', add: number): TaintPolicy => ({
    name,
    matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False'] }],
    taintsToAdd: [{ key: 'not-ready', effect, addOnMatchSeconds: add, removeOnMismatchSeconds: 1 }],
  });
  const karmadaPolicy: KarmadaTaintPolicy = {
    shape: 'karmada',
    name: 'k',
    createdAt: iso(0),
    addOnConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False'] }],
    removeOnConditions: [],
    taints: [{ key: 'not-ready', effect: 'NoExecute' }],
  };
  const cases: Array<{ name: string; policies: Array<TaintPolicy | KarmadaTaintPolicy>; blocked: string[]; want: string[] }> = [
    { name: 'a blocked policy adds no NoExecute taint', policies: [seedPolicy('a', 'NoExecute', 5)], blocked: ['a'], want: [] },
    { name: 'a blocked policy still adds NoSchedule', policies: [seedPolicy('a', 'NoSchedule', 5)], blocked: ['a'], want: ['not-ready:NoSchedule by a'] },
    {
      name: 'another policy that wants the same taint adds it',
      policies: [seedPolicy('a', 'NoExecute', 5), seedPolicy('b', 'NoExecute', 8)],
      blocked: ['a'],
      want: ['not-ready:NoExecute by b'],
    },
    { name: 'a blocked Karmada-shape policy adds nothing', policies: [karmadaPolicy], blocked: ['k'], want: [] },
    { name: 'nothing blocked: as before', policies: [karmadaPolicy], blocked: [], want: ['not-ready:NoExecute by k'] },
  ];
  it.each(cases)('$name', ({ policies, blocked, want }) => {
    const result = evaluateTaintPolicies(facts, policies, at(10), { blocked: new Set(blocked) });
    expect(result.changes.map((c) => `${c.taint.key}:${c.taint.effect} by ${c.policy}`)).toEqual(want);
  });
});
