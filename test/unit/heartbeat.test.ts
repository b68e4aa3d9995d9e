import { describe, expect, it, vi } from 'vitest';
import { PlaneCaches } from '../../shared/cache';
import { heartbeatFreshness, monitorClusterHeartbeats, reportClusterStatus } from '../../shared/controllers/clusters';
import { heartbeatFreshnessSeconds, heartbeatVerdict, heartbeatWrite, monitorGraceSeconds } from '../../shared/failover/conditions';
import { memoryPlane } from '../helpers/memoryPlane';

const T0 = '2026-01-01T00:00:00.000Z';
const at = (seconds: number) => new Date(Date.parse(T0) + seconds * 1000);

describe('heartbeat freshness window (pure rule)', () => {
  it.each([
    { windows: [40], seconds: 10, why: 'a quarter of the default grace period' },
    { windows: [2], seconds: 2, why: 'never more often than every 2 s (the old coalescing)' },
    { windows: [9], seconds: 2, why: 'whole seconds, rounded down, at least 2' },
    { windows: [60], seconds: 15, why: 'a quarter' },
    { windows: [3600], seconds: 30, why: 'at most 30 s behind, however long the grace period' },
    { windows: [40, 30], seconds: 7, why: 'the shortest reader of lastReportAt (probes failure threshold)' },
  ])('$windows → $seconds s: $why', ({ windows, seconds }) => {
    expect(heartbeatFreshnessSeconds(...windows)).toBe(seconds);
  });

  it.each([
    { name: 'a changed condition is written at once', changed: true, last: 0, now: 0.1, expected: 'write' },
    { name: 'a cluster that never reported is written', changed: false, last: undefined, now: 5, expected: 'write' },
    { name: 'unchanged, stored heartbeat fresh', changed: false, last: 0, now: 9.999, expected: 'fresh' },
    { name: 'unchanged, stored heartbeat exactly the window old', changed: false, last: 0, now: 10, expected: 'write' },
    { name: 'unchanged, stored heartbeat stale', changed: false, last: 0, now: 25, expected: 'write' },
    { name: 'unchanged, stored slightly ahead (another clock)', changed: false, last: 1, now: 0.5, expected: 'fresh' },
    { name: 'unchanged, stored far ahead (not trusted)', changed: false, last: 60, now: 0, expected: 'write' },
  ])('$name', ({ changed, last, now, expected }) => {
    const lastReportAt = last === undefined ? undefined : at(last).toISOString();
    expect(heartbeatWrite({ conditionsChanged: changed, lastReportAt }, at(now), 10)).toBe(expected);
  });

  it('the monitor never marks a cluster whose reports were coalesced, and marks a silent one within grace + window', () => {
    const grace = 40;
    const window = heartbeatFreshnessSeconds(grace);
    const monitorGrace = monitorGraceSeconds(grace, window);
    // A cluster reporting every `every` seconds from 0 to 300, then silent: replay the rule to find what is stored.
    for (const every of [1, 3, 5, 10, 15, 39]) {
      let stored: number | undefined;
      let lastReport = 0;
      for (let t = 0; t <= 300; t += every) {
        lastReport = t;
        if (heartbeatWrite({ conditionsChanged: false, lastReportAt: stored === undefined ? undefined : at(stored).toISOString() }, at(t), window) === 'write')
          stored = t;
        // Checked at every report: never expired while the cluster reports within the grace period.
        for (let probe = t; probe < t + every; probe += 0.5) {
          const verdict = heartbeatVerdict({ lastReportAt: at(stored!).toISOString(), registeredAt: T0 }, at(probe), monitorGrace, 60);
          expect(verdict.expired, `every ${every}s, at ${probe}s`).toBe(false);
        }
      }
      // Silent from lastReport: marked no earlier than grace after it, no later than grace + window.
      const deadline = heartbeatVerdict({ lastReportAt: at(stored!).toISOString(), registeredAt: T0 }, at(0), monitorGrace, 60).deadline;
      const silentFor = (deadline.getTime() - at(lastReport).getTime()) / 1000;
      expect(silentFor).toBeGreaterThanOrEqual(grace);
      expect(silentFor).toBeLessThanOrEqual(grace + window);
    }
  });
});

