import type { ApplicationFailover, BindingStatusReport } from '../api/resources';
import {
  activeBlocks,
  assessApplicationHealth,
  blockedUntil,
  DEFAULT_BLOCK_SECONDS,
  mergeWorkloadStatus,
  WorkloadStatusItem,
} from '../failover/applicationFailover';
import { evictFromPlacement } from '../failover/placementEviction';
import { preScheduleCheck } from '../failover/precheck';
import { keep, write } from '../store/optimistic';
import type { EventRecord } from '../store/ports';
import type { BindingRecord } from '../store/records';
import { annotate, ATTR, currentTraceCarrier, inSpan } from '../telemetry/tracing';
import type { ControlPlane } from './ports';
import { writeBinding } from './state/bindingWrites';
import { BudgetGate, releaseEntries } from './state/budgets';
import { bindingEvent, stateNotPreservedEvent } from './state/events';
import { bindingsNeeding, fleetClusters, recentPacerState } from './state/reads';

/**
 * Application failover (docs/architecture.md, decision 10) around the pure decisions: the workload status
 * report folds into the binding's aggregated status (first-collected time, settled, start of the Unhealthy
 * stretch), and a check at each deadline evicts the cluster from the binding with reason ApplicationFailure.
 * It is not paced by the cluster-failure rate (that rate guards against mass evictions when clusters fail;
 * this moves one workload off a healthy cluster) but respects the Failover gate, the pause switch, the
 * eviction history and the pre-scheduling check.
 */

/** Seconds before a deadline at which its check message becomes visible (as for taint windows). */
export const CHECK_LEAD_SECONDS = 2;

const seconds = (ms: number) => Math.round(ms / 100) / 10;

export async function scheduleApplicationCheck(plane: ControlPlane, binding: string, dueAt: Date): Promise<void> {
  const delay = (dueAt.getTime() - plane.clock.now().getTime()) / 1000 - CHECK_LEAD_SECONDS;
  await plane.applicationFailover.send({ binding, dueAt: dueAt.toISOString() }, { delaySeconds: Math.max(0, Math.floor(delay)) });
}

export interface StatusOutcome {
  found: boolean;
  record?: BindingRecord;
  evicted: string[];
}

/**
 * POST .../status: stores the report (the control plane's own fields survive), records the start and end
 * of Unhealthy stretches as events, and runs or schedules the failover check.
 */
export async function reportWorkloadStatus(plane: ControlPlane, key: string, report: BindingStatusReport): Promise<StatusOutcome> {
  let events: EventRecord[] = [];
  let queueCheckAt: string | undefined;
  const { result: found, record } = await writeBinding<boolean>(plane, key, (current, now) => {
    events = [];
    queueCheckAt = undefined;
    if (!current) return keep(false);
    const placedOn = (current.spec.clusters ?? []).map((c) => c.name);
    const before = JSON.stringify(current.status);
    const previousItems = current.status.aggregatedStatus ?? [];
    const items = mergeWorkloadStatus(previousItems, report.aggregatedStatus, placedOn, now);
    current.status.aggregatedStatus = items;
    const behavior = current.spec.failover?.application;
    if (behavior) {
      events = stretchEvents(current, previousItems, items, behavior, now);
      queueCheckAt = recordNextCheck(current, assessApplicationHealth(items, placedOn, behavior, now).nextCheckAt);
    }
    if (JSON.stringify(current.status) === before) return keep(true);
    return write(current, true);
  });
  if (!found) return { found: false, evicted: [] };
  if (events.length > 0) await plane.events.append(events);
  // The deadline check is queued once, when the deadline first appears (record stored it above).
  if (record && queueCheckAt) await scheduleApplicationCheck(plane, key, new Date(queueCheckAt));
  const latest = record ?? (await plane.bindings.get(key))?.value;
  const behavior = latest?.spec.failover?.application;
  if (!latest || !behavior) return { found: true, record: latest, evicted: [] };
  const assessment = assessApplicationHealth(
    latest.status.aggregatedStatus ?? [],
    (latest.spec.clusters ?? []).map((c) => c.name),
    behavior,
    plane.clock.now(),
  );
  // Check now when something is due that is not already known to wait (a waiting one is re-checked at
  // its own deadline or by the resync, not at every report).
  const items = latest.status.aggregatedStatus ?? [];
  const waitingAlready = (cluster: string) => items.find((i) => i.clusterName === cluster)?.failoverHeld !== undefined;
  if (
    assessment.evict.some((e) => !waitingAlready(e.cluster)) ||
    assessment.held.some((h) => items.find((i) => i.clusterName === h.cluster)?.failoverHeld !== h.why)
  ) {
    const outcome = await checkApplicationFailover(plane, key);
    return { found: true, record: outcome.record ?? latest, evicted: outcome.evicted };
  }
  return { found: true, record: latest, evicted: [] };
}

