import { get } from './api';
import { Badge, Empty, Pending, Section, When } from './components';
import { bindingHref, bindingName, keyRef } from './format';
import { usePoll } from './state';
import type { Budget, LedgerRow } from './types';

const ROW_LIMIT = 200;

interface BudgetsData {
  budgets: Budget[];
  /** Pending rows a budget holds back, by `namespace/name`, in the pacer's order. */
  waiting: Map<string, LedgerRow[]>;
}

async function loadBudgets(): Promise<BudgetsData> {
  const [budgets, pending] = await Promise.all([get<{ items: Budget[] }>('failoverbudgets'), get<{ items: LedgerRow[] }>('evictions?state=pending')]);
  const waiting = new Map<string, LedgerRow[]>();
  for (const row of pending.items) if (row.waitingFor) waiting.set(row.waitingFor, [...(waiting.get(row.waitingFor) ?? []), row]);
  for (const rows of waiting.values()) rows.sort((a, b) => (b.priority ?? 0) - (a.priority ?? 0) || String(a.dueAt).localeCompare(String(b.dueAt)));
  return { budgets: budgets.items, waiting };
}

const budgetName = (b: Budget) => `${b.metadata.namespace}/${b.metadata.name}`;

/** `matchLabels` and `matchExpressions` in one line; "all bindings of the namespace" for `{}`. */
export function selectorText(selector: Budget['spec']['selector']): string {
  const parts = Object.entries(selector?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of selector?.matchExpressions ?? [])
    parts.push(e.operator === 'Exists' ? e.key : e.operator === 'DoesNotExist' ? `!${e.key}` : `${e.key} ${e.operator} (${(e.values ?? []).join(', ')})`);
  return parts.length ? parts.join(', ') : 'all bindings of the namespace';
}

/** #/budgets: every FailoverBudget, what it has in flight and the evictions waiting for room. */
export function BudgetsView() {
  const data = usePoll('budgets', loadBudgets, 3000);
  const d = data.data;
  if (!d) return <Pending poll={data} what="the budgets" />;
  return (
    <>
      <Section title="FailoverBudgets" id="budgets-list">
        {d.budgets.length ? <BudgetTable budgets={d.budgets} waiting={d.waiting} /> : <Empty>No FailoverBudgets.</Empty>}
      </Section>
      {d.budgets.map((b) => (
        <BudgetRows key={budgetName(b)} budget={b} waiting={d.waiting.get(budgetName(b)) ?? []} />
      ))}
    </>
  );
}

function BudgetTable({ budgets, waiting }: { budgets: Budget[]; waiting: Map<string, LedgerRow[]> }) {
  return (
    <div class="scroll">
      <table data-testid="budgets">
        <caption>How many of each budget's bindings may be moving at once, how many are, and how many evictions wait for room</caption>
        <thead>
          <tr>
            <th scope="col">Budget</th>
            <th scope="col">Selects</th>
            <th scope="col">Max in flight</th>
            <th scope="col">In flight</th>
            <th scope="col">Matching bindings</th>
            <th scope="col">Waiting</th>
          </tr>
        </thead>
        <tbody>
          {budgets.map((b) => {
            const name = budgetName(b);
            const max = b.status?.maxInFlight;
            const inFlight = b.status?.inFlight ?? 0;
            const held = waiting.get(name)?.length ?? 0;
            const spec = String(b.spec.maxInFlight);
            return (
              <tr key={name} data-budget={name}>
                <th scope="row">{name}</th>
                <td>{selectorText(b.spec.selector)}</td>
                <td>{max === undefined ? spec : spec.endsWith('%') ? `${max} (${spec})` : max}</td>
                <td>
                  {max !== undefined ? (
                    <progress max={Math.max(max, 1)} value={Math.min(inFlight, max)} aria-label={`${name}: ${inFlight} of ${max} in flight`} />
                  ) : null}{' '}
                  <span data-col="in-flight">
                    {inFlight}
                    {max !== undefined ? `/${max}` : ''}
                  </span>{' '}
                  {max !== undefined && inFlight >= max ? <Badge tone="warn">full</Badge> : null}
                </td>
                <td>{b.status?.matchingBindings ?? '—'}</td>
                <td data-col="waiting">{held ? <Badge tone="warn">{held} waiting</Badge> : '0'}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

function BudgetRows({ budget, waiting }: { budget: Budget; waiting: LedgerRow[] }) {
  const name = budgetName(budget);
  const flying = budget.status?.evictions ?? [];
  const id = `budget-${budget.metadata.namespace}-${budget.metadata.name}`;
  return (
    <section aria-labelledby={id}>
      <h3 id={id}>Budget {name}</h3>
      {flying.length ? (
        <div class="scroll">
          <table data-flight-of={name}>
            <caption>
              Evictions in flight under {name}
              {flying.length > ROW_LIMIT ? ` (first ${ROW_LIMIT} of ${flying.length})` : ''}: counted until the old copy is gone
            </caption>
            <thead>
              <tr>
                <th scope="col">Workload</th>
                <th scope="col">From cluster</th>
                <th scope="col">Since</th>
              </tr>
            </thead>
            <tbody>
              {flying.slice(0, ROW_LIMIT).map((e) => {
                const ref = keyRef(e.binding);
                return (
                  <tr key={`${e.binding}-${e.cluster}`}>
                    <th scope="row">
                      <a href={bindingHref(ref)}>{bindingName(ref)}</a>
                    </th>
                    <td>{e.cluster}</td>
                    <td>
                      <When iso={e.since} />
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      ) : (
        <Empty>Nothing in flight under {name}.</Empty>
      )}
      {waiting.length ? (
        <div class="scroll">
          <table data-waiting-for={name}>
            <caption>
              Evictions waiting for room in {name}
              {waiting.length > ROW_LIMIT ? ` (first ${ROW_LIMIT} of ${waiting.length})` : ''}, in the order they go: higher priority first, then the earlier
              due time
            </caption>
            <thead>
              <tr>
                <th scope="col">Workload</th>
                <th scope="col">From cluster</th>
                <th scope="col">Priority</th>
                <th scope="col">Due</th>
                <th scope="col">Message</th>
              </tr>
            </thead>
            <tbody>
              {waiting.slice(0, ROW_LIMIT).map((r) => (
                <tr key={`${bindingName(r.binding)}-${r.cluster}`}>
                  <th scope="row">
                    <a href={bindingHref(r.binding)}>{bindingName(r.binding)}</a>
                  </th>
                  <td>{r.cluster}</td>
                  <td>{r.priority ?? 0}</td>
                  <td>
                    <When iso={r.dueAt} />
                  </td>
                  <td>{r.message ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}
