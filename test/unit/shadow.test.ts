import { describe, expect, it } from 'vitest';
import type { PlacementFacts } from '../../shared/failover/bindingModel';
import type { AnyTaintPolicy, ClusterFacts, Condition, KarmadaTaintPolicy, TaintPolicy } from '../../shared/failover/model';
import { policyMode, wouldEvict } from '../../shared/failover/shadow';
import { evaluateTaintPolicies } from '../../shared/failover/taintPolicy';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000);
const iso = (seconds: number) => at(seconds).toISOString();
const ready = (status: Condition['status'], since: number): Condition => ({ type: 'Ready', status, lastTransitionTime: iso(since) });

const seed = (mode?: 'shadow' | 'enforce', add = 10, remove = 5): TaintPolicy => ({
  name: 'not-ready',
  matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False', 'Unknown'] }],
  taintsToAdd: [
    { key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', addOnMatchSeconds: add, removeOnMismatchSeconds: remove },
    { key: 'cluster.karmada.io/unschedulable', effect: 'NoSchedule', addOnMatchSeconds: add * 2, removeOnMismatchSeconds: remove },
  ],
  ...(mode ? { mode } : {}),
});

const karmada = (mode?: 'shadow'): KarmadaTaintPolicy => ({
  shape: 'karmada',
  name: 'detect-not-ready',
  createdAt: iso(-100),
  addOnConditions: [{ conditionType: 'Ready', operator: 'NotIn', statusValues: ['True'] }],
  removeOnConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['True'] }],
  taints: [{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute' }],
  ...(mode ? { mode } : {}),
});

const cluster = (conditions: Condition[]): ClusterFacts => ({ name: 'member1', labels: {}, conditions, taints: [], policyWindows: {} });

/** Runs the evaluator over a timeline, carrying the stored state (taints, windows) as the controller does. */
function run(steps: Array<{ t: number; conditions?: Condition[]; policies?: AnyTaintPolicy[] }>) {
  let facts = cluster([]);
  let policies: AnyTaintPolicy[] = [];
  return steps.map((step) => {
    if (step.conditions) facts = { ...facts, conditions: step.conditions };
    if (step.policies) policies = step.policies;
    const result = evaluateTaintPolicies(facts, policies, at(step.t));
    facts = { ...facts, taints: result.taints, policyWindows: result.policyWindows };
    return {
      t: step.t,
      taints: result.taints.map((x) => `${x.key}:${x.effect}`),
      found: result.wouldTaint.map((w) => `${w.taint.key}:${w.taint.effect}@${(Date.parse(w.at) - T0) / 1000}`),
      next: result.nextDeadline ? (result.nextDeadline.getTime() - T0) / 1000 : undefined,
      since: result.policyWindows[policies[0]?.name ?? '']?.since,
    };
  });
}

describe('policyMode', () => {
  it.each([
    [undefined, 'enforce'],
    [{}, 'enforce'],
    [{ 'failover.io/mode': 'enforce' }, 'enforce'],
    [{ 'failover.io/mode': 'shadow' }, 'shadow'],
    // Only possible for an object written to Karmada directly (our API refuses it): fail safe.
    [{ 'failover.io/mode': 'Enforce' }, 'shadow'],
  ])('%j → %s', (annotations, mode) => {
    expect(policyMode(annotations)).toBe(mode);
  });
});

describe('shadow mode in the taint evaluation', () => {
  const NE = 'cluster.karmada.io/not-ready:NoExecute';
  const NS = 'cluster.karmada.io/unschedulable:NoSchedule';
  const cases: Array<{ name: string; steps: Parameters<typeof run>[0]; expect: Array<Partial<ReturnType<typeof run>[number]>> }> = [
    {
      name: 'windowed shape: no taint, each finding at its would-be time, once per episode, and a deadline for each',
      steps: [{ t: 0, conditions: [ready('False', 0)], policies: [seed('shadow')] }, { t: 9.9 }, { t: 10 }, { t: 15 }, { t: 20 }, { t: 60 }],
      expect: [
        { taints: [], found: [], next: 10 },
        { taints: [], found: [], next: 10 },
        { taints: [], found: [`${NE}@10`], next: 20 },
        { taints: [], found: [], next: 20 },
        { taints: [], found: [`${NS}@20`], next: undefined },
        { taints: [], found: [], next: undefined },
      ],
    },
    {
      name: 'windowed shape: a new match episode records again; a flap shorter than the window records nothing',
      steps: [
        { t: 0, conditions: [ready('False', 0)], policies: [seed('shadow', 10)] },
        { t: 10 },
        { t: 30, conditions: [ready('True', 30)] },
        { t: 40, conditions: [ready('False', 40)] },
        { t: 45, conditions: [ready('True', 45)] },
        { t: 100, conditions: [ready('False', 100)] },
        { t: 110 },
      ],
      expect: [{ found: [] }, { found: [`${NE}@10`] }, { found: [] }, { found: [] }, { found: [] }, { found: [] }, { found: [`${NE}@110`], taints: [] }],
    },
    {
      name: 'windowed shape: the window is the persisted match start, kept across the switch to enforce (taints at the next evaluation)',
      steps: [
        { t: 0, conditions: [ready('False', 0)], policies: [seed('shadow')] },
        { t: 30 },
        { t: 31, policies: [seed()] },
        { t: 32, policies: [seed('shadow')] },
      ],
      expect: [
        { taints: [], since: iso(0) },
        { taints: [], found: [`${NE}@10`, `${NS}@20`], since: iso(0) },
        { taints: [NE, NS], found: [], since: iso(0) },
        // Back in shadow mode: what it holds follows the usual rules (it still matches: it keeps them).
        { taints: [NE, NS], since: iso(0) },
      ],
    },
    {
      name: 'Karmada shape: no taint; the finding once per episode of matching addOnConditions; enforcing acts at once',
      steps: [
        { t: 0, conditions: [ready('False', 0)], policies: [karmada('shadow')] },
        { t: 5 },
        { t: 10, conditions: [ready('True', 10)] },
        { t: 20, conditions: [ready('False', 20)] },
        { t: 21, policies: [karmada()] },
      ],
      expect: [
        { taints: [], found: [`${NE}@0`] },
        { taints: [], found: [] },
        { taints: [], found: [] },
        { taints: [], found: [`${NE}@20`] },
        { taints: [NE], found: [] },
      ],
    },
  ];
  it.each(cases)('$name', ({ steps, expect: expected }) => {
    const log = run(steps);
    expected.forEach((want, i) => expect(log[i], `step at t=${steps[i].t}`).toMatchObject(want));
  });

  it('a shadow policy neither removes a taint another policy holds nor takes hold of it; the finding says it is present', () => {
    const facts: ClusterFacts = {
      ...cluster([ready('False', 0)]),
      taints: [{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', timeAdded: iso(0), owners: [], manual: true }],
    };
    const result = evaluateTaintPolicies(facts, [seed('shadow')], at(10));
    expect(result.taints).toEqual(facts.taints);
    expect(result.changes).toEqual([]);
    expect(result.wouldTaint).toEqual([
      { policy: 'not-ready', taint: { key: 'cluster.karmada.io/not-ready', effect: 'NoExecute' }, at: iso(10), episode: iso(0), present: true },
    ]);
    const removal = evaluateTaintPolicies({ ...facts, conditions: [ready('True', 5)] }, [karmada('shadow')], at(10));
    expect(removal.taints).toEqual(facts.taints);
  });

  it('an enforcing policy beside a shadow one adds as usual; the shadow one does not hold it', () => {
    const shadowTwin: TaintPolicy = { ...seed('shadow'), name: 'shadow-twin' };
    const result = evaluateTaintPolicies(cluster([ready('False', 0)]), [seed(), shadowTwin], at(10));
    expect(result.taints.map((t) => [t.key, t.owners])).toEqual([['cluster.karmada.io/not-ready', ['not-ready']]]);
    expect(result.wouldTaint.map((w) => [w.policy, w.present])).toEqual([['shadow-twin', true]]);
  });
});

describe('wouldEvict: what the taint manager would decide for the taint', () => {
  const placement = (name: string, extra: Partial<PlacementFacts> = {}): PlacementFacts => ({
    kind: 'ResourceBinding',
    namespace: 'default',
    name,
    cluster: 'member1',
    resourceKind: 'apps/v1/Deployment',
    replicas: 1,
    tolerations: [],
    rev: 1,
    ...extra,
  });
  const placements = [
    placement('untolerated'),
    placement('tolerated-forever', { tolerations: [{ key: 'cluster.karmada.io/not-ready', operator: 'Exists', effect: 'NoExecute' }] }),
    placement('tolerated-60s', { tolerations: [{ key: 'cluster.karmada.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 60 }] }),
    placement('failover-30s', { failoverCluster: { purgeMode: 'Gracefully', tolerationSeconds: 30 } }),
  ];
  const cases: Array<{ name: string; effect: 'NoExecute' | 'PreferNoExecute' | 'NoSchedule'; want: Array<[string, number]> }> = [
    {
      name: 'NoExecute: untolerated now, tolerated for 60 s at the taint plus 60 s, tolerated for ever never',
      effect: 'NoExecute',
      want: [
        ['failover-30s', 100],
        ['tolerated-60s', 160],
        ['untolerated', 100],
      ],
    },
    { name: 'PreferNoExecute: only failover.cluster bindings, at the taint plus tolerationSeconds', effect: 'PreferNoExecute', want: [['failover-30s', 130]] },
    { name: 'NoSchedule: nothing', effect: 'NoSchedule', want: [] },
  ];
  it.each(cases)('$name', ({ effect, want }) => {
    const found = wouldEvict({ key: 'cluster.karmada.io/not-ready', effect }, iso(100), placements, at(100));
    expect(found.map((f) => [f.binding.name, (Date.parse(f.dueAt) - T0) / 1000])).toEqual(want);
  });
  it('skips a binding whose eviction from the cluster is already decided (an active ledger row), as the taint manager does', () => {
    const decided = new Map([
      ['rb:default:untolerated', 'pending' as const],
      ['rb:default:failover-30s', 'done' as const],
    ]);
    const found = wouldEvict({ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute' }, iso(100), placements, at(100), decided);
    expect(found.map((f) => f.bindingKey)).toEqual(['rb:default:failover-30s', 'rb:default:tolerated-60s']);
  });
});