/**
 * Records the next check in the binding's status (in the caller's write) and returns it when it is new,
 * so that its message is queued once per deadline however many reports or checks see it.
 */
function recordNextCheck(current: BindingRecord, nextCheckAt: Date | undefined): string | undefined {
  const at = nextCheckAt?.toISOString();
  if (at === current.status.applicationFailoverCheckAt) return undefined;
  if (at) current.status.applicationFailoverCheckAt = at;
  else delete current.status.applicationFailoverCheckAt;
  return at;
}

function stretchEvents(
  record: BindingRecord,
  before: readonly WorkloadStatusItem[],
  after: readonly WorkloadStatusItem[],
  behavior: ApplicationFailover,
  now: Date,
): EventRecord[] {
  const events: EventRecord[] = [];
  for (const item of after) {
    const previous = before.find((b) => b.clusterName === item.clusterName);
    if (item.unhealthySince && !previous?.unhealthySince) {
      const deadline = new Date(Date.parse(item.unhealthySince) + behavior.decisionConditions.tolerationSeconds * 1000);
      events.push(
        bindingEvent(
          record,
          now,
          'WorkloadUnhealthy',
          `Unhealthy on ${item.clusterName}: fails over at ${deadline.toISOString()} (tolerationSeconds ${behavior.decisionConditions.tolerationSeconds}) unless it becomes Healthy first`,
          'Warning',
          { cluster: item.clusterName, unhealthySince: item.unhealthySince, deadline: deadline.toISOString() },
        ),
      );
    } else if (!item.unhealthySince && previous?.unhealthySince && item.health === 'Healthy') {
      const lasted = seconds(now.getTime() - Date.parse(previous.unhealthySince));
      events.push(
        bindingEvent(
          record,
          now,
          'WorkloadRecovered',
          `Healthy again on ${item.clusterName} after ${lasted}s Unhealthy: nothing moves, the toleration window starts afresh`,
          'Normal',
          { cluster: item.clusterName, unhealthySince: previous.unhealthySince },
        ),
      );
    }
  }
  return events;
}

export interface CheckOutcome {
  evicted: string[];
  held: Array<{ cluster: string; why: string }>;
  record?: BindingRecord;
}

/**
 * The deadline check of one binding: evicts every placed cluster whose Unhealthy stretch has lasted the
 * toleration, when the preconditions, the gate, the pause switch and the pre-scheduling check allow.
 * Idempotent: it works from the stored binding and the time, and writes with the binding's ETag.
 */
export async function checkApplicationFailover(plane: ControlPlane, key: string): Promise<CheckOutcome> {
  return inSpan('applicationFailover.check', { attributes: { [ATTR.binding]: key } }, async () => {
    const outcome = await check(plane, key);
    annotate({
      [ATTR.outcome]: outcome.evicted.length > 0 ? 'evicted' : outcome.held.length > 0 ? 'held' : 'none',
      'failover.evicted': outcome.evicted.join(','),
    });
    return outcome;
  });
}

