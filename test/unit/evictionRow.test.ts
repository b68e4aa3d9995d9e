import { describe, expect, it } from 'vitest';
import { type EvictionRecord, type EvictionState } from '../../shared/failover/bindingModel';
import {
  abandon,
  ABSENT,
  alreadyApplied,
  block,
  canTransition,
  complete,
  drain,
  evictionRowId,
  IllegalTransition,
  nextStates,
  park,
  plan,
  postpone,
  redate,
  retry,
  ROW_TRANSITIONS,
  type RowState,
  type RowTransition,
  schedule,
  supersede,
} from '../../shared/failover/evictionRow';

const NOW = new Date('2026-11-26T10:00:00.000Z');
const LATER = '2026-11-26T10:05:00.000Z';

function row(state: EvictionState, extra: Partial<EvictionRecord> = {}): EvictionRecord {
  return {
    cluster: 'member1',
    bindingKey: 'rb/default/web',
    kind: 'ResourceBinding',
    namespace: 'default',
    name: 'web',
    resourceKind: 'apps/v1/Deployment',
    replicas: 1,
    state,
    reason: 'TaintUntolerated',
    purgeMode: 'Gracefully',
    why: 'the taint is not tolerated',
    taints: 'cluster.karmada.io/not-ready:NoExecute',
    dueAt: '2026-11-26T09:59:00.000Z',
    decidedAt: '2026-11-26T09:58:00.000Z',
    decisionRev: 1,
    attempts: 0,
    updatedAt: '2026-11-26T09:58:00.000Z',
    ...extra,
  };
}

/** Each named transition applied to a row in `from` (absent: no row). */
const APPLY: Record<RowTransition, (from: RowState) => unknown> = {
  plan: (from) => plan(row('pending'), from === ABSENT ? undefined : row(from)),
  supersede: (from) => supersede(row('pending'), row(from as EvictionState)),
  schedule: (from) => schedule(row(from as EvictionState), NOW.getTime() + 1000, NOW),
  park: (from) => park(row(from as EvictionState), { name: 'default/two', limit: 2, inFlight: 2 }, NOW),
  drain: (from) => drain(row(from as EvictionState), { reason: 'Drain', why: 'drained', dueAt: NOW.toISOString() }, NOW),
  postpone: (from) => postpone(row(from as EvictionState), 'paused', NOW),
  redate: (from) => redate(row(from as EvictionState), { dueAt: LATER, why: 'w', homeHealthySince: NOW.toISOString(), message: 'm' }, NOW),
  block: (from) => block(row(from as EvictionState), 'nowhere to go', NOW),
  retry: (from) => retry(row(from as EvictionState), NOW),
  abandon: (from) => abandon(row(from as EvictionState), 'recovered', NOW),
  complete: (from) => complete(row(from as EvictionState), { executedAt: NOW.toISOString(), commitId: 'c1' }, NOW),
};

const STATES: RowState[] = [ABSENT, 'pending', 'scheduled', 'blocked', 'done', 'abandoned', 'failed'];

