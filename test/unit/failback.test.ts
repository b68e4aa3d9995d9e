import { describe, expect, it } from 'vitest';
import {
  decideFailback,
  FAILBACK_UNPLACED_GRACE_MS,
  failbackClusters,
  FailbackEntry,
  FailbackInput,
  failbackWindow,
  failbackWindowProblem,
  HomeFacts,
  isClusterHealthy,
  nextHealthySince,
  recordFailoverEviction,
  replacementOf,
} from '../../shared/failover/failback';
import type { KubeObject } from '../../shared/kube/api';
import { bindingPatch, toBindingRecord } from '../../shared/store/karmada/bindingStore';
import { toRecord } from '../../shared/store/karmada/clusterStore';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000);
const iso = (seconds: number) => at(seconds).toISOString();

describe('the failback annotation', () => {
  it.each([
    ['0', undefined],
    ['600', undefined],
    ['2592000', undefined],
    ['2592001', 'must be at most 2592000 (30 days), got "2592001"'],
    ['', 'must be a whole number of seconds such as "600", got ""'],
    ['abc', 'must be a whole number of seconds such as "600", got "abc"'],
    ['10s', 'must be a whole number of seconds such as "600", got "10s"'],
    ['-5', 'must be a whole number of seconds such as "600", got "-5"'],
    ['1.5', 'must be a whole number of seconds such as "600", got "1.5"'],
    [' 60', 'must be a whole number of seconds such as "600", got " 60"'],
    ['99999999999', 'must be a whole number of seconds such as "600", got "99999999999"'],
  ])('%j → %s', (value, problem) => {
    expect(failbackWindowProblem(value)).toBe(problem);
    expect(failbackWindow({ 'failover.io/failback-after-seconds': value })).toBe(problem ? undefined : Number(value));
  });

  it('is absent without the annotation', () => {
    expect(failbackWindow({})).toBeUndefined();
    expect(failbackWindow(undefined)).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------------------------
// The count: healthySince over a run of cluster writes, with flaps

type Observation = { t: number; ready?: 'True' | 'False' | 'Unknown'; taint?: 'NoExecute' | 'PreferNoExecute' | 'NoSchedule' };
const facts = (o: Observation) => ({
  conditions: o.ready ? [{ type: 'Ready', status: o.ready }] : [],
  taints: o.taint ? [{ key: 'k', effect: o.taint }] : [],
});

/** healthySince after each write, as the cluster writes keep it. */
function replay(observations: Observation[]): Array<string | undefined> {
  let previous: (ReturnType<typeof facts> & { healthySince?: string }) | undefined;
  return observations.map((o) => {
    const next = facts(o);
    const healthySince = nextHealthySince(previous, next, at(o.t));
    previous = { ...next, ...(healthySince ? { healthySince } : {}) };
    return healthySince;
  });
}

describe('the healthy run (healthySince)', () => {
  it.each<[string, Observation[], Array<number | undefined>]>([
    ['healthy from the first write', [{ t: 0, ready: 'True' }], [0]],
    [
      'kept while healthy',
      [
        { t: 0, ready: 'True' },
        { t: 10, ready: 'True' },
        { t: 20, ready: 'True', taint: 'NoSchedule' },
      ],
      [0, 0, 0],
    ],
    ['not Ready: none', [{ t: 0, ready: 'False' }, { t: 5, ready: 'Unknown' }, { t: 9 }], [undefined, undefined, undefined]],
    [
      'recovers: from the write that saw it',
      [
        { t: 0, ready: 'False' },
        { t: 30, ready: 'True' },
        { t: 40, ready: 'True' },
      ],
      [undefined, 30, 30],
    ],
    [
      'a Ready flap restarts the count',
      [
        { t: 0, ready: 'True' },
        { t: 50, ready: 'False' },
        { t: 51, ready: 'True' },
        { t: 80, ready: 'True' },
      ],
      [0, undefined, 51, 51],
    ],
    [
      'a faulty taint ends the run',
      [
        { t: 0, ready: 'True' },
        { t: 10, ready: 'True', taint: 'NoExecute' },
        { t: 20, ready: 'True' },
      ],
      [0, undefined, 20],
    ],
    [
      'PreferNoExecute counts as faulty',
      [
        { t: 0, ready: 'True', taint: 'PreferNoExecute' },
        { t: 7, ready: 'True' },
      ],
      [undefined, 7],
    ],
    [
      'a taint still there when Ready returns: the run starts when the taint goes',
      [
        { t: 0, ready: 'False', taint: 'NoExecute' },
        { t: 5, ready: 'True', taint: 'NoExecute' },
        { t: 185, ready: 'True' },
      ],
      [undefined, undefined, 185],
    ],
  ])('%s', (_name, observations, expected) => {
    expect(replay(observations)).toEqual(expected.map((t) => (t === undefined ? undefined : iso(t))));
  });

  it('a healthy cluster stored before the count existed gets one at its next write', () => {
    expect(nextHealthySince({ ...facts({ t: 0, ready: 'True' }) }, facts({ t: 3, ready: 'True' }), at(3))).toBe(iso(3));
  });

  it('healthy means Ready=True and no NoExecute or PreferNoExecute taint', () => {
    expect(isClusterHealthy(facts({ t: 0, ready: 'True', taint: 'NoSchedule' }))).toBe(true);
    expect(isClusterHealthy(facts({ t: 0, ready: 'True', taint: 'NoExecute' }))).toBe(false);
    expect(isClusterHealthy(facts({ t: 0 }))).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------
// The window with flaps: when the binding is due, on the count the cluster writes keep

const home = (healthySince: string | undefined, overrides: Partial<HomeFacts> = {}): HomeFacts => ({
  name: 'home',
  labels: {},
  taints: [],
  conditions: [{ type: 'Ready', status: healthySince ? 'True' : 'False' }],
  ...(healthySince ? { healthySince } : {}),
  ...overrides,
});
const entry: FailbackEntry = { home: 'home', replacedBy: ['other'], evictedAt: iso(-600) };
const base = (overrides: Partial<FailbackInput> = {}): FailbackInput => ({
  entry,
  windowSeconds: 60,
  home: home(iso(0)),
  binding: { placement: { clusterAffinity: { clusterNames: ['home', 'other', 'third'] } }, clusters: [{ name: 'other', replicas: 2 }] },
  now: at(10),
  ...overrides,
});

describe('the failback window, with flaps', () => {
  /** Replays the home's writes, then asks at `now`: due at (seconds), or wait. */
  it.each<[string, Observation[], number, number | 'wait']>([
    [
      'healthy for the whole window: due at recovery + n',
      [
        { t: 0, ready: 'False' },
        { t: 100, ready: 'True' },
      ],
      130,
      160,
    ],
    ['asked after the due time: still the same due time', [{ t: 100, ready: 'True' }], 400, 160],
    [
      'a flap at 150 restarts the count: due 60 s after it ends',
      [
        { t: 100, ready: 'True' },
        { t: 150, ready: 'False' },
        { t: 152, ready: 'True' },
      ],
      155,
      212,
    ],
    [
      'two flaps: the last run counts',
      [
        { t: 100, ready: 'True' },
        { t: 120, ready: 'Unknown' },
        { t: 125, ready: 'True' },
        { t: 170, taint: 'NoExecute', ready: 'True' },
        { t: 171, ready: 'True' },
      ],
      200,
      231,
    ],
    [
      'in the middle of a flap: wait',
      [
        { t: 100, ready: 'True' },
        { t: 150, ready: 'False' },
      ],
      155,
      'wait',
    ],
    [
      'tainted again: wait',
      [
        { t: 100, ready: 'True' },
        { t: 130, ready: 'True', taint: 'PreferNoExecute' },
      ],
      200,
      'wait',
    ],
    [
      'a NoSchedule taint is no flap (but it must be tolerated to go home)',
      [
        { t: 100, ready: 'True' },
        { t: 130, ready: 'True' },
      ],
      170,
      160,
    ],
  ])('%s', (_name, observations, now, expected) => {
    const since = replay(observations).pop();
    const last = observations[observations.length - 1];
    const verdict = decideFailback(
      base({
        home: home(since, { conditions: facts(last).conditions, taints: facts(last).taints.map((t) => ({ ...t })) }),
        now: at(now),
      }),
    );
    if (expected === 'wait') expect(verdict).toMatchObject({ wait: expect.any(String) });
    else expect(verdict).toMatchObject({ due: at(expected), replacement: ['other'] });
  });
});

describe('decideFailback', () => {
  it.each<[string, Partial<FailbackInput>, ReturnType<typeof decideFailback> | Record<string, unknown>]>([
    ['due: healthySince + window', {}, { due: at(60), healthySince: iso(0), replacement: ['other'] }],
    ['window 0: due when the run begins', { windowSeconds: 0 }, { due: at(0) }],
    ['the annotation is gone: dropped', { windowSeconds: undefined }, { drop: expect.stringContaining('no longer asks for failback') }],
    [
      'purgeMode Never (application failover): never',
      { binding: { ...base().binding, failover: { application: { purgeMode: 'Never' } } } },
      { drop: expect.stringContaining('purgeMode Never') },
    ],
    [
      'purgeMode Never as Karmada may write it on failover.cluster',
      { binding: { ...base().binding, failover: { cluster: { purgeMode: 'Never' } } } },
      { drop: expect.stringContaining('Never') },
    ],
    [
      'runs on its home again: dropped',
      { binding: { ...base().binding, clusters: [{ name: 'home' }, { name: 'other' }] } },
      { drop: 'it runs on its home home again' },
    ],
    [
      'its replacement is gone: dropped',
      { binding: { ...base().binding, clusters: [{ name: 'third' }] } },
      { drop: expect.stringContaining('no longer runs on other') },
    ],
    ['the home was deleted: dropped', { home: undefined }, { drop: 'its home cluster home was deleted' }],
    [
      'the affinity no longer takes the home: dropped',
      { binding: { ...base().binding, placement: { clusterAffinity: { clusterNames: ['other'] } } } },
      { drop: expect.stringContaining('does not match the cluster affinity') },
    ],
    [
      'Divided with no weight for the home: dropped',
      {
        binding: {
          ...base().binding,
          placement: {
            replicaScheduling: {
              replicaSchedulingType: 'Divided',
              weightPreference: { staticWeightList: [{ targetCluster: { clusterNames: ['other'] }, weight: 1 }] },
            },
          },
        },
      },
      { drop: expect.stringContaining('no weight') },
    ],
    ['the home not Ready: wait', { home: home(undefined) }, { wait: expect.stringContaining('not Ready'), code: 'home-not-ready' }],
    [
      'the home tainted NoExecute: wait',
      { home: home(undefined, { conditions: [{ type: 'Ready', status: 'True' }], taints: [{ key: 'down', effect: 'NoExecute' }] }) },
      { wait: expect.stringContaining('down:NoExecute'), code: 'home-tainted' },
    ],
    [
      'the home cordoned (NoSchedule, untolerated): wait',
      { home: home(iso(0), { taints: [{ key: 'cluster.karmada.io/unschedulable', effect: 'NoSchedule' }] }) },
      { wait: expect.stringContaining('untolerated taint cluster.karmada.io/unschedulable:NoSchedule'), code: 'not-admitted' },
    ],
    [
      'a tolerated NoSchedule taint: due',
      {
        home: home(iso(0), { taints: [{ key: 'maintenance', effect: 'NoSchedule' }] }),
        binding: { ...base().binding, placement: { clusterTolerations: [{ key: 'maintenance', operator: 'Exists' }] } },
      },
      { due: at(60) },
    ],
    [
      'blocked by application failover’s eviction history: wait',
      { binding: { ...base().binding, activeEvictionHistory: [{ clusterName: 'home', creationTimestamp: iso(-10) }] } },
      { wait: expect.stringContaining('blocked by the eviction history'), code: 'not-admitted' },
    ],
    [
      'its own old graceful-eviction task does not hold it back',
      { binding: { ...base().binding, gracefulEvictionTasks: [{ fromCluster: 'home', reason: 'TaintUntolerated', producer: 'TaintManager' }] } },
      { due: at(60) },
    ],
    [
      'below the spread constraint’s minGroups after going home: wait',
      {
        entry: { ...entry, replacedBy: ['other', 'third'] },
        binding: { clusters: [{ name: 'other' }, { name: 'third' }], placement: { spreadConstraints: [{ minGroups: 2 }] } },
      },
      { wait: expect.stringContaining('minGroups 2'), code: 'not-admitted' },
    ],
    [
      'replacement not known yet (Karmada places later): wait, then what it gained',
      { entry: { home: 'home', kept: ['b'], evictedAt: iso(-10) }, binding: { clusters: [{ name: 'b' }] } },
      { wait: expect.stringContaining('not placed on another cluster yet'), code: 'not-placed' },
    ],
    [
      'replacement never known: dropped after the grace',
      { entry: { home: 'home', kept: ['b'], evictedAt: iso(-FAILBACK_UNPLACED_GRACE_MS / 1000 - 1) }, binding: { clusters: [{ name: 'b' }] } },
      { drop: expect.stringContaining('no other cluster took the place') },
    ],
    [
      'replacement resolved from what it kept',
      { entry: { home: 'home', kept: ['b'], evictedAt: iso(-10) }, binding: { clusters: [{ name: 'b' }, { name: 'c' }] } },
      { due: at(60), replacement: ['c'] },
    ],
  ])('%s', (_name, overrides, expected) => {
    expect(decideFailback(base(overrides))).toMatchObject(expected);
  });
});

describe('recordFailoverEviction', () => {
  const now = at(0);
  it.each<[string, Parameters<typeof recordFailoverEviction>[0], Parameters<typeof recordFailoverEviction>[1], ReturnType<typeof recordFailoverEviction>]>([
    [
      'opted in, placed in the same write: the home and what it gained',
      undefined,
      { evicted: 'a', kept: ['b'], gained: ['c'], windowSeconds: 60, now },
      { a: { home: 'a', replacedBy: ['c'], evictedAt: iso(0), windowSeconds: 60 } },
    ],
    [
      'placed later (Karmada mode): what it kept',
      undefined,
      { evicted: 'a', kept: ['b'], windowSeconds: 60, now },
      { a: { home: 'a', kept: ['b'], evictedAt: iso(0), windowSeconds: 60 } },
    ],
    ['not opted in: nothing', undefined, { evicted: 'a', kept: [], gained: ['c'], now }, undefined],
    [
      'the clusters it kept took the replicas (Divided): nothing stands in for the home',
      undefined,
      { evicted: 'a', kept: ['b'], gained: [], windowSeconds: 60, now },
      undefined,
    ],
    [
      'the replacement fails in turn and the clusters kept take its replicas: no failback left',
      { a: { home: 'a', replacedBy: ['c'], evictedAt: iso(-100) } },
      { evicted: 'c', kept: ['b'], gained: [], now },
      undefined,
    ],
    [
      'the replacement fails in turn: the home stays, its replacement follows',
      { a: { home: 'a', replacedBy: ['c'], evictedAt: iso(-100) } },
      { evicted: 'c', kept: [], gained: ['d'], windowSeconds: 60, now },
      { a: { home: 'a', replacedBy: ['d'], evictedAt: iso(-100) } },
    ],
    [
      'the replacement fails in turn, placed later: resolved from what is kept',
      { a: { home: 'a', replacedBy: ['c'], evictedAt: iso(-100) } },
      { evicted: 'c', kept: ['b'], now },
      { a: { home: 'a', kept: ['b'], evictedAt: iso(-100) } },
    ],
    [
      'another cluster of the binding fails: a second home',
      { a: { home: 'a', replacedBy: ['c'], evictedAt: iso(-100) } },
      { evicted: 'b', kept: ['c'], gained: ['d'], windowSeconds: 30, now },
      { a: { home: 'a', replacedBy: ['c'], evictedAt: iso(-100) }, b: { home: 'b', replacedBy: ['d'], evictedAt: iso(0), windowSeconds: 30 } },
    ],
    [
      'evicted from its home again: a new entry replaces a done one',
      { a: { home: 'a', evictedAt: iso(-100), doneAt: iso(-50), from: ['c'] } },
      { evicted: 'a', kept: [], gained: ['c'], windowSeconds: 60, now },
      { a: { home: 'a', replacedBy: ['c'], evictedAt: iso(0), windowSeconds: 60 } },
    ],
  ])('%s', (_name, entries, eviction, expected) => {
    expect(recordFailoverEviction(entries, eviction)).toEqual(expected);
  });
});

describe('replacementOf and failbackClusters', () => {
  it('resolves the replacement', () => {
    expect(replacementOf({ home: 'a', replacedBy: ['c', 'd'], evictedAt: iso(0) }, ['b', 'd'])).toEqual(['d']);
    expect(replacementOf({ home: 'a', kept: ['b'], evictedAt: iso(0) }, ['b', 'c', 'x'], ['x'])).toEqual(['c']);
  });

  it.each<[string, Parameters<typeof failbackClusters>[0], string[], Array<{ name: string; replicas?: number }>]>([
    ['Duplicated: the home takes the whole workload', { replicas: 3, clusters: [{ name: 'c', replicas: 3 }] }, ['c'], [{ name: 'a', replicas: 3 }]],
    [
      'Divided: the home takes what its replacements had',
      {
        replicas: 6,
        placement: { replicaScheduling: { replicaSchedulingType: 'Divided' } },
        clusters: [
          { name: 'b', replicas: 2 },
          { name: 'c', replicas: 2 },
          { name: 'd', replicas: 2 },
        ],
      },
      ['c', 'd'],
      [
        { name: 'b', replicas: 2 },
        { name: 'a', replicas: 4 },
      ],
    ],
  ])('%s', (_name, spec, replacement, expected) => {
    expect(failbackClusters(spec, 'a', replacement)).toEqual(expected);
  });
});

describe('Karmada mode: the entries and the count live in annotations and the overlay, not in Karmada fields', () => {
  const object: KubeObject = {
    apiVersion: 'work.karmada.io/v1alpha2',
    kind: 'ResourceBinding',
    metadata: { name: 'web', namespace: 'default', resourceVersion: '7', generation: 3 },
    spec: { resource: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }, clusters: [{ name: 'b', replicas: 2 }] },
  };
  const entries = { a: { home: 'a', kept: ['b'], evictedAt: iso(0), windowSeconds: 60 } };

  it('a binding’s entries are one annotation, written in the same merge patch and read back', () => {
    const record = toBindingRecord(object, 'ResourceBinding');
    expect(record.failback).toBeUndefined();
    const patch = bindingPatch(object, { ...record, failback: entries });
    expect(patch).toEqual({ metadata: { resourceVersion: '7', annotations: { 'failover.io/failback': JSON.stringify(entries) } } });
    const written = { ...object, metadata: { ...object.metadata, annotations: { 'failover.io/failback': JSON.stringify(entries) } } };
    const read = toBindingRecord(written, 'ResourceBinding');
    expect(read.failback).toEqual(entries);
    // Not shown as the binding's own annotations; removed (null) when the last entry goes.
    expect(read.annotations).toEqual({});
    expect(bindingPatch(written, { ...read, failback: undefined })).toEqual({
      metadata: { resourceVersion: '7', annotations: { 'failover.io/failback': null } },
    });
  });

  it('a cluster’s healthySince is kept in the overlay row', () => {
    const cluster: KubeObject = { apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name: 'a', resourceVersion: '1' }, spec: {} };
    expect(toRecord(cluster, { policyWindows: {}, healthySince: iso(5) }).healthySince).toBe(iso(5));
    expect(toRecord(cluster, { policyWindows: {} }).healthySince).toBeUndefined();
  });
});
