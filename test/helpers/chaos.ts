import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep } from '../../shared/clock';
import { SLOW_READ_MS } from '../../shared/controllers/evictionChecks';
import { QUEUES } from '../../shared/queue/storageQueue';
import { TABLES } from '../../shared/store/tableStorage';
import { startTestStorage, TestStorage } from './azurite';
import { binding, cluster, createdClusterReports } from './fleet';
import { HostProcess, startHostProcess } from './hostProcess';
import { CHAOS_FAULT_KINDS, ChaosFaultKind, startTcpChaosProxy, TcpChaosProxy } from './tcpChaosProxy';

/**
 * The chaos harness behind `npm run chaos` (scripts/chaos.ts) and its short run in `npm test`
 * (test/e2e/chaos.test.ts).
 *
 * One Azurite, started here, reached by three local hosts through fault-injecting TCP proxies in front of
 * its queue and table endpoints (tcpChaosProxy.ts: resets after random bytes, delays, stalls, drawn from
 * a PRNG seeded with `seed`). One host at a time is SIGKILLed and restarted at random intervals the whole
 * while. The scenario, through the hosts' HTTP API (any live host; a request that fails to connect, or
 * answers 5xx, is tried again on another):
 *
 *   1. twelve healthy clusters; `c1Groups.length × c1PerGroup` bindings on c1 (group g tolerates c1's
 *      NoExecute taint for `c1Groups[g]` seconds, so the groups fall due one after another) and
 *      `c2Bindings` on c2, each binding with one more candidate cluster among c3…;
 *   2. c1 gets a NoExecute taint; once `c2FailAfterC1Done` c1 evictions are done, c2 gets one too, and
 *      once `c2RecoverAfterDone` c2 evictions are done c2 recovers (its taint is removed);
 *   3. once `pauseAfterC1Done` c1 evictions are done, evictions are paused for `pauseSeconds`, then resumed;
 *   4. once every c1 eviction is done the kills stop; then the harness waits for quiescence (nothing
 *      pending or scheduled, every c1 row done or blocked, every c2 row done or abandoned, every c1
 *      binding placed off c1) and stops the hosts cleanly (SIGTERM), faults still on.
 *
 * Then it checks the invariants, each counted (`checkInvariants`):
 *
 *   1a c1 bindings lost: still on c1 at the end (or, with `awaitPlacement`, placed nowhere);
 *   1b c1 ledger rows that are not `done` (the ledger has one row per (cluster, binding), so `done` once);
 *   1c bindings with two graceful-eviction tasks for one fromCluster, sampled every 5 s and at the end;
 *   1d (cluster, binding) pairs with two `evicted` log lines (one per committed eviction) across all hosts;
 *   1e ledger and bindings disagree: a row is `done` exactly when its binding is off that cluster with one task from it;
 *   2  c2 rows `done` with executedAt more than SLOW_READ_MS (500 ms) after c2's taint was removed (Azurite's
 *      Timestamp of the recovery write): the worker stamps executedAt right after its taint read is answered and
 *      never acts on a read answered later than SLOW_READ_MS, so a later executedAt means a read served after the
 *      recovery; one within SLOW_READ_MS was served before it and answered late (the proxies delay answers), and
 *      is counted in the notes;
 *   3  the most `done` rows whose executedAt falls in any 10 s window, at most ceil(1.1 × rate × 10) + 1: 10 %
 *      over the rate, plus one for the fence post (a 10 s window can hold rate × 10 + 1 slots 1/rate apart);
 *   4  `done` rows with executedAt after the pause was answered plus PAUSE_GRACE_MS (1 s: a worker reads the
 *      switch through a per-process cache of at most 1 s) and before the resume was sent;
 *   5  host processes that exited without the harness killing them, failed to start, or stopped with a
 *      non-zero code on SIGTERM;
 *   6  messages in the `<queue>-poison` queues at the end, read on Azurite directly.
 *
 * Everything a host logged goes to `logDir` (one file per host process), with `faults.log` (every fault:
 * time, kind and the storage request it hit) and `final-state.json` (ledger, bindings, c2's events, times).
 */

export interface ChaosOptions {
  seed: number;
  /** RESOURCE_EVICTION_RATE of the hosts. */
  rate: number;
  /** Toleration seconds of each group of c1 bindings (0: due at the taint). */
  c1Groups: number[];
  c1PerGroup: number;
  c2Bindings: number;
  /** c2 fails once this many c1 evictions are done. */
  c2FailAfterC1Done: number;
  /** c2 recovers once this many c2 evictions are done. */
  c2RecoverAfterDone: number;
  /** Evictions are paused once this many c1 evictions are done… */
  pauseAfterC1Done: number;
  /** …for this long. */
  pauseSeconds: number;
  /** A host is killed this long (uniform, ms) after the previous one is back. */
  killEveryMs: [number, number];
  /** Per request / response probabilities of each fault. */
  faultRates: Record<ChaosFaultKind, number>;
  stallMs?: [number, number];
  delayMs?: [number, number];
  /** Longest wait for the scenario's steps and for quiescence. */
  phaseTimeoutMs: number;
  /** Progress lines (a status line every few seconds); none when absent. */
  progress?: (line: string) => void;
  /** Where the hosts' logs go; a fresh folder under the OS temp dir when absent. */
  logDir?: string;
  hosts?: number;
  /**
   * Quiescence includes the scheduler: every binding placed somewhere (an evicted binding whose inline placement
   * failed waits for the scheduler queue or its resync, twice a minute), and a c1 binding placed nowhere counts as
   * lost. Default true; the short run in `npm test` leaves it out to stay short, and reports the count instead.
   */
  awaitPlacement?: boolean;
}