describe('the eviction row state machine', () => {
  // The allowed-transition table, written out: a change to the lifecycle changes this table on purpose.
  const ALLOWED: Record<RowTransition, RowState[]> = {
    plan: [ABSENT, 'done', 'abandoned', 'failed'],
    supersede: ['pending', 'blocked'],
    schedule: ['pending'],
    park: ['pending'],
    drain: ['pending', 'blocked'],
    postpone: ['scheduled'],
    redate: ['pending', 'scheduled'],
    block: ['scheduled'],
    retry: ['blocked'],
    abandon: ['pending', 'scheduled', 'blocked'],
    complete: ['scheduled', 'pending', 'blocked', 'abandoned'],
  };
  const cases = (Object.keys(APPLY) as RowTransition[]).flatMap((transition) =>
    STATES.filter((from) => transition !== 'supersede' || from !== ABSENT).map((from) => ({ transition, from, allowed: ALLOWED[transition].includes(from) })),
  );

  it.each(cases)('$transition from $from: allowed $allowed', ({ transition, from, allowed }) => {
    expect(canTransition(transition, from)).toBe(allowed);
    if (allowed) {
      const change = APPLY[transition](from) as { transition: string; record: EvictionRecord; before?: EvictionRecord };
      expect(change.transition).toBe(transition);
      expect(change.record.state).toBe(ROW_TRANSITIONS[transition].to);
      expect(change.before?.state ?? ABSENT).toBe(from);
    } else {
      expect(() => APPLY[transition](from)).toThrow(IllegalTransition);
      expect(() => APPLY[transition](from)).toThrow(new RegExp(`${transition} is not allowed from ${from}`));
    }
  });

  it('finished rows go nowhere but to a new decision', () => {
    expect(nextStates('done')).toEqual(['pending']);
    expect(nextStates('abandoned')).toEqual(['done', 'pending']);
    expect(nextStates('scheduled')).toEqual(['abandoned', 'blocked', 'done', 'pending']);
  });

  it('schedule gives the slot and ends a budget wait; park starts one', () => {
    const parked = park(row('pending'), { name: 'default/two', limit: 2, inFlight: 2 }, NOW).record;
    expect(parked).toMatchObject({ state: 'pending', stateReason: 'BudgetExceeded', waitingFor: 'default/two' });
    expect(parked.message).toBe('waiting for FailoverBudget default/two: 2 of 2 binding(s) in flight');
    const released = schedule(parked, NOW.getTime() + 1500, NOW).record;
    expect(released).toMatchObject({ state: 'scheduled', scheduledFor: '2026-11-26T10:00:01.500Z', updatedAt: NOW.toISOString() });
    expect(released).not.toHaveProperty('stateReason');
    expect(released).not.toHaveProperty('waitingFor');
    expect(released).not.toHaveProperty('message');
    // A row that never waited keeps its message.
    expect(schedule(row('pending', { message: 'kept' }), NOW.getTime(), NOW).record.message).toBe('kept');
  });

  it('postpone and redate drop the slot; block and complete count an attempt; retry is due now', () => {
    const scheduled = row('scheduled', { scheduledFor: NOW.toISOString() });
    expect(postpone(scheduled, 'paused', NOW).record).not.toHaveProperty('scheduledFor');
    expect(postpone(scheduled, 'paused', NOW).record).toMatchObject({ state: 'pending', message: 'paused', dueAt: scheduled.dueAt });
    expect(redate(scheduled, { dueAt: LATER, why: 'w', homeHealthySince: 'h', message: 'm' }, NOW).record).toMatchObject({ state: 'pending', dueAt: LATER });
    expect(redate(scheduled, { dueAt: LATER, why: 'w', homeHealthySince: 'h', message: 'm' }, NOW).record).not.toHaveProperty('scheduledFor');
    expect(block(scheduled, 'no fit', NOW).record).toMatchObject({ state: 'blocked', attempts: 1, message: 'no fit' });
    expect(complete(scheduled, { executedAt: 'x', commitId: 'c' }, NOW).record).toMatchObject({ state: 'done', attempts: 1, executedAt: 'x', commitId: 'c' });
    expect(retry(row('blocked', { message: 'no fit' }), NOW).record).toMatchObject({
      state: 'pending',
      dueAt: NOW.toISOString(),
      message: 'retrying after: no fit',
    });
  });

  it('does not change the row it was given', () => {
    const before = row('pending');
    const copy = structuredClone(before);
    schedule(before, NOW.getTime(), NOW);
    abandon(before, 'x', NOW);
    expect(before).toEqual(copy);
  });

  it('knows a write already applied, and one row id', () => {
    const change = abandon(row('pending'), 'recovered', NOW);
    expect(alreadyApplied(change.record, change)).toBe(true);
    expect(alreadyApplied({ ...change.record, message: 'another pass' }, change)).toBe(false);
    expect(alreadyApplied(row('pending'), change)).toBe(false);
    expect(evictionRowId(row('pending'))).toBe('member1|rb/default/web');
  });
});
