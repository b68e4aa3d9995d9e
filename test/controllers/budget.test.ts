import { describe, expect, it } from 'vitest';
import { decodeApplyDocuments } from '../../shared/api/decode';
import type { ApiError } from '../../shared/api/errors';
import { checkApplicationFailover } from '../../shared/controllers/applicationFailover';
import { confirmOldCopyRemoved, reportBindingStatus } from '../../shared/controllers/bindingStatus';
import { getBudget } from '../../shared/controllers/budgets';
import { drainCluster } from '../../shared/controllers/drain';
import { listEvictions } from '../../shared/controllers/fleet';
import type { EvictionMessage } from '../../shared/controllers/ports';
import { manageCluster } from '../../shared/controllers/taintManager';
import { bindingKey } from '../../shared/failover/bindingModel';
import { KubeApi, KubeApiError, KubeObject } from '../../shared/kube/api';
import { KarmadaBudgetStore } from '../../shared/store/karmada/budgetStore';
import { MemoryDocumentStore } from '../../shared/store/memory';
import type { BudgetFlight, FailoverBudgetRecord } from '../../shared/store/records';
import { silentLogger } from '../../shared/telemetry/log';
import { binding, cluster } from '../helpers/fleet';
import { applyTo, second } from '../helpers/memoryLoop';
import { MemoryPlane, memoryPlane } from '../helpers/memoryPlane';

/**
 * FailoverBudgets and priority order on the in-memory ports: the pacer never releases an eviction a budget
 * has no room for, the row waits (BudgetExceeded, one event) without holding up others, and goes when the
 * budget allows; drains and application failover obey budgets; the detector gives derived bindings their
 * PriorityClass's priority, and the pacer releases by priority.
 */

function budgetPlane(settings: Record<string, string> = {}) {
  const m = memoryPlane({ RESOURCE_EVICTION_RATE: '5', ...settings });
  const budgets = { rules: new MemoryDocumentStore<FailoverBudgetRecord>(), flights: new MemoryDocumentStore<BudgetFlight>() };
  m.plane.budgets = budgets;
  return { ...m, budgets };
}
type BudgetPlane = ReturnType<typeof budgetPlane>;

const labelled = (name: string, labels: Record<string, string>, spec: Record<string, unknown> = {}) => {
  const b = binding(name, ['m1'], { placement: { clusterAffinity: { clusterNames: ['m1', 'm2', 'm3'] } }, ...spec });
  return { ...b, metadata: { ...b.metadata, labels } };
};

const budget = (name: string, maxInFlight: number | string, selector: Record<string, unknown> = { matchLabels: { app: 'web' } }) => ({
  apiVersion: 'failover.io/v1alpha1',
  kind: 'FailoverBudget',
  metadata: { name, namespace: 'default' },
  spec: { selector, maxInFlight },
});

const ref = (name: string) => ({ kind: 'ResourceBinding' as const, namespace: 'default', name });
const key = (name: string) => bindingKey(ref(name));

/** Bindings with a graceful-eviction task from m1 now: in flight. */
async function inFlight(m: MemoryPlane, names: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const name of names) {
    const tasks = (await m.bindings.get(key(name)))?.value.spec.gracefulEvictionTasks ?? [];
    if (tasks.some((t) => t.fromCluster === 'm1')) out.push(name);
  }
  return out;
}

async function fail(m: MemoryPlane, name = 'm1') {
  await applyTo(m, [cluster(name, true)]);
  await manageCluster(m.plane, name);
}

