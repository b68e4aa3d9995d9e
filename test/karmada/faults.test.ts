import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostProcess, startHostProcess } from '../helpers/hostProcess';
import {
  appEvents,
  appGet,
  applyYaml,
  Binding,
  departures as departuresOf,
  evictionRows,
  hasNotReadyNoExecute,
  healthyWhereScheduled,
  karmadaHostEnv,
  karmadaTaintPolicy,
  KarmadaWatch,
  logLines,
  placedOn,
  placeGroupOn,
  propagationPolicy,
  readyOf,
  renderLog,
  seconds,
  taskFrom,
  tasksOf,
} from '../helpers/karmadaScenario';
import { ensureKarmadaBuilt, RealKarmada, startRealKarmada } from '../helpers/realKarmada';

/**
 * Faults around a failover on a real Karmada v1.18.2 control plane, the app (a local host process in
 * Karmada mode) as its failover controllers. Each scenario places a fresh group of six Deployments on one
 * member (Duplicated, one cluster each over all three, not-ready NoExecute tolerated 0 s), fails that member,
 * and injects a fault while the failover runs:
 *
 *  1. the karmada-apiserver is killed and restarted after the first eviction (watches end, resume or 410);
 *  2. etcd is killed and restarted right after Karmada writes Ready=False (the app's taint write meets it);
 *  3. karmada-webhook is down (Karmada's validating webhook covers ResourceBinding updates, failurePolicy
 *     Fail): the app's eviction writes are refused until it is back, then land, each once;
 *  4. the member flaps (down, up, down, up) while evictions are queued.
 *
 * Every scenario asserts nothing is evicted twice (the bindings' recorded versions, the ledger, the app's
 * Evicted events), nothing is lost (every workload Healthy somewhere, tasks cleared) and nothing is evicted
 * after the recovery.
 */

const RATE = 0.5; // Karmada's own default --resource-eviction-rate
const GROUP = 6;
const FLAP_GROUP = 16;
const POLICY = 'detect-cluster-not-ready';
const GROUPS = ['f1', 'f2', 'f3', 'f4'];

let karmada: RealKarmada | undefined;
let host: HostProcess | undefined;
let clusters: KarmadaWatch;
let bindings: KarmadaWatch<Binding>;
const report: Record<string, unknown> = {};

const departures = (key: string, cluster: string, since: number) => departuresOf(bindings, key, cluster, since);
const member = (name: string) => karmada!.members.find((m) => m.name === name)!;

const exited = () => !!host && (host.child.exitCode !== null || host.child.signalCode !== null);

/** Fails at once (with the app's last words) when the app's process is gone: no use waiting for it. */
function alive() {
  if (exited())
    throw new Error(`the app's process exited (${host!.child.exitCode ?? host!.child.signalCode}):\n${host!.output().split('\n').slice(-25).join('\n')}`);
}

/** Each scenario starts with a running app: one that a previous scenario took down is started again (and said so). */
async function ensureHost() {
  if (!exited()) return;
  crashes.push(
    host!
      .output()
      .split('\n')
      .filter((l) => l.includes('KubeApiError'))
      .slice(-1)[0] ?? `exit ${host!.child.exitCode}`,
  );
  host = await startHostProcess(karmadaHostEnv(karmada!, RATE));
  const deadline = Date.now() + 30_000;
  while ((await appGet(host, 'healthz')).status !== 200) {
    if (Date.now() > deadline) throw new Error('the restarted app did not come up');
    await new Promise((r) => setTimeout(r, 250));
  }
}
const crashes: string[] = [];

/** Every key gone from `cluster`, Healthy where Karmada placed it, its task from `cluster` cleared. */
const movedAndSettled = (keys: string[], cluster: string) => () =>
  alive() ??
  keys.every((k) => {
    const b = bindings.get(k);
    return healthyWhereScheduled(b) && !placedOn(b).includes(cluster) && !taskFrom(b, cluster);
  });

function dump(title: string, since: number, keys: string[]) {
  return (error: unknown) => {
    const lines = logLines(host!).filter((l) => l.t >= since && l.msg !== 'invocation');
    console.log(`--- ${title}: app log\n${renderLog(lines, since, 200)}`);
    for (const k of keys) {
      const b = bindings.get(k);
      console.log(
        `${k}: ${placedOn(b).join()} tasks=${JSON.stringify(tasksOf(b))} health=${JSON.stringify(b?.status?.aggregatedStatus?.map((s) => `${s.clusterName}:${s.health}`))}`,
      );
    }
    throw error;
  };
}

