import { PlaneState, RecentCache } from '../../cache';
import type { BindingRef } from '../../failover/bindingModel';
import { Admission, admitEviction, BudgetLoad, budgetSelects, isPercentage, resolveMaxInFlight } from '../../failover/budget';
import { evictionRowId } from '../../failover/evictionRow';
import { ConcurrencyError } from '../../store/ports';
import type { BudgetFlight, FailoverBudgetRecord, InFlightEntry } from '../../store/records';
import type { BindingRecord } from '../../store/records';
import type { ControlPlane } from '../ports';

/**
 * FailoverBudgets at run time: which budgets select a binding, how many bindings are in flight under each,
 * and the record of what is in flight (one small document per budget, `BudgetFlight`, ETag-checked).
 *
 * How in flight is counted, and why this way. A binding is in flight from its eviction until the
 * graceful-eviction task of that eviction is cleared (a Directly-purged eviction clears at once). Counting
 * that from the bindings would mean reading every binding of the namespace (or every binding with a task)
 * on every pacer tick. Instead whoever releases an eviction under a budget (the pacer when it gives a row
 * a slot, application failover when it evicts) first adds an entry `{binding, cluster, since}` to the
 * budget's document, in the same ETag-checked write that checks the room: the count is the number of
 * distinct bindings in it, one point read per budget. Entries are removed lazily, only when the budget is
 * full and a row wants to go: then the least recently checked entries (at most REVALIDATE_PER_PASS a pass)
 * are checked against their ledger row (still `scheduled`: in flight) and their binding (a task from that
 * cluster: in flight), and the ones that ended are dropped. So the count is never lower than the truth
 * (an entry goes only once its end is seen), a tick with room costs one point read per budget involved (and
 * one per candidate row whose namespace has a budget, for the binding's labels: a row does not carry them),
 * and a full budget a few more point reads, whatever the size of the fleet. A percentage is resolved against
 * a count of the matching bindings that is refreshed at most once a minute, and only for a percentage.
 */

const SECOND = 1000;
/** A percentage is resolved against a count of the matching bindings at most this old. */
export const MATCHING_RECOUNT_MS = 60_000;
/** An entry whose release does not show yet in its row or binding (being written) is kept this long. */
export const RELEASE_GRACE_MS = 60_000;
/** Entries of a full budget checked per pass, least recently checked first. */
export const REVALIDATE_PER_PASS = 16;

/** `<namespace>/<name>`: how the API, events and ledger rows name a budget. */
export const budgetKey = (budget: { namespace: string; name: string }): string => `${budget.namespace}/${budget.name}`;
/** `<namespace>:<name>`: its document id (a Table row key may not hold `/`). */
export const budgetId = (budget: { namespace: string; name: string }): string => `${budget.namespace}:${budget.name}`;
/** What the decisions see of a budget. */
export const ruleOf = (budget: FailoverBudgetRecord) => ({ key: budgetKey(budget), namespace: budget.namespace, selector: budget.spec.selector });
/** An in-flight entry's identity: its ledger row's. */
const entryId = (entry: Pick<InFlightEntry, 'binding' | 'cluster'>) => evictionRowId({ cluster: entry.cluster, bindingKey: entry.binding });

const rulesCache = new RecentCache<FailoverBudgetRecord[]>('budgetRules', SECOND);

/** Every FailoverBudget, as this process read them at most `maxAgeMs` ago (budgets change rarely). */
export async function loadBudgets(plane: ControlPlane, maxAgeMs = SECOND): Promise<FailoverBudgetRecord[]> {
  const ports = plane.budgets;
  if (!ports) return [];
  return rulesCache.get(plane, async () => (await ports.rules.list()).map((entry) => entry.value), { maxAgeMs });
}

/** After this process wrote a budget: its next decision reads them again. */
export function forgetBudgets(plane: ControlPlane): void {
  rulesCache.forget(plane);
}