describe('FailoverBudget: the pacer never releases an eviction that would exceed a budget', () => {
  const web = Array.from({ length: 12 }, (_, i) => `web-${i}`);
  const db = ['db-0', 'db-1', 'db-2'];

  const cases: Array<{ name: string; maxInFlight: number | string; limit: number; start: (m: BudgetPlane) => Promise<unknown> }> = [
    { name: 'a cluster failure, maxInFlight 3', maxInFlight: 3, limit: 3, start: (m) => fail(m) },
    { name: 'a cluster failure, maxInFlight "25%" of 12', maxInFlight: '25%', limit: 3, start: (m) => fail(m) },
    { name: 'a drain, maxInFlight 2', maxInFlight: 2, limit: 2, start: (m) => drainCluster(m.plane, 'm1') },
  ];

  it.each(cases)('$name', async ({ maxInFlight, limit, start }) => {
    const m = budgetPlane();
    await applyTo(m, [
      cluster('m1'),
      cluster('m2'),
      cluster('m3'),
      ...web.map((n) => labelled(n, { app: 'web' })),
      ...db.map((n) => labelled(n, { app: 'db' })),
      budget('web', maxInFlight),
    ]);
    await start(m);
    const queued: EvictionMessage[] = [];
    let most = 0;
    const tick = async () => {
      await second(m, queued);
      most = Math.max(most, (await inFlight(m, web)).length);
    };
    for (let s = 0; s < 8; s++) await tick();

    // The budget is full; the other rows wait for it, out of the way: the db rows (no budget) all went.
    expect(await inFlight(m, web)).toHaveLength(limit);
    expect(await inFlight(m, db)).toHaveLength(3);
    const rows = await listEvictions(m.plane, { cluster: 'm1' });
    const waiting = rows.filter((r) => r.state === 'pending');
    expect(waiting).toHaveLength(12 - limit);
    for (const row of waiting) {
      expect(row).toMatchObject({
        stateReason: 'BudgetExceeded',
        waitingFor: 'default/web',
        message: `waiting for FailoverBudget default/web: ${limit} of ${limit} binding(s) in flight`,
      });
    }
    // One event per waiting row, when it started waiting: not one per tick.
    for (let s = 0; s < 5; s++) await tick();
    const budgetEvents = (await m.events.list({ kind: 'ResourceBinding', limit: 10_000 })).filter((e) => e.reason === 'BudgetExceeded');
    expect(budgetEvents).toHaveLength(12 - limit);
    expect((await getBudget(m.plane, { namespace: 'default', name: 'web' }))?.status).toMatchObject({ maxInFlight: limit, inFlight: limit });

    // Old copies removed (the task cleared): the next rows go, never more than the budget at a time.
    for (let round = 0; round < 40 && (await listEvictions(m.plane, { cluster: 'm1', state: 'done' })).length < 15; round++) {
      const [first] = await inFlight(m, web);
      if (first) await confirm(m, first);
      await tick();
      await tick();
    }
    expect((await listEvictions(m.plane, { cluster: 'm1', state: 'done' })).length).toBe(15);
    expect(most).toBe(limit);
    // The budget's record ends with what is still in flight, nothing more.
    expect((await getBudget(m.plane, { namespace: 'default', name: 'web' }))?.status.inFlight).toBeLessThanOrEqual(limit);
  });
});

/** Confirms the old copy on m1 is gone (DELETE .../evictiontasks/m1): the task ends. */
async function confirm(m: MemoryPlane, name: string) {
  await confirmOldCopyRemoved(m.plane, ref(name), 'm1');
}

describe('FailoverBudget: a Directly-purged eviction is in flight only until it is executed', () => {
  it('lets the next one go as soon as the worker has evicted it', async () => {
    const m = budgetPlane({ RESOURCE_EVICTION_RATE: '10' });
    const names = Array.from({ length: 6 }, (_, i) => `web-${i}`);
    await applyTo(m, [
      cluster('m1'),
      cluster('m2'),
      ...names.map((n) => labelled(n, { app: 'web' }, { failover: { cluster: { purgeMode: 'Directly', tolerationSeconds: 0 } } })),
      budget('web', 1),
    ]);
    await fail(m);
    const queued: EvictionMessage[] = [];
    const slots: number[] = [];
    for (let s = 0; s < 20; s++) slots.push(...(await second(m, queued)).map((r) => Date.parse(r.message.slot)));
    expect(slots).toHaveLength(6);
    // One at a time: each released only after the previous one was executed (a pacer tick later).
    for (let i = 1; i < slots.length; i++) expect(slots[i] - slots[i - 1]).toBeGreaterThanOrEqual(1000);
  });
});

