import type { EvictionRecord, EvictionState } from './bindingModel';

/**
 * The eviction ledger row's lifecycle, pure. A row changes state only through the named transitions below,
 * each allowed from the states its table entry lists; anything else is a programming error and throws. The
 * state layer (shared/controllers/state/evictionRows.ts) writes the result with the row's ETag.
 *
 *   (none | done | abandoned | failed) --plan--> pending --schedule--> scheduled --complete--> done
 *   pending --park | drain | redate | supersede--> pending      scheduled --postpone | redate--> pending
 *   scheduled --block--> blocked --retry--> pending     pending | scheduled | blocked --abandon--> abandoned
 *
 * `complete` is also allowed from pending, blocked and abandoned: the commit follows the effect, and once the
 * binding carries the decision's eviction the ledger must say `done` whatever happened to the row meanwhile
 * (the repair put it back in line, say).
 */

/** A row that does not exist yet: `plan` creates it. */
export const ABSENT = 'absent';
export type RowState = EvictionState | typeof ABSENT;

export const ROW_TRANSITIONS = {
  /** A new decision (a failure's, a drain's, a failback's): a new row, or one replacing a finished row. */
  plan: { from: [ABSENT, 'done', 'abandoned', 'failed'], to: 'pending' },
  /** A failure's decision takes the row of a failback still waiting to leave the same cluster. */
  supersede: { from: ['pending', 'blocked'], to: 'pending' },
  /** The pacer gave it a slot. */
  schedule: { from: ['pending'], to: 'scheduled' },
  /** Waits for a FailoverBudget with room, out of the pacer's way. */
  park: { from: ['pending'], to: 'pending' },
  /** A failure's waiting row becomes the drain's, due now. */
  drain: { from: ['pending', 'blocked'], to: 'pending' },
  /** Back in line, keeping its due time: paused, halted, a slot passed without a worker, a late read. */
  postpone: { from: ['scheduled'], to: 'pending' },
  /** A failback whose home's healthy run restarted: due later. */
  redate: { from: ['pending', 'scheduled'], to: 'pending' },
  /** The workload has nowhere to go now. */
  block: { from: ['scheduled'], to: 'blocked' },
  /** The fleet changed: a blocked row is tried again. */
  retry: { from: ['blocked'], to: 'pending' },
  /** No longer due: the cluster recovered, the binding left or was deleted, a failback was cancelled. */
  abandon: { from: ['pending', 'scheduled', 'blocked'], to: 'abandoned' },
  /** The eviction is in the binding: the ledger commit. */
  complete: { from: ['scheduled', 'pending', 'blocked', 'abandoned'], to: 'done' },
} as const satisfies Record<string, { from: readonly RowState[]; to: EvictionState }>;

export type RowTransition = keyof typeof ROW_TRANSITIONS;

/** One state change of a row: what it was and what it becomes, by a named transition. */
export interface RowChange {
  transition: RowTransition;
  /** The row as read (absent for a new row). */
  before?: EvictionRecord;
  record: EvictionRecord;
}

export class IllegalTransition extends Error {
  constructor(transition: RowTransition, from: RowState) {
    super(`eviction row: ${transition} is not allowed from ${from} (allowed from ${ROW_TRANSITIONS[transition].from.join(', ')})`);
    this.name = 'IllegalTransition';
  }
}

export const canTransition = (transition: RowTransition, from: RowState): boolean => (ROW_TRANSITIONS[transition].from as readonly RowState[]).includes(from);

/** Every state a row may move to from `from`, by any transition. */
export function nextStates(from: RowState): EvictionState[] {
  const states = new Set<EvictionState>();
  for (const { from: allowed, to } of Object.values(ROW_TRANSITIONS)) if ((allowed as readonly RowState[]).includes(from)) states.add(to);
  return [...states].sort();
}

function change(transition: RowTransition, before: EvictionRecord | undefined, record: EvictionRecord): RowChange {
  const from = before?.state ?? ABSENT;
  if (!canTransition(transition, from)) throw new IllegalTransition(transition, from);
  return { transition, ...(before ? { before } : {}), record: { ...record, state: ROW_TRANSITIONS[transition].to } };
}