async function check(plane: ControlPlane, key: string): Promise<CheckOutcome> {
  const entry = await plane.bindings.get(key);
  const behavior = entry?.value.spec.failover?.application;
  if (!entry || !behavior) return { evicted: [], held: [] };
  const [pacerState, clusters] = await Promise.all([recentPacerState(plane), fleetClusters(plane, 0)]);
  // FailoverBudgets: room for this binding is reserved before it is evicted (it counts once, however many
  // clusters it leaves); without room every due cluster waits, with a BudgetExceeded reason.
  const budget = await reserveBudgets(plane, key, entry.value, behavior, pacerState.paused);
  let events: EventRecord[] = [];
  let evicted: string[] = [];
  let held: CheckOutcome['held'] = [];
  let queueCheckAt: string | undefined;
  const { record } = await writeBinding<null>(
    plane,
    key,
    (current, now) => {
      events = [];
      evicted = [];
      held = [];
      queueCheckAt = undefined;
      const behavior = current?.spec.failover?.application;
      if (!current || !behavior) return keep(null);
      const before = JSON.stringify(current);
      const items = current.status.aggregatedStatus ?? [];
      const assessment = assessApplicationHealth(
        items,
        (current.spec.clusters ?? []).map((c) => c.name),
        behavior,
        now,
      );
      const history = activeBlocks(current.spec.activeEvictionHistory ?? [], behavior.blockPredecessorSeconds, now);
      if (history.keep.length < (current.spec.activeEvictionHistory ?? []).length) current.spec.activeEvictionHistory = history.keep;
      const deadlines = assessment.nextCheckAt ? [assessment.nextCheckAt.getTime()] : [];
      const holdAll = !plane.config.failoverEnabled
        ? 'the Failover gate is off'
        : pacerState.paused
          ? 'evictions are paused (POST /api/failover/resume)'
          : undefined;
      const holds = new Map<string, string>(assessment.held.map((h) => [h.cluster, h.why]));
      for (const due of assessment.evict) {
        if (holdAll) {
          holds.set(due.cluster, holdAll);
          continue;
        }
        const budgetHold = budget.hold ?? (budget.reserved.includes(due.cluster) ? undefined : budget.budgets.length > 0 ? BUDGET_LATE : undefined);
        if (budgetHold) {
          holds.set(due.cluster, budgetHold);
          // Looked at again soon: it goes as soon as the budget allows.
          deadlines.push(now.getTime() + BUDGET_RECHECK_SECONDS * 1000);
          continue;
        }
        const blocked = new Set((current.spec.activeEvictionHistory ?? []).map((h) => h.clusterName));
        const verdict = preScheduleCheck({
          placement: current.spec.placement,
          placedOn: (current.spec.clusters ?? []).map((c) => c.name),
          evictFrom: due.cluster,
          clusters: clusters.filter((c) => !blocked.has(c.name)),
          gracefulEvictionTasks: current.spec.gracefulEvictionTasks,
        });
        if (!verdict.ok) {
          const blockedNote = blocked.size > 0 ? ` (blocked by the eviction history: ${[...blocked].sort().join(', ')})` : '';
          holds.set(due.cluster, `nowhere to go: ${verdict.reason}${blockedNote}`);
          // A block ending may give it somewhere to go.
          if (history.nextExpiry) deadlines.push(history.nextExpiry.getTime());
          continue;
        }
        events.push(...evictForApplicationFailure(current, due.cluster, due.unhealthySince, behavior, now));
        evicted.push(due.cluster);
      }
      // Record why a due failover waits, once per change of reason.
      for (const item of current.status.aggregatedStatus ?? []) {
        const why = holds.get(item.clusterName);
        if (why === item.failoverHeld) continue;
        if (why) {
          item.failoverHeld = why;
          events.push(
            bindingEvent(current, now, 'ApplicationFailoverHeld', `Unhealthy on ${item.clusterName} beyond its toleration, but stays: ${why}`, 'Warning', {
              cluster: item.clusterName,
              why,
            }),
          );
        } else delete item.failoverHeld;
      }
      held = [...holds].map(([cluster, why]) => ({ cluster, why }));
      queueCheckAt = recordNextCheck(current, deadlines.length > 0 ? new Date(Math.min(...deadlines)) : undefined);
      return JSON.stringify(current) === before ? keep(null) : write(current, null);
    },
    { current: entry },
  );
  // Room reserved for a cluster that did not leave after all (held, or evicted by someone else) is given back.
  const unused = budget.reserved.filter((cluster) => !evicted.includes(cluster));
  if (unused.length > 0)
    await releaseEntries(
      plane,
      budget.budgets,
      unused.map((cluster) => ({ binding: key, cluster })),
    );
  if (events.length > 0) await plane.events.append(events);
  if (evicted.length > 0) {
    await plane.scheduler.send({ binding: key });
    plane.log.info('application failover', { binding: key, clusters: evicted });
  }
  if (record && queueCheckAt) await scheduleApplicationCheck(plane, key, new Date(queueCheckAt));
  return { evicted, held, record };
}

