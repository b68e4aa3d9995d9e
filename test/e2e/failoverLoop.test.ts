import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyObjects, cluster, ledger, sleep } from '../helpers/fleet';
import { api, HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';

/** Failover stories, end to end: failure → eviction → new placement → old copy cleared. */
const unplaced = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'work.karmada.io/v1alpha2',
  kind: 'ResourceBinding',
  metadata: { name, namespace: 'loop' },
  spec: { resource: { apiVersion: 'apps/v1', kind: 'Deployment', name }, ...spec },
});

let host: HostProcess;
let patient: HostProcess;
beforeAll(async () => {
  [host, patient] = await Promise.all([
    startHostProcess({ FAILOVER_ENABLED: 'true', RESOURCE_EVICTION_RATE: '20' }),
    startHostProcess({ FAILOVER_ENABLED: 'true', RESOURCE_EVICTION_RATE: '20', GRACEFUL_EVICTION_TIMEOUT_SECONDS: '3' }),
  ]);
  const members = ['member1', 'member2', 'member3', 'member4', 'member5'].map((n) => cluster(n));
  await Promise.all([applyObjects(host.url, members), applyObjects(patient.url, members)]);
}, 30_000);
afterAll(async () => Promise.all([host?.stop(), patient?.stop()]));

const get = async (base: string, name: string) => (await api(base, 'GET', `resourcebindings/loop/${name}`)).body;
const placedOn = (b: any) => (b.spec.clusters ?? []).map((c: { name: string; replicas: number }) => `${c.name}:${c.replicas}`);
const scheduled = (base: string, name: string) =>
  waitFor(
    async () => {
      const b = await get(base, name);
      return b.status?.schedulerObservedGeneration === b.metadata.generation ? b : undefined;
    },
    10_000,
    100,
  );
const fail = (base: string, name: string) => applyObjects(base, [cluster(name, true)]);
const recover = (base: string, name: string) => applyObjects(base, [cluster(name, false)]);
const health = (base: string, name: string, clusters: string[], state = 'Healthy') =>
  api(base, 'POST', `resourcebindings/loop/${name}/status`, { aggregatedStatus: clusters.map((c) => ({ clusterName: c, health: state })) });