/** The identity of a ledger row, one spelling everywhere: the cluster it leaves, then the binding. */
export const evictionRowId = (row: Pick<EvictionRecord, 'cluster' | 'bindingKey'>): string => `${row.cluster}|${row.bindingKey}`;

/** Copy without the budget wait's fields (a row released or put back is no longer waiting for a budget). */
function withoutBudgetWait(record: EvictionRecord): EvictionRecord {
  const next = { ...record };
  if (record.stateReason) {
    delete next.stateReason;
    delete next.waitingFor;
    delete next.message;
  }
  return next;
}

function withoutSlot(record: EvictionRecord): EvictionRecord {
  const next = { ...record };
  delete next.scheduledFor;
  return next;
}

const iso = (at: Date | string) => (typeof at === 'string' ? at : at.toISOString());

/** A new decision's row (built by pendingEviction), replacing `before` when a finished row is there. */
export const plan = (record: EvictionRecord, before?: EvictionRecord): RowChange => change('plan', before, record);

/** A new decision in place of a waiting failback's row. */
export const supersede = (record: EvictionRecord, before: EvictionRecord): RowChange => change('supersede', before, record);

export const schedule = (record: EvictionRecord, slot: number, now: Date | string): RowChange =>
  change('schedule', record, { ...withoutBudgetWait(record), scheduledFor: new Date(slot).toISOString(), updatedAt: iso(now) });

export const park = (record: EvictionRecord, budget: { name: string; limit: number; inFlight: number }, now: Date | string): RowChange =>
  change('park', record, {
    ...record,
    stateReason: 'BudgetExceeded',
    waitingFor: budget.name,
    message: `waiting for FailoverBudget ${budget.name}: ${budget.inFlight} of ${budget.limit} binding(s) in flight`,
    updatedAt: iso(now),
  });

export const drain = (record: EvictionRecord, next: { reason: string; why: string; dueAt: string }, now: Date | string): RowChange =>
  change('drain', record, { ...record, ...next, updatedAt: iso(now) });

export const postpone = (record: EvictionRecord, why: string, now: Date | string): RowChange =>
  change('postpone', record, { ...withoutSlot(record), message: why, updatedAt: iso(now) });

export const redate = (
  record: EvictionRecord,
  next: { dueAt: string; why: string; homeHealthySince: string; failbackWindowSeconds?: number; message: string },
  now: Date | string,
): RowChange => change('redate', record, { ...withoutSlot(record), ...next, updatedAt: iso(now) });

export const block = (record: EvictionRecord, reason: string, now: Date | string): RowChange =>
  change('block', record, { ...record, message: reason, attempts: record.attempts + 1, updatedAt: iso(now) });

export const retry = (record: EvictionRecord, now: Date | string): RowChange =>
  change('retry', record, { ...record, dueAt: iso(now), updatedAt: iso(now), message: `retrying after: ${record.message ?? 'blocked'}` });

export const abandon = (record: EvictionRecord, why: string, now: Date | string): RowChange =>
  change('abandon', record, { ...record, message: why, updatedAt: iso(now) });

/** The commit: `commitId` lets a retried commit recognise its own write. */
export const complete = (record: EvictionRecord, done: { executedAt: string; commitId: string }, now: Date | string): RowChange =>
  change('complete', record, { ...record, ...done, attempts: record.attempts + 1, updatedAt: iso(now) });

/** True when `latest` is already what `change` writes (a batch that landed although its answer said otherwise). */
export const alreadyApplied = (latest: EvictionRecord, change: RowChange): boolean =>
  latest.state === change.record.state &&
  latest.updatedAt === change.record.updatedAt &&
  latest.scheduledFor === change.record.scheduledFor &&
  latest.waitingFor === change.record.waitingFor &&
  latest.message === change.record.message &&
  latest.commitId === change.record.commitId;
