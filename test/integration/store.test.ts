import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../shared/clock';
import { loadConfig } from '../../shared/config';
import { reportClusterStatus } from '../../shared/controllers/clusters';
import { applyTaintPolicy } from '../../shared/controllers/policies';
import { evaluateCluster } from '../../shared/controllers/taintController';
import { createControlPlane } from '../../shared/runtime';
import { mutate, write } from '../../shared/store/optimistic';
import { ConcurrencyError } from '../../shared/store/ports';
import { TableDocumentStore, TableEventLog } from '../../shared/store/tableStorage';
import { silentLogger } from '../../shared/telemetry/log';
import { startTestStorage, TestStorage } from '../helpers/azurite';

let env: TestStorage;
beforeAll(async () => {
  env = await startTestStorage();
  await env.storage.tableService().createTable('scratch');
});
afterAll(async () => env.close());

describe('TableDocumentStore on Azurite', () => {
  it('creates, reads, replaces with the ETag and refuses a stale one', async () => {
    const store = new TableDocumentStore<{ n: number }>(env.storage.table('scratch'), 'a');
    const etag1 = await store.create('doc', { n: 1 });
    await expect(store.create('doc', { n: 9 })).rejects.toBeInstanceOf(ConcurrencyError);
    const etag2 = await store.replace('doc', { n: 2 }, etag1);
    await expect(store.replace('doc', { n: 3 }, etag1)).rejects.toBeInstanceOf(ConcurrencyError);
    expect((await store.get('doc'))?.value).toEqual({ n: 2 });
    await expect(store.delete('doc', etag1)).rejects.toBeInstanceOf(ConcurrencyError);
    expect(await store.delete('doc', etag2)).toBe(true);
    expect(await store.get('doc')).toBeUndefined();
  });

  it('stores documents larger than one property (64 KiB) in chunks', async () => {
    const store = new TableDocumentStore<{ text: string }>(env.storage.table('scratch'), 'big');
    const text = 'x'.repeat(200_000);
    await store.create('big', { text });
    expect((await store.get('big'))?.value.text).toHaveLength(200_000);
  });

  it('two writers: the one with the stale ETag loses, re-reads and retries, and no update is lost', async () => {
    const store = new TableDocumentStore<{ n: number; writers: string[] }>(env.storage.table('scratch'), 'race');
    await store.create('counter', { n: 0, writers: [] });
    let firstAttempts = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // Writer A reads, then waits while B writes; A's ETag is then stale and it must retry.
    const a = mutate(store, 'counter', async (current, attempt) => {
      firstAttempts = attempt;
      if (attempt === 1) await gate;
      return write({ n: current!.value.n + 1, writers: [...current!.value.writers, `a${attempt}`] }, 'a');
    });
    await new Promise((r) => setTimeout(r, 50));
    await mutate(store, 'counter', (current) => write({ n: current!.value.n + 1, writers: [...current!.value.writers, 'b'] }, 'b'));
    release();
    await a;
    expect(firstAttempts).toBe(2);
    expect((await store.get('counter'))?.value).toEqual({ n: 2, writers: ['b', 'a2'] });
  });

  it('twenty concurrent read-modify-writes all land', async () => {
    const store = new TableDocumentStore<{ n: number }>(env.storage.table('scratch'), 'many');
    await store.create('counter', { n: 0 });
    await Promise.all(Array.from({ length: 20 }, () => mutate(store, 'counter', (current) => write({ n: current!.value.n + 1 }, null))));
    expect((await store.get('counter'))?.value.n).toBe(20);
  });
});

