import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostProcess, startHostProcess } from '../helpers/hostProcess';
import {
  appGet,
  applyYaml,
  Binding,
  departures as departuresOf,
  deployments,
  EvictionRow,
  evictionRows,
  hasNotReadyNoExecute,
  healthyWhereScheduled,
  karmadaHostEnv,
  karmadaTaintPolicy,
  KarmadaWatch,
  LogLine,
  logLines,
  NOT_READY,
  placedOn,
  placeGroupOn,
  propagationPolicy,
  readyOf,
  renderLog,
  seconds,
  setupCordon,
  type Taint,
  taintsOf,
  taskFrom,
  tasksOf,
  writersOf,
} from '../helpers/karmadaScenario';
import { ensureKarmadaBuilt, RealKarmada, startRealKarmada } from '../helpers/realKarmada';

/**
 * Cluster failover end to end on a real Karmada v1.18.2 control plane (test/helpers/realKarmada.ts), with the
 * app (a local host process in Karmada mode) as Karmada's failover controllers; Karmada's own
 * (clustertaintpolicy, taint manager, gracefulEviction, applicationFailover) are off, its clusterStatus
 * controller writes Ready and its scheduler places what the app evicts.
 *
 * Three kwok members; 20 Deployments under one PropagationPolicy (Duplicated, one cluster each over all three,
 * the not-ready NoExecute taint tolerated for 0 s, failback after 5 s), ten of them on member1; Karmada's own
 * ClusterTaintPolicy shape (Ready NotIn [True] adds not-ready:NoExecute, Ready In [True] removes it).
 *
 *  1. member1's API server dies: Karmada writes Ready=False, the app taints member1, evicts its ten bindings
 *     at RESOURCE_EVICTION_RATE, Karmada places them elsewhere, the app clears each task once the new copy is
 *     Healthy. The timings go to the output as one JSON line.
 *  2. member1 comes back: Ready=True, the taint goes, the evicted bindings go home after the failback window.
 *  3. member1 dies again and comes back while evictions are still queued: the rest are abandoned, nothing is
 *     evicted after the taint is gone.
 *  4. Application failover: a workload made Unhealthy on its member moves after its tolerationSeconds.
 *  5. Events in `kubectl describe`, and `kubectl wait` on the policy's EvictionInProgress condition.
 *  6. Failback while the home still has its graceful-eviction task (the replacement never got Healthy):
 *     the workload must end on its home, not on a third cluster.
 */

const ROOT = join(__dirname, '..', '..');
const RATE = 0.5; // Karmada's own default --resource-eviction-rate
const WEB = 20;
const ON_MEMBER1 = 10;
const FAILBACK_AFTER = 5;
const APP_TOLERATION = 5;
const POLICY = 'detect-cluster-not-ready';
const FB_GROUP = 3;
const FB_FAILBACK_AFTER = 2;
/** Beyond this a step waited for something (a timer tick, a queue poll, the next watch) instead of following. */
const AT_ONCE_S = 3;

let karmada: RealKarmada | undefined;
let host: HostProcess | undefined;
let clusters: KarmadaWatch;
let bindings: KarmadaWatch<Binding>;
const report: Record<string, unknown> = {};

const rbKey = (i: number) => `default/web-${i}-deployment`;
const webKeys = () => Array.from({ length: WEB }, (_, i) => rbKey(i));
const member1 = () => clusters.get('member1');
const onCluster = (cluster: string) => webKeys().filter((k) => placedOn(bindings.get(k)).includes(cluster));

const apply = (yaml: string) => applyYaml(karmada!, yaml);
const cordon = (cluster: string, on: boolean) => setupCordon(karmada!, cluster, on);
const departures = (key: string, cluster: string, since: number) => departuresOf(bindings, key, cluster, since);

/** When each binding's record first satisfied `check` at or after `since` (undefined: never). */
function firstTimes(keys: string[], since: number, check: (b: Binding) => boolean): Map<string, number | undefined> {
  return new Map(keys.map((k) => [k, bindings.history(k).find((r) => r.at >= since && check(r.object))?.at]));
}

function logsBetween(from: number, to: number, filter: (l: LogLine) => boolean = () => true) {
  return logLines(host!).filter((l) => l.t >= from && l.t <= to && filter(l));
}

function dumpOnFailure(title: string, since: number) {
  return (error: unknown) => {
    console.log(
      `--- ${title}: app log since then (no invocation lines)\n${renderLog(
        logsBetween(since, Date.now() + 1000, (l) => l.msg !== 'invocation'),
        since,
        200,
      )}`,
    );
    console.log(
      `--- the app's process: exit ${host?.child.exitCode ?? 'none'} ${host?.child.signalCode ?? ''}; last output:\n${host?.output().split('\n').slice(-15).join('\n').slice(-4000)}`,
    );
    console.log(`--- member1: ${JSON.stringify({ ready: readyOf(member1()), taints: member1()?.spec?.taints })}`);
    for (const k of webKeys()) {
      const b = bindings.get(k);
      console.log(
        `${k}: ${placedOn(b).join()} tasks=${JSON.stringify(tasksOf(b))} health=${JSON.stringify(b?.status?.aggregatedStatus?.map((s) => `${s.clusterName}:${s.health}`))}`,
      );
    }
    throw error;
  };
}

