import { randomUUID } from 'node:crypto';
import type { BudgetView } from '../api/contract/views';
import { ManagedInKarmadaError } from '../api/errors';
import type { FailoverBudgetInput } from '../api/resources';
import { isPercentage, resolveMaxInFlight } from '../failover/budget';
import { mutate } from '../store/optimistic';
import type { FailoverBudgetRecord } from '../store/records';
import type { ControlPlane } from './ports';
import { budgetFlight, budgetId, forgetBudgets } from './state/budgets';
import { appliedPolicy, ApplyAction } from './state/derivation';
import { policyEvent } from './state/events';
import { budgetResource } from './views';

/**
 * FailoverBudgets (failover.io/v1alpha1, namespaced): stored (standalone) or read from their custom
 * resources (Karmada mode), and shown with what is in flight under them. The pacer and application failover
 * obey them (shared/controllers/state/budgets.ts).
 */

const display = (ref: { namespace: string; name: string }) => `${ref.namespace}/${ref.name}`;

function ports(plane: ControlPlane) {
  if (!plane.budgets) throw new Error('this control plane has no FailoverBudget store');
  return plane.budgets;
}

export async function applyBudget(plane: ControlPlane, input: FailoverBudgetInput): Promise<ApplyAction> {
  if (plane.karmada) throw new ManagedInKarmadaError('FailoverBudget');
  const ref = { namespace: input.metadata.namespace, name: input.metadata.name };
  const { result } = await mutate<FailoverBudgetRecord, ApplyAction>(ports(plane).rules, budgetId(ref), (current) =>
    appliedPolicy(
      current?.value,
      () => ({ ...ref, uid: randomUUID(), createdAt: plane.clock.now().toISOString(), generation: 1, labels: {}, annotations: {}, spec: input.spec }),
      input,
    ),
  );
  if (result !== 'unchanged') {
    forgetBudgets(plane);
    await plane.events.append([
      policyEvent(
        'FailoverBudget',
        display(ref),
        plane.clock.now(),
        result === 'created' ? 'Created' : 'Configured',
        `FailoverBudget ${result}: at most ${String(input.spec.maxInFlight)} in flight`,
      ),
    ]);
  }
  return result;
}

export async function deleteBudget(plane: ControlPlane, ref: { namespace: string; name: string }): Promise<boolean> {
  if (plane.karmada) throw new ManagedInKarmadaError('FailoverBudget');
  const deleted = await ports(plane).rules.delete(budgetId(ref));
  if (deleted) {
    forgetBudgets(plane);
    await ports(plane).flights.delete(budgetId(ref));
    await plane.events.append([policyEvent('FailoverBudget', display(ref), plane.clock.now(), 'Deleted', 'FailoverBudget deleted: the evictions it held go')]);
  }
  return deleted;
}

/** A budget's view: its spec, and the in-flight record (the limit resolved against the last count of matching bindings). */
async function view(plane: ControlPlane, record: FailoverBudgetRecord, etag: string) {
  const flight = await budgetFlight(plane, record);
  const matching = flight?.matching?.count;
  const limit = isPercentage(record.spec.maxInFlight)
    ? matching !== undefined
      ? resolveMaxInFlight(record.spec.maxInFlight, matching)
      : undefined
    : resolveMaxInFlight(record.spec.maxInFlight, 0);
  return budgetResource(
    record,
    { inFlight: flight?.inFlight ?? [], ...(limit !== undefined ? { limit } : {}), ...(matching !== undefined ? { matching } : {}) },
    etag,
  );
}

/** GET /api/failoverbudgets[/{namespace}]. */
export async function listBudgets(plane: ControlPlane, namespace?: string): Promise<BudgetView[]> {
  const entries = (await ports(plane).rules.list()).filter((entry) => !namespace || entry.value.namespace === namespace);
  entries.sort((a, b) => a.id.localeCompare(b.id));
  return Promise.all(entries.map((entry) => view(plane, entry.value, entry.etag)));
}

/** GET /api/failoverbudgets/{namespace}/{name}. */
export async function getBudget(plane: ControlPlane, ref: { namespace: string; name: string }): Promise<BudgetView | undefined> {
  const entry = await ports(plane).rules.get(budgetId(ref));
  return entry ? view(plane, entry.value, entry.etag) : undefined;
}