/** When this process last checked each entry (per control plane): the least recently checked go first. */
const lastChecked = new PlaneState<Map<string, number>>('budgetLastChecked');
const checkedTimes = (plane: ControlPlane) => {
  let map = lastChecked.get(plane);
  if (!map) lastChecked.set(plane, (map = new Map<string, number>()));
  return map;
};

interface Loaded extends BudgetLoad {
  record: FailoverBudgetRecord;
  id: string;
  /** Entries as read (minus the ones seen ended). */
  base: InFlightEntry[];
  /** Entries reserved in this pass, written by `commit`. */
  added: InFlightEntry[];
  matching?: BudgetFlight['matching'];
  etag?: string;
  /** Entries were dropped or the matching count refreshed: worth writing even with nothing added. */
  dirty: boolean;
  revalidated: boolean;
  inFlight: Set<string>;
}

export interface BudgetVerdict {
  admission: Admission;
  /** Keys of the budgets that select the binding (empty: none, nothing to reserve). */
  budgets: string[];
}

/**
 * One pass of budget decisions (a pacer tick, an application failover check): budgets and their documents
 * are read once and reservations accumulate, then `commit` writes them. Not shared between passes.
 */
export class BudgetGate {
  private readonly loads = new Map<string, Promise<Loaded>>();
  private readonly bindings = new Map<string, Promise<BindingRecord | undefined>>();
  private listing?: Promise<BindingRecord[]>;

  private constructor(
    private readonly plane: ControlPlane,
    readonly budgets: readonly FailoverBudgetRecord[],
    private readonly now: Date,
  ) {}

  static async open(plane: ControlPlane, now: Date): Promise<BudgetGate> {
    return new BudgetGate(plane, await loadBudgets(plane), now);
  }

  /** Whether a budget could select this binding (a ResourceBinding of a namespace that has one): else no read is needed. */
  concerns(ref: Pick<BindingRef, 'kind' | 'namespace'>): boolean {
    return ref.kind === 'ResourceBinding' && this.budgets.some((b) => b.namespace === (ref.namespace ?? 'default'));
  }

  /**
   * Whether an eviction of this binding may go now: every budget that selects it has room (a binding
   * already in flight under it takes none). A full budget is revalidated once per pass before it refuses.
   * `labels` saves the binding read when the caller has them.
   */
  async admit(ref: Pick<BindingRef, 'kind' | 'namespace'> & { bindingKey: string }, labels?: Record<string, string>): Promise<BudgetVerdict> {
    if (!this.concerns(ref)) return { admission: { allowed: true }, budgets: [] };
    const found = labels ?? (await this.binding(ref.bindingKey))?.labels;
    // A binding that is gone is the worker's to end (it abandons the row): no budget counts it.
    if (!found) return { admission: { allowed: true }, budgets: [] };
    const subject = { kind: ref.kind, namespace: ref.namespace, labels: found };
    const selected = this.budgets.filter((budget) => budgetSelects(ruleOf(budget), subject));
    if (selected.length === 0) return { admission: { allowed: true }, budgets: [] };
    const loads = await Promise.all(selected.map((budget) => this.load(budget)));
    let admission = admitEviction(ref.bindingKey, loads);
    if (!admission.allowed) {
      const full = loads.find((l) => l.key === (admission as { blockedBy: string }).blockedBy)!;
      if (!full.revalidated) {
        await this.revalidate(full);
        admission = admitEviction(ref.bindingKey, loads);
      }
    }
    return { admission, budgets: selected.map(budgetKey) };
  }

  /** Whether a budget has room for one more binding (revalidated once per pass when full); an unknown budget has. */
  async hasRoom(key: string): Promise<boolean> {
    const budget = this.budgets.find((b) => budgetKey(b) === key);
    if (!budget) return true;
    const load = await this.load(budget);
    if (load.inFlight.size < load.limit) return true;
    if (!load.revalidated) await this.revalidate(load);
    return load.inFlight.size < load.limit;
  }