beforeAll(async () => {
  const binDir = await ensureKarmadaBuilt({ onOutput: (chunk) => process.stderr.write(chunk) });
  const started = Date.now();
  karmada = await startRealKarmada({ members: 3, binDir });
  report.controlPlaneStartS = seconds(Date.now() - started);
  clusters = new KarmadaWatch(karmada, '/apis/cluster.karmada.io/v1alpha1/clusters');
  bindings = new KarmadaWatch<Binding>(karmada, '/apis/work.karmada.io/v1alpha2/resourcebindings');
  await Promise.all([clusters.start(), bindings.start()]);

  // The app's status CRD for Karmada's ClusterTaintPolicy (which has no status subresource), then the objects.
  await karmada.kubectl(['apply', '--server-side', '-f', join(ROOT, 'infra', 'taintpolicystatus-crd.yaml')]);
  await karmada.kubectl(['wait', '--for=condition=Established', 'crd/taintpolicystatuses.failover.io', '--timeout=30s']);
  await apply(karmadaTaintPolicy(POLICY));
  await apply(
    propagationPolicy({ name: 'web', group: 'web', clusters: ['member1', 'member2', 'member3'], tolerationSeconds: 0, failbackAfterSeconds: FAILBACK_AFTER }),
  );
  await apply(
    propagationPolicy({ name: 'fb', group: 'fb', clusters: ['member1', 'member2', 'member3'], tolerationSeconds: 0, failbackAfterSeconds: FB_FAILBACK_AFTER }),
  );
  await apply(
    propagationPolicy({
      name: 'appfo',
      group: 'appfo',
      clusters: ['member2', 'member3'],
      application: { tolerationSeconds: APP_TOLERATION, purgeMode: 'Gracefully', gracePeriodSeconds: 600 },
    }),
  );

  // Ten on member1, ten on the others: Karmada's scheduler picks among equal clusters at random, so the
  // others are cordoned while the first ten are placed, and member1 while the rest are.
  const docs = deployments('web', 'web', WEB).split('---\n');
  await Promise.all([cordon('member2', true), cordon('member3', true)]);
  await apply(docs.slice(0, ON_MEMBER1).join('---\n'));
  await bindings.until(
    'the first ten on member1',
    () =>
      webKeys()
        .slice(0, ON_MEMBER1)
        .every((k) => placedOn(bindings.get(k)).join() === 'member1'),
    60_000,
  );
  await cordon('member1', true);
  await Promise.all([cordon('member2', false), cordon('member3', false)]);
  await apply([...docs.slice(ON_MEMBER1), deployments('appfo', 'appfo', 1)].join('---\n'));
  await bindings.until(
    'every binding placed and Healthy',
    () => [...webKeys(), 'default/appfo-0-deployment'].every((k) => healthyWhereScheduled(bindings.get(k))),
    90_000,
  );
  await cordon('member1', false);
  await clusters.until('no setup taint left', () => [...clusters.objects.values()].every((c) => !(c.spec?.taints ?? []).length), 20_000);
  expect(onCluster('member1')).toHaveLength(ON_MEMBER1);

  host = await startHostProcess(karmadaHostEnv(karmada, RATE));
  await waitHealthy(host, WEB + 1);
}, 6 * 60_000);