async function recover(name: string): Promise<number> {
  const restartAt = Date.now();
  await member(name).restart();
  await clusters.until(
    `${name} Ready=True, untainted`,
    () => readyOf(clusters.get(name))?.status === 'True' && !hasNotReadyNoExecute(clusters.get(name)),
    60_000,
  );
  return clusters.history(name).find((r) => r.at >= restartAt && readyOf(r.object)?.status === 'True' && !hasNotReadyNoExecute(r.object))!.at;
}

/** Each key's ledger rows of a failure of `cluster` decided since `since`: one each, all done; and one Evicted event each. */
async function expectEvictedOnce(keys: string[], cluster: string, since: number) {
  for (const k of keys) expect(departures(k, cluster, since), `${k} left ${cluster}`).toHaveLength(1);
  const rows = (await evictionRows(host!, `cluster=${cluster}`)).filter((r) => r.reason === 'TaintUntolerated' && Date.parse(r.decidedAt!) >= since - 2000);
  expect(rows.map((r) => `default/${r.binding.name}`).sort()).toEqual([...keys].sort());
  expect(rows.map((r) => r.state)).toEqual(keys.map(() => 'done'));
  for (const k of keys) {
    const evicted = (await appEvents(host!, 'ResourceBinding', k)).filter((e) => e.reason === 'Evicted');
    expect(evicted, `${k}: Evicted events`).toHaveLength(1);
  }
}

async function removeGroup(group: string) {
  await karmada!.kubectl(['delete', 'deployment', '-n', 'default', '-l', `group=${group}`, '--wait=false']);
}

