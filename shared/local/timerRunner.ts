import { CronExpressionParser } from 'cron-parser';
import type { LeaseStore } from '../store/ports';
import { errorFields, Logger } from '../telemetry/log';
import type { RegisteredFunction } from './functionsCore';
import { triggerOf } from './functionsCore';
import type { Invoke } from './invoke';
import type { HostLifecycle } from './lifecycle';

/**
 * The local host's timer triggers: each function runs on its 6-field NCRONTAB schedule (UTC), and each
 * occurrence runs on one host only, even when several hosts share a storage account. One lease row for
 * all the timers (TIMER_LEADER_LEASE) stands in for the Functions host's blob lease: its holder, the timer
 * leader, runs every timer's occurrences; the other hosts run none while it lives.
 *
 * The lease is short (TIMER_LEASE_MS) and the leader renews it every RENEW_EVERY_MS for as long as it lives,
 * between occurrences as well as during runs (and while it stops, until its last run ended), so a live leader
 * keeps the timers and a dead one's lease runs out within TIMER_LEASE_MS. A renewal is one conditional write
 * on the ETag of the leader's last write, with no read: it fails if any host wrote the lease since. Each
 * other host reads the lease at the latest when it runs out, and at least every TAKE_EVERY_MS (so it sees a
 * released lease soon), and takes it once it is free: then it runs the occurrences that follow.
 *
 * One host per occurrence: a host runs an occurrence only if it held the lease, unbroken, from at or before
 * the occurrence until it starts the run. Each host keeps a conservative account of its own hold (from when
 * its taking the lease returned to when the lease it last wrote runs out), and two hosts' holds never
 * overlap: another host can take the lease only after the holder's last write has expired, and once it has,
 * the holder's next renewal fails (the lease's ETag changed).
 *
 * An occurrence in which the function succeeded and logged nothing is logged at debug: the pacer ticks
 * every second and is idle almost always.
 */

export interface TimerRunnerOptions {
  /** Owner of the lease: this host's id. */
  hostId: string;
  leases: LeaseStore;
  log: Logger;
  lifecycle: HostLifecycle;
  invoke: Invoke;
}

/** The one lease of the local hosts' timers. */
export const TIMER_LEADER_LEASE = 'timers';
/** How long the lease lasts unless renewed: the longest a dead leader keeps the others waiting. */
export const TIMER_LEASE_MS = 3000;
/** The leader renews that often: a renewal may be late or fail once without the lease running out. */
export const RENEW_EVERY_MS = TIMER_LEASE_MS / 3;
/** A host without the lease reads it at least that often (and when it runs out, if sooner) to take it when free. */
export const TAKE_EVERY_MS = 2000;
/** The least wait between two tries to take the lease, whatever the lease row says. */
const MIN_TAKE_WAIT_MS = 100;

/** This host's hold on the timer leader lease, as far as it can be sure of it, kept by one loop. */
class LeaderLease {
  /** The current unbroken hold, local clock: since when (the taking returned) and until when (at the latest). */
  private hold: { since: number; until: number } | undefined;
  /** ETag of this host's last write of the lease, while it may hold it: its renewals are conditional on it. */
  private etag: string | undefined;
  private loop: Promise<void> | undefined;
  private closed = false;
  private wake: (() => void) | undefined;

  constructor(private readonly options: TimerRunnerOptions) {}

  /** True if this host has held the lease, unbroken, from at or before `occurrence` until now. */
  covers(occurrence: number): boolean {
    return this.hold !== undefined && this.hold.since <= occurrence && Date.now() < this.hold.until;
  }

  /** Starts keeping (or trying to take) the lease, once. */
  start(): void {
    if (!this.closed) this.loop ??= this.keep();
  }

  /** Lease writes one at a time (a second one at once would conflict on the ETag): one loop does them all. */
  private async keep(): Promise<void> {
    const { lifecycle } = this.options;
    // A stopping host takes no lease; the leader keeps it until its last run ended and it releases it.
    while (!this.closed && !(lifecycle.stopping && this.etag === undefined)) {
      const nextAt = await this.attempt();
      if (this.closed) return;
      await this.pause(nextAt - Date.now());
    }
  }