describe('heartbeat coalescing (controller, injected clock)', () => {
  const ready = { conditions: [{ type: 'Ready', status: 'True' as const }] };
  const counting = (env: ReturnType<typeof memoryPlane>) => ({
    get: vi.spyOn(env.clusters, 'get'),
    writes: [vi.spyOn(env.clusters, 'create'), vi.spyOn(env.clusters, 'replace')],
  });
  const requests = (spies: ReturnType<typeof counting>) => spies.get.mock.calls.length + spies.writes.reduce((n, s) => n + s.mock.calls.length, 0);

  it('costs no request for an unchanged report inside the window, one write when it is due, and a change at once', async () => {
    const env = memoryPlane();
    expect(heartbeatFreshness(env.plane.config)).toBe(10);
    await reportClusterStatus(env.plane, 'c1', ready);
    const spies = counting(env);
    for (let s = 1; s < 10; s++) {
      env.clock.set(at(s));
      await reportClusterStatus(env.plane, 'c1', ready);
    }
    expect(requests(spies)).toBe(0);
    expect((await env.clusters.get('c1'))!.value.lastReportAt).toBe(T0);
    spies.get.mockClear();
    env.clock.set(at(10));
    await reportClusterStatus(env.plane, 'c1', ready);
    expect((await env.clusters.get('c1'))!.value.lastReportAt).toBe(at(10).toISOString());
    env.clock.set(at(10.5));
    await reportClusterStatus(env.plane, 'c1', { conditions: [{ type: 'Ready', status: 'False' }] });
    expect((await env.clusters.get('c1'))!.value.conditions[0]).toMatchObject({ status: 'False', lastTransitionTime: at(10.5).toISOString() });
  });

  it('a host that has not seen the cluster reads it once, then coalesces', async () => {
    const env = memoryPlane();
    await reportClusterStatus(env.plane, 'c1', ready);
    // Another host: same storage, its own process memory (a separate control plane object).
    const other = { ...env.plane, caches: new PlaneCaches() };
    const spies = counting(env);
    for (let s = 1; s < 10; s++) {
      env.clock.set(at(s));
      await reportClusterStatus(other, 'c1', ready);
    }
    expect(spies.get).toHaveBeenCalledTimes(1);
    expect(spies.writes.every((w) => w.mock.calls.length === 0)).toBe(true);
  });

  it('a cluster the fleet summary does not list registers with one write and no read; one registered meanwhile by another host is read and updated', async () => {
    const env = memoryPlane();
    await reportClusterStatus(env.plane, 'c1', ready);
    const spies = counting(env);
    await reportClusterStatus(env.plane, 'c2', ready);
    expect(spies.get).toHaveBeenCalledTimes(0);
    expect(spies.writes[0]).toHaveBeenCalledTimes(1);
    expect((await env.clusters.get('c2'))?.value.conditions.map((c) => c.status)).toEqual(['True']);
    // Another host, whose summary (read just before) does not list c3 yet: its create fails, it reads and updates.
    const other = { ...env.plane, caches: new PlaneCaches() };
    env.clock.set(at(0.5));
    await reportClusterStatus(other, 'c3', ready);
    const [create, replace] = spies.writes.map((spy) => spy.mock.calls.length);
    await reportClusterStatus(env.plane, 'c3', { conditions: [{ type: 'Ready', status: 'False' as const }] });
    // This host's summary, read half a second ago, does not list c3: the create is refused, the read and the update follow.
    expect(spies.writes.map((spy) => spy.mock.calls.length)).toEqual([create + 1, replace + 1]);
    expect((await env.clusters.get('c3'))?.value.conditions.map((c) => c.status)).toEqual(['False']);
  });

  it('the monitor waits the grace period plus the window', async () => {
    const env = memoryPlane();
    await reportClusterStatus(env.plane, 'c1', ready);
    env.clock.set(at(9));
    await reportClusterStatus(env.plane, 'c1', ready); // coalesced: stored heartbeat stays at 0
    env.clock.set(at(49.9));
    expect(await monitorClusterHeartbeats(env.plane)).toEqual([]);
    env.clock.set(at(50));
    expect(await monitorClusterHeartbeats(env.plane)).toEqual(['c1']);
  });

  it('refuses a replay of a coalesced signed report, and stores the newest signature with the next write', async () => {
    const env = memoryPlane();
    const sig = (n: number) => `sha256=${String(n).padStart(64, '0')}`;
    const t = Date.parse(T0) / 1000;
    await reportClusterStatus(env.plane, 'c1', ready, { signedAt: t, signature: sig(1) });
    env.clock.set(at(3));
    await reportClusterStatus(env.plane, 'c1', ready, { signedAt: t + 3, signature: sig(2) }); // coalesced
    env.clock.set(at(4));
    await expect(reportClusterStatus(env.plane, 'c1', ready, { signedAt: t + 3, signature: sig(2) })).rejects.toMatchObject({ status: 409 });
    await expect(reportClusterStatus(env.plane, 'c1', ready, { signedAt: t + 2, signature: sig(3) })).rejects.toMatchObject({ status: 409 });
    // Two reports signed in the same second are both accepted once.
    await reportClusterStatus(env.plane, 'c1', ready, { signedAt: t + 3, signature: sig(4) });
    await expect(reportClusterStatus(env.plane, 'c1', ready, { signedAt: t + 3, signature: sig(4) })).rejects.toMatchObject({ status: 409 });
    env.clock.set(at(12));
    await reportClusterStatus(env.plane, 'c1', ready, { signedAt: t + 12, signature: sig(5) });
    expect((await env.clusters.get('c1'))!.value).toMatchObject({ lastSignedAt: t + 12, lastSignature: sig(5) });
    // After a write the stored mark refuses it on any host.
    await expect(reportClusterStatus({ ...env.plane, caches: new PlaneCaches() }, 'c1', ready, { signedAt: t + 12, signature: sig(5) })).rejects.toMatchObject({
      status: 409,
    });
  });

  it('a report with an older observedAt than a coalesced one is refused', async () => {
    const env = memoryPlane();
    await reportClusterStatus(env.plane, 'c1', { ...ready, observedAt: at(0).toISOString() });
    env.clock.set(at(5));
    await reportClusterStatus(env.plane, 'c1', { ...ready, observedAt: at(5).toISOString() });
    await expect(reportClusterStatus(env.plane, 'c1', { ...ready, observedAt: at(4).toISOString() })).rejects.toMatchObject({ status: 409 });
  });
});
