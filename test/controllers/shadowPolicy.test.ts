import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { afterEach, describe, expect, it } from 'vitest';
import { reportClusterStatus } from '../../shared/controllers/clusters';
import { evaluateCluster, resyncAllClusters } from '../../shared/controllers/taintEvaluation';
import { acknowledgeTaintPolicy, getTaintPolicy, refreshPolicyStatuses } from '../../shared/controllers/taintPolicies';
import { FailoverMetrics } from '../../shared/telemetry/metrics';
import { binding, cluster } from '../helpers/fleet';
import { loopSecond, LoopState } from '../helpers/memoryLoop';
import { applyTo } from '../helpers/memoryLoop';
import { MemoryPlane, memoryPlane } from '../helpers/memoryPlane';

/**
 * Shadow policies and the blast-radius guard on the controllers (memory plane, manual clock): a shadow
 * policy records what it would do, once per episode, and what it would evict is exactly what it evicts once
 * enforced; a policy stops at its share of the fleet even when every cluster fails at once, until an admin
 * acknowledges; the policy's conditions follow its evictions.
 */

let provider: MeterProvider | undefined;
afterEach(async () => provider?.shutdown());

function setup(settings: Record<string, string> = {}) {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
  provider = new MeterProvider({ readers: [reader] });
  const m = memoryPlane({ RESOURCE_EVICTION_RATE: '50', ...settings });
  m.plane.metrics = new FailoverMetrics(provider.getMeter('test'));
  const counters = async () => {
    await reader.forceFlush();
    const batches = exporter.getMetrics();
    const found: Record<string, number> = {};
    for (const scope of batches[batches.length - 1]?.scopeMetrics ?? [])
      for (const metric of scope.metrics) found[metric.descriptor.name] = metric.dataPoints.reduce((n, p) => n + Number(p.value), 0);
    return found;
  };
  return { m, counters };
}