describe('event log on Azurite', () => {
  it('filters by kind, name and since, oldest first, newest kept under the limit', async () => {
    const log = new TableEventLog(env.storage.table('events'));
    const event = (kind: string, name: string, time: string, reason: string) => ({ kind, name, time, reason, type: 'Normal' as const, message: reason });
    await log.append([
      event('Cluster', 'm1', '2026-01-01T00:00:01.000Z', 'one'),
      event('Cluster', 'm1', '2026-01-01T00:00:03.000Z', 'three'),
      event('Cluster', 'm2', '2026-01-01T00:00:02.000Z', 'two'),
      event('ClusterTaintPolicy', 'p', '2026-01-01T00:00:04.000Z', 'four'),
    ]);
    expect((await log.list({ limit: 100 })).map((e) => e.reason)).toEqual(['one', 'two', 'three', 'four']);
    expect((await log.list({ kind: 'Cluster', limit: 100 })).map((e) => e.reason)).toEqual(['one', 'two', 'three']);
    expect((await log.list({ kind: 'Cluster', name: 'm1', limit: 100 })).map((e) => e.reason)).toEqual(['one', 'three']);
    expect((await log.list({ since: '2026-01-01T00:00:02.500Z', limit: 100 })).map((e) => e.reason)).toEqual(['three', 'four']);
    expect((await log.list({ limit: 2 })).map((e) => e.reason)).toEqual(['three', 'four']);
  });
});

describe('two hosts evaluating the same cluster', () => {
  it('add the taint once and record one TaintAdded event', async () => {
    const clock = new ManualClock('2026-03-01T00:00:00.000Z');
    const config = loadConfig({});
    const planeA = createControlPlane(env.storage, config, { clock, log: silentLogger });
    const planeB = createControlPlane(env.storage, config, { clock, log: silentLogger });
    await applyTaintPolicy(planeA, {
      apiVersion: 'policy.karmada.io/v1alpha1',
      kind: 'ClusterTaintPolicy',
      metadata: { name: 'race-policy' },
      spec: { targetCluster: { clusterNames: ['race1'] }, matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False'] }], taintsToAdd: [{ key: 'race', effect: 'NoExecute', addOnMatchSeconds: 5, removeOnMismatchSeconds: 5 }] },
    });
    await reportClusterStatus(planeA, 'race1', { conditions: [{ type: 'Ready', status: 'False' }] });
    clock.advance(5000);
    const results = await Promise.all([evaluateCluster(planeA, 'race1'), evaluateCluster(planeB, 'race1'), evaluateCluster(planeA, 'race1'), evaluateCluster(planeB, 'race1')]);
    expect(results.flat().filter((c) => c.action === 'added')).toHaveLength(1);
    const stored = await planeA.clusters.get('race1');
    expect(stored?.value.taints.map((t) => t.key)).toEqual(['race']);
    const events = await planeA.events.list({ kind: 'Cluster', name: 'race1', limit: 100 });
    expect(events.filter((e) => e.reason === 'TaintAdded')).toHaveLength(1);
  });
});

describe('heartbeat coalescing', () => {
  it('writes an unchanged report at most once per 2 s, and a change at once', async () => {
    const clock = new ManualClock('2026-04-01T00:00:00.000Z');
    const plane = createControlPlane(env.storage, loadConfig({}), { clock, log: silentLogger });
    const ready = (status: 'True' | 'False') => ({ conditions: [{ type: 'Ready', status }] as Array<{ type: string; status: 'True' | 'False' }> });
    await reportClusterStatus(plane, 'beat1', ready('True'));
    const first = (await plane.clusters.get('beat1'))!;
    clock.advance(500);
    await reportClusterStatus(plane, 'beat1', ready('True'));
    expect((await plane.clusters.get('beat1'))!.etag).toBe(first.etag);
    clock.advance(1600);
    await reportClusterStatus(plane, 'beat1', ready('True'));
    const second = (await plane.clusters.get('beat1'))!;
    expect(second.etag).not.toBe(first.etag);
    expect(second.value.lastReportAt).toBe('2026-04-01T00:00:02.100Z');
    clock.advance(100);
    await reportClusterStatus(plane, 'beat1', ready('False'));
    expect((await plane.clusters.get('beat1'))!.value.conditions[0].status).toBe('False');
  });
});
