import { describe, expect, it } from 'vitest';
import { reportBindingStatus } from '../../shared/controllers/bindingStatus';
import { reportClusterStatus } from '../../shared/controllers/clusters';
import { executeEviction, repairInFlight } from '../../shared/controllers/evictionWorker';
import { listFailback, resyncFailback } from '../../shared/controllers/failback';
import { runPacer, setPaused } from '../../shared/controllers/pacer';
import type { EvictionMessage } from '../../shared/controllers/ports';
import { resyncTaintManager } from '../../shared/controllers/taintManager';
import { explainBinding } from '../../shared/controllers/why';
import type { EvictionRecord } from '../../shared/failover/bindingModel';
import type { BindingRecord } from '../../shared/store/records';
import { binding, cluster } from '../helpers/fleet';
import { applyTo, loopSecond, LoopState } from '../helpers/memoryLoop';
import { MemoryPlane, memoryPlane, takeEvictions } from '../helpers/memoryPlane';

/**
 * Failback on the in-memory ports, through the whole loop (cluster writes, taint manager, pacer, worker):
 * a failure moves the bindings off their home, a recovery starts the count, and they go back once the
 * home has been healthy for the window, paced, with the copy elsewhere removed gracefully.
 */

const HOME = 'c-home';
const ALT = 'a-alt';
const THIRD = 'b-third';
const WINDOW = 60;

const policy = (window: string | undefined, clusters = [HOME, ALT]) => ({
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind: 'PropagationPolicy',
  metadata: { name: 'fb', namespace: 'default', ...(window !== undefined ? { annotations: { 'failover.io/failback-after-seconds': window } } : {}) },
  spec: {
    resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment', labelSelector: { matchLabels: { app: 'fb' } } }],
    placement: { clusterAffinity: { clusterNames: clusters }, spreadConstraints: [{ spreadByField: 'cluster', maxGroups: 1, minGroups: 1 }] },
  },
});
const workload = (name: string, spec: Record<string, unknown> = {}) => {
  const b = binding(name, [HOME], spec);
  return { ...b, metadata: { ...b.metadata, labels: { app: 'fb' } } };
};
const key = (name: string) => `rb:default:${name}`;
const stored = async (m: MemoryPlane, name: string): Promise<BindingRecord> => (await m.bindings.get(key(name)))!.value;
const placed = async (m: MemoryPlane, name: string) => (await stored(m, name)).spec.clusters?.map((c) => c.name);
const ready = (m: MemoryPlane, name: string, status: 'True' | 'False') => reportClusterStatus(m.plane, name, { conditions: [{ type: 'Ready', status }] });
const failbackRows = async (m: MemoryPlane, cluster: string) =>
  (await m.ledger.scanEvictions({ cluster })).map((r) => r.record).filter((r) => r.reason === 'Failback');
const events = async (m: MemoryPlane, name: string, reason: string) =>
  (await m.events.list({ kind: 'ResourceBinding', name: `default/${name}`, limit: 500 })).filter((e) => e.reason === reason);

async function fleet(names: string[], settings: Record<string, string> = {}, extra: unknown[] = [], spec: Record<string, unknown> = {}) {
  const m = memoryPlane({ RESOURCE_EVICTION_RATE: '2', ...settings });
  await applyTo(m, [cluster(HOME), cluster(ALT), cluster(THIRD), policy(String(WINDOW), [HOME, ALT, THIRD]), ...extra, ...names.map((n) => workload(n, spec))]);
  for (const name of [HOME, ALT, THIRD]) await ready(m, name, 'True');
  const state: LoopState = { evictions: [], evaluations: [] };
  return { m, state };
}

async function run(m: MemoryPlane, state: LoopState, seconds: number) {
  const ran = [];
  for (let i = 0; i < seconds; i++) ran.push(...(await loopSecond(m, state)));
  return ran;
}

/** Fails the home (a NoExecute taint held by hand) and runs until every binding left it. */
async function failHome(m: MemoryPlane, state: LoopState, names: string[]) {
  await applyTo(m, [cluster(HOME, true)]);
  const ran = await run(m, state, 2 + names.length);
  expect(ran.filter((r) => r.outcome === 'evicted')).toHaveLength(names.length);
}

/** The home recovers (the taint goes; Ready stayed True): its healthy run starts now. */
async function recoverHome(m: MemoryPlane) {
  await applyTo(m, [cluster(HOME)]);
  return (await m.clusters.get(HOME))!.value.healthySince!;
}

