import { type LabelSelector, parsePercentage } from '../api/resources';
import { matchesLabelSelector } from './selectors';

/**
 * FailoverBudgets (failover.io/v1alpha1, namespaced), the arithmetic only (pure). A budget selects the
 * ResourceBindings of its namespace by labels and allows at most `maxInFlight` of them in flight at once:
 * a binding is in flight from its eviction until the graceful-eviction task of that eviction is cleared.
 * `maxInFlight` is a whole number (at least 1) or a percentage of the matching bindings ("10%"), rounded
 * up, at least 1 (validated at the edge: `maxInFlightProblem` in shared/api/resources.ts).
 */

/**
 * The number of bindings a budget lets be in flight: an integer as given; a percentage of `matching`
 * (the bindings its selector matches), rounded up, and at least 1 (an empty selection still lets one go).
 */
export function resolveMaxInFlight(maxInFlight: number | string, matching: number): number {
  if (typeof maxInFlight === 'number') return Math.max(1, Math.floor(maxInFlight));
  const percent = parsePercentage(maxInFlight);
  if (percent === undefined) throw new Error(`invalid maxInFlight ${JSON.stringify(maxInFlight)}`);
  // Integer arithmetic in hundredths of a percent, so that 10% of 30 is exactly 3, not 3.0000000000000004 → 4.
  const hundredths = Math.round(percent * 100);
  return Math.max(1, Math.ceil((hundredths * Math.max(0, matching)) / 10_000));
}

export const isPercentage = (maxInFlight: number | string): maxInFlight is string => typeof maxInFlight === 'string';

/** A budget as the decisions see it. */
export interface BudgetRule {
  /** `<namespace>/<name>`: how events, messages and the ledger name it. */
  key: string;
  namespace: string;
  selector: LabelSelector;
}

/** What a budget looks at on a binding: its kind, namespace and labels. */
export interface BudgetSubject {
  kind: 'ResourceBinding' | 'ClusterResourceBinding';
  namespace?: string;
  labels: Record<string, string>;
}

/** A budget selects the ResourceBindings of its own namespace whose labels match its selector (`{}` selects them all). */
export const budgetSelects = (budget: Pick<BudgetRule, 'namespace' | 'selector'>, subject: BudgetSubject): boolean =>
  subject.kind === 'ResourceBinding' && (subject.namespace ?? 'default') === budget.namespace && matchesLabelSelector(budget.selector, subject.labels);

/** A budget's standing: its resolved limit and the bindings (keys) in flight now. */
export interface BudgetLoad {
  key: string;
  limit: number;
  inFlight: ReadonlySet<string>;
}

export type Admission = { allowed: true } | { allowed: false; blockedBy: string; limit: number; inFlight: number };

/**
 * Whether an eviction of `binding` may be released now under the budgets that select it: each must have
 * room for one more binding in flight. A binding already in flight under a budget takes no more room (it
 * is counted once, however many clusters it leaves). Refused: the first budget (in the given order) that
 * is full names why.
 */
export function admitEviction(binding: string, budgets: readonly BudgetLoad[]): Admission {
  for (const budget of budgets) {
    if (budget.inFlight.has(binding)) continue;
    if (budget.inFlight.size >= budget.limit) return { allowed: false, blockedBy: budget.key, limit: budget.limit, inFlight: budget.inFlight.size };
  }
  return { allowed: true };
}

/** How many of `wanted` evictions (distinct bindings, none in flight yet) fit under one budget now. */
export const roomIn = (budget: Pick<BudgetLoad, 'limit' | 'inFlight'>): number => Math.max(0, budget.limit - budget.inFlight.size);