/** A held application failover is checked again this soon while a FailoverBudget has no room. */
const BUDGET_RECHECK_SECONDS = 5;
/** A cluster that became due after the budget check (none reserved for it): it goes at the next check. */
const BUDGET_LATE = 'BudgetExceeded: not counted against its FailoverBudget yet; checked again in a few seconds';

interface BudgetReservation {
  /** The budgets that select the binding (empty: none, nothing is held or reserved). */
  budgets: string[];
  /** Clusters counted in flight under them, in one ETag-checked write before the eviction. */
  reserved: string[];
  /** Why every due cluster waits: a budget is full. */
  hold?: string;
}

/** The budget check of application failover: the clusters due now (assessed on the binding as read) are reserved, or held. */
async function reserveBudgets(
  plane: ControlPlane,
  key: string,
  binding: BindingRecord,
  behavior: ApplicationFailover,
  paused: boolean,
): Promise<BudgetReservation> {
  // Nothing goes anyway (gate off, paused): nothing to reserve.
  if (!plane.config.failoverEnabled || paused) return { budgets: [], reserved: [] };
  const now = plane.clock.now();
  const gate = await BudgetGate.open(plane, now);
  if (!gate.concerns(binding)) return { budgets: [], reserved: [] };
  const due = assessApplicationHealth(
    binding.status.aggregatedStatus ?? [],
    (binding.spec.clusters ?? []).map((c) => c.name),
    behavior,
    now,
  ).evict.map((e) => e.cluster);
  if (due.length === 0) return { budgets: [], reserved: [] };
  const { admission, budgets } = await gate.admit({ kind: binding.kind, namespace: binding.namespace, bindingKey: key }, binding.labels);
  if (!admission.allowed) {
    return {
      budgets,
      reserved: [],
      hold: `BudgetExceeded: FailoverBudget ${admission.blockedBy} has ${admission.inFlight} of ${admission.limit} binding(s) in flight`,
    };
  }
  if (budgets.length === 0) return { budgets, reserved: [] };
  for (const cluster of due) await gate.reserve({ bindingKey: key, cluster }, budgets, 'application');
  const refused = await gate.commit();
  if (refused.size > 0) {
    await releaseEntries(
      plane,
      budgets,
      due.map((cluster) => ({ binding: key, cluster })),
    );
    return { budgets, reserved: [], hold: 'BudgetExceeded: another eviction took the last room in its FailoverBudget' };
  }
  return { budgets, reserved: due };
}

/**
 * Takes the cluster out of the binding (in the caller's write): the purge mode's graceful-eviction task
 * (with the state its statePreservation rules find in the cluster's status), an activeEvictionHistory entry,
 * and a fresh status item for whenever it is placed there again. Returns its events.
 */