  /** Renews the lease if this host holds it, else tries to take it; never throws. Returns when to try next. */
  private async attempt(): Promise<number> {
    const { leases, hostId, lifecycle, log } = this.options;
    try {
      if (this.etag !== undefined) {
        const started = Date.now();
        const etag = await leases.renew(TIMER_LEADER_LEASE, hostId, TIMER_LEASE_MS, this.etag);
        if (etag !== undefined) {
          this.wrote(started, etag);
          return started + RENEW_EVERY_MS;
        }
        // Written since this host's last write: another host took it once that write had run out.
        log.debug('timer lease lost', { hostId });
        this.hold = undefined;
        this.etag = undefined;
        if (lifecycle.stopping) return Date.now();
      }
      const started = Date.now();
      const result = await leases.acquire(TIMER_LEADER_LEASE, hostId, TIMER_LEASE_MS);
      if (result.taken) {
        this.wrote(started, result.etag);
        return started + RENEW_EVERY_MS;
      }
      // Held by another host: read it again when that hold runs out unless renewed, or sooner.
      const now = Date.now();
      return Math.min(Math.max(result.heldUntil.getTime() + 10, now + MIN_TAKE_WAIT_MS), now + TAKE_EVERY_MS);
    } catch (error) {
      // What this host holds runs out by itself; a failed renewal is tried again with the same ETag.
      log.warn('timer lease check failed', { hostId, ...errorFields(error) });
      return Date.now() + RENEW_EVERY_MS;
    }
  }

  /** Records a write of the lease by this host, begun at `started`, that returned `etag`. */
  private wrote(started: number, etag: string): void {
    const returned = Date.now();
    this.etag = etag;
    // The lease runs out TIMER_LEASE_MS after the write, which came after `started`.
    const until = started + TIMER_LEASE_MS;
    if (this.hold && returned < this.hold.until) {
      // Written before the previous write could expire: no other host can have held it in between.
      this.hold.until = until;
    } else {
      this.hold = { since: returned, until };
      this.options.log.debug('timer lease taken', { hostId: this.options.hostId });
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      this.wake = done;
    });
  }

  /** Stops keeping the lease and gives it up if this host holds it (one conditional delete). */
  async release(): Promise<void> {
    this.closed = true;
    this.wake?.();
    // A write in flight ends first: it would otherwise change the ETag the release goes by.
    await this.loop;
    const etag = this.etag;
    this.hold = undefined;
    this.etag = undefined;
    if (etag !== undefined) await this.options.leases.release(TIMER_LEADER_LEASE, this.options.hostId, etag).catch(() => undefined);
  }
}

export class TimerRunner {
  private readonly leader: LeaderLease;

  constructor(private readonly options: TimerRunnerOptions) {
    this.leader = new LeaderLease(options);
  }

  /** Runs `fn` at each occurrence of its schedule while this host is the timer leader, until the host stops. */
  async run(fn: RegisteredFunction): Promise<void> {
    const { lifecycle } = this.options;
    const schedule = String(triggerOf(fn).schedule);
    if (schedule.trim().split(/\s+/).length !== 6) throw new Error(`timer ${fn.name}: schedule "${schedule}" is not a 6-field NCRONTAB expression`);
    this.leader.start();
    let last: Date | undefined;
    // Occurrences strictly after this one: a timer that fires a millisecond early never runs one twice.
    let after = Date.now();
    while (!lifecycle.stopping) {
      const next = CronExpressionParser.parse(schedule, { currentDate: new Date(Math.max(Date.now(), after)), tz: 'UTC' })
        .next()
        .toDate();
      const at = next.getTime();
      // The leader loop renews (or tries to take) the lease meanwhile, however long the wait.
      if (!(await lifecycle.sleep(Math.max(0, at - Date.now())))) return;
      after = at;
      if (!this.leader.covers(at)) continue;
      const isPastDue = Date.now() - at > 1000;
      const following = CronExpressionParser.parse(schedule, { currentDate: next, tz: 'UTC' }).next().toDate();
      const timer = { isPastDue, scheduleStatus: { last: (last ?? next).toISOString(), next: following.toISOString(), lastUpdated: new Date().toISOString() } };
      try {
        await lifecycle.track(this.options.invoke(fn, [timer], { trigger: 'timer', debugWhenIdle: true }));
      } catch {
        // Logged by invoke; a timer without a retry policy simply waits for its next occurrence.
      }
      last = next;
    }
  }

  /** Gives up the timer lease if this host holds it, so another host takes the timers without waiting for it to run out. */
  async releaseLeases(): Promise<void> {
    await this.leader.release();
  }
}