  /** Counts an eviction in flight under these budgets from now on (written by `commit`). */
  async reserve(eviction: { bindingKey: string; cluster: string }, budgets: readonly string[], by: InFlightEntry['by']): Promise<void> {
    for (const key of budgets) {
      const budget = this.budgets.find((b) => budgetKey(b) === key);
      if (!budget) continue;
      const load = await this.load(budget);
      load.added.push({ binding: eviction.bindingKey, cluster: eviction.cluster, since: this.now.toISOString(), by });
      load.inFlight.add(eviction.bindingKey);
    }
  }

  /** The standing of a budget in this pass: its limit and how many bindings are in flight. */
  async standing(key: string): Promise<{ limit: number; inFlight: number } | undefined> {
    const budget = this.budgets.find((b) => budgetKey(b) === key);
    if (!budget) return undefined;
    const load = await this.load(budget);
    return { limit: load.limit, inFlight: load.inFlight.size };
  }

  /**
   * Writes each budget's document: the entries still in flight plus the reservations `keep` accepts, with
   * the ETag read. When another writer was first, the document is read again and the reservations are
   * added while there is room; the ones that no longer fit are returned (as `<binding>|<cluster>`), and
   * their evictions must not go.
   */
  async commit(keep: (entry: InFlightEntry) => boolean = () => true): Promise<Set<string>> {
    const refused = new Set<string>();
    const flights = this.plane.budgets?.flights;
    if (!flights) return refused;
    for (const pending of this.loads.values()) {
      const load = await pending;
      const mine = load.added.filter(keep);
      if (mine.length === 0 && !load.dirty) continue;
      let base = load.base;
      let etag = load.etag;
      let matching = load.matching;
      let accepted = mine;
      for (let attempt = 0; attempt < 5; attempt++) {
        const value: BudgetFlight = { inFlight: [...base, ...accepted], ...(matching ? { matching } : {}) };
        try {
          etag = etag === undefined ? await flights.create(load.id, value) : await flights.replace(load.id, value, etag);
          break;
        } catch (error) {
          if (!(error instanceof ConcurrencyError)) throw error;
          const fresh = await flights.get(load.id);
          base = fresh?.value.inFlight ?? [];
          etag = fresh?.etag;
          matching = fresh?.value.matching ?? matching;
          const inFlight = new Set(base.map((e) => e.binding));
          accepted = [];
          for (const entry of mine) {
            if (inFlight.has(entry.binding) || inFlight.size < load.limit) {
              inFlight.add(entry.binding);
              accepted.push(entry);
            } else refused.add(entryId(entry));
          }
          if (attempt === 4) for (const entry of accepted) refused.add(entryId(entry));
        }
      }
    }
    return refused;
  }

  /** The budget's document and limit, read once per pass. */
  private load(budget: FailoverBudgetRecord): Promise<Loaded> {
    const key = budgetKey(budget);
    let pending = this.loads.get(key);
    if (!pending) {
      pending = this.read(budget);
      this.loads.set(key, pending);
    }
    return pending;
  }

  private async read(budget: FailoverBudgetRecord): Promise<Loaded> {
    const id = budgetId(budget);
    const stored = await this.plane.budgets?.flights.get(id);
    const base = stored?.value.inFlight ?? [];
    let matching = stored?.value.matching;
    let dirty = false;
    let limit: number;
    if (isPercentage(budget.spec.maxInFlight)) {
      if (!matching || this.now.getTime() - Date.parse(matching.countedAt) > MATCHING_RECOUNT_MS) {
        matching = { count: await this.countMatching(budget), countedAt: this.now.toISOString() };
        dirty = true;
      }
      limit = resolveMaxInFlight(budget.spec.maxInFlight, matching.count);
    } else limit = resolveMaxInFlight(budget.spec.maxInFlight, 0);
    return {
      key: budgetKey(budget),
      id,
      record: budget,
      limit,
      base,
      added: [],
      matching,
      etag: stored?.etag,
      dirty,
      revalidated: false,
      inFlight: new Set(base.map((e) => e.binding)),
    };
  }