/** Healthy once its first sync has reached the API server, and it sees Karmada's bindings. */
async function waitHealthy(app: HostProcess, bindingCount = 0) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const health = await appGet(app, 'healthz');
    const listed = await appGet(app, 'resourcebindings');
    const count = Array.isArray(listed.body?.items) ? listed.body.items.length : -1;
    if (health.status === 200 && count >= bindingCount) return;
    if (Date.now() > deadline) throw new Error(`the app did not come up: healthz ${health.status} ${JSON.stringify(health.body)}, bindings ${count}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

afterAll(async () => {
  clusters?.stop();
  bindings?.stop();
  if (Object.keys(report).length) console.log(JSON.stringify({ scenario: 'karmada-failover', ...report }));
  await host?.stop();
  // For a post-mortem: the app's whole output (and REAL_KARMADA_KEEP=1 keeps Karmada's logs).
  if (process.env.KARMADA_SCENARIO_HOST_LOG && host) writeFileSync(process.env.KARMADA_SCENARIO_HOST_LOG, host.output());
  await karmada?.stop();
}, 60_000);

describe('cluster failover on a real Karmada, with the app as its failover controllers', () => {
  let killedAt = 0;
  let evicted: string[] = [];
  let stayed: string[] = [];
  const phase1: Record<string, number | undefined> = {};

  it('member1 dies: Ready=False from Karmada, the NoExecute taint, paced evictions Karmada places elsewhere, tasks cleared once Healthy', async () => {
    evicted = onCluster('member1');
    stayed = webKeys().filter((k) => !evicted.includes(k));
    expect(evicted).toHaveLength(ON_MEMBER1);
    const before = new Map(stayed.map((k) => [k, placedOn(bindings.get(k)).join()]));

    // The app publishes its policy's conditions where kubectl reads them (Karmada's ClusterTaintPolicy has no status).
    const created = await karmada!.kubectl(['wait', '--for=create', `taintpolicystatus/${POLICY}`, '--timeout=30s'], { allowFailure: true });
    expect(created.code, `TaintPolicyStatus ${POLICY}: ${created.stderr}`).toBe(0);

    killedAt = Date.now();
    await karmada!.members[0].kill();

    // `kubectl wait` on the policy's status, started now: it returns once the app says evictions are in progress.
    const inProgress = karmada!.kubectl(['wait', '--for=condition=EvictionInProgress=true', `taintpolicystatus/${POLICY}`, '--timeout=60s'], {
      allowFailure: true,
    });

    await clusters.until('member1 Ready=False', () => readyOf(member1())?.status === 'False', 30_000);
    const taint = await clusters
      .until('the not-ready NoExecute taint on member1', () => (hasNotReadyNoExecute(member1()) ? member1() : undefined), 30_000)
      .catch(dumpOnFailure('taint', killedAt));
    const noExecute = (taint.spec.taints as Array<{ key: string; effect: string; timeAdded?: string }>).find(
      (t) => t.key === NOT_READY && t.effect === 'NoExecute',
    )!;
    expect(noExecute.timeAdded).toBeDefined();
    expect(JSON.parse(taint.metadata.annotations?.['failover.io/taint-owners'] ?? '{}')[`${NOT_READY}:NoExecute`]?.karmadaOwners).toEqual([POLICY]);

    // Every binding on member1 leaves it, each once; Karmada places it elsewhere; the task goes once it is Healthy.
    await bindings
      .until(
        'every evicted workload Healthy elsewhere with its task cleared',
        () =>
          evicted.every(
            (k) => healthyWhereScheduled(bindings.get(k)) && !placedOn(bindings.get(k)).includes('member1') && !taskFrom(bindings.get(k), 'member1'),
          ),
        (ON_MEMBER1 / RATE) * 1000 + 60_000,
      )
      .catch(dumpOnFailure('evictions', killedAt));

    const readyRecord = clusters.history('member1').find((r) => r.at >= killedAt && readyOf(r.object)?.status === 'False')!;
    const taintRecord = clusters.history('member1').find((r) => r.at >= killedAt && hasNotReadyNoExecute(r.object))!;
    const tReady = readyRecord.at;
    const tTaint = taintRecord.at;
    const evictedAt = new Map(evicted.map((k) => [k, departures(k, 'member1', killedAt)]));
    for (const [k, times] of evictedAt) expect(times, `${k} left member1 ${times.length} times`).toHaveLength(1);
    const evictionTimes = [...evictedAt.values()].map((t) => t[0]).sort((a, b) => a - b);
    const elsewhere = firstTimes(evicted, killedAt, (b) => healthyWhereScheduled(b) && !placedOn(b).includes('member1'));
    const cleared = new Map(evicted.map((k) => [k, bindings.history(k).find((r) => r.at > evictedAt.get(k)![0] && !taskFrom(r.object, 'member1'))?.at]));
    const first = evictionTimes[0];
    const last = evictionTimes[evictionTimes.length - 1];
    const achieved = (evictionTimes.length - 1) / ((last - first) / 1000);

    // What Karmada holds now: the task as Karmada's taint manager writes it (seen in the history), the others untouched.
    for (const k of evicted) {
      const withTask = bindings.history(k).find((r) => taskFrom(r.object, 'member1'))!.object;
      expect(taskFrom(withTask, 'member1')).toMatchObject({
        fromCluster: 'member1',
        reason: 'TaintUntolerated',
        producer: 'TaintManager',
        purgeMode: 'Gracefully',
      });
      expect(placedOn(bindings.get(k))).toHaveLength(1);
    }
    for (const k of stayed) {
      expect(placedOn(bindings.get(k)).join(), k).toBe(before.get(k));
      expect(
        bindings.history(k).some((r) => r.at >= killedAt && tasksOf(r.object).length > 0),
        k,
      ).toBe(false);
    }
    // The ledger: one done row per evicted binding, paced.
    const rows = (await evictionRows(host!, 'cluster=member1')).filter((r) => r.reason === 'TaintUntolerated');
    expect(rows.map((r) => `default/${r.binding.name}`).sort()).toEqual([...evicted].sort());
    expect(rows.every((r) => r.state === 'done')).toBe(true);
    const executed = rows.map((r) => Date.parse(r.executedAt!)).sort((a, b) => a - b);
    const ledgerRate = (executed.length - 1) / ((executed[executed.length - 1] - executed[0]) / 1000);
    expect(achieved).toBeLessThanOrEqual(RATE * 1.15);
    expect(achieved).toBeGreaterThanOrEqual(RATE * 0.8);

    const waited = await inProgress;
    expect(waited.code, `kubectl wait EvictionInProgress=true: ${waited.stderr}`).toBe(0);

    // One Ready=False run while down: the app's probes and Karmada's clusterStatus do not fight over Ready.
    const readyRuns = clusters
      .history('member1')
      .filter((r) => r.at >= killedAt)
      .map((r) => readyOf(r.object)?.status)
      .filter((s, i, all) => i === 0 || s !== all[i - 1]);
    expect(readyRuns).toEqual(['False']);

    Object.assign(phase1, { tReady, tTaint, first, last });
    const rel = (t: number | undefined) => seconds(t === undefined ? undefined : t - killedAt);
    Object.assign(report, {
      workloads: WEB,
      onKilledMember: evicted.length,
      configuredRate: RATE,
      achievedRate: Math.round(achieved * 1000) / 1000,
      achievedRateLedger: Math.round(ledgerRate * 1000) / 1000,
      fromKillS: {
        readyFalse: rel(tReady),
        taint: rel(tTaint),
        firstEviction: rel(first),
        lastEviction: rel(last),
        everyWorkloadElsewhere: rel(Math.max(...[...elsewhere.values()].map((t) => t ?? Infinity))),
        tasksCleared: rel(Math.max(...[...cleared.values()].map((t) => t ?? Infinity))),
      },
      taintAfterReadyFalseS: seconds(tTaint - tReady),
      // Who wrote Ready=False and the taint (managedFields of the first versions that carried them).
      readyFalse: { condition: readyOf(readyRecord.object), writers: writersOf(readyRecord.object, 'f:conditions') },
      taintWriters: writersOf(taintRecord.object, 'f:taints'),
      firstEvictionAfterTaintS: seconds(first - tTaint),
      readyRunsWhileDown: readyRuns,
      appPath: appPath(tReady, tTaint, first),
    });
    console.log(
      `--- the app's log from Ready=False (watch: +0) to the first eviction (+${((first - tReady) / 1000).toFixed(3)} s):\n${renderLog(logsBetween(tReady - 1000, first + 500), tReady, 120)}`,
    );
    expect(Number.isFinite((report.fromKillS as Record<string, number>).everyWorkloadElsewhere)).toBe(true);
    expect(Number.isFinite((report.fromKillS as Record<string, number>).tasksCleared)).toBe(true);
  }, 150_000);

  // The targets (taint within 0.3 s of Ready=False, first eviction within 0.5 s of the taint) are measured by
  // `npm run bench -- karmada-vs-ours` on a quiet machine; here, beside other tests, only what no load explains:
  // a step that waited for a timer or a queue poll instead of following at once.
  it(`acts at once: taint within ${AT_ONCE_S} s of Ready=False, first eviction within ${AT_ONCE_S} s of the taint`, () => {
    expect(phase1.tTaint, 'phase 1 did not run').toBeDefined();
    const taintDelay = (phase1.tTaint! - phase1.tReady!) / 1000;
    const evictionDelay = (phase1.first! - phase1.tTaint!) / 1000;
    expect.soft(taintDelay, `taint ${taintDelay} s after Ready=False; app path ${JSON.stringify(report.appPath)}`).toBeLessThanOrEqual(AT_ONCE_S);
    expect.soft(evictionDelay, `first eviction ${evictionDelay} s after the taint; app path ${JSON.stringify(report.appPath)}`).toBeLessThanOrEqual(AT_ONCE_S);
  });

  it('the policy status says the evictions are over: kubectl wait --for=condition=EvictionInProgress=false', async () => {
    const waited = await karmada!.kubectl(['wait', '--for=condition=EvictionInProgress=false', `taintpolicystatus/${POLICY}`, '--timeout=30s'], {
      allowFailure: true,
    });
    expect(waited.code, waited.stderr).toBe(0);
    const status = await karmada!.kubectl(['get', 'taintpolicystatus', POLICY, '-o', 'json']);
    const conditions = JSON.parse(status.stdout).status?.conditions as Array<{ type: string; status: string; reason: string }>;
    expect(conditions.find((c) => c.type === 'EvictionInProgress')).toMatchObject({ status: 'False', reason: 'NoPendingEvictions' });
    // Karmada's own kind has no status: waiting on it cannot work, which is why the status has a kind of its own.
    const onKarmadaKind = await karmada!.kubectl(['wait', '--for=condition=EvictionInProgress=false', `clustertaintpolicy/${POLICY}`, '--timeout=3s'], {
      allowFailure: true,
    });
    expect(onKarmadaKind.code).not.toBe(0);
  }, 45_000);

  it('member1 comes back: Ready=True, the taint goes, and the evicted workloads go home after the failback window, paced', async () => {
    expect(evicted.length).toBe(ON_MEMBER1);
    const restartAt = Date.now();
    await karmada!.members[0].restart();
    const tReadyTrue = await clusters.until('member1 Ready=True', () => (readyOf(member1())?.status === 'True' ? Date.now() : undefined), 60_000);
    await clusters.until('the NoExecute taint removed', () => !hasNotReadyNoExecute(member1()), 30_000).catch(dumpOnFailure('taint removal', restartAt));
    const tUntainted = clusters
      .history('member1')
      .find((r) => r.at >= restartAt && readyOf(r.object)?.status === 'True' && !hasNotReadyNoExecute(r.object))!.at;
    // The app's own annotation keeps no owner of the removed taint.
    expect(JSON.parse(member1()?.metadata.annotations?.['failover.io/taint-owners'] ?? '{}')[`${NOT_READY}:NoExecute`]).toBeUndefined();

    // Failback: home first (member1, with a Failback task on the cluster it leaves), then the other copy goes once Healthy.
    await bindings
      .until(
        'every evicted workload back on member1, Healthy, its Failback task cleared',
        () =>
          evicted.every(
            (k) => placedOn(bindings.get(k)).join() === 'member1' && healthyWhereScheduled(bindings.get(k)) && tasksOf(bindings.get(k)).length === 0,
          ),
        // After a member's API server restarts, Karmada's cache of that member can hold objects that are gone
        // there, and its execution controller fails to apply Works ("not found") for up to about a minute
        // and a half before its resync: Healthy on member1 may wait for Karmada that long.
        FAILBACK_AFTER * 1000 + (ON_MEMBER1 / RATE) * 1000 + 110_000,
      )
      .catch(async (error) => {
        console.log(`GET /api/failback: ${JSON.stringify((await appGet(host!, 'failback')).body).slice(0, 4000)}`);
        const onMember1 = await karmada!.members[0].kubectl(['get', 'deploy,pods', '-n', 'default', '-o', 'wide'], { allowFailure: true });
        console.log(`--- member1's own view:\n${onMember1.stdout}${onMember1.stderr}`);
        const works = await karmada!.kubectl(['get', 'works', '-n', 'karmada-es-member1', '-o', 'json'], { allowFailure: true });
        try {
          for (const w of JSON.parse(works.stdout).items.slice(0, 3))
            console.log(
              `work ${w.metadata.name}: ${JSON.stringify(w.status?.conditions?.map((c: { type: string; status: string; reason: string }) => `${c.type}=${c.status}/${c.reason}`))} manifests=${JSON.stringify(w.status?.manifestStatuses?.map((m: { health?: string }) => m.health))}`,
            );
        } catch {
          console.log(works.stderr);
        }
        return dumpOnFailure('failback', restartAt)(error);
      });
    const home = firstTimes(evicted, restartAt, (b) => placedOn(b).includes('member1'));
    const backTimes = [...home.values()].map((t) => t!).sort((a, b) => a - b);
    for (const k of evicted) {
      const back = bindings.history(k).find((r) => r.at >= restartAt && placedOn(r.object).includes('member1'))!.object;
      const task = tasksOf(back)[0];
      expect(task, `${k}: the copy it replaced is kept gracefully`).toMatchObject({ reason: 'Failback', producer: 'Failback', purgeMode: 'Gracefully' });
      expect(placedOn(back)).toEqual(['member1']);
    }
    // Not before the window (counted from the start of member1's healthy run), and paced at the global rate.
    expect(backTimes[0] - tUntainted).toBeGreaterThanOrEqual(FAILBACK_AFTER * 1000 - 1000);
    const failbackRate = (backTimes.length - 1) / ((backTimes[backTimes.length - 1] - backTimes[0]) / 1000);
    expect(failbackRate).toBeLessThanOrEqual(RATE * 1.15);
    const stillElsewhere = stayed.filter((k) => placedOn(bindings.get(k)).includes('member1'));
    expect(stillElsewhere, 'bindings that were never on member1 are not moved there').toEqual([]);

    Object.assign(report, {
      recovery: {
        readyTrueAfterRestartS: seconds(tReadyTrue - restartAt),
        taintRemovedAfterReadyTrueS: seconds(
          tUntainted - clusters.history('member1').find((r) => r.at >= restartAt && readyOf(r.object)?.status === 'True')!.at,
        ),
        firstFailbackAfterHealthyS: seconds(backTimes[0] - tUntainted),
        lastFailbackAfterHealthyS: seconds(backTimes[backTimes.length - 1] - tUntainted),
        failbackRate: Math.round(failbackRate * 1000) / 1000,
      },
    });
  }, 240_000);

  it('member1 dies again and is back while evictions are queued: the rest are abandoned, nothing evicted twice or after the taint is gone', async () => {
    const onIt = onCluster('member1');
    expect(onIt.length, 'failback brought the workloads home').toBeGreaterThanOrEqual(4);
    const ledgerBefore = new Set((await evictionRows(host!, 'cluster=member1')).map(rowId));
    const downAt = Date.now();
    await karmada!.members[0].kill();
    await bindings
      .until('the first eviction', () => onIt.some((k) => departures(k, 'member1', downAt).length > 0), 60_000)
      .catch(dumpOnFailure('second failure', downAt));
    const restartAt = Date.now();
    await karmada!.members[0].restart();
    await clusters.until('member1 Ready=True', () => readyOf(member1())?.status === 'True', 60_000);
    await clusters.until('the taint removed', () => !hasNotReadyNoExecute(member1()), 30_000).catch(dumpOnFailure('taint removal', restartAt));
    const tUntainted = clusters.history('member1').find((r) => r.at >= restartAt && !hasNotReadyNoExecute(r.object))!.at;

    // Every row of this failure settles: done or abandoned, none left pending or scheduled.
    const rows = await waitRows(async () => {
      const all = (await evictionRows(host!, 'cluster=member1')).filter((r) => r.reason === 'TaintUntolerated' && !ledgerBefore.has(rowId(r)));
      return all.length === onIt.length && all.every((r) => r.state === 'done' || r.state === 'abandoned') ? all : undefined;
    }, 30_000).catch(dumpOnFailure('ledger', downAt));
    const done = rows.filter((r) => r.state === 'done').map((r) => `default/${r.binding.name}`);
    const abandoned = rows.filter((r) => r.state === 'abandoned').map((r) => `default/${r.binding.name}`);
    expect(done.length).toBeGreaterThanOrEqual(1);
    expect(abandoned.length, 'some evictions were still queued when member1 recovered').toBeGreaterThanOrEqual(1);

    // A few seconds more: nothing else moves.
    await new Promise((r) => setTimeout(r, 4000));
    const moves = new Map(onIt.map((k) => [k, departures(k, 'member1', downAt)]));
    for (const [k, times] of moves) {
      expect(times.length, `${k} left member1 ${times.length} times`).toBeLessThanOrEqual(1);
      for (const t of times) expect(t, `${k} evicted ${t - tUntainted} ms after the taint was removed`).toBeLessThanOrEqual(tUntainted + 500);
    }
    const movedKeys = [...moves].filter(([, t]) => t.length > 0).map(([k]) => k);
    const mismatched = onIt.filter((k) => movedKeys.includes(k) !== done.includes(k));
    if (mismatched.length > 0) {
      console.log(`--- moved in Karmada vs done in the ledger differ for ${mismatched.join(', ')} (taint removed at +${tUntainted - downAt} ms)`);
      for (const k of mismatched) explainBinding(k, downAt, rows);
    }
    Object.assign(report, {
      secondFailure: {
        onMember: onIt.length,
        done: done.length,
        abandoned: abandoned.length,
        movedInKarmada: movedKeys.length,
        taintRemovedAfterRestartS: seconds(tUntainted - restartAt),
        lastEvictionBeforeTaintRemovalS: seconds(tUntainted - Math.max(...[...moves.values()].flat())),
      },
    });
    expect(
      [...moves]
        .filter(([, t]) => t.length === 1)
        .map(([k]) => k)
        .sort(),
      'exactly the done rows were written to Karmada',
    ).toEqual([...done].sort());
    for (const k of abandoned) expect(placedOn(bindings.get(k)), `${k} stays on member1`).toEqual(['member1']);
  }, 150_000);

  it('application failover: a workload Unhealthy on its member moves after its tolerationSeconds; its task goes once the new copy is Healthy', async () => {
    const key = 'default/appfo-0-deployment';
    const from = placedOn(bindings.get(key))[0];
    expect(['member2', 'member3']).toContain(from);
    const member = karmada!.members.find((m) => m.name === from)!;
    // The member's only node refuses new Pods, and the workload's Pod goes: its replacement stays Pending.
    await member.kubectl(['taint', 'node', 'kwok-node-0', 'test.failover.io/broken=true:NoSchedule']);
    try {
      const brokeAt = Date.now();
      await member.kubectl(['delete', 'pod', '-n', 'default', '-l', 'app=appfo-0', '--wait=false']);
      const unhealthyAt = await bindings.until(
        'Karmada reports the workload Unhealthy',
        () => (bindings.get(key)?.status?.aggregatedStatus?.some((s) => s.clusterName === from && s.health === 'Unhealthy') ? Date.now() : undefined),
        60_000,
      );
      const movedAt = await bindings
        .until('the app evicts it from its member', () => (taskFrom(bindings.get(key), from) ? Date.now() : undefined), APP_TOLERATION * 1000 + 30_000)
        .catch(dumpOnFailure('application failover', brokeAt));
      const task = taskFrom(bindings.get(key), from)!;
      expect(task).toMatchObject({ fromCluster: from, reason: 'ApplicationFailure', purgeMode: 'Gracefully', gracePeriodSeconds: 600 });
      expect(placedOn(bindings.get(key))).not.toContain(from);
      expect(movedAt - unhealthyAt, 'not before tolerationSeconds').toBeGreaterThanOrEqual(APP_TOLERATION * 1000 - 1000);
      await bindings.until(
        'the workload Healthy on the other member, its task cleared',
        () => healthyWhereScheduled(bindings.get(key)) && !placedOn(bindings.get(key)).includes(from) && !taskFrom(bindings.get(key), from),
        60_000,
      );
      Object.assign(report, { applicationFailover: { from, to: placedOn(bindings.get(key))[0], movedAfterUnhealthyS: seconds(movedAt - unhealthyAt) } });
    } finally {
      await member.kubectl(['taint', 'node', 'kwok-node-0', 'test.failover.io/broken-'], { allowFailure: true });
    }
  }, 120_000);

  it('says why in Kubernetes Events: kubectl describe of member1 and of an evicted binding', async () => {
    const cluster = await karmada!.kubectl(['describe', 'cluster', 'member1']);
    expect(cluster.stdout).toMatch(/TaintAdded/);
    expect(cluster.stdout).toMatch(/TaintRemoved/);
    expect(cluster.stdout).toMatch(/cluster\.karmada\.io\/not-ready/);
    expect(cluster.stdout).toMatch(/EvictionsEnqueued/);
    expect(cluster.stdout).toMatch(/EvictionsAbandoned/);
    const rb = await karmada!.kubectl(['describe', 'rb', '-n', 'default', evicted[0].split('/')[1]]);
    expect(rb.stdout).toMatch(/Evicted/);
    expect(rb.stdout).toMatch(/OldCopyRemoved/);
    expect(rb.stdout).toMatch(/FailedBack/);
    const app = await karmada!.kubectl(['describe', 'rb', '-n', 'default', 'appfo-0-deployment']);
    expect(app.stdout).toMatch(/WorkloadUnhealthy/);
    expect(app.stdout).toMatch(/ApplicationFailover/);
  }, 60_000);

  it('stays up when the workloads it acts on are deleted (their bindings go while it writes to them)', async () => {
    const deletedAt = Date.now();
    await karmada!.kubectl(['delete', 'deployment', '-n', 'default', '-l', 'group in (web,appfo)', '--wait=false']);
    await bindings.until('the bindings gone', () => [...bindings.objects.keys()].every((k) => !/\/(web|appfo)-/.test(k)), 60_000);
    await new Promise((r) => setTimeout(r, 5000));
    const crash = host!.child.exitCode !== null || host!.child.signalCode !== null;
    if (crash) console.log(`--- the app exited (${host!.child.exitCode ?? host!.child.signalCode}):\n${host!.output().split('\n').slice(-30).join('\n')}`);
    report.deletion = { appExited: crash, ...(crash ? { exitCode: host!.child.exitCode } : {}), checkedAfterS: seconds(Date.now() - deletedAt) };
    expect(crash, 'the app process exited').toBe(false);
    expect((await appGet(host!, 'healthz')).status).toBe(200);
  }, 90_000);

  it("fails back home even while the home's own graceful-eviction task is still there (the new copy never became Healthy)", async () => {
    // A fresh app if the last test took it down (its state is rebuilt from Karmada).
    if (host!.child.exitCode !== null || host!.child.signalCode !== null) {
      host = await startHostProcess(karmadaHostEnv(karmada!, RATE));
      await waitHealthy(host);
    }
    const keys = await placeGroupOn(karmada!, clusters, bindings, { prefix: 'fb', group: 'fb', count: FB_GROUP, cluster: 'member1' });
    // New Pods on member2 and member3 stay Pending: a workload moved there never becomes Healthy, so the
    // task that keeps its old copy on member1 stays (Karmada's ClusterEviction filter then excludes member1).
    const others = karmada!.members.filter((m) => m.name !== 'member1');
    await Promise.all(others.map((m) => m.kubectl(['taint', 'node', 'kwok-node-0', 'test.failover.io/full=true:NoSchedule'])));
    try {
      const downAt = Date.now();
      await karmada!.members[0].kill();
      await bindings
        .until('every fb workload evicted from member1', () => keys.every((k) => departures(k, 'member1', downAt).length === 1), 60_000)
        .catch(dumpOnFailure('fb evictions', downAt));
      for (const k of keys) expect(taskFrom(bindings.get(k), 'member1'), `${k} keeps its old copy on member1`).toBeDefined();
      const restartAt = Date.now();
      await karmada!.members[0].restart();
      await clusters.until('member1 Ready=True, untainted', () => readyOf(member1())?.status === 'True' && !hasNotReadyNoExecute(member1()), 60_000);
      const healthyAt = Date.now();
      // Correct: each goes home (its old copy there runs Healthy) and stays there.
      await bindings
        .until(
          'every fb workload back on member1',
          () => keys.every((k) => placedOn(bindings.get(k)).join() === 'member1' && healthyWhereScheduled(bindings.get(k))),
          FB_FAILBACK_AFTER * 1000 + (FB_GROUP / RATE) * 1000 + 20_000,
        )
        .catch(async (error) => {
          console.log(`GET /api/failback: ${JSON.stringify((await appGet(host!, 'failback')).body).slice(0, 3000)}`);
          for (const k of keys) explainBinding(k, restartAt, []);
          throw error;
        });
      await new Promise((r) => setTimeout(r, 4000));
      for (const k of keys) {
        const after = bindings.history(k).filter((r) => r.at >= healthyAt && placedOn(r.object).includes('member1'));
        const left = bindings.history(k).filter((r) => after.length > 0 && r.at > after[0].at && placedOn(r.object).join() !== 'member1');
        expect(
          left.map((r) => placedOn(r.object).join()),
          `${k} left its home again after the failback`,
        ).toEqual([]);
      }
    } finally {
      await Promise.all(others.map((m) => m.kubectl(['taint', 'node', 'kwok-node-0', 'test.failover.io/full-'], { allowFailure: true })));
    }
  }, 180_000);
});