export interface InvariantRow {
  name: string;
  count: number;
  expected: string;
  pass: boolean;
  detail?: string;
}

export interface ChaosReport {
  seed: number;
  durationMs: number;
  kills: number;
  faults: Record<ChaosFaultKind, number>;
  requests: number;
  invariants: InvariantRow[];
  notes: string[];
  passed: boolean;
  logDir: string;
  /** Set when the run itself could not finish (a phase timed out): the invariants are then checked on what there is. */
  error?: string;
}

const CLUSTERS = 12;
const clusterName = (i: number) => `c${i}`;
/** The other candidate of binding i: one of c3…c12. */
const otherCluster = (i: number) => clusterName(3 + (i % (CLUSTERS - 2)));

/** mulberry32: a small seeded PRNG; one stream per use so that the kills do not depend on the traffic. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface LedgerRow {
  cluster: string;
  binding: { kind: string; namespace?: string; name: string };
  state: string;
  executedAt: string | null;
  scheduledFor: string | null;
  message: string | null;
}

interface BindingView {
  metadata: { name: string };
  spec: { clusters?: Array<{ name: string }>; gracefulEvictionTasks?: Array<{ fromCluster: string }> };
}

// ---------------------------------------------------------------------------------------------------
// Hosts: three slots, each running one host process at a time.

interface Slot {
  index: number;
  generation: number;
  host?: HostProcess;
  /** Set before the harness itself stops the process (SIGKILL or the final SIGTERM). */
  expectExit: boolean;
}

interface UnexpectedExit {
  slot: number;
  generation: number;
  what: string;
}

class HostFleet {
  readonly slots: Slot[];
  readonly unexpected: UnexpectedExit[] = [];
  readonly logs: Array<{ name: string; output: () => string }> = [];
  kills = 0;

  constructor(
    count: number,
    private readonly env: Record<string, string>,
    private readonly logDir: string,
  ) {
    this.slots = Array.from({ length: count }, (_, index) => ({ index, generation: 0, expectExit: false }));
  }

  live(): HostProcess[] {
    return this.slots.filter((s) => s.host && !s.expectExit && s.host.child.exitCode === null && s.host.child.signalCode === null).map((s) => s.host!);
  }

  /** Starts the slot's next host; a host that fails to start is an unexpected exit, and is tried again. */
  async start(slot: Slot): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      slot.generation++;
      const name = `host${slot.index}-gen${slot.generation}`;
      try {
        const host = await startHostProcess(this.env);
        slot.host = host;
        slot.expectExit = false;
        this.logs.push({ name, output: () => host.output() });
        const generation = slot.generation;
        host.child.once('exit', (code, signal) => {
          if (slot.expectExit && slot.generation === generation) return;
          this.unexpected.push({ slot: slot.index, generation, what: `exited on its own (code ${code}, signal ${signal})` });
        });
        return;
      } catch (error) {
        const message = (error as Error).message;
        this.logs.push({ name: `${name}-failed-start`, output: () => message });
        this.unexpected.push({ slot: slot.index, generation: slot.generation, what: `failed to start: ${message.split('\n')[0]}` });
        if (attempt >= 5) throw new Error(`host slot ${slot.index} failed to start ${attempt} times: ${message}`);
      }
    }
  }

  async kill(slot: Slot): Promise<void> {
    if (!slot.host) return;
    slot.expectExit = true;
    this.kills++;
    await slot.host.stop('SIGKILL');
  }

  /** Stops every host with SIGTERM; a non-zero exit code is an unclean stop. */
  async stopAll(): Promise<void> {
    await Promise.all(
      this.slots.map(async (slot) => {
        if (!slot.host || slot.host.child.exitCode !== null || slot.host.child.signalCode !== null) return;
        slot.expectExit = true;
        const code = await slot.host.stop('SIGTERM');
        if (code !== 0) this.unexpected.push({ slot: slot.index, generation: slot.generation, what: `clean stop (SIGTERM) ended with code ${code}` });
      }),
    );
  }

  /** Every host's output so far, one file each. */
  saveLogs(): void {
    mkdirSync(this.logDir, { recursive: true });
    for (const log of this.logs) writeFileSync(join(this.logDir, `${log.name}.log`), log.output());
  }

  /** Every JSON log line of every host, parsed (non-JSON lines skipped). */
  logLines(): Array<Record<string, any>> {
    const lines: Array<Record<string, any>> = [];
    for (const log of this.logs) {
      for (const line of log.output().split('\n')) {
        if (!line.startsWith('{')) continue;
        try {
          lines.push({ ...JSON.parse(line), host: log.name });
        } catch {
          // a line cut short by a SIGKILL
        }
      }
    }
    return lines;
  }
}

// ---------------------------------------------------------------------------------------------------
// The HTTP API through any live host.

class Api {
  retries = 0;
  serverErrors: string[] = [];

  constructor(
    private readonly fleet: HostFleet,
    private readonly random: () => number,
  ) {}