  /** How many bindings a budget selects (a listing of the bindings, shared by the budgets of this pass). */
  private async countMatching(budget: FailoverBudgetRecord): Promise<number> {
    this.listing ??= this.plane.bindings.list().then((entries) => entries.map((e) => e.value));
    return (await this.listing).filter((binding) => budgetSelects(ruleOf(budget), binding)).length;
  }

  private binding(key: string): Promise<BindingRecord | undefined> {
    let pending = this.bindings.get(key);
    if (!pending) {
      pending = this.plane.bindings.get(key).then((entry) => entry?.value);
      this.bindings.set(key, pending);
    }
    return pending;
  }

  /** Checks the least recently checked entries of a full budget and drops the ones that ended. */
  private async revalidate(load: Loaded): Promise<void> {
    load.revalidated = true;
    const times = checkedTimes(this.plane);
    const batch = [...load.base]
      .sort((a, b) => (times.get(entryId(a)) ?? 0) - (times.get(entryId(b)) ?? 0) || a.since.localeCompare(b.since))
      .slice(0, REVALIDATE_PER_PASS);
    if (batch.length === 0) return;
    const still = await Promise.all(batch.map((entry) => this.stillInFlight(entry)));
    const at = this.plane.clock.now().getTime();
    for (const entry of batch) times.set(entryId(entry), at);
    const ended = new Set(batch.filter((_, i) => !still[i]).map(entryId));
    if (ended.size === 0) return;
    for (const id of ended) times.delete(id);
    load.base = load.base.filter((entry) => !ended.has(entryId(entry)));
    load.inFlight = new Set([...load.base, ...load.added].map((entry) => entry.binding));
    load.dirty = true;
  }

  /**
   * An entry is in flight while its row is `scheduled` (released, not executed yet) or its binding has a
   * graceful-eviction task from that cluster. A release not visible yet in either (being written) counts
   * for RELEASE_GRACE_MS.
   */
  private async stillInFlight(entry: InFlightEntry): Promise<boolean> {
    const young = this.now.getTime() - Date.parse(entry.since) < RELEASE_GRACE_MS;
    if (entry.by === 'pacer') {
      const row = await this.plane.ledger.getEviction(entry.cluster, entry.binding);
      const state = row?.record.state;
      if (state === 'scheduled') return true;
      // Back in line (paused, repaired), abandoned or blocked since the release: it ended.
      if (state !== 'done') return young && (!row || row.record.updatedAt <= entry.since);
    }
    const binding = await this.plane.bindings.get(entry.binding);
    if (!binding) return false;
    if ((binding.value.spec.gracefulEvictionTasks ?? []).some((task) => task.fromCluster === entry.cluster)) return true;
    return entry.by === 'application' && young && (binding.value.spec.clusters ?? []).some((c) => c.name === entry.cluster);
  }
}

/** Removes reservations that were not used (application failover held the eviction after all), ETag-checked. */
export async function releaseEntries(
  plane: ControlPlane,
  budgets: readonly string[],
  entries: ReadonlyArray<Pick<InFlightEntry, 'binding' | 'cluster'>>,
): Promise<void> {
  const flights = plane.budgets?.flights;
  if (!flights || entries.length === 0) return;
  const drop = new Set(entries.map(entryId));
  for (const key of budgets) {
    const [namespace, name] = key.split('/');
    const id = budgetId({ namespace, name });
    for (let attempt = 0; attempt < 5; attempt++) {
      const stored = await flights.get(id);
      if (!stored || !stored.value.inFlight.some((e) => drop.has(entryId(e)))) break;
      try {
        await flights.replace(id, { ...stored.value, inFlight: stored.value.inFlight.filter((e) => !drop.has(entryId(e))) }, stored.etag);
        break;
      } catch (error) {
        if (!(error instanceof ConcurrencyError)) throw error;
      }
    }
  }
}

/** A budget's document as stored (GET /api/failoverbudgets shows it as status). */
export async function budgetFlight(plane: ControlPlane, budget: { namespace: string; name: string }): Promise<BudgetFlight | undefined> {
  return (await plane.budgets?.flights.get(budgetId(budget)))?.value;
}