beforeAll(async () => {
  const binDir = await ensureKarmadaBuilt({ onOutput: (chunk) => process.stderr.write(chunk) });
  karmada = await startRealKarmada({ members: 3, binDir });
  clusters = new KarmadaWatch(karmada, '/apis/cluster.karmada.io/v1alpha1/clusters');
  bindings = new KarmadaWatch<Binding>(karmada, '/apis/work.karmada.io/v1alpha2/resourcebindings');
  await Promise.all([clusters.start(), bindings.start()]);
  await applyYaml(karmada, karmadaTaintPolicy(POLICY));
  for (const group of GROUPS)
    await applyYaml(karmada, propagationPolicy({ name: group, group, clusters: ['member1', 'member2', 'member3'], tolerationSeconds: 0 }));
  host = await startHostProcess(karmadaHostEnv(karmada, RATE));
  const deadline = Date.now() + 30_000;
  while ((await appGet(host, 'healthz')).status !== 200) {
    if (Date.now() > deadline) throw new Error(`the app did not come up:\n${host.output().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}, 6 * 60_000);

afterAll(async () => {
  clusters?.stop();
  bindings?.stop();
  if (exited())
    crashes.push(
      host!
        .output()
        .split('\n')
        .filter((l) => l.includes('KubeApiError'))
        .slice(-1)[0] ?? 'exit',
    );
  if (crashes.length) report.appCrashes = crashes;
  if (Object.keys(report).length) console.log(JSON.stringify({ scenario: 'karmada-faults', ...report }));
  await host?.stop();
  // For a post-mortem: the app's whole output (and REAL_KARMADA_KEEP=1 keeps Karmada's logs).
  if (process.env.KARMADA_SCENARIO_HOST_LOG && host) writeFileSync(process.env.KARMADA_SCENARIO_HOST_LOG, host.output());
  await karmada?.stop();
}, 60_000);

describe('faults during a failover on a real Karmada', () => {
  it('the karmada-apiserver is killed and restarted after the first eviction: every eviction lands once, nothing lost', async () => {
    await ensureHost();
    const keys = await placeGroupOn(karmada!, clusters, bindings, { prefix: 'f1', group: 'f1', count: GROUP, cluster: 'member1' });
    const killedAt = Date.now();
    await member('member1').kill();
    await bindings.until('the first eviction', () => keys.some((k) => departures(k, 'member1', killedAt).length > 0), 60_000).catch(dump('f1', killedAt, keys));

    const health: number[] = [];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        health.push((await appGet(host!, 'healthz').catch(() => ({ status: 0 }))).status);
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    const gone = bindings.gone;
    const downAt = Date.now();
    await karmada!.restartApiServer();
    const upAt = Date.now();
    await bindings.until('every workload moved, Healthy, task cleared', movedAndSettled(keys, 'member1'), 90_000).catch(dump('f1', killedAt, keys));
    polling = false;
    await poller;

    await expectEvictedOnce(keys, 'member1', killedAt);
    const relisted = logLines(host!).filter((l) => l.t >= downAt && /relisted/.test(l.msg));
    report.apiServerRestart = {
      downS: seconds(upAt - downAt),
      appHealthzStatuses: [...new Set(health)],
      appRelistedAfterRestart: relisted.map((l) => l.msg),
      testWatch410s: bindings.gone - gone,
      settledAfterRestartS: seconds(Date.now() - upAt),
    };
    const untainted = await recover('member1');
    // Nothing evicted after the recovery.
    await new Promise((r) => setTimeout(r, 3000));
    for (const k of keys) for (const t of departures(k, 'member1', killedAt)) expect(t).toBeLessThan(untainted);
    await removeGroup('f1');
    alive();
  }, 180_000);

  it('etcd is killed and restarted right after Ready=False: the taint and every eviction still land, once each', async () => {
    await ensureHost();
    const keys = await placeGroupOn(karmada!, clusters, bindings, { prefix: 'f2', group: 'f2', count: GROUP, cluster: 'member2' });
    const killedAt = Date.now();
    await member('member2').kill();
    const readyFalse = await clusters.until(
      'member2 Ready=False',
      () => (readyOf(clusters.get('member2'))?.status === 'False' ? Date.now() : undefined),
      30_000,
    );
    const gone = bindings.gone + clusters.gone;
    await karmada!.restartEtcd();
    const etcdUpAt = Date.now();
    const tainted = await clusters
      .until('member2 tainted', () => (hasNotReadyNoExecute(clusters.get('member2')) ? Date.now() : undefined), 60_000)
      .catch(dump('f2', killedAt, keys));
    await bindings.until('every workload moved, Healthy, task cleared', movedAndSettled(keys, 'member2'), 90_000).catch(dump('f2', killedAt, keys));
    await expectEvictedOnce(keys, 'member2', killedAt);
    report.etcdRestart = {
      etcdDownS: seconds(etcdUpAt - readyFalse),
      taintAfterReadyFalseS: seconds(tainted - readyFalse),
      appRelisted: logLines(host!)
        .filter((l) => l.t >= readyFalse && /relisted/.test(l.msg))
        .map((l) => l.msg),
      testWatch410s: bindings.gone + clusters.gone - gone,
      warnings: logLines(host!)
        .filter((l) => l.t >= readyFalse && (l.level === 'warn' || l.level === 'error'))
        .slice(0, 5)
        .map((l) => l.msg),
    };
    const untainted = await recover('member2');
    await new Promise((r) => setTimeout(r, 3000));
    for (const k of keys) for (const t of departures(k, 'member2', killedAt)) expect(t).toBeLessThan(untainted);
    await removeGroup('f2');
    alive();
  }, 180_000);

  it("karmada-webhook is down: the app's eviction writes are refused, nothing is given up, and they land once each when it is back", async () => {
    await ensureHost();
    const keys = await placeGroupOn(karmada!, clusters, bindings, { prefix: 'f3', group: 'f3', count: GROUP, cluster: 'member3' });
    await karmada!.stopWebhook();
    let webhookUp = false;
    try {
      const killedAt = Date.now();
      await member('member3').kill();
      // Cluster writes do not pass the webhook: the taint lands.
      const tainted = await clusters
        .until('member3 tainted', () => (hasNotReadyNoExecute(clusters.get('member3')) ? Date.now() : undefined), 60_000)
        .catch(dump('f3', killedAt, keys));
      // The app tries to evict and is refused (its log says so); it neither gives up nor loses a row.
      const refusal = await waitForValue(
        () => logLines(host!).find((l) => l.t >= tainted && (l.level === 'warn' || l.level === 'error') && /webhook/i.test(JSON.stringify(l))),
        30_000,
      ).catch(dump('f3: no refused write in the log', killedAt, keys));
      await new Promise((r) => setTimeout(r, 3000));
      for (const k of keys) expect(departures(k, 'member3', killedAt), `${k} moved while the webhook was down`).toEqual([]);
      const waiting = (await evictionRows(host!, 'cluster=member3')).filter((r) => Date.parse(r.decidedAt!) >= killedAt - 2000);
      expect(waiting.map((r) => `default/${r.binding.name}`).sort()).toEqual([...keys].sort());
      expect(waiting.filter((r) => r.state === 'done' || r.state === 'abandoned' || r.state === 'blocked')).toEqual([]);

      await karmada!.startWebhook();
      webhookUp = true;
      const upAt = Date.now();
      await bindings.until('every workload moved, Healthy, task cleared', movedAndSettled(keys, 'member3'), 120_000).catch(dump('f3', killedAt, keys));
      await expectEvictedOnce(keys, 'member3', killedAt);
      const times = keys.map((k) => departures(k, 'member3', killedAt)[0]).sort((a, b) => a - b);
      report.webhookDown = {
        refusal: { msg: refusal.msg, text: JSON.stringify(refusal).slice(0, 600) },
        rowStatesWhileDown: waiting.map((r) => `${r.state}/${r.attempts ?? 0}`),
        firstEvictionAfterWebhookUpS: seconds(times[0] - upAt),
        lastEvictionAfterWebhookUpS: seconds(times[times.length - 1] - upAt),
      };
      const untainted = await recover('member3');
      await new Promise((r) => setTimeout(r, 3000));
      for (const k of keys) for (const t of departures(k, 'member3', killedAt)) expect(t).toBeLessThan(untainted);
    } finally {
      if (!webhookUp) await karmada!.startWebhook();
    }
    await removeGroup('f3');
    alive();
  }, 240_000);

  it('a member flaps (down, up, down, up) while evictions are queued: none twice, none after the recovery, none lost', async () => {
    await ensureHost();
    const keys = await placeGroupOn(karmada!, clusters, bindings, { prefix: 'f4', group: 'f4', count: FLAP_GROUP, cluster: 'member1' });
    const startedAt = Date.now();
    // Two short failures: member1 comes back as soon as it is tainted, while its evictions are still queued.
    for (let round = 1; round <= 2; round++) {
      await member('member1').kill();
      await clusters
        .until(`member1 tainted (round ${round})`, () => hasNotReadyNoExecute(clusters.get('member1')), 60_000)
        .catch(dump(`f4 round ${round}`, startedAt, keys));
      await recover('member1');
    }
    // Every row of the flaps settles; then a few seconds more in which nothing moves.
    const rows = await waitForValue(async () => {
      const all = (await evictionRows(host!, 'cluster=member1')).filter((r) => keys.includes(`default/${r.binding.name}`));
      return all.length > 0 && all.every((r) => r.state === 'done' || r.state === 'abandoned') ? all : undefined;
    }, 30_000).catch(dump('f4 ledger', startedAt, keys));
    await new Promise((r) => setTimeout(r, 4000));

    // The tainted intervals, as the watch saw them.
    const intervals: Array<[number, number]> = [];
    let from: number | undefined;
    for (const r of clusters.history('member1').filter((x) => x.at >= startedAt)) {
      if (hasNotReadyNoExecute(r.object) && from === undefined) from = r.at;
      if (!hasNotReadyNoExecute(r.object) && from !== undefined) {
        intervals.push([from, r.at]);
        from = undefined;
      }
    }
    expect(intervals).toHaveLength(2);
    const finalUntaint = intervals[intervals.length - 1][1];
    const done = new Set(rows.filter((r) => r.state === 'done').map((r) => `default/${r.binding.name}`));
    report.flapping = {
      taintedIntervalsS: intervals.map(([a, b]) => [seconds(a - startedAt), seconds(b - startedAt)]),
      moved: done.size,
      stayed: keys.length - done.size,
      departuresS: keys
        .flatMap((k) => departures(k, 'member1', startedAt))
        .map((t) => seconds(t - startedAt))
        .sort((a, b) => a! - b!),
      rows: rows.map((r) => r.state),
    };
    for (const k of keys) {
      const times = departures(k, 'member1', startedAt);
      expect(times.length, `${k} left member1 ${times.length} times`).toBeLessThanOrEqual(1);
      for (const t of times) {
        expect(t, `${k} evicted after the final recovery`).toBeLessThanOrEqual(finalUntaint + 500);
        expect(
          intervals.some(([a, b]) => t >= a && t <= b + 500),
          `${k} evicted at +${t - startedAt} ms, outside the tainted intervals ${JSON.stringify(intervals.map(([a, b]) => [a - startedAt, b - startedAt]))}`,
        ).toBe(true);
      }
      expect(done.has(k), `${k}: a done row exactly when it moved`).toBe(times.length === 1);
      expect(rows.filter((r) => `default/${r.binding.name}` === k && r.state === 'done').length).toBeLessThanOrEqual(1);
    }
    expect(done.size, 'some evictions ran during the flaps').toBeGreaterThanOrEqual(1);
    expect(keys.length - done.size, 'some were still queued at each recovery and abandoned').toBeGreaterThanOrEqual(1);
    // None lost: each one runs Healthy on exactly one cluster, with no task left.
    await bindings.until(
      'every workload Healthy where it is, no task left',
      () => keys.every((k) => placedOn(bindings.get(k)).length === 1 && healthyWhereScheduled(bindings.get(k)) && tasksOf(bindings.get(k)).length === 0),
      60_000,
    );
  }, 240_000);
});

async function waitForValue<T>(check: () => T | undefined | Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