  /** One request to a live host; on a connection error, a timeout or a 5xx, tried again on another host. */
  async call(method: string, path: string, body?: unknown, timeoutMs = 120_000): Promise<{ status: number; body: any }> {
    const deadline = Date.now() + timeoutMs;
    for (let attempt = 1; ; attempt++) {
      const live = this.fleet.live();
      if (live.length === 0) {
        await sleep(100);
        if (Date.now() > deadline) throw new Error(`${method} ${path}: no live host for ${timeoutMs} ms`);
        continue;
      }
      const host = live[Math.floor(this.random() * live.length)];
      let failure: string;
      try {
        const res = await fetch(`${host.url}/api/${path}`, {
          method,
          headers: body === undefined ? {} : { 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(Math.max(1000, Math.min(60_000, deadline - Date.now()))),
        });
        const text = await res.text();
        if (res.status < 500) {
          let json: any;
          try {
            json = JSON.parse(text);
          } catch {
            json = text;
          }
          return { status: res.status, body: json };
        }
        failure = `${res.status} ${text.slice(0, 300)}`;
        this.serverErrors.push(`${method} ${path}: ${failure}`);
      } catch (error) {
        const cause = (error as { cause?: { code?: string; message?: string } }).cause;
        failure = `${(error as Error).name}: ${(error as Error).message}${cause ? ` (${cause.code ?? cause.message})` : ''}`;
      }
      this.retries++;
      if (Date.now() > deadline) throw new Error(`${method} ${path}: still failing after ${attempt} tries; last: ${failure}`);
      await sleep(Math.min(1000, 50 * attempt));
    }
  }

  async ok(method: string, path: string, body?: unknown): Promise<any> {
    const res = await this.call(method, path, body);
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
    return res.body;
  }

  /**
   * Applies objects in chunks of 25, three requests at a time (each to a random live host); a created
   * cluster's agent then reports the conditions its fixture carries (Ready=True).
   */
  async apply(objects: unknown[]): Promise<void> {
    const chunks: unknown[][] = [];
    for (let i = 0; i < objects.length; i += 25) chunks.push(objects.slice(i, i + 25));
    let next = 0;
    const worker = async () => {
      while (next < chunks.length) {
        const chunk = chunks[next++];
        const answer = await this.ok('POST', 'apply', chunk);
        for (const { name, conditions } of createdClusterReports(chunk, answer.results ?? [])) await this.ok('POST', `clusters/${name}/status`, { conditions });
      }
    };
    await Promise.all([worker(), worker(), worker()]);
  }

  async ledger(cluster?: string): Promise<LedgerRow[]> {
    return (await this.ok('GET', `evictions${cluster ? `?cluster=${cluster}` : ''}`)).items;
  }

  async bindings(): Promise<BindingView[]> {
    return (await this.ok('GET', 'resourcebindings/default')).items;
  }
}

// ---------------------------------------------------------------------------------------------------

const c1Name = (i: number) => `c1-app${i}`;
const c2Name = (i: number) => `c2-app${i}`;

function tolerating(seconds: number): Record<string, unknown> {
  return seconds > 0 ? { clusterTolerations: [{ key: 'test/failed', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: seconds }] } : {};
}

/** Graceful-eviction tasks of one binding that share a fromCluster with an earlier one. */
function duplicateTasks(b: BindingView): string[] {
  const seen = new Set<string>();
  const dups: string[] = [];
  for (const task of b.spec.gracefulEvictionTasks ?? []) {
    if (seen.has(task.fromCluster)) dups.push(`${b.metadata.name}:${task.fromCluster}`);
    seen.add(task.fromCluster);
  }
  return dups;
}

/** The most done rows whose executedAt falls in one window [t, t + windowMs), over every t. */
export function maxInWindow(times: number[], windowMs: number): { count: number; start: number } {
  const sorted = [...times].sort((a, b) => a - b);
  let best = { count: 0, start: sorted[0] ?? 0 };
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (j < sorted.length && sorted[j] < sorted[i] + windowMs) j++;
    if (j - i > best.count) best = { count: j - i, start: sorted[i] };
  }
  return best;
}