describe('FailoverBudget: application failover obeys it', () => {
  it('holds the second failover while the first is in flight, then lets it go', async () => {
    const m = budgetPlane();
    const app = { failover: { application: { decisionConditions: { tolerationSeconds: 0 }, purgeMode: 'Graciously', gracePeriodSeconds: 600 } } };
    await applyTo(m, [cluster('m1'), cluster('m2'), labelled('a', { app: 'web' }, app), labelled('b', { app: 'web' }, app), budget('web', 1)]);
    const unhealthy = { aggregatedStatus: [{ clusterName: 'm1', health: 'Unhealthy' as const }] };
    expect((await reportBindingStatus(m.plane, ref('a'), unhealthy))?.evictedClusters).toEqual(['m1']);
    expect((await reportBindingStatus(m.plane, ref('b'), unhealthy))?.evictedClusters).toEqual([]);
    const held = (await m.events.list({ kind: 'ResourceBinding', name: 'default/b', limit: 100 })).filter((e) => e.reason === 'ApplicationFailoverHeld');
    expect(held).toHaveLength(1);
    expect(held[0].message).toContain('BudgetExceeded: FailoverBudget default/web has 1 of 1 binding(s) in flight');
    // Checked again while held: still held, no second event.
    m.clock.advance(5000);
    expect((await checkApplicationFailover(m.plane, key('b'))).evicted).toEqual([]);
    expect(
      (await m.events.list({ kind: 'ResourceBinding', name: 'default/b', limit: 100 })).filter((e) => e.reason === 'ApplicationFailoverHeld'),
    ).toHaveLength(1);

    await confirm(m, 'a');
    m.clock.advance(5000);
    expect((await checkApplicationFailover(m.plane, key('b'))).evicted).toEqual(['m1']);
  });
});

describe('FailoverBudget: bad input is refused with the field named, nothing stored', () => {
  const cases: Array<{ name: string; spec: Record<string, unknown>; errors: Array<{ path: string; message: string }> }> = [
    {
      name: 'a percentage over 100%',
      spec: { selector: {}, maxInFlight: '150%' },
      errors: [{ path: 'spec.maxInFlight', message: 'must not be more than 100% (got 150%)' }],
    },
    {
      name: 'zero',
      spec: { selector: {}, maxInFlight: 0 },
      errors: [{ path: 'spec.maxInFlight', message: 'must be at least 1 (got 0)' }],
    },
    {
      name: 'a selector operator that does not exist',
      spec: { selector: { matchExpressions: [{ key: 'app', operator: 'Equals', values: ['web'] }] }, maxInFlight: 1 },
      errors: [{ path: 'spec.selector.matchExpressions[0].operator', message: expect.stringContaining('In') }],
    },
    {
      name: 'In without values',
      spec: { selector: { matchExpressions: [{ key: 'app', operator: 'In' }] }, maxInFlight: 1 },
      errors: [{ path: 'spec.selector.matchExpressions[0].values', message: 'must not be empty when operator is In' }],
    },
    {
      name: 'no maxInFlight',
      spec: { selector: {} },
      errors: [{ path: 'spec.maxInFlight', message: 'required field is missing (expected a whole number or a percentage such as "10%")' }],
    },
  ];
  it.each(cases)('$name', async ({ spec, errors }) => {
    const m = budgetPlane();
    let error: ApiError | undefined;
    try {
      decodeApplyDocuments([{ ...budget('ok', 1) }, { ...budget('broken', 1), spec }]);
    } catch (e) {
      error = e as ApiError;
    }
    expect(error?.status).toBe(400);
    expect(error?.errors).toEqual(errors.map((e) => ({ ...e, document: 1 })));
    expect(await m.budgets.rules.list()).toEqual([]);
  });
});