describe('a FailoverBudget on a real Karmada', () => {
  const NS = 'budget';
  const COUNT = 6;
  const MAX_IN_FLIGHT = 2;

  /** Most bindings of `keys` that had a task from `cluster` at the same moment, from every recorded version since `since`. */
  function mostInFlight(keys: string[], cluster: string, since: number): number {
    const changes = keys
      .flatMap((k) =>
        bindings
          .history(k)
          .filter((r) => r.at >= since)
          .map((r) => ({ k, at: r.at, on: !!taskFrom(r.object, cluster) })),
      )
      .sort((a, b) => a.at - b.at);
    const state = new Map<string, boolean>();
    let most = 0;
    for (const c of changes) {
      state.set(c.k, c.on);
      most = Math.max(most, [...state.values()].filter(Boolean).length);
    }
    return most;
  }

  it(`installed from infra/, it holds member1's evictions at ${MAX_IN_FLIGHT} in flight while the new copies cannot run, and lets the rest go once they do`, async () => {
    if (host!.child.exitCode !== null || host!.child.signalCode !== null) {
      host = await startHostProcess(karmadaHostEnv(karmada!, RATE));
      await waitHealthy(host);
    }
    await karmada!.kubectl(['apply', '--server-side', '-f', join(ROOT, 'infra', 'failoverbudget-crd.yaml')]);
    await karmada!.kubectl(['wait', '--for=condition=Established', 'crd/failoverbudgets.failover.io', '--timeout=30s']);
    await karmada!.kubectl(['create', 'namespace', NS]);
    await apply(propagationPolicy({ name: 'bud', namespace: NS, group: 'bud', clusters: ['member1', 'member2', 'member3'], tolerationSeconds: 0 }));
    // Every binding of the namespace: Karmada's bindings carry their policy's permanent id as a label, not its name.
    await apply(
      `apiVersion: failover.io/v1alpha1\nkind: FailoverBudget\nmetadata: {name: bud, namespace: ${NS}}\nspec: {selector: {}, maxInFlight: ${MAX_IN_FLIGHT}}\n`,
    );
    const keys = await placeGroupOn(karmada!, clusters, bindings, { prefix: 'bud', group: 'bud', count: COUNT, cluster: 'member1', namespace: NS });
    const budget = await appGet(host!, `failoverbudgets/${NS}/bud`);
    expect(budget.status, JSON.stringify(budget.body)).toBe(200);

    // New copies on member2 and member3 stay Pending: their tasks stay, so the first evictions stay in flight.
    const others = karmada!.members.filter((m) => m.name !== 'member1');
    await Promise.all(others.map((m) => m.kubectl(['taint', 'node', 'kwok-node-0', 'test.failover.io/full=true:NoSchedule'])));
    const downAt = Date.now();
    const evicted = () => keys.filter((k) => departures(k, 'member1', downAt).length > 0);
    try {
      await karmada!.members[0].kill();
      await bindings.until(`${MAX_IN_FLIGHT} evicted`, () => evicted().length >= MAX_IN_FLIGHT, 60_000).catch(dumpOnFailure('budget', downAt));
      // At 0.5/s, the other four would all have gone within 8 s: they wait for the budget instead.
      await new Promise((r) => setTimeout(r, (COUNT / RATE) * 1000));
      expect(evicted()).toHaveLength(MAX_IN_FLIGHT);
      const waiting = (await evictionRows(host!, `cluster=member1`)).filter((r) => r.binding.namespace === NS && r.state === 'pending');
      expect(waiting).toHaveLength(COUNT - MAX_IN_FLIGHT);
      expect(waiting.map((r) => r.message).join('\n')).toContain(`FailoverBudget ${NS}/bud`);
    } finally {
      await Promise.all(others.map((m) => m.kubectl(['taint', 'node', 'kwok-node-0', 'test.failover.io/full-'], { allowFailure: true })));
    }
    // The new copies run: tasks clear, and the rest go, never more than the budget at once.
    await bindings
      .until(
        'every bud workload evicted from member1 and Healthy elsewhere',
        () => keys.every((k) => departures(k, 'member1', downAt).length === 1 && healthyWhereScheduled(bindings.get(k))),
        120_000,
      )
      .catch(dumpOnFailure('budget release', downAt));
    expect(mostInFlight(keys, 'member1', downAt)).toBeLessThanOrEqual(MAX_IN_FLIGHT);
    report.budget = { maxInFlight: MAX_IN_FLIGHT, mostInFlightSeen: mostInFlight(keys, 'member1', downAt) };

    await karmada!.members[0].restart();
    await clusters.until('member1 Ready=True, untainted', () => readyOf(member1())?.status === 'True' && !hasNotReadyNoExecute(member1()), 60_000);
  }, 240_000);
});