const iso = (ms: number) => new Date(ms).toISOString();
/** Ledger states nothing moves on from by itself (blocked rows are retried only when the fleet changes). */
const SETTLED = new Set(['done', 'blocked', 'abandoned']);

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  const say = options.progress ?? (() => undefined);
  const logDir = options.logDir ?? join(tmpdir(), `chaos-${options.seed}-${started}`);
  const c1Total = options.c1Groups.length * options.c1PerGroup;
  const awaitPlacement = options.awaitPlacement ?? true;
  const notes: string[] = [];

  const storage: TestStorage = await startTestStorage();
  const faultRandom = prng(options.seed);
  const proxies: TcpChaosProxy[] = [];
  const proxied = async (endpoint: string) => {
    const url = new URL(endpoint);
    const proxy = await startTcpChaosProxy({
      target: { host: url.hostname, port: Number(url.port) },
      random: faultRandom,
      rates: options.faultRates,
      ...(options.stallMs ? { stallMs: options.stallMs } : {}),
      ...(options.delayMs ? { delayMs: options.delayMs } : {}),
    });
    proxies.push(proxy);
    return `${url.protocol}//${proxy.host}${url.pathname}`;
  };
  const { connectionString, queueEndpoint, tableEndpoint } = storage.azurite;
  const proxiedConnection = connectionString
    .replace(`QueueEndpoint=${queueEndpoint}`, `QueueEndpoint=${await proxied(queueEndpoint)}`)
    .replace(`TableEndpoint=${tableEndpoint}`, `TableEndpoint=${await proxied(tableEndpoint)}`);
  if (proxiedConnection.includes(queueEndpoint) || proxiedConnection.includes(tableEndpoint))
    throw new Error('could not point the connection string at the proxies');

  const env = {
    AzureWebJobsStorage: proxiedConnection,
    FAILOVER_ENABLED: 'true',
    RESOURCE_EVICTION_RATE: String(options.rate),
    // A killed host's dequeued messages come back after this long. The Functions host holds them 10 minutes, which
    // would outlast the run; 30 s keeps Azure's order of events: the repair timer re-paces an eviction whose worker
    // died (10 s after its slot, checked every 5 s, plus a timer-lease takeover of up to 4 s) before the dead
    // worker's message comes back. With a shorter hold the message wins and its eviction runs late, unpaced.
    LOCAL_QUEUE_HOLD_SECONDS: '30',
    // No reporters here: keep the monitor from marking the silent clusters Unknown (no policy would act on it anyway).
    CLUSTER_MONITOR_GRACE_PERIOD_SECONDS: '3600',
    CLUSTER_STARTUP_GRACE_PERIOD_SECONDS: '3600',
    LOG_LEVEL: 'info',
  };
  const fleet = new HostFleet(options.hosts ?? 3, env, logDir);
  const api = new Api(fleet, prng(options.seed ^ 0x5bd1e995));
  const killRandom = prng(options.seed ^ 0x27d4eb2f);

  let stopKills = false;
  let stopSampling = false;
  const sampledDuplicates = new Set<string>();
  let samples = 0;
  const times: Record<string, number> = {};
  let error: string | undefined;
  const loops: Array<Promise<void>> = [];

  const faultTotals = () => {
    const faults = Object.fromEntries(CHAOS_FAULT_KINDS.map((k) => [k, 0])) as Record<ChaosFaultKind, number>;
    let requests = 0;
    for (const proxy of proxies) {
      const stats = proxy.stats;
      requests += stats.requests;
      for (const kind of CHAOS_FAULT_KINDS) faults[kind] += stats.faults[kind];
    }
    return { faults, requests };
  };
  const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1).padStart(6)}s`;

  /** Waits until `check` returns a value, polling every `everyMs`. */
  const until = async <T>(what: string, check: () => Promise<T | undefined>, everyMs = 1000): Promise<T> => {
    const deadline = Date.now() + options.phaseTimeoutMs;
    for (;;) {
      const value = await check();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`timed out after ${options.phaseTimeoutMs} ms waiting for ${what}`);
      await sleep(everyMs);
    }
  };
  const doneOn = async (cluster: string) => (await api.ledger(cluster)).filter((r) => r.state === 'done').length;

  try {
    say(`${elapsed()} starting ${fleet.slots.length} hosts behind the fault proxies (log folder ${logDir})`);
    await Promise.all(fleet.slots.map((slot) => fleet.start(slot)));
    say(`${elapsed()} hosts up`);

    // The fleet and the workloads.
    await api.apply(Array.from({ length: CLUSTERS }, (_, i) => cluster(clusterName(i + 1))));
    const objects: unknown[] = [];
    for (let g = 0; g < options.c1Groups.length; g++) {
      for (let k = 0; k < options.c1PerGroup; k++) {
        const i = g * options.c1PerGroup + k;
        const other = otherCluster(i);
        objects.push(binding(c1Name(i), ['c1'], { placement: { clusterAffinity: { clusterNames: ['c1', other] }, ...tolerating(options.c1Groups[g]) } }));
      }
    }
    for (let i = 0; i < options.c2Bindings; i++) {
      objects.push(binding(c2Name(i), ['c2'], { placement: { clusterAffinity: { clusterNames: ['c2', otherCluster(i + 5)] } } }));
    }
    await api.apply(objects);
    say(`${elapsed()} ${CLUSTERS} clusters, ${c1Total} bindings on c1, ${options.c2Bindings} on c2`);

    // Kills, all the while: one host at a time, at random intervals.
    loops.push(
      (async () => {
        while (!stopKills) {
          const [min, max] = options.killEveryMs;
          const until = Date.now() + min + killRandom() * (max - min);
          while (!stopKills && Date.now() < until) await sleep(100);
          if (stopKills) break;
          const slot = fleet.slots[Math.floor(killRandom() * fleet.slots.length)];
          await fleet.kill(slot);
          await fleet.start(slot);
        }
      })().catch((caught: unknown) => {
        error ??= `kill loop: ${(caught as Error).message}`;
      }),
    );
    // Samples of the bindings: no binding may ever carry two graceful-eviction tasks for one cluster.
    loops.push(
      (async () => {
        while (!stopSampling) {
          try {
            for (const b of await api.bindings()) for (const dup of duplicateTasks(b)) sampledDuplicates.add(dup);
            samples++;
          } catch {
            // a sample missed is no failure
          }
          for (let i = 0; i < 50 && !stopSampling; i++) await sleep(100);
        }
      })(),
    );
    // Progress, when someone reads it.
    loops.push(
      (async () => {
        while (!stopSampling && options.progress) {
          for (let i = 0; i < 50 && !stopSampling; i++) await sleep(100);
          if (stopSampling) break;
          try {
            const rows = await api.ledger();
            const count = (cluster: string, state: string) => rows.filter((r) => r.cluster === cluster && r.state === state).length;
            const { faults } = faultTotals();
            say(
              `${elapsed()} c1 done ${count('c1', 'done')}/${c1Total} pending ${count('c1', 'pending')} scheduled ${count('c1', 'scheduled')} | ` +
                `c2 done ${count('c2', 'done')} abandoned ${count('c2', 'abandoned')} | kills ${fleet.kills} | ` +
                CHAOS_FAULT_KINDS.map((k) => `${k} ${faults[k]}`).join(' '),
            );
          } catch {
            // progress only
          }
        }
      })(),
    );

    times.c1TaintSent = Date.now();
    await api.apply([cluster('c1', true)]);
    times.c1Tainted = Date.now();
    say(`${elapsed()} c1 tainted (NoExecute)`);

    await until('c2 fail point', async () => ((await doneOn('c1')) >= options.c2FailAfterC1Done ? true : undefined));
    times.c2TaintSent = Date.now();
    await api.apply([cluster('c2', true)]);
    times.c2Tainted = Date.now();
    say(`${elapsed()} c2 tainted (NoExecute)`);

    await until('c2 recovery point', async () => ((await doneOn('c2')) >= options.c2RecoverAfterDone ? true : undefined), 200);
    times.c2RecoverSent = Date.now();
    await api.apply([cluster('c2', false)]);
    times.c2Recovered = Date.now();
    say(`${elapsed()} c2 recovered (taint removed)`);

    await until('pause point', async () => ((await doneOn('c1')) >= options.pauseAfterC1Done ? true : undefined), 200);
    times.pauseSent = Date.now();
    await api.ok('POST', 'failover/pause');
    times.paused = Date.now();
    say(`${elapsed()} evictions paused`);
    await sleep(options.pauseSeconds * 1000);
    times.resumeSent = Date.now();
    await api.ok('POST', 'failover/resume');
    times.resumed = Date.now();
    say(`${elapsed()} evictions resumed`);

    await until('every c1 row settled', async () => {
      const c1 = await api.ledger('c1');
      return c1.length >= c1Total && c1.every((r) => SETTLED.has(r.state)) ? true : undefined;
    });
    say(`${elapsed()} every c1 row settled; kills stop, waiting for quiescence`);
  } catch (caught) {
    error = (caught as Error).message;
    say(`${elapsed()} run failed: ${error}`);
  }
  stopKills = true;
  await loops[0];

  // Quiescence: nothing pending or scheduled, every row settled, every c1 binding placed off c1.
  if (!error) {
    try {
      await until(
        'quiescence',
        async () => {
          const fleetView = await api.ok('GET', 'fleet');
          if (fleetView.pending !== 0 || fleetView.scheduled !== 0) return undefined;
          const rows = await api.ledger();
          if (rows.filter((r) => r.cluster === 'c1').length < c1Total || !rows.every((r) => SETTLED.has(r.state))) return undefined;
          // The scheduler has caught up: every binding is placed somewhere.
          if (awaitPlacement && !(await api.bindings()).every((b) => (b.spec.clusters ?? []).length > 0)) return undefined;
          return true;
        },
        2000,
      );
      times.quiescent = Date.now();
      say(`${elapsed()} quiescent`);
    } catch (caught) {
      error = (caught as Error).message;
      say(`${elapsed()} ${error}`);
    }
  }

  // The final state, read through the hosts (faults still on).
  let rows: LedgerRow[] = [];
  let bindings: BindingView[] = [];
  let c2Events: Array<{ time: string; reason: string; message: string }> = [];
  const bindingEvents: string[] = [];
  try {
    rows = await api.ledger();
    bindings = await api.bindings();
    c2Events = (await api.ok('GET', 'events?kind=Cluster&name=c2')).items;
    // The history of the bindings whose ledger row and placement disagree, for the report.
    const placed = new Map(bindings.map((b) => [b.metadata.name, (b.spec.clusters ?? []).map((c) => c.name)]));
    const odd = rows.filter((r) => (r.state === 'done') === (placed.get(r.binding.name) ?? []).includes(r.cluster)).slice(0, 5);
    for (const r of odd) {
      const events = (await api.ok('GET', `events?kind=ResourceBinding&name=default/${r.binding.name}`)).items as Array<{
        time: string;
        reason: string;
        message: string;
      }>;
      bindingEvents.push(`${r.cluster}/${r.binding.name}: row ${r.state} (${r.message ?? ''}), scheduledFor ${r.scheduledFor}, executedAt ${r.executedAt}`);
      for (const e of events) bindingEvents.push(`    ${e.time} ${e.reason}: ${e.message.slice(0, 200)}`);
    }
  } catch (caught) {
    error ??= `final reads failed: ${(caught as Error).message}`;
  }
  stopSampling = true;
  await Promise.all(loops);
  await fleet.stopAll();
  const { faults, requests } = faultTotals();
  for (const proxy of proxies) proxy.enabled = false;

  // When c2's recovery was written, by Azurite's own clock (the entity's Timestamp; nothing writes c2 after it).
  try {
    const entity = await storage.storage.table(TABLES.clusters).getEntity<Record<string, unknown>>('cluster', 'c2');
    const written = Date.parse(String(entity.timestamp));
    if (times.c2RecoverSent && written >= times.c2RecoverSent && written <= times.c2Recovered) times.c2RecoveryWritten = written;
  } catch {
    // the answer of the recovery apply stands in for it
  }

  // Poison queues, read on Azurite directly (not through the proxies).
  const poison: string[] = [];
  for (const name of Object.values(QUEUES)) {
    const queue = storage.storage.queue(`${name}-poison`);
    const count = (await queue.getProperties()).approximateMessagesCount ?? 0;
    if (count === 0) continue;
    const peeked = await queue.peekMessages({ numberOfMessages: 32 });
    for (const m of peeked.peekedMessageItems) poison.push(`${name}-poison: ${Buffer.from(m.messageText, 'base64').toString('utf8').slice(0, 300)}`);
    for (let i = peeked.peekedMessageItems.length; i < count; i++) poison.push(`${name}-poison: (not peeked)`);
  }

  fleet.saveLogs();
  writeFileSync(join(logDir, 'final-state.json'), JSON.stringify({ times, ledger: rows, bindings, c2Events }, null, 1));
  writeFileSync(
    join(logDir, 'faults.log'),
    proxies
      .flatMap((proxy, i) => proxy.log.map((f) => ({ ...f, endpoint: i === 0 ? 'queue' : 'table' })))
      .sort((a, b) => (a.at < b.at ? -1 : 1))
      .map((f) => `${f.at} ${f.endpoint} ${f.kind} after ${f.bytes} bytes${f.holdMs !== undefined ? `, held ${f.holdMs} ms` : ''}: ${f.request}`)
      .join('\n') + '\n',
  );
  const logLines = fleet.logLines();
  for (const proxy of proxies) await proxy.close();
  await storage.close();

  const invariants = checkInvariants({ options, rows, bindings, c2Events, times, sampledDuplicates, logLines, unexpected: fleet.unexpected, poison, notes });
  notes.push(
    `binding samples taken during the run: ${samples}; API requests retried on another host: ${api.retries} (5xx answers: ${api.serverErrors.length})`,
  );
  for (const e of api.serverErrors.slice(0, 5)) notes.push(`  5xx: ${e}`);
  const warnings = new Map<string, number>();
  for (const line of logLines) {
    if ((line.level !== 'warn' && line.level !== 'error') || String(line.msg).startsWith('AUTH_MODE=none')) continue;
    // One entry per kind of failure: request ids and times stripped.
    const cause = typeof line.error === 'string' ? `: ${line.error.split('\n')[0]}` : '';
    const key = `${line.level} ${String(line.msg).replace(/\\nRequestId:.*$/, '')}${line.function ? ` [${line.function}]` : ''}${cause}`;
    warnings.set(key, (warnings.get(key) ?? 0) + 1);
  }
  if (warnings.size > 0)
    notes.push(
      `host warnings and errors (AUTH_MODE=none warnings left out): ${[...warnings]
        .sort((a, b) => b[1] - a[1])
        .map(([m, n]) => `${m} ×${n}`)
        .join('; ')}`,
    );
  if (bindingEvents.length > 0) notes.push(`bindings whose ledger row and placement disagree, with their events:\n${bindingEvents.join('\n')}`);
  if (error) {
    invariants.push({ name: 'the run completed (every phase within its timeout)', count: 1, expected: '0', pass: false, detail: error });
  }
  return {
    seed: options.seed,
    durationMs: Date.now() - started,
    kills: fleet.kills,
    faults,
    requests,
    invariants,
    notes,
    passed: invariants.every((row) => row.pass),
    logDir,
    ...(error ? { error } : {}),
  };
}

interface CheckInput {
  options: ChaosOptions;
  rows: LedgerRow[];
  bindings: BindingView[];
  c2Events: Array<{ time: string; reason: string; message: string }>;
  times: Record<string, number>;
  sampledDuplicates: Set<string>;
  logLines: Array<Record<string, any>>;
  unexpected: UnexpectedExit[];
  poison: string[];
  notes: string[];
}

/** Pause grace: a worker reads the pause switch through a per-process cache of at most 1 s (shared/controllers/state/reads.ts). */
export const PAUSE_GRACE_MS = 1000;

function checkInvariants(input: CheckInput): InvariantRow[] {
  const { options, rows, bindings, c2Events, times, logLines, notes } = input;
  const out: InvariantRow[] = [];
  const row = (name: string, count: number, limit: number, detail: string[] = [], expected = limit === 0 ? '0' : `≤ ${limit}`) =>
    out.push({ name, count, expected, pass: count <= limit, ...(detail.length > 0 ? { detail: detail.slice(0, 8).join('; ') } : {}) });

  const byName = new Map(bindings.map((b) => [b.metadata.name, b]));
  const ledgerOf = (cluster: string) => new Map(rows.filter((r) => r.cluster === cluster).map((r) => [r.binding.name, r]));
  const c1Rows = ledgerOf('c1');
  const c2Rows = ledgerOf('c2');
  const c1Names = Array.from({ length: options.c1Groups.length * options.c1PerGroup }, (_, i) => c1Name(i));
  const c2Names = Array.from({ length: options.c2Bindings }, (_, i) => c2Name(i));
  const placedOn = (name: string) => (byName.get(name)?.spec.clusters ?? []).map((c) => c.name);
  const tasksFrom = (name: string, cluster: string) => (byName.get(name)?.spec.gracefulEvictionTasks ?? []).filter((t) => t.fromCluster === cluster).length;

  // 1. Every c1 binding evicted exactly once.
  const awaitPlacement = options.awaitPlacement ?? true;
  const lost = c1Names.filter((n) => !byName.has(n) || placedOn(n).includes('c1') || (awaitPlacement && placedOn(n).length === 0));
  row(`1a c1 bindings lost (still on c1${awaitPlacement ? ', or placed nowhere' : ''})`, lost.length, 0, lost);
  const unplaced = bindings.filter((b) => (b.spec.clusters ?? []).length === 0).length;
  if (!awaitPlacement) notes.push(`bindings not placed yet at the end (the scheduler's resync places them within 30 s): ${unplaced}`);
  const notDone = c1Names
    .filter((n) => c1Rows.get(n)?.state !== 'done')
    .map((n) => `${n}: ${c1Rows.get(n)?.state ?? 'no row'}${c1Rows.get(n)?.message ? ` (${c1Rows.get(n)?.message})` : ''}`);
  row('1b c1 ledger rows not done (one row per binding, done)', notDone.length, 0, notDone);
  const finalDuplicates = bindings.flatMap(duplicateTasks);
  const duplicates = new Set([...input.sampledDuplicates, ...finalDuplicates]);
  row('1c bindings with two graceful-eviction tasks for one cluster (sampled + final)', duplicates.size, 0, [...duplicates]);
  const evictedLines = new Map<string, number>();
  for (const line of logLines)
    if (line.msg === 'evicted') evictedLines.set(`${line.cluster}/${line.binding}`, (evictedLines.get(`${line.cluster}/${line.binding}`) ?? 0) + 1);
  const twice = [...evictedLines].filter(([, n]) => n > 1).map(([k, n]) => `${k} ×${n}`);
  row('1d evictions carried out twice ("evicted" log lines per cluster and binding)', twice.length, 0, twice);
  const disagree: string[] = [];
  for (const n of c1Names) {
    const done = c1Rows.get(n)?.state === 'done';
    const moved = byName.has(n) && !placedOn(n).includes('c1');
    if (done !== moved || (done && tasksFrom(n, 'c1') !== 1))
      disagree.push(`${n}: row ${c1Rows.get(n)?.state ?? 'none'}, on c1 ${!moved}, c1 tasks ${tasksFrom(n, 'c1')}`);
  }
  for (const n of c2Names) {
    const done = c2Rows.get(n)?.state === 'done';
    const moved = byName.has(n) && !placedOn(n).includes('c2');
    if (done !== moved || (done && tasksFrom(n, 'c2') !== 1))
      disagree.push(`${n}: row ${c2Rows.get(n)?.state ?? 'none'}, on c2 ${!moved}, c2 tasks ${tasksFrom(n, 'c2')}`);
  }
  row('1e ledger and bindings disagree (row done ⇔ binding off the cluster with one task from it)', disagree.length, 0, disagree);

  // 2. No eviction from c2 after its recovery.
  // The moment c2's taint went: the Timestamp Azurite gave the recovery write when it could be read, else the earliest
  // later sign of it (the apply's answer, or the EvictionsAbandoned event of the recovery).
  const abandonedEvent = c2Events.find((e) => e.reason === 'EvictionsAbandoned' && Date.parse(e.time) >= (times.c2RecoverSent ?? Infinity));
  const removedBy = times.c2RecoveryWritten ?? Math.min(times.c2Recovered ?? Infinity, abandonedEvent ? Date.parse(abandonedEvent.time) : Infinity);
  const removalSource = times.c2RecoveryWritten ? 'the entity Timestamp of the write' : abandonedEvent ? 'EvictionsAbandoned event' : 'apply answer';
  const c2Done = [...c2Rows.values()].filter((r) => r.state === 'done');
  const late = Number.isFinite(removedBy) ? c2Done.filter((r) => Date.parse(r.executedAt!) > removedBy + SLOW_READ_MS) : [];
  const answeredLate = Number.isFinite(removedBy) ? c2Done.filter((r) => Date.parse(r.executedAt!) > removedBy && !late.includes(r)) : [];
  if (answeredLate.length > 0)
    notes.push(
      `c2 evictions confirmed on a taint read served before the recovery and answered after it (within ${SLOW_READ_MS} ms): ${answeredLate.map((r) => `${r.binding.name} +${Date.parse(r.executedAt!) - removedBy} ms`).join(', ')}`,
    );
  row(
    `2  c2 evictions decided after c2 recovered (executedAt > taint removal + ${SLOW_READ_MS} ms)`,
    late.length,
    0,
    late.map((r) => `${r.binding.name} at ${r.executedAt} (+${Date.parse(r.executedAt!) - removedBy} ms)`),
  );
  if (times.c2RecoverSent) {
    const inFlight = c2Done.filter((r) => Date.parse(r.executedAt!) > times.c2RecoverSent && Date.parse(r.executedAt!) <= removedBy);
    const ambiguous =
      inFlight.length > 0 ? `${inFlight.length} (${inFlight.map((r) => `+${Date.parse(r.executedAt!) - times.c2RecoverSent} ms`).join(', ')})` : '0';
    notes.push(
      `c2: ${c2Names.length} bindings, ${c2Done.length} evicted, ${[...c2Rows.values()].filter((r) => r.state === 'abandoned').length} rows abandoned; ` +
        `recovery applied ${iso(times.c2RecoverSent)} → ${iso(times.c2Recovered)}, taint gone by ${Number.isFinite(removedBy) ? iso(removedBy) : '?'}` +
        ` (${removalSource}); done between the apply and the removal: ${ambiguous}`,
    );
  }

  // 3. The rate in any 10 s window.
  const doneTimes = rows.filter((r) => r.state === 'done' && r.executedAt).map((r) => Date.parse(r.executedAt!));
  const limit = Math.ceil(1.1 * options.rate * 10) + 1;
  const worst = maxInWindow(doneTimes, 10_000);
  row(
    `3  most evictions in a 10 s window (rate ${options.rate}/s: ceil(1.1 × rate × 10) + 1)`,
    worst.count,
    limit,
    worst.count > limit ? [`from ${iso(worst.start)}`] : [],
  );
  if (doneTimes.length > 1) {
    const sorted = [...doneTimes].sort((a, b) => a - b);
    const done = rows.filter((r) => r.state === 'done' && r.executedAt && r.scheduledFor);
    const slots = maxInWindow(
      done.map((r) => Date.parse(r.scheduledFor!)),
      10_000,
    );
    const lateness = done.map((r) => Date.parse(r.executedAt!) - Date.parse(r.scheduledFor!)).sort((a, b) => a - b);
    const pct = (q: number) => lateness[Math.min(lateness.length - 1, Math.floor(q * lateness.length))];
    notes.push(
      `evictions done: ${sorted.length}, first ${iso(sorted[0])}, last ${iso(sorted[sorted.length - 1])}; busiest 10 s window from ${iso(worst.start)}; ` +
        `by send slot (scheduledFor) the busiest 10 s window holds ${slots.count}; executedAt − slot: median ${pct(0.5)} ms, p99 ${pct(0.99)} ms, max ${lateness[lateness.length - 1]} ms; ` +
        `more than 10 s after the slot (past the repair's threshold, so outside the pacing): ${lateness.filter((ms) => ms > 10_000).length}`,
    );
  }

  // 4. None while paused.
  if (times.paused && times.resumeSent) {
    const from = times.paused + PAUSE_GRACE_MS;
    const during = rows.filter((r) => r.state === 'done' && r.executedAt && Date.parse(r.executedAt) > from && Date.parse(r.executedAt) < times.resumeSent);
    row(
      `4  evictions while paused (executedAt in (pause answered + ${PAUSE_GRACE_MS} ms, resume sent))`,
      during.length,
      0,
      during.map((r) => `${r.cluster}/${r.binding.name} at ${r.executedAt} (+${Date.parse(r.executedAt!) - times.paused} ms after the pause)`),
    );
    const inGrace = rows.filter(
      (r) => r.state === 'done' && r.executedAt && Date.parse(r.executedAt) >= times.pauseSent && Date.parse(r.executedAt) <= from,
    ).length;
    notes.push(`pause: sent ${iso(times.pauseSent)}, answered ${iso(times.paused)}, resume sent ${iso(times.resumeSent)}; evictions in the grace: ${inGrace}`);
  } else {
    row('4  evictions while paused', 0, 0, ['the pause never happened']);
  }

  // 5. No host exits on its own.
  row(
    '5  host exits not caused by the harness (incl. failed starts, unclean stops)',
    input.unexpected.length,
    0,
    input.unexpected.map((u) => `host${u.slot}-gen${u.generation} ${u.what}`),
  );

  // 6. Poison queues.
  row('6  messages in -poison queues (read on Azurite directly)', input.poison.length, 0, input.poison);
  const poisonLines = logLines.filter((l) => l.msg === 'message moved to poison queue');
  for (const l of poisonLines.slice(0, 5)) notes.push(`poisoned: ${l.host} ${l.queue} dequeueCount ${l.dequeueCount}: ${l.reason}`);
  return out;
}