describe('failback', () => {
  it('a failure, a recovery, then failback once the window passes: paced, home first, the other copy removed gracefully', async () => {
    const names = ['w0', 'w1', 'w2', 'w3'];
    const { m, state } = await fleet(names);
    // Two clusters only: the evicted workloads have one place to go (placement spreads over more).
    await applyTo(m, [policy(String(WINDOW), [HOME, ALT])]);
    await failHome(m, state, names);
    for (const name of names) {
      expect(await placed(m, name)).toEqual([ALT]);
      expect((await stored(m, name)).failback).toEqual({ [HOME]: { home: HOME, replacedBy: [ALT], evictedAt: expect.any(String), windowSeconds: WINDOW } });
    }
    expect((await listFailback(m.plane)).bindings.map((b) => b.state)).toEqual(Array<string>(4).fill('waiting-for-home'));

    const healthySince = await recoverHome(m);
    expect(healthySince).toBe(m.clock.now().toISOString());
    const due = Date.parse(healthySince) + WINDOW * 1000;
    await run(m, state, 1);
    // Planned at once, due at the end of the window: one row per binding under the cluster it will leave.
    const planned = await failbackRows(m, ALT);
    expect(planned.map((r) => [r.state, r.dueAt, r.home, r.purgeMode])).toEqual(Array(4).fill(['pending', new Date(due).toISOString(), HOME, 'Gracefully']));
    const listed = (await listFailback(m.plane)).bindings;
    expect(listed[0]).toEqual({
      binding: { kind: 'ResourceBinding', namespace: 'default', name: 'w0' },
      home: HOME,
      replacedBy: [ALT],
      windowSeconds: WINDOW,
      healthySince,
      dueAt: new Date(due).toISOString(),
      state: 'counting',
      why: expect.stringContaining('goes back at'),
      evictedAt: expect.any(String),
      row: expect.objectContaining({ reason: 'Failback', home: HOME, state: 'pending' }),
    });
    // The taint manager's resync leaves a failback on a healthy cluster alone (it is no recovery to abandon).
    await resyncTaintManager(m.plane);
    expect((await failbackRows(m, ALT)).map((r) => r.state)).toEqual(Array<string>(4).fill('pending'));

    const ran = await run(m, state, WINDOW + 4);
    const back = ran.filter((r) => r.outcome === 'failed-back');
    expect(back).toHaveLength(4);
    const done = await failbackRows(m, ALT);
    const starts = done.map((r) => Date.parse(r.executedAt!) - due).sort((a, b) => a - b);
    // Never before the window; the first at its end; the rest 1/rate apart (2/s).
    expect(starts[0]).toBeGreaterThanOrEqual(0);
    expect(starts[0]).toBeLessThanOrEqual(1000);
    expect(starts.map((s) => s - starts[0])).toEqual([0, 500, 1000, 1500]);

    for (const name of names) {
      const b = await stored(m, name);
      expect(b.spec.clusters).toEqual([{ name: HOME, replicas: 2 }]);
      expect(b.spec.gracefulEvictionTasks).toEqual([
        expect.objectContaining({ fromCluster: ALT, reason: 'Failback', producer: 'Failback', purgeMode: 'Gracefully', replicas: 2 }),
      ]);
      // Not re-run through the scheduler: the home is the placement.
      expect(b.status.schedulerObservedGeneration).toBe(b.generation);
      expect(b.failback?.[HOME]).toMatchObject({ doneAt: expect.any(String), from: [ALT], healthySince, windowSeconds: WINDOW });
      const [event] = await events(m, name, 'FailedBack');
      expect(event.details).toMatchObject({ home: HOME, from: [ALT], windowSeconds: WINDOW, healthySince });
    }
    expect((await listFailback(m.plane)).bindings.map((b) => b.state)).toEqual(Array<string>(4).fill('done'));
    const why = await explainBinding(m.plane, { kind: 'ResourceBinding', namespace: 'default', name: 'w0' });
    expect(why!.explanation.join('\n')).toContain(`its home is ${HOME}`);
    expect(why!.explanation.join('\n')).toContain(`failback to ${HOME}`);

    // The copy on the replacement goes once the copy back home is healthy.
    const report = await reportBindingStatus(
      m.plane,
      { kind: 'ResourceBinding', namespace: 'default', name: 'w0' },
      { aggregatedStatus: [{ clusterName: HOME, health: 'Healthy' }] },
    );
    expect(report!.clearedTasks).toEqual([{ fromCluster: ALT, why: 'ResourceHealth: every target cluster is Healthy' }]);

    // Done failbacks are shown for an hour, then forgotten.
    m.clock.advance(3601_000);
    await resyncFailback(m.plane, true);
    expect((await stored(m, 'w0')).failback).toBeUndefined();
    expect((await listFailback(m.plane)).bindings).toEqual([]);
  });

  it('a flap restarts the count: the waiting row is cancelled, planned again, and it goes a window after the last run began', async () => {
    const { m, state } = await fleet(['w0']);
    await failHome(m, state, ['w0']);
    const first = Date.parse(await recoverHome(m));
    await run(m, state, 30);
    await ready(m, HOME, 'False');
    await run(m, state, 2);
    expect((await failbackRows(m, ALT)).map((r) => r.state)).toEqual(['abandoned']);
    expect((await listFailback(m.plane)).bindings[0]).toMatchObject({ state: 'waiting-for-home', why: expect.stringContaining('not Ready') });
    await ready(m, HOME, 'True');
    const second = Date.parse((await m.clusters.get(HOME))!.value.healthySince!);
    expect(second).toBeGreaterThan(first);
    // Past the first run's due time: still on the replacement.
    const ran = await run(m, state, 62);
    expect(await placed(m, 'w0')).toEqual([HOME]);
    const row = (await failbackRows(m, ALT))[0];
    expect(Date.parse(row.executedAt!)).toBeGreaterThanOrEqual(second + WINDOW * 1000);
    expect(Date.parse(row.executedAt!)).toBeLessThanOrEqual(second + WINDOW * 1000 + 1000);
    expect(ran.filter((r) => r.outcome === 'failed-back')).toHaveLength(1);
    expect((await events(m, 'w0', 'FailbackCancelled')).length).toBe(1);
    expect((await events(m, 'w0', 'FailbackPlanned')).length).toBe(2);
  });

  it('a home that fails again after the row got its slot is never gone back to; it goes when the home is healthy for a window again', async () => {
    const { m, state } = await fleet(['w0']);
    await failHome(m, state, ['w0']);
    await recoverHome(m);
    await run(m, state, WINDOW - 4);
    // The pacer gives the row its slot (it looks a few seconds ahead); the home fails before the slot.
    await runPacer(m.plane);
    const queued: EvictionMessage[] = takeEvictions(m).map((s) => s.message);
    expect(queued).toHaveLength(1);
    expect((await failbackRows(m, ALT))[0].state).toBe('scheduled');
    await applyTo(m, [cluster(HOME, true)]);
    m.clock.set(queued[0].slot);
    expect(await executeEviction(m.plane, queued[0])).toBe('cancelled');
    expect(await placed(m, 'w0')).toEqual([ALT]);
    expect((await failbackRows(m, ALT))[0]).toMatchObject({ state: 'abandoned', message: expect.stringContaining('cancelled at its slot') });

    const since = Date.parse(await recoverHome(m));
    await run(m, state, WINDOW + 2);
    expect(await placed(m, 'w0')).toEqual([HOME]);
    expect(Date.parse((await failbackRows(m, ALT))[0].executedAt!)).toBeGreaterThanOrEqual(since + WINDOW * 1000);
  });

  it('the pause and the Failover gate hold failbacks (they do not bypass the gate like a drain)', async () => {
    const { m, state } = await fleet(['w0']);
    await failHome(m, state, ['w0']);
    await recoverHome(m);
    await setPaused(m.plane, true);
    await run(m, state, WINDOW + 5);
    expect(await placed(m, 'w0')).toEqual([ALT]);
    expect((await listFailback(m.plane)).bindings[0].state).toBe('queued');
    (m.plane.config as { failoverEnabled: boolean }).failoverEnabled = false;
    await setPaused(m.plane, false);
    await run(m, state, 5);
    expect(await placed(m, 'w0')).toEqual([ALT]);
    (m.plane.config as { failoverEnabled: boolean }).failoverEnabled = true;
    await run(m, state, 5);
    expect(await placed(m, 'w0')).toEqual([HOME]);
  });

  it('never for purgeMode Never workloads; an annotation removed drops the waiting failback', async () => {
    const { m, state } = await fleet(['never', 'plain'], {}, [], {});
    // Two clusters only: the evicted workloads have one place to go (placement spreads over more).
    await applyTo(m, [policy(String(WINDOW), [HOME, ALT])]);
    await applyTo(m, [workload('never', { failover: { application: { decisionConditions: { tolerationSeconds: 30 }, purgeMode: 'Never' } } })]);
    await failHome(m, state, ['never', 'plain']);
    expect((await stored(m, 'never')).failback).toBeUndefined();
    expect((await stored(m, 'plain')).failback?.[HOME]).toBeDefined();

    await recoverHome(m);
    await run(m, state, 5);
    expect(await failbackRows(m, ALT)).toHaveLength(1);
    // The policy no longer asks for failback: the next reconcile drops the entry and cancels its row.
    await applyTo(m, [policy(undefined, [HOME, ALT, THIRD])]);
    m.clock.advance(11_000);
    await resyncFailback(m.plane, true);
    expect((await stored(m, 'plain')).failback).toBeUndefined();
    expect((await failbackRows(m, ALT)).map((r) => r.state)).toEqual(['abandoned']);
    expect(await events(m, 'plain', 'FailbackDropped')).toHaveLength(1);
    await run(m, state, WINDOW);
    expect(await placed(m, 'plain')).toEqual([ALT]);
    expect(await placed(m, 'never')).toEqual([ALT]);
  });

  it('a cordoned home waits; the uncordon plans it', async () => {
    const { m, state } = await fleet(['w0']);
    await failHome(m, state, ['w0']);
    await applyTo(m, [{ ...cluster(HOME), spec: { taints: [{ key: 'cluster.karmada.io/unschedulable', effect: 'NoSchedule' }] } }]);
    await run(m, state, WINDOW + 3);
    expect(await placed(m, 'w0')).toEqual([ALT]);
    expect((await listFailback(m.plane)).bindings[0]).toMatchObject({ state: 'waiting-for-home', why: expect.stringContaining('unschedulable') });
    await applyTo(m, [cluster(HOME)]);
    await run(m, state, 4);
    expect(await placed(m, 'w0')).toEqual([HOME]);
  });

  it('the replacement fails while the count runs: it leaves at once, and its failback follows it to where it went', async () => {
    const { m, state } = await fleet(['w0']);
    await failHome(m, state, ['w0']);
    await recoverHome(m);
    await run(m, state, 10);
    expect((await failbackRows(m, ALT)).map((r) => r.state)).toEqual(['pending']);
    await applyTo(m, [cluster(ALT, true)]);
    await run(m, state, 3);
    // Moved by the failure (the scheduler's choice, third by name order), not sent home early.
    expect(await placed(m, 'w0')).toEqual([THIRD]);
    expect((await m.ledger.scanEvictions({ cluster: ALT })).map((r) => `${r.record.reason} ${r.record.state}`)).toEqual(['TaintUntolerated done']);
    expect((await stored(m, 'w0')).failback?.[HOME]).toMatchObject({ replacedBy: [THIRD] });
    const row = (await failbackRows(m, THIRD))[0];
    expect(row).toMatchObject({ state: 'pending', home: HOME });
    await run(m, state, WINDOW);
    expect(await placed(m, 'w0')).toEqual([HOME]);
  });

  it('a crash between the failback write and its commit is finished by the repair, once', async () => {
    const { m, state } = await fleet(['w0']);
    await failHome(m, state, ['w0']);
    await recoverHome(m);
    await run(m, state, WINDOW - 4);
    await runPacer(m.plane);
    const [message] = takeEvictions(m).map((s) => s.message);
    m.clock.set(message.slot);
    m.ledger.failNext('commitEviction', new Error('host killed'));
    await expect(executeEviction(m.plane, message)).rejects.toThrow('host killed');
    expect(await placed(m, 'w0')).toEqual([HOME]);
    m.clock.advance(11_000);
    expect(await repairInFlight(m.plane)).toEqual({ finished: 1 });
    expect(await executeEviction(m.plane, message)).toBe('duplicate');
    const rows: EvictionRecord[] = await failbackRows(m, ALT);
    expect(rows.map((r) => r.state)).toEqual(['done']);
    expect(await events(m, 'w0', 'FailedBack')).toHaveLength(1);
    expect((await stored(m, 'w0')).spec.gracefulEvictionTasks?.map((t) => t.fromCluster)).toEqual([ALT]);
  });
});