/** A binding's recorded versions since `since` and every app log line naming it, for a post-mortem. */
function explainBinding(key: string, since: number, rows: EvictionRow[]) {
  const name = key.split('/')[1];
  console.log(`${key}: ledger ${JSON.stringify(rows.filter((r) => r.binding.name === name))}`);
  for (const r of bindings.history(key).filter((x) => x.at >= since))
    console.log(
      `  +${r.at - since} ms rv=${r.object.metadata.resourceVersion} gen=${r.object.metadata.generation} clusters=${placedOn(r.object).join()} tasks=${JSON.stringify(tasksOf(r.object))} marks=${r.object.metadata.annotations?.['failover.io/eviction-marks'] ?? ''}`,
    );
  console.log(
    renderLog(
      logsBetween(since, Date.now(), (l) => JSON.stringify(l).includes(name)),
      since,
      60,
    ),
  );
}

const rowId = (r: EvictionRow) => `${r.cluster}/${r.binding.namespace}/${r.binding.name}/${r.decidedAt}`;

async function waitRows<T>(check: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline)
      throw new Error(`ledger did not settle within ${timeoutMs} ms: ${JSON.stringify(await evictionRows(host!, 'cluster=member1')).slice(0, 3000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * Where the app's time goes between Karmada's Ready=False and the first eviction, from its own log lines
 * (seconds after Ready=False as the watch saw it): the taint evaluation's start (its invocation line minus its
 * duration), the taint written, the evictions planned, the pacer's first slot, the worker's eviction.
 */
function appPath(tReady: number, tTaint: number, tFirst: number): Record<string, unknown> {
  const all = logLines(host!);
  const lines = all.filter((l) => l.t >= tReady - 3000 && l.t <= tFirst + 3000);
  const rel = (t: number | undefined) => seconds(t === undefined ? undefined : t - tReady);
  // The sync's 9 s watch contains everything: it is the one only when no other invocation was running.
  const invocations = lines.filter((l) => l.msg === 'invocation').map((l) => ({ fn: String(l.function), start: l.t - Number(l.durationMs ?? 0), end: l.t }));
  /** The shortest invocation (the sync's 9 s watch aside) that was running when a line was logged: the one that logged it. */
  const by = (line: LogLine | undefined) => {
    if (!line) return undefined;
    const run = invocations
      .filter((r) => r.start <= line.t && line.t <= r.end + 5)
      .sort((a, b) => Number(a.fn === 'karmadaSync') - Number(b.fn === 'karmadaSync') || a.end - a.start - (b.end - b.start))[0];
    return run ? { function: run.fn, started: rel(run.start), logged: rel(line.t), ended: rel(run.end) } : { logged: rel(line.t) };
  };
  const at = (msg: string, extra: (l: LogLine) => boolean = () => true) => lines.find((l) => l.msg === msg && l.t >= tReady - 500 && extra(l));
  const scheduled = at('evictions scheduled');
  // The sync timer watches 9 s of every 10: a change in the gap waits for the next run.
  const syncRuns = all.filter((l) => l.msg === 'invocation' && l.function === 'karmadaSync').map((l) => ({ start: l.t - Number(l.durationMs ?? 0), end: l.t }));
  const watching = syncRuns.find((r) => r.start <= tReady && tReady <= r.end);
  const nextRun = syncRuns.find((r) => r.start > tReady);
  return {
    karmadaSyncWatchingAtReadyFalse: !!watching,
    ...(watching ? {} : { karmadaSyncNextRun: rel(nextRun?.start) }),
    taintAdded: by(at('taint added', (l) => l.cluster === 'member1')),
    taintSeenByWatch: rel(tTaint),
    evictionsEnqueued: by(at('evictions enqueued', (l) => l.cluster === 'member1')),
    pacer: { ...by(scheduled), firstSlot: rel(typeof scheduled?.firstSlot === 'string' ? Date.parse(scheduled.firstSlot) : undefined) },
    evicted: by(at('evicted', (l) => l.cluster === 'member1')),
    firstEvictionSeenByWatch: rel(tFirst),
  };
}

describe('a windowed PreferNoExecute policy on a real Karmada', () => {
  const KEY = 'failover.io/disk-pressure';
  const heldTaints = (name: string) => {
    const text = (clusters.objects.get(name)?.metadata as { annotations?: Record<string, string> } | undefined)?.annotations?.['failover.io/taints'];
    return text ? (JSON.parse(text) as Taint[]) : [];
  };

  it("holds its taint in the Cluster's failover.io/taints annotation (Karmada's validation takes NoSchedule and NoExecute only), and removes it", async () => {
    if (host!.child.exitCode !== null || host!.child.signalCode !== null) {
      host = await startHostProcess(karmadaHostEnv(karmada!, RATE));
      await waitHealthy(host);
    }
    await karmada!.kubectl(['apply', '--server-side', '-f', join(ROOT, 'infra', 'clustertaintpolicy-crd.yaml')]);
    await karmada!.kubectl(['wait', '--for=condition=Established', 'crd/clustertaintpolicies.failover.io', '--timeout=30s']);
    // Our kind, windowed: a DiskPressure condition (pushed by a reporter) adds a PreferNoExecute taint after 1 s.
    await apply(
      JSON.stringify({
        apiVersion: 'failover.io/v1alpha1',
        kind: 'ClusterTaintPolicy',
        metadata: { name: 'disk-pressure' },
        spec: {
          targetCluster: { clusterNames: ['member3'] },
          matchConditions: [{ conditionType: 'DiskPressure', operator: 'In', statusValues: ['True'] }],
          taintsToAdd: [{ key: KEY, effect: 'PreferNoExecute', addOnMatchSeconds: 1, removeOnMismatchSeconds: 1 }],
        },
      }),
    );
    const report = (status: 'True' | 'False') =>
      fetch(`${host!.url}/api/clusters/member3/status`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ conditions: [{ type: 'DiskPressure', status, reason: `Disk${status}` }] }),
      });
    // The policy reaches the app through its watch; the report is sent again until the taint is there.
    await clusters.until(
      'the PreferNoExecute taint in the annotation',
      () => {
        void report('True');
        return heldTaints('member3').some((t) => t.key === KEY && t.effect === 'PreferNoExecute');
      },
      60_000,
    );
    expect(taintsOf(clusters.objects.get('member3')).some((t) => t.effect === 'PreferNoExecute')).toBe(false);
    const viaApi = (await appGet(host!, 'clusters/member3')).body as { spec: { taints?: Taint[] } };
    expect(viaApi.spec.taints?.some((t) => t.key === KEY && t.effect === 'PreferNoExecute')).toBe(true);
    // Karmada's describe shows it with the Cluster.
    const described = await karmada!.kubectl(['get', 'cluster', 'member3', '-o', 'jsonpath={.metadata.annotations.failover\\.io/taints}']);
    expect(described.stdout).toContain('PreferNoExecute');

    expect((await report('False')).status).toBe(200);
    await clusters.until('the annotation gone', () => heldTaints('member3').length === 0, 60_000);
  }, 150_000);
});