export function formatReport(report: ChaosReport): string {
  const lines: string[] = [];
  lines.push(`seed ${report.seed}, duration ${(report.durationMs / 1000).toFixed(1)} s, kills ${report.kills}`);
  lines.push(
    `storage requests through the proxies ${report.requests}; faults injected: ${CHAOS_FAULT_KINDS.map((k) => `${k} ${report.faults[k]}`).join(', ')}`,
  );
  const nameWidth = Math.max(...report.invariants.map((r) => r.name.length), 9);
  lines.push('');
  lines.push(`${'invariant'.padEnd(nameWidth)} | ${'count'.padStart(5)} | ${'expected'.padEnd(8)} | result`);
  lines.push(`${'-'.repeat(nameWidth)}-|-------|----------|-------`);
  for (const r of report.invariants) {
    lines.push(`${r.name.padEnd(nameWidth)} | ${String(r.count).padStart(5)} | ${r.expected.padEnd(8)} | ${r.pass ? 'pass' : 'FAIL'}`);
    if (!r.pass && r.detail) lines.push(`    ${r.detail}`);
  }
  lines.push('');
  for (const note of report.notes) lines.push(note);
  lines.push(`host logs: ${report.logDir}`);
  lines.push(report.passed ? 'PASS' : 'FAIL');
  return lines.join('\n');
}
