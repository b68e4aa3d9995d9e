import { describe, expect, it, vi } from 'vitest';
import { decodeApplyDocuments } from '../../shared/api/decode';
import { applyObjects } from '../../shared/controllers/apply';
import { bindingsNeeding } from '../../shared/controllers/state/reads';
import { bindingFlags, BindingRecord } from '../../shared/store/records';
import { binding, cluster } from '../helpers/fleet';
import { memoryPlane } from '../helpers/memoryPlane';

/** The resync timers find their bindings by flag, not by listing every binding (but for a periodic full scan). */
const base = (): BindingRecord => ({
  kind: 'ResourceBinding',
  namespace: 'default',
  name: 'b',
  uid: 'u',
  createdAt: '2026-01-01T00:00:00.000Z',
  generation: 2,
  rev: 1,
  labels: {},
  annotations: {},
  spec: { resource: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'b' }, clusters: [{ name: 'a', replicas: 1 }] },
  status: { schedulerObservedGeneration: 2 },
});

const FLAGS: Array<[string, (r: BindingRecord) => void, Record<string, boolean>]> = [
  ['placed, nothing pending', () => undefined, { needsSweep: false, needsScheduling: false, watchesApplication: false }],
  [
    'a graceful-eviction task',
    (r) => (r.spec.gracefulEvictionTasks = [{ fromCluster: 'x', reason: 'TaintUntolerated', producer: 'TaintManager' }]),
    { needsSweep: true },
  ],
  ['scheduled generation behind', (r) => (r.generation = 3), { needsScheduling: true }],
  [
    'a running Unhealthy stretch with application failover',
    (r) => {
      r.spec.failover = { application: { decisionConditions: { tolerationSeconds: 10 }, purgeMode: 'Gracefully', gracePeriodSeconds: 600 } } as never;
      r.status.aggregatedStatus = [{ clusterName: 'a', health: 'Unhealthy', unhealthySince: '2026-01-01T00:00:00.000Z' }];
    },
    { watchesApplication: true },
  ],
  [
    'an Unhealthy stretch without application failover',
    (r) => (r.status.aggregatedStatus = [{ clusterName: 'a', health: 'Unhealthy', unhealthySince: '2026-01-01T00:00:00.000Z' }]),
    { watchesApplication: false },
  ],
  [
    'eviction history to prune',
    (r) => (r.spec.activeEvictionHistory = [{ clusterName: 'x', creationTimestamp: '2026-01-01T00:00:00.000Z' }]),
    { watchesApplication: true },
  ],
];

describe('binding flags', () => {
  it.each(FLAGS)('%s', (_name, change, expected) => {
    const record = base();
    change(record);
    expect(bindingFlags(record)).toMatchObject(expected);
  });

  it('a timer lists every binding on its first run and then once an hour, and otherwise asks for the flagged ones only', async () => {
    const m = memoryPlane();
    await applyObjects(m.plane, decodeApplyDocuments([cluster('a'), ...Array.from({ length: 5 }, (_, i) => binding(`w${i}`, ['a']))]));
    const list = vi.spyOn(m.plane.bindings, 'list');
    const flagged = vi.spyOn(m.plane.bindings, 'listFlagged');
    await bindingsNeeding(m.plane, 'needsSweep');
    expect(list).toHaveBeenCalledTimes(1);
    list.mockClear();
    // A timer every 10 s for most of an hour: flagged queries only.
    for (let run = 2; run <= 359; run++) {
      m.clock.advance(10_000);
      await bindingsNeeding(m.plane, 'needsSweep');
    }
    expect(flagged).toHaveBeenCalledTimes(358);
    // listFlagged of the memory adapter lists internally; the timer itself made no full listing.
    expect(list.mock.calls.length).toBe(flagged.mock.calls.length);
    // An hour after the first: a full listing again.
    m.clock.advance(20_000);
    await bindingsNeeding(m.plane, 'needsSweep');
    expect(flagged).toHaveBeenCalledTimes(358);
    expect(list.mock.calls.length).toBe(359);
  });
});
