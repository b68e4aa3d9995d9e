import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyObjects, cluster, ledger, sleep } from '../helpers/fleet';
import { api, HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';

/**
 * FailoverBudgets and priority order on a running host (local functions host, embedded Azurite):
 *
 * - priorities: derived bindings get their policy PriorityClass's value, and a failure evicts them in
 *   priority order (read from the ledger's execution times);
 * - a budget: 200 bindings selected by one budget with maxInFlight 5, evicted by one cluster failure; the
 *   old copies are confirmed removed as they appear (DELETE .../evictiontasks), and the maximum in flight,
 *   counted from the events (Evicted → OldCopyRemoved per binding), never exceeds 5;
 * - bad input: a budget with a bad selector or a percentage over 100% is refused naming the field, and
 *   nothing of the request is stored.
 */

const RATE = 20;
const BINDINGS = 200;
const MAX_IN_FLIGHT = 5;

let host: HostProcess;
beforeAll(async () => {
  // The clusters' agents report once: the monitor's grace is longer than the file, or silent clusters would
  // turn Ready=Unknown, count as unhealthy and halt this small fleet part-way.
  host = await startHostProcess({
    FAILOVER_ENABLED: 'true',
    RESOURCE_EVICTION_RATE: String(RATE),
    CLUSTER_MONITOR_GRACE_PERIOD_SECONDS: '3600',
    CLUSTER_STARTUP_GRACE_PERIOD_SECONDS: '3600',
  });
}, 30_000);
afterAll(async () => host?.stop());

interface EventItem {
  time: string;
  kind: string;
  name: string;
  reason: string;
  message: string;
}

const eventsOf = async (query: string): Promise<EventItem[]> => (await api(host.url, 'GET', `events?${query}&limit=10000`)).body.items;

describe('priority order', () => {
  it('evicts the bindings of a failed cluster in order of their PriorityClass, then due time', async () => {
    await applyObjects(host.url, [cluster('p1'), cluster('p2')]);
    const classes = [
      { name: 'critical', value: 1000 },
      { name: 'batch', value: -100 },
    ];
    const policy = (name: string, selectorLabel: string, priorityClass?: string) => ({
      apiVersion: 'policy.karmada.io/v1alpha1',
      kind: 'PropagationPolicy',
      metadata: { name, namespace: 'prio' },
      spec: {
        resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment', labelSelector: { matchLabels: { tier: selectorLabel } } }],
        placement: { clusterAffinity: { clusterNames: ['p1', 'p2'] } },
        ...(priorityClass ? { schedulePriority: { priorityClassSource: 'KubePriorityClass', priorityClassName: priorityClass } } : {}),
      },
    });
    const deployment = (name: string, tier: string) => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: 'prio', labels: { tier } },
      spec: { replicas: 1 },
    });
    const tiers = { critical: ['api-0', 'api-1', 'api-2'], plain: ['web-0', 'web-1', 'web-2'], batch: ['job-0', 'job-1', 'job-2'] };
    await applyObjects(host.url, [
      ...classes.map((c) => ({ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: c.name }, value: c.value })),
      policy('critical', 'critical', 'critical'),
      policy('plain', 'plain'),
      policy('batch', 'batch', 'batch'),
      // Interleaved, so that apply order says nothing about priority.
      ...[0, 1, 2].flatMap((i) => [deployment(tiers.batch[i], 'batch'), deployment(tiers.plain[i], 'plain'), deployment(tiers.critical[i], 'critical')]),
    ]);
    const all = [...tiers.critical, ...tiers.plain, ...tiers.batch];
    // Placed by the scheduler on both clusters (Duplicated), with the class's priority.
    await waitFor(
      async () => {
        for (const name of all) {
          const b = (await api(host.url, 'GET', `resourcebindings/prio/${name}-deployment`)).body;
          if (b?.spec?.clusters?.length !== 2) return undefined;
        }
        return true;
      },
      15_000,
      200,
    );
    const priorityOf = async (name: string) => (await api(host.url, 'GET', `resourcebindings/prio/${name}-deployment`)).body.spec.schedulePriority?.priority;
    expect(await priorityOf('api-0')).toBe(1000);
    expect(await priorityOf('job-0')).toBe(-100);
    expect(await priorityOf('web-0')).toBeUndefined();

    await applyObjects(host.url, [cluster('p1', true)]);
    const rows = await waitFor(
      async () => {
        const items = (await api(host.url, 'GET', 'evictions?cluster=p1')).body.items as Array<{
          binding: { name: string };
          state: string;
          priority: number;
          scheduledFor: string | null;
          executedAt: string | null;
        }>;
        return items.length === all.length && items.every((i) => i.state === 'done') ? items : undefined;
      },
      20_000,
      200,
    );
    // In the order of their slots, the pacer's decision: on a busy machine a message delivered late runs its
    // evictions after their slots, so execution times can cross where the slots do not.
    const executed = [...rows].sort((a, b) => a.scheduledFor!.localeCompare(b.scheduledFor!));
    const order = executed.map((r) => r.binding.name.replace(/-deployment$/, ''));
    console.log(`execution order: ${order.join(', ')}`);
    expect(executed.map((r) => r.priority)).toEqual([1000, 1000, 1000, 0, 0, 0, -100, -100, -100]);
    expect(order.slice(0, 3).sort()).toEqual(tiers.critical);
    expect(order.slice(6).sort()).toEqual(tiers.batch);
  }, 60_000);
});