describe('failover loop', () => {
  it('Duplicated (seed 001): [member1, member2] with member2 failed becomes [member1, member3]; the old copy goes once healthy', async () => {
    await applyObjects(host.url, [
      unplaced('dup', {
        replicas: 2,
        placement: { clusterAffinity: { clusterNames: ['member1', 'member2', 'member3', 'member5'] }, spreadConstraints: [{ maxGroups: 2, minGroups: 2 }] },
      }),
    ]);
    expect(placedOn(await scheduled(host.url, 'dup'))).toEqual(['member1:2', 'member2:2']);
    await fail(host.url, 'member2');
    const moved = await waitFor(
      async () => {
        const b = await get(host.url, 'dup');
        return b.status?.schedulerObservedGeneration === b.metadata.generation && placedOn(b).includes('member3:2') ? b : undefined;
      },
      10_000,
      100,
    );
    expect(placedOn(moved)).toEqual(['member1:2', 'member3:2']);
    expect(moved.spec.gracefulEvictionTasks).toEqual([expect.objectContaining({ fromCluster: 'member2' })]);
    const cleared = await health(host.url, 'dup', ['member1', 'member3']);
    expect(cleared.body.spec.gracefulEvictionTasks).toEqual([]);
    await recover(host.url, 'member2');
  });

  it('Divided (seed 001): weights 1:2 over 3 replicas; member1 failed gives member2 all 3', async () => {
    await applyObjects(host.url, [
      unplaced('div', {
        replicas: 3,
        placement: {
          clusterAffinity: { clusterNames: ['member1', 'member2'] },
          replicaScheduling: {
            replicaSchedulingType: 'Divided',
            replicaDivisionPreference: 'Weighted',
            weightPreference: {
              staticWeightList: [
                { targetCluster: { clusterNames: ['member1'] }, weight: 1 },
                { targetCluster: { clusterNames: ['member2'] }, weight: 2 },
              ],
            },
          },
        },
      }),
    ]);
    expect(placedOn(await scheduled(host.url, 'div'))).toEqual(['member1:1', 'member2:2']);
    await fail(host.url, 'member1');
    await waitFor(async () => (placedOn(await get(host.url, 'div')).join() === 'member2:3' ? true : undefined), 10_000, 100);
    await recover(host.url, 'member1');
  });

  it('no target cluster: nothing is evicted, nothing deleted, and the reason is visible', async () => {
    await applyObjects(host.url, [unplaced('pinned', { replicas: 1, placement: { clusterAffinity: { clusterNames: ['member4'] } } })]);
    expect(placedOn(await scheduled(host.url, 'pinned'))).toEqual(['member4:1']);
    await fail(host.url, 'member4');
    const row = await waitFor(async () => (await ledger(host.url, '?cluster=member4&state=blocked')).find((r) => r.binding.name === 'pinned'), 10_000, 100);
    expect(row.message).toContain('other cluster(s) match the affinity');
    expect(placedOn(await get(host.url, 'pinned'))).toEqual(['member4:1']);
    expect((await get(host.url, 'pinned')).spec.gracefulEvictionTasks ?? []).toEqual([]);
    await recover(host.url, 'member4');
    await waitFor(async () => ((await ledger(host.url, '?cluster=member4')).every((r) => r.state === 'abandoned') ? true : undefined), 10_000, 100);
  });

  it('recovery after the eviction but before the new copy is healthy: the migration completes', async () => {
    await applyObjects(host.url, [
      unplaced('late', {
        replicas: 1,
        placement: { clusterAffinity: { clusterNames: ['member1', 'member5'] }, spreadConstraints: [{ maxGroups: 1, minGroups: 1 }] },
      }),
    ]);
    const first = placedOn(await scheduled(host.url, 'late'))[0].split(':')[0];
    const other = first === 'member1' ? 'member5' : 'member1';
    await fail(host.url, first);
    await waitFor(async () => (placedOn(await get(host.url, 'late')).join() === `${other}:1` ? true : undefined), 10_000, 100);
    await recover(host.url, first);
    await sleep(1500);
    // Scheduled, but the new copy is not healthy yet: the old copy stays until it is.
    const waiting = await get(host.url, 'late');
    expect(placedOn(waiting)).toEqual([`${other}:1`]);
    expect(waiting.spec.gracefulEvictionTasks).toEqual([expect.objectContaining({ fromCluster: first })]);
    expect((await health(host.url, 'late', [other])).body.spec.gracefulEvictionTasks).toEqual([]);
  });

  it('a new placement that never becomes healthy keeps the old copy, unless a timeout is set', async () => {
    await applyObjects(patient.url, [
      unplaced('never', { replicas: 1, placement: { clusterAffinity: { clusterNames: ['member2', 'member3'] }, spreadConstraints: [{ maxGroups: 1 }] } }),
    ]);
    const first = placedOn(await scheduled(patient.url, 'never'))[0].split(':')[0];
    await fail(patient.url, first);
    const moved = await waitFor(
      async () => {
        const b = await get(patient.url, 'never');
        return (b.spec.gracefulEvictionTasks ?? []).length === 1 ? b : undefined;
      },
      10_000,
      100,
    );
    await health(
      patient.url,
      'never',
      placedOn(moved).map((p: string) => p.split(':')[0]),
      'Unhealthy',
    );
    // GRACEFUL_EVICTION_TIMEOUT_SECONDS=3 on this host: the sweep (every 10 s) clears it after that.
    await waitFor(async () => ((await get(patient.url, 'never')).spec.gracefulEvictionTasks.length === 0 ? true : undefined), 15_000, 250);
    const events = (await api(patient.url, 'GET', 'events?kind=ResourceBinding&name=loop/never')).body.items as Array<{ reason: string; message: string }>;
    expect(events.find((e) => e.reason === 'OldCopyRemoved')?.message).toContain('grace period of 3s has passed');
  }, 40_000);
});