function evictForApplicationFailure(current: BindingRecord, cluster: string, unhealthySince: string, behavior: ApplicationFailover, now: Date): EventRecord[] {
  const lasted = seconds(now.getTime() - Date.parse(unhealthySince));
  const status = current.status.aggregatedStatus?.find((item) => item.clusterName === cluster)?.status;
  const eviction = evictFromPlacement(
    current.spec,
    cluster,
    {
      reason: 'ApplicationFailure',
      producer: 'ApplicationFailover',
      purgeMode: behavior.purgeMode,
      gracePeriodSeconds: behavior.gracePeriodSeconds,
      message: `Unhealthy since ${unhealthySince} (${lasted}s, tolerationSeconds ${behavior.decisionConditions.tolerationSeconds})`,
      statePreservation: { rules: behavior.statePreservation?.rules ?? [], status },
    },
    now,
  );
  current.spec.clusters = eviction.clusters;
  current.spec.gracefulEvictionTasks = eviction.gracefulEvictionTasks;
  const entry = { clusterName: cluster, creationTimestamp: now.toISOString() };
  current.spec.activeEvictionHistory = [...(current.spec.activeEvictionHistory ?? []).filter((h) => h.clusterName !== cluster), entry];
  current.status.aggregatedStatus = (current.status.aggregatedStatus ?? []).filter((item) => item.clusterName !== cluster);
  current.generation += 1;
  current.traceparent = currentTraceCarrier().traceparent;
  const until = blockedUntil(entry, behavior.blockPredecessorSeconds);
  const purge =
    behavior.purgeMode === 'Gracefully'
      ? `the old copy stays until the new placement is Healthy or ${behavior.gracePeriodSeconds}s pass`
      : behavior.purgeMode === 'Directly'
        ? 'the old copy is removed at once'
        : 'the old copy stays until someone confirms its task (purgeMode Never)';
  const block = until
    ? `${cluster} may be chosen again from ${until.toISOString()}`
    : `${cluster} is never chosen again for this workload (blockPredecessorSeconds 0)`;
  const failover = bindingEvent(
    current,
    now,
    'ApplicationFailover',
    `left ${cluster}: Unhealthy for ${lasted}s since ${unhealthySince} (tolerationSeconds ${behavior.decisionConditions.tolerationSeconds}); ${purge}; ${block}`,
    'Warning',
    {
      cluster,
      unhealthySince,
      tolerationSeconds: behavior.decisionConditions.tolerationSeconds,
      purgeMode: behavior.purgeMode,
      blockedUntil: until?.toISOString() ?? null,
    },
  );
  return eviction.missedRules.length > 0 ? [failover, stateNotPreservedEvent(current, now, cluster, eviction.missedRules)] : [failover];
}

/**
 * The safety net (timer): checks every binding with a running Unhealthy stretch or a held failover, and
 * prunes expired eviction history. Lost deadline messages cost at most one period.
 */
export async function applicationFailoverResync(plane: ControlPlane): Promise<number> {
  let evicted = 0;
  const now = plane.clock.now();
  for (const { id, value } of await bindingsNeeding(plane, 'watchesApplication')) {
    const behavior = value.spec.failover?.application;
    // Only what is due now (a lost deadline message, a resumed pause, a fleet that changed): a future
    // deadline already has its message.
    const due =
      behavior &&
      assessApplicationHealth(
        value.status.aggregatedStatus ?? [],
        (value.spec.clusters ?? []).map((c) => c.name),
        behavior,
        now,
      ).evict.length > 0;
    const history = value.spec.activeEvictionHistory ?? [];
    const expired = history.length > 0 && activeBlocks(history, behavior?.blockPredecessorSeconds ?? DEFAULT_BLOCK_SECONDS, now).keep.length < history.length;
    if (due) evicted += (await checkApplicationFailover(plane, id)).evicted.length;
    else if (expired) await pruneHistory(plane, id);
  }
  return evicted;
}

async function pruneHistory(plane: ControlPlane, key: string): Promise<void> {
  await writeBinding<null>(plane, key, (current, now) => {
    const history = current?.spec.activeEvictionHistory ?? [];
    if (!current || history.length === 0) return keep(null);
    const { keep: kept } = activeBlocks(history, current.spec.failover?.application?.blockPredecessorSeconds ?? DEFAULT_BLOCK_SECONDS, now);
    if (kept.length === history.length) return keep(null);
    current.spec.activeEvictionHistory = kept;
    return write(current, null);
  });
}

/** DELETE .../evictiontasks/{cluster}: a person confirms the old copy on `cluster` is dealt with. */
export async function confirmEvictionTask(plane: ControlPlane, key: string, cluster: string): Promise<'confirmed' | 'no-task' | 'absent'> {
  const { result, record } = await writeBinding<'confirmed' | 'no-task' | 'absent'>(plane, key, (current) => {
    if (!current) return keep('absent');
    const tasks = current.spec.gracefulEvictionTasks ?? [];
    if (!tasks.some((t) => t.fromCluster === cluster)) return keep('no-task');
    current.spec.gracefulEvictionTasks = tasks.filter((t) => t.fromCluster !== cluster);
    return write(current, 'confirmed');
  });
  if (result === 'confirmed' && record) {
    await plane.events.append([
      bindingEvent(
        record,
        plane.clock.now(),
        'OldCopyRemoved',
        `graceful eviction task for ${cluster} confirmed by an administrator; the copy on ${cluster} may be deleted`,
        'Normal',
        { cluster, why: 'confirmed' },
      ),
    ]);
  }
  return result;
}