describe('FailoverBudget', () => {
  it(`never lets more than ${MAX_IN_FLIGHT} of ${BINDINGS} bindings be in flight, counted from the events`, async () => {
    await applyObjects(host.url, [cluster('m1'), cluster('m2'), cluster('m3')]);
    const names = Array.from({ length: BINDINGS }, (_, i) => `web-${i}`);
    await applyObjects(host.url, [
      {
        apiVersion: 'failover.io/v1alpha1',
        kind: 'FailoverBudget',
        metadata: { name: 'web', namespace: 'default' },
        spec: { selector: { matchLabels: { app: 'web' } }, maxInFlight: MAX_IN_FLIGHT },
      },
      ...names.map((name) => ({
        apiVersion: 'work.karmada.io/v1alpha2',
        kind: 'ResourceBinding',
        metadata: { name, namespace: 'default', labels: { app: 'web' } },
        spec: {
          resource: { apiVersion: 'apps/v1', kind: 'Deployment', name },
          replicas: 1,
          clusters: [{ name: 'm1', replicas: 1 }],
          placement: { clusterAffinity: { clusterNames: ['m1', 'm2', 'm3'] } },
        },
      })),
    ]);
    const listed = (await api(host.url, 'GET', 'failoverbudgets/default')).body;
    expect(listed.items).toEqual([
      expect.objectContaining({
        kind: 'FailoverBudget',
        metadata: expect.objectContaining({ name: 'web', namespace: 'default' }),
        spec: expect.objectContaining({ maxInFlight: 5 }),
      }),
    ]);

    const started = Date.now();
    await applyObjects(host.url, [cluster('m1', true)]);
    // The old copies are confirmed removed as the evictions happen (their tasks end), as an operator or a
    // reconciler would: that is what lets the budget's next evictions go.
    const confirmed = new Set<string>();
    let sawWaiting = 0;
    let done = 0;
    while (done < BINDINGS && Date.now() - started < 240_000) {
      const rows = await ledger(host.url, '?cluster=m1');
      done = rows.filter((r) => r.state === 'done').length;
      sawWaiting = Math.max(sawWaiting, rows.filter((r) => (r as unknown as { stateReason: string | null }).stateReason === 'BudgetExceeded').length);
      const toConfirm = rows.filter((r) => r.state === 'done' && !confirmed.has(r.binding.name));
      await Promise.all(
        toConfirm.map(async (r) => {
          const res = await api(host.url, 'DELETE', `resourcebindings/default/${r.binding.name}/evictiontasks/m1`);
          if (res.status === 200) confirmed.add(r.binding.name);
        }),
      );
      await sleep(200);
    }
    expect(done).toBe(BINDINGS);
    const seconds = (Date.now() - started) / 1000;

    // In flight from the events: each binding from its Evicted event to its OldCopyRemoved event.
    const events = (await eventsOf('kind=ResourceBinding')).filter((e) => e.name.startsWith('default/web-'));
    const steps = events
      .filter((e) => e.reason === 'Evicted' || e.reason === 'OldCopyRemoved')
      .map((e) => ({ at: Date.parse(e.time), step: e.reason === 'Evicted' ? 1 : -1 }))
      // At the same instant an end counts before a start (the start was released after the end was seen).
      .sort((a, b) => a.at - b.at || a.step - b.step);
    let inFlight = 0;
    let most = 0;
    for (const { step } of steps) {
      inFlight += step;
      most = Math.max(most, inFlight);
    }
    console.log(
      `FailoverBudget maxInFlight ${MAX_IN_FLIGHT}: ${BINDINGS} bindings evicted in ${seconds.toFixed(1)} s; maximum in flight (from events): ${most}; most rows waiting with BudgetExceeded at once: ${sawWaiting}`,
    );
    expect(steps.filter((s) => s.step === 1)).toHaveLength(BINDINGS);
    expect(most).toBeLessThanOrEqual(MAX_IN_FLIGHT);
    expect(most).toBeGreaterThanOrEqual(2);
    expect(sawWaiting).toBeGreaterThan(100);
    // The BudgetExceeded event is written once, when a row starts waiting: at most once per binding.
    const waitingEvents = events.filter((e) => e.reason === 'BudgetExceeded');
    expect(waitingEvents.length).toBeGreaterThan(100);
    expect(new Set(waitingEvents.map((e) => e.name)).size).toBe(waitingEvents.length);
    expect(waitingEvents[0].message).toContain('waiting for FailoverBudget default/web: 5 of 5 binding(s) in flight');
  }, 300_000);
});

describe('FailoverBudget: bad input', () => {
  const budget = (name: string, spec: Record<string, unknown>) => ({
    apiVersion: 'failover.io/v1alpha1',
    kind: 'FailoverBudget',
    metadata: { name, namespace: 'bad' },
    spec,
  });

  it('refuses a bad selector and a percentage over 100% naming the fields, and stores nothing of the request', async () => {
    const res = await api(host.url, 'POST', 'apply', [
      budget('fine', { selector: {}, maxInFlight: '10%' }),
      budget('too-many', { selector: {}, maxInFlight: '150%' }),
      budget('bad-selector', { selector: { matchExpressions: [{ key: 'app', operator: 'Equals', values: ['web'] }] }, maxInFlight: 2 }),
      budget('empty-in', { selector: { matchExpressions: [{ key: 'app', operator: 'In' }] }, maxInFlight: 2 }),
    ]);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid objects; nothing was applied');
    expect(res.body.errors).toEqual([
      { document: 1, path: 'spec.maxInFlight', message: 'must not be more than 100% (got 150%)' },
      { document: 2, path: 'spec.selector.matchExpressions[0].operator', message: expect.stringContaining('"In"') },
      { document: 3, path: 'spec.selector.matchExpressions[0].values', message: 'must not be empty when operator is In' },
    ]);
    expect((await api(host.url, 'GET', 'failoverbudgets/bad')).body.items).toEqual([]);
    expect((await api(host.url, 'GET', 'failoverbudgets/bad/fine')).status).toBe(404);
  });
});
