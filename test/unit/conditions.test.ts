import { describe, expect, it } from 'vitest';
import { heartbeatVerdict, matchesConditions, mergeConditions } from '../../shared/failover/conditions';
import type { Condition, MatchCondition } from '../../shared/failover/model';
import { matchesClusterAffinity, matchesLabelSelector } from '../../shared/failover/selectors';

const c = (type: string, status: Condition['status']): Condition => ({ type, status, lastTransitionTime: '2026-01-01T00:00:00.000Z' });
const m = (conditionType: string, operator: 'In' | 'NotIn', ...statusValues: Condition['status'][]): MatchCondition => ({
  conditionType,
  operator,
  statusValues,
});

describe('matchesConditions', () => {
  const cases: Array<[string, MatchCondition[], Condition[], boolean]> = [
    ['In matches a listed status', [m('Ready', 'In', 'False', 'Unknown')], [c('Ready', 'False')], true],
    ['In rejects an unlisted status', [m('Ready', 'In', 'False')], [c('Ready', 'True')], false],
    ['NotIn matches an unlisted status', [m('Ready', 'NotIn', 'True')], [c('Ready', 'Unknown')], true],
    ['NotIn rejects a listed status', [m('Ready', 'NotIn', 'True')], [c('Ready', 'True')], false],
    ['absent condition fails In', [m('Disk', 'In', 'False')], [c('Ready', 'False')], false],
    ['absent condition fails NotIn', [m('Disk', 'NotIn', 'True')], [c('Ready', 'False')], false],
    ['conditions are ANDed: all hold', [m('Ready', 'In', 'False'), m('Net', 'In', 'False')], [c('Ready', 'False'), c('Net', 'False')], true],
    ['conditions are ANDed: one fails', [m('Ready', 'In', 'False'), m('Net', 'In', 'False')], [c('Ready', 'False'), c('Net', 'True')], false],
    ['empty list matches (seed: "If empty, the TaintsToAdd will be added")', [], [], true],
  ];
  it.each(cases)('%s', (_name, matches, conditions, expected) => {
    expect(matchesConditions(matches, conditions)).toBe(expected);
  });
});

describe('mergeConditions', () => {
  const before: Condition[] = [{ type: 'Ready', status: 'True', reason: 'Ok', lastTransitionTime: '2026-01-01T00:00:00.000Z' }];
  const cases: Array<{ name: string; report: Array<Omit<Condition, 'lastTransitionTime'>>; expected: Condition[]; transitioned: string[] }> = [
    {
      name: 'same status keeps lastTransitionTime, updates reason',
      report: [{ type: 'Ready', status: 'True', reason: 'StillOk' }],
      expected: [{ type: 'Ready', status: 'True', reason: 'StillOk', lastTransitionTime: '2026-01-01T00:00:00.000Z' }],
      transitioned: [],
    },
    {
      name: 'status change moves lastTransitionTime to the observation time',
      report: [{ type: 'Ready', status: 'False', reason: 'ClusterNotReachable', message: 'down' }],
      expected: [{ type: 'Ready', status: 'False', reason: 'ClusterNotReachable', message: 'down', lastTransitionTime: '2026-01-01T00:05:00.000Z' }],
      transitioned: ['Ready'],
    },
    {
      name: 'a new condition type is added; unreported ones are kept',
      report: [{ type: 'DiskPressure', status: 'False' }],
      expected: [
        { type: 'DiskPressure', status: 'False', lastTransitionTime: '2026-01-01T00:05:00.000Z' },
        { type: 'Ready', status: 'True', reason: 'Ok', lastTransitionTime: '2026-01-01T00:00:00.000Z' },
      ],
      transitioned: ['DiskPressure'],
    },
  ];
  it.each(cases)('$name', ({ report, expected, transitioned }) => {
    const merged = mergeConditions(before, report, '2026-01-01T00:05:00.000Z');
    expect(merged.conditions).toEqual(expected);
    expect(merged.transitioned).toEqual(transitioned);
  });
});

describe('heartbeatVerdict (cluster monitor)', () => {
  const registeredAt = '2026-01-01T00:00:00.000Z';
  const at = (s: number) => new Date(Date.parse(registeredAt) + s * 1000);
  const cases = [
    { name: 'never reported, inside startup grace', lastReportAt: undefined, now: 59.9, expired: false },
    { name: 'never reported, startup grace over', lastReportAt: undefined, now: 60, expired: true },
    { name: 'reported, inside grace', lastReportAt: at(100).toISOString(), now: 139.9, expired: false },
    { name: 'reported, grace over', lastReportAt: at(100).toISOString(), now: 140, expired: true },
  ];
  it.each(cases)('$name', ({ lastReportAt, now, expired }) => {
    expect(heartbeatVerdict({ lastReportAt, registeredAt }, at(now), 40, 60).expired).toBe(expired);
  });
  it('does not mark again a cluster the monitor already marked Unknown', () => {
    const verdict = heartbeatVerdict(
      { registeredAt, readyCondition: { type: 'Ready', status: 'Unknown', reason: 'ClusterStatusUnknown', lastTransitionTime: registeredAt } },
      at(500),
      40,
      60,
    );
    expect(verdict).toMatchObject({ expired: true, alreadyUnknown: true });
  });
});

describe('selectors', () => {
  const labels = { env: 'prod', region: 'eu' };
  const cases: Array<[string, Parameters<typeof matchesLabelSelector>[0], boolean]> = [
    ['no selector', undefined, true],
    ['matchLabels hit', { matchLabels: { env: 'prod' } }, true],
    ['matchLabels miss', { matchLabels: { env: 'dev' } }, false],
    ['In hit', { matchExpressions: [{ key: 'region', operator: 'In', values: ['eu', 'us'] }] }, true],
    ['In on a missing label', { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }, false],
    ['NotIn on a missing label', { matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] }, true],
    ['NotIn miss', { matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['prod'] }] }, false],
    ['Exists', { matchExpressions: [{ key: 'env', operator: 'Exists' }] }, true],
    ['DoesNotExist', { matchExpressions: [{ key: 'env', operator: 'DoesNotExist' }] }, false],
    ['labels and expressions are ANDed', { matchLabels: { env: 'prod' }, matchExpressions: [{ key: 'region', operator: 'In', values: ['us'] }] }, false],
  ];
  it.each(cases)('label selector: %s', (_name, selector, expected) => {
    expect(matchesLabelSelector(selector, labels)).toBe(expected);
  });

  const target = { name: 'member1', labels, provider: 'azure', region: 'westeurope' };
  const affinityCases: Array<[string, Parameters<typeof matchesClusterAffinity>[0], boolean]> = [
    ['exclude wins over names', { clusterNames: ['member1'], exclude: ['member1'] }, false],
    ['names and labels both hold', { clusterNames: ['member1'], labelSelector: { matchLabels: { env: 'prod' } } }, true],
    ['names hold, labels do not', { clusterNames: ['member1'], labelSelector: { matchLabels: { env: 'dev' } } }, false],
    ['field selector In', { fieldSelector: { matchExpressions: [{ key: 'provider', operator: 'In', values: ['azure'] }] } }, true],
    ['field selector NotIn', { fieldSelector: { matchExpressions: [{ key: 'region', operator: 'NotIn', values: ['westeurope'] }] } }, false],
    ['empty names list selects all', { clusterNames: [] }, true],
  ];
  it.each(affinityCases)('cluster affinity: %s', (_name, affinity, expected) => {
    expect(matchesClusterAffinity(affinity, target)).toBe(expected);
  });
});