describe('priority order', () => {
  it('the detector gives a derived binding the value of its policy PriorityClass, and its ledger row carries it', async () => {
    const m = budgetPlane();
    await applyTo(m, [
      cluster('m1'),
      cluster('m2'),
      { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'critical' }, value: 1_000_000 },
      {
        apiVersion: 'policy.karmada.io/v1alpha1',
        kind: 'PropagationPolicy',
        metadata: { name: 'api', namespace: 'default' },
        spec: {
          resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'api' }],
          schedulePriority: { priorityClassSource: 'KubePriorityClass', priorityClassName: 'critical' },
          placement: { clusterAffinity: { clusterNames: ['m1'] } },
        },
      },
      { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'api', namespace: 'default' }, spec: { replicas: 1 } },
    ]);
    const derived = (await m.bindings.get(key('api-deployment')))!.value;
    expect(derived.spec.schedulePriority).toEqual({ priority: 1_000_000 });

    // Changing the class's value derives the binding again.
    await applyTo(m, [{ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'critical' }, value: 2000 }]);
    expect((await m.bindings.get(key('api-deployment')))!.value.spec.schedulePriority).toEqual({ priority: 2000 });
  });

  it('releases due evictions by spec.schedulePriority.priority, then due time', async () => {
    const m = budgetPlane({ RESOURCE_EVICTION_RATE: '1' });
    const prio = (name: string, priority?: number) => labelled(name, {}, priority === undefined ? {} : { schedulePriority: { priority } });
    await applyTo(m, [cluster('m1'), cluster('m2'), prio('none-a'), prio('low', -5), prio('high', 1000), prio('none-b'), prio('mid', 10), prio('top', 5000)]);
    await fail(m);
    const rows = await listEvictions(m.plane, { cluster: 'm1' });
    expect(Object.fromEntries(rows.map((r) => [r.binding.name, r.priority]))).toEqual({ 'none-a': 0, low: -5, high: 1000, 'none-b': 0, mid: 10, top: 5000 });
    const queued: EvictionMessage[] = [];
    const order: string[] = [];
    for (let s = 0; s < 12; s++) order.push(...(await second(m, queued)).map((r) => r.message.record!.name));
    expect(order.slice(0, 3)).toEqual(['top', 'high', 'mid']);
    expect(order.slice(3, 5).sort()).toEqual(['none-a', 'none-b']);
    expect(order[5]).toBe('low');
  });
});

describe('FailoverBudget in Karmada mode: read from its custom resources', () => {
  /** The two reads the store makes, over a fixed set of objects (or a server without the CRD). */
  const fakeApi = (items: KubeObject[] | 'no-crd'): KubeApi => {
    const missing = () => new KubeApiError('list', 'failoverbudgets.failover.io', 404, 'NotFound', 'the server could not find the requested resource');
    return {
      get: (_resource, name, namespace) =>
        items === 'no-crd' ? Promise.reject(missing()) : Promise.resolve(items.find((o) => o.metadata.name === name && o.metadata.namespace === namespace)),
      list: () => (items === 'no-crd' ? Promise.reject(missing()) : Promise.resolve({ items, resourceVersion: '9' })),
      watch: () => Promise.reject(new Error('not used')),
      patch: () => Promise.reject(new Error('not used')),
      create: () => Promise.reject(new Error('not used')),
    };
  };
  const object = (name: string, spec: Record<string, unknown>): KubeObject => ({
    apiVersion: 'failover.io/v1alpha1',
    kind: 'FailoverBudget',
    metadata: { name, namespace: 'shop', resourceVersion: '7', uid: `uid-${name}` },
    spec,
  });

  it('validates each budget as our apply does, leaves out (and logs) one that does not, and has none without the CRD', async () => {
    const warnings: string[] = [];
    const log = { ...silentLogger, warn: (message: string, fields?: Record<string, unknown>) => warnings.push(`${message} ${JSON.stringify(fields)}`) };
    const store = new KarmadaBudgetStore(
      fakeApi([object('web', { selector: { matchLabels: { app: 'web' } }, maxInFlight: '10%' }), object('broken', { selector: {}, maxInFlight: '150%' })]),
      log,
    );
    const listed = await store.list();
    expect(listed.map((e) => ({ id: e.id, namespace: e.value.namespace, spec: e.value.spec }))).toEqual([
      { id: 'shop:web', namespace: 'shop', spec: { selector: { matchLabels: { app: 'web' } }, maxInFlight: '10%' } },
    ]);
    expect(warnings.join('\n')).toContain('spec.maxInFlight: must not be more than 100% (got 150%)');
    expect((await store.get('shop:web'))?.value.name).toBe('web');
    await expect(store.create()).rejects.toThrow('managed in Karmada');

    const bare = new KarmadaBudgetStore(fakeApi('no-crd'), silentLogger);
    expect(await bare.list()).toEqual([]);
    expect(await bare.get('shop:web')).toBeUndefined();
  });
});
