import { describe, expect, it } from 'vitest';
import { activeBlocks, assessApplicationHealth, ClusterTrack, HealthObservation } from '../../shared/failover/applicationFailover';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (s: number) => new Date(T0 + s * 1000);
const iso = (s: number) => at(s).toISOString();

/** Feeds a sequence of reports through the assessment, carrying the persisted tracks like the caller. */
function run(steps: Array<{ t: number; health?: HealthObservation['health'] }>, policy = { tolerationSeconds: 10 }, placedOn = ['member1', 'member2']) {
  let tracks: Record<string, ClusterTrack> = {};
  const log: Array<{ t: number; evict: string[]; next?: number; held: string[] }> = [];
  for (const step of steps) {
    const result = assessApplicationHealth(tracks, step.health ? [{ clusterName: 'member1', health: step.health }] : [], placedOn, policy, at(step.t));
    tracks = result.tracks;
    log.push({ t: step.t, evict: result.evict.map((e) => e.cluster), next: result.nextCheckAt ? (result.nextCheckAt.getTime() - T0) / 1000 : undefined, held: result.held.map((h) => h.why) });
  }
  return log;
}

describe('application failover windows', () => {
  it('evicts once Unhealthy for tolerationSeconds, not before, and says when to look again', () => {
    const log = run([{ t: 0, health: 'Healthy' }, { t: 5, health: 'Unhealthy' }, { t: 14.9, health: 'Unhealthy' }, { t: 15, health: 'Unhealthy' }]);
    expect(log.map((l) => l.evict)).toEqual([[], [], [], ['member1']]);
    expect(log[1].next).toBe(15);
  });
  it('Healthy resets the window; a flap shorter than the toleration moves nothing', () => {
    const log = run([{ t: 0, health: 'Unhealthy' }, { t: 8, health: 'Healthy' }, { t: 9, health: 'Unhealthy' }, { t: 18, health: 'Unhealthy' }, { t: 19, health: 'Unhealthy' }]);
    expect(log.map((l) => l.evict)).toEqual([[], [], [], [], ['member1']]);
  });
  it('Unknown neither counts nor resets: it never evicts, and the stretch it interrupts goes on', () => {
    const log = run([{ t: 0, health: 'Unhealthy' }, { t: 5, health: 'Unknown' }, { t: 12, health: 'Unknown' }, { t: 13, health: 'Unhealthy' }]);
    expect(log.map((l) => l.evict)).toEqual([[], [], [], ['member1']]);
  });
  it('tolerationSeconds 0 evicts on the first Unhealthy report', () => {
    expect(run([{ t: 0, health: 'Unhealthy' }], { tolerationSeconds: 0 })[0].evict).toEqual(['member1']);
  });
  it('a restart keeps the deadline: the window comes from the persisted tracks', () => {
    const first = assessApplicationHealth({}, [{ clusterName: 'member1', health: 'Unhealthy' }], ['member1'], { tolerationSeconds: 10 }, at(0));
    const later = assessApplicationHealth(first.tracks, [{ clusterName: 'member1', health: 'Unhealthy' }], ['member1'], { tolerationSeconds: 10 }, at(10));
    expect(later.evict).toEqual([{ cluster: 'member1', unhealthySince: iso(0) }]);
  });
  it('ignores clusters the binding is not placed on', () => {
    expect(run([{ t: 0, health: 'Unhealthy' }], { tolerationSeconds: 0 }, ['member2'])[0].evict).toEqual([]);
  });
});

describe('preconditions', () => {
  it('healthyState: Healthy holds a workload that never settled', () => {
    const log = run([{ t: 0, health: 'Unhealthy' }, { t: 20, health: 'Unhealthy' }], { tolerationSeconds: 10, requireSettled: true } as never);
    expect(log[1].evict).toEqual([]);
    expect(log[1].held[0]).toContain('never became Healthy');
  });
  it('delaySeconds holds until the status has been collected that long', () => {
    const log = run([{ t: 0, health: 'Unhealthy' }, { t: 10, health: 'Unhealthy' }, { t: 30, health: 'Unhealthy' }], { tolerationSeconds: 5, delaySeconds: 30 } as never);
    expect(log.map((l) => l.evict)).toEqual([[], [], ['member1']]);
    expect(log[1].next).toBe(30);
  });
});

describe('eviction history', () => {
  const history = [
    { clusterName: 'member1', creationTimestamp: iso(0) },
    { clusterName: 'member3', creationTimestamp: iso(500) },
  ];
  it.each([
    [600, 100, ['member1', 'member3']],
    [600, 600, ['member3']],
    [600, 1200, []],
    [0, 100_000, ['member1', 'member3']],
  ])('block %is, at %is: %j', (block, now, blocked) => {
    expect(activeBlocks(history, block, at(now)).blocked).toEqual(blocked);
  });
});