const policy = (mode?: string, name = 'not-ready') => ({
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind: 'ClusterTaintPolicy',
  metadata: { name, ...(mode ? { annotations: { 'failover.io/mode': mode } } : {}) },
  spec: {
    matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False'] }],
    taintsToAdd: [{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', addOnMatchSeconds: 10, removeOnMismatchSeconds: 5 }],
  },
});

const apply = (m: MemoryPlane, objects: unknown[]) => applyTo(m, objects);
const report = (m: MemoryPlane, name: string, status: 'True' | 'False') => reportClusterStatus(m.plane, name, { conditions: [{ type: 'Ready', status }] });
const taints = async (m: MemoryPlane, name: string) => (await m.clusters.get(name))!.value.taints.map((t) => `${t.key}:${t.effect}`);
const policyEvents = async (m: MemoryPlane, reason: string, name = 'not-ready') =>
  (await m.events.list({ kind: 'ClusterTaintPolicy', name, limit: 10_000 })).filter((e) => e.reason === reason);

async function seconds(m: MemoryPlane, state: LoopState, n: number) {
  for (let i = 0; i < n; i++) await loopSecond(m, state);
}

const MEMBERS = ['member1', 'member2', 'member3', 'member4'];
const affinity = { clusterAffinity: { clusterNames: MEMBERS } };

/** Bindings on member1 that the taint manager treats differently, and one elsewhere. */
const workloads = () => [
  binding('untolerated', ['member1'], { placement: affinity }),
  binding('tolerated-forever', ['member1'], {
    placement: { ...affinity, clusterTolerations: [{ key: 'cluster.karmada.io/not-ready', operator: 'Exists', effect: 'NoExecute' }] },
  }),
  binding('tolerated-20s', ['member1'], {
    placement: { ...affinity, clusterTolerations: [{ key: 'cluster.karmada.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 20 }] },
  }),
  binding('with-failover', ['member1'], { placement: affinity, failover: { cluster: { purgeMode: 'Directly', tolerationSeconds: 5 } } }),
  binding('elsewhere', ['member2'], { placement: affinity }),
];

describe('shadow policies', () => {
  it('record WouldTaint and WouldEvict once per episode, write nothing, and would evict exactly what they evict once enforced', async () => {
    const { m, counters } = setup();
    await apply(m, [...MEMBERS.map((n) => cluster(n)), ...workloads(), policy('shadow')]);
    for (const name of MEMBERS) await report(m, name, 'True');
    const state: LoopState = { evictions: [], evaluations: [] };
    await seconds(m, state, 2);

    await report(m, 'member1', 'False');
    await seconds(m, state, 30);
    // Matched for 30 s, past its 10 s window: no taint, no ledger row, but the window is kept.
    expect(await taints(m, 'member1')).toEqual([]);
    expect(await m.ledger.listEvictions('member1')).toEqual([]);
    const window = (await m.clusters.get('member1'))!.value.policyWindows['not-ready'];
    expect(window).toMatchObject({ matched: true });
    const wouldTaint = await policyEvents(m, 'WouldTaint');
    expect(wouldTaint).toHaveLength(1);
    expect(wouldTaint[0].details).toMatchObject({ cluster: 'member1', taint: { key: 'cluster.karmada.io/not-ready', effect: 'NoExecute' }, evictions: 3 });
    // At the would-be deadline, not at the next resync.
    expect(Date.parse(wouldTaint[0].time) - Date.parse(window.since)).toBeLessThan(11_000);
    const wouldEvict = (await policyEvents(m, 'WouldEvict')).map((e) => (e.details as { bindingKey: string }).bindingKey).sort();
    expect(wouldEvict).toEqual(['rb:default:tolerated-20s', 'rb:default:untolerated', 'rb:default:with-failover']);
    expect((await m.events.list({ kind: 'Cluster', name: 'member1', limit: 1000 })).filter((e) => e.reason === 'WouldTaint')).toHaveLength(1);

    // Evaluations and resyncs within the episode record nothing again.
    await resyncAllClusters(m.plane);
    await evaluateCluster(m.plane, 'member1');
    expect(await policyEvents(m, 'WouldTaint')).toHaveLength(1);
    expect(await policyEvents(m, 'WouldEvict')).toHaveLength(3);
    expect(await counters()).toMatchObject({ cluster_failover_shadow_would_taint_total: 1, cluster_failover_shadow_would_evict_total: 3 });
    expect((await getTaintPolicy(m.plane, 'not-ready'))!.status).toMatchObject({ mode: 'shadow' });

    // Enforced (applied without the annotation): the window counts from the persisted match start, so the
    // taint lands at the next evaluation; then the taint manager plans and the worker evicts.
    await apply(m, [policy()]);
    await seconds(m, state, 1);
    expect(await taints(m, 'member1')).toEqual(['cluster.karmada.io/not-ready:NoExecute']);
    await seconds(m, state, 40);
    const rows = await m.ledger.listEvictions('member1');
    const evicted = rows
      .filter((r) => r.record.state === 'done')
      .map((r) => r.record.bindingKey)
      .sort();
    expect(evicted).toEqual(wouldEvict);
    expect(rows.map((r) => r.record.bindingKey).sort()).toEqual(wouldEvict);
    expect((await m.bindings.get('rb:default:tolerated-forever'))!.value.spec.clusters?.map((c) => c.name)).toEqual(['member1']);
    // Enforcing, it records findings no more.
    expect(await policyEvents(m, 'WouldTaint')).toHaveLength(1);
  });

  it('a new match episode records again', async () => {
    const { m } = setup();
    await apply(m, [...MEMBERS.map((n) => cluster(n)), policy('shadow')]);
    const state: LoopState = { evictions: [], evaluations: [] };
    for (const episode of [1, 2]) {
      await report(m, 'member2', 'False');
      await seconds(m, state, 12);
      expect(await policyEvents(m, 'WouldTaint')).toHaveLength(episode);
      await report(m, 'member2', 'True');
      await seconds(m, state, 2);
    }
    expect(await taints(m, 'member2')).toEqual([]);
  });
});

describe('the blast-radius guard', () => {
  const FLEET = Array.from({ length: 10 }, (_, i) => `c${i + 1}`);

  it('holds a policy at its share when the whole fleet fails at once, until an admin acknowledges; the acknowledgement expires under the share', async () => {
    const { m, counters } = setup();
    await apply(m, [...FLEET.map((n) => cluster(n)), policy()]);
    const state: LoopState = { evictions: [], evaluations: [] };
    // Every cluster reports Ready=False at the same moment; all ten deadlines fall due together and are
    // evaluated concurrently, as several hosts would.
    await Promise.all(FLEET.map((name) => report(m, name, 'False')));
    m.clock.advance(10_000);
    await Promise.all(FLEET.map((name) => evaluateCluster(m.plane, name)));
    const tainted = async () => (await Promise.all(FLEET.map(async (n) => ((await taints(m, n)).length > 0 ? n : undefined)))).filter(Boolean);
    // Exactly the share: 5 of 10 (holding on exactly maxShare × fleet is allowed).
    expect(await tainted()).toHaveLength(5);
    const refusedEvents = await policyEvents(m, 'PolicyBlastRadiusExceeded');
    expect(refusedEvents).toHaveLength(5);
    // Evaluating again refuses nothing new (one event per refused cluster) and writes no more taints.
    await resyncAllClusters(m.plane);
    expect(await tainted()).toHaveLength(5);
    expect(await policyEvents(m, 'PolicyBlastRadiusExceeded')).toHaveLength(5);
    expect(await counters()).toMatchObject({ cluster_failover_policy_blast_radius_exceeded_total: 5 });
    await refreshPolicyStatuses(m.plane);
    const exceeded = (await getTaintPolicy(m.plane, 'not-ready'))!.status;
    expect(exceeded.conditions.find((c) => c.type === 'BlastRadiusExceeded')).toMatchObject({ status: 'True', reason: 'PolicyBlastRadiusExceeded' });
    expect(exceeded.blastRadius).toMatchObject({ maxShare: 0.5, fleet: 10, limit: 5, held: 5, refused: expect.any(Array) });

    // Acknowledged: the refused clusters are evaluated again and tainted; BlastRadiusExceeded turns False.
    const answer = await acknowledgeTaintPolicy(m.plane, 'not-ready');
    expect(answer).toMatchObject({ acknowledged: true, changed: true });
    expect(answer!.reevaluated).toHaveLength(5);
    expect(await acknowledgeTaintPolicy(m.plane, 'not-ready')).toMatchObject({ acknowledged: true, changed: false });
    expect(await acknowledgeTaintPolicy(m.plane, 'no-such-policy')).toBeUndefined();
    await seconds(m, state, 1);
    expect(await tainted()).toHaveLength(10);
    expect((await getTaintPolicy(m.plane, 'not-ready'))!.status.conditions.find((c) => c.type === 'BlastRadiusExceeded')).toMatchObject({
      status: 'False',
      reason: 'Acknowledged',
    });

    // Six recover: the policy holds 4 < 5, the acknowledgement expires; a new crossing is held again.
    for (const name of FLEET.slice(0, 6)) await report(m, name, 'True');
    await seconds(m, state, 7);
    expect(await tainted()).toHaveLength(4);
    expect(await policyEvents(m, 'BlastRadiusAcknowledgementExpired')).toHaveLength(1);
    for (const name of FLEET.slice(0, 6)) await report(m, name, 'False');
    await seconds(m, state, 12);
    expect(await tainted()).toHaveLength(5);
    expect((await getTaintPolicy(m.plane, 'not-ready'))!.status.conditions.find((c) => c.type === 'BlastRadiusExceeded')).toMatchObject({ status: 'True' });
  });

  it('counts each policy on its own, and never applies to shadow policies', async () => {
    const { m } = setup();
    await apply(m, [
      ...FLEET.map((n) => cluster(n)),
      policy(undefined, 'a'),
      { ...policy(undefined, 'b'), spec: { ...policy().spec, taintsToAdd: [{ key: 'b', effect: 'PreferNoExecute', addOnMatchSeconds: 10 }] } },
      policy('shadow', 's'),
    ]);
    await Promise.all(FLEET.slice(0, 8).map((name) => report(m, name, 'False')));
    m.clock.advance(10_000);
    await Promise.all(FLEET.map((name) => evaluateCluster(m.plane, name)));
    const holders = await Promise.all(FLEET.map(async (n) => (await m.clusters.get(n))!.value.taints.flatMap((t) => t.owners)));
    expect(holders.filter((h) => h.includes('a'))).toHaveLength(5);
    expect(holders.filter((h) => h.includes('b'))).toHaveLength(5);
    expect(await policyEvents(m, 'WouldTaint', 's')).toHaveLength(8);
    expect(await policyEvents(m, 'PolicyBlastRadiusExceeded', 's')).toHaveLength(0);
  });

  it('a share of 1 never holds anything back', async () => {
    const { m } = setup({ MAX_FLEET_SHARE_TAINTED_BY_POLICY: '1' });
    await apply(m, [...FLEET.map((n) => cluster(n)), policy()]);
    await Promise.all(FLEET.map((name) => report(m, name, 'False')));
    m.clock.advance(10_000);
    await Promise.all(FLEET.map((name) => evaluateCluster(m.plane, name)));
    expect((await Promise.all(FLEET.map((n) => taints(m, n)))).every((t) => t.length === 1)).toBe(true);
    expect(await policyEvents(m, 'PolicyBlastRadiusExceeded')).toHaveLength(0);
  });
});

describe('policy status', () => {
  it('EvictionInProgress is True while its taints have pending or scheduled evictions, False after; lastTransitionTime moves only with the status', async () => {
    const { m } = setup({ RESOURCE_EVICTION_RATE: '2' });
    await apply(m, [...MEMBERS.map((n) => cluster(n)), ...workloads(), policy()]);
    const state: LoopState = { evictions: [], evaluations: [] };
    const condition = async () => {
      await refreshPolicyStatuses(m.plane);
      return (await getTaintPolicy(m.plane, 'not-ready'))!.status.conditions.find((c) => c.type === 'EvictionInProgress')!;
    };
    expect(await condition()).toMatchObject({ status: 'False', reason: 'NoTaintsHeld' });
    // A policy that never held a faulty taint costs the status round nothing: no state is written for it.
    expect(await m.policyStates.get('not-ready')).toBeUndefined();
    const writes = async () => (await m.policyStates.get('not-ready'))!.etag;

    await report(m, 'member1', 'False');
    await seconds(m, state, 11);
    const busy = await condition();
    expect(busy).toMatchObject({
      status: 'True',
      reason: 'EvictionsPending',
      message: expect.stringMatching(/^\d+ pending, \d+ scheduled eviction\(s\) on 1 cluster/),
    });
    await seconds(m, state, 2);
    expect((await condition()).lastTransitionTime).toBe(busy.lastTransitionTime);
    await seconds(m, state, 30);
    const done = await condition();
    expect(done).toMatchObject({ status: 'False', reason: 'NoPendingEvictions' });
    expect(done.lastTransitionTime).not.toBe(busy.lastTransitionTime);
    const settled = await writes();
    await refreshPolicyStatuses(m.plane);
    expect(await writes()).toBe(settled);
  });
});
