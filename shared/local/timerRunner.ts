import { CronExpressionParser } from 'cron-parser';
import type { LeaseStore } from '../store/ports';
import { errorFields, Logger } from '../telemetry/log';
import type { RegisteredFunction } from './functionsCore';
import { triggerOf } from './functionsCore';
import type { Invoke } from './invoke';
import type { HostLifecycle } from './lifecycle';

/**
 * The local host's timer triggers: each function runs on its 6-field NCRONTAB schedule (UTC), and each
 * occurrence runs on one host only, even when several hosts share a storage account. A lease row per timer
 * stands in for the Functions host's blob lease.
 *
 * The lease is short (TIMER_LEASE_MS) and its holder renews it every RENEW_EVERY_MS for as long as it lives,
 * between occurrences as well as during a run, so a live holder keeps its timers (no flapping, however far
 * apart the occurrences) and a dead one's lease runs out within TIMER_LEASE_MS. The other hosts try to take
 * it shortly before each occurrence (ACQUIRE_LEAD_MS), so one takes over at the first occurrence after that.
 *
 * One host per occurrence: a host runs an occurrence only if it held the lease, unbroken, from before the
 * occurrence until it starts the run. Each host keeps a conservative account of its own hold (from when its
 * taking the lease returned to when the lease it last wrote runs out), and two hosts' holds never overlap:
 * another host can take the lease only after the holder's last write has expired.
 *
 * An occurrence in which the function succeeded and logged nothing is logged at debug: the pacer ticks
 * every second and is idle almost always.
 */

export interface TimerRunnerOptions {
  /** Owner of the leases: this host's id. */
  hostId: string;
  leases: LeaseStore;
  log: Logger;
  lifecycle: HostLifecycle;
  invoke: Invoke;
}

/** How long a timer lease lasts unless renewed: the longest a dead holder keeps the others waiting. */
export const TIMER_LEASE_MS = 3000;
/** The holder renews that often: a renewal may be late or fail once without the lease running out. */
export const RENEW_EVERY_MS = TIMER_LEASE_MS / 3;
/** How long before each occurrence a host tries to take (or renews) the lease, so that it holds it at the occurrence. */
export const ACQUIRE_LEAD_MS = 250;

/** This host's hold on one timer's lease, as far as it can be sure of it. */
class TimerLease {
  /** The current unbroken hold, local clock: since when (the taking returned) and until when (at the latest). */
  private hold: { since: number; until: number } | undefined;
  private lastAttempt = Number.NEGATIVE_INFINITY;
  /** Lease writes one at a time: two at once from this host would conflict on the row's ETag. */
  private queue: Promise<void> = Promise.resolve();
  private closed = false;
  everHeld = false;

  constructor(
    private readonly name: string,
    private readonly fn: string,
    private readonly options: TimerRunnerOptions,
  ) {}

  get held(): boolean {
    return this.hold !== undefined && Date.now() < this.hold.until;
  }

  /** When the holder renews next. */
  get renewDueAt(): number {
    return this.lastAttempt + RENEW_EVERY_MS;
  }

  /** True if this host has held the lease, unbroken, from at or before `occurrence` until now. */
  covers(occurrence: number): boolean {
    return this.hold !== undefined && this.hold.since <= occurrence && Date.now() < this.hold.until;
  }

  /** Takes the lease if it is free, renews it if this host holds it; never throws. */
  renew(): Promise<void> {
    this.queue = this.queue.then(() => this.attempt());
    return this.queue;
  }

  private async attempt(): Promise<void> {
    if (this.closed) return;
    const { leases, hostId, log } = this.options;
    const started = Date.now();
    this.lastAttempt = started;
    let taken: boolean;
    try {
      taken = await leases.acquire(this.name, hostId, TIMER_LEASE_MS);
    } catch (error) {
      // What this host holds runs out by itself; the next attempt may succeed.
      log.warn('timer lease check failed', { function: this.fn, ...errorFields(error) });
      return;
    }
    const returned = Date.now();
    if (!taken) {
      if (this.hold) log.debug('timer lease lost', { function: this.fn, hostId });
      this.hold = undefined;
      return;
    }
    // The lease runs out TIMER_LEASE_MS after the write, which came after `started`.
    const until = started + TIMER_LEASE_MS;
    if (this.hold && returned < this.hold.until) {
      // Written before the previous write could expire: no other host can have held it in between.
      this.hold.until = until;
    } else {
      this.hold = { since: returned, until };
      this.everHeld = true;
      log.debug('timer lease taken', { function: this.fn, hostId });
    }
  }

  /** Gives the lease up (if this host still owns it) and stops renewing it. */
  release(): Promise<void> {
    this.queue = this.queue.then(async () => {
      this.closed = true;
      this.hold = undefined;
      await this.options.leases.release(this.name, this.options.hostId).catch(() => undefined);
    });
    return this.queue;
  }
}

export class TimerRunner {
  private readonly leases = new Map<string, TimerLease>();

  constructor(private readonly options: TimerRunnerOptions) {}

  /** Runs `fn` at each occurrence of its schedule until the host stops. */
  async run(fn: RegisteredFunction): Promise<void> {
    const { lifecycle } = this.options;
    const schedule = String(triggerOf(fn).schedule);
    if (schedule.trim().split(/\s+/).length !== 6) throw new Error(`timer ${fn.name}: schedule "${schedule}" is not a 6-field NCRONTAB expression`);
    const lease = new TimerLease(`timer-${fn.name}`, fn.name, this.options);
    this.leases.set(fn.name, lease);
    let last: Date | undefined;
    // Occurrences strictly after this one: a timer that fires a millisecond early never runs one twice.
    let after = Date.now();
    while (!lifecycle.stopping) {
      const next = CronExpressionParser.parse(schedule, { currentDate: new Date(Math.max(Date.now(), after)), tz: 'UTC' })
        .next()
        .toDate();
      const at = next.getTime();
      const tryAt = at - ACQUIRE_LEAD_MS;
      // Until just before the occurrence; the holder renews its lease meanwhile, however long the wait.
      for (;;) {
        const wakeAt = lease.held ? Math.min(tryAt, lease.renewDueAt) : tryAt;
        if (!(await lifecycle.sleep(Math.max(0, wakeAt - Date.now())))) return;
        if (Date.now() >= tryAt) break;
        if (lease.held) await lease.renew();
      }
      // Just before the occurrence the holder renews, and every other host tries to take the lease.
      await lease.renew();
      if (!(await lifecycle.sleep(Math.max(0, at - Date.now())))) return;
      after = at;
      if (!lease.covers(at)) continue;
      const renew = setInterval(() => void lease.renew(), RENEW_EVERY_MS);
      const isPastDue = Date.now() - at > 1000;
      const following = CronExpressionParser.parse(schedule, { currentDate: next, tz: 'UTC' }).next().toDate();
      const timer = { isPastDue, scheduleStatus: { last: (last ?? next).toISOString(), next: following.toISOString(), lastUpdated: new Date().toISOString() } };
      try {
        await lifecycle.track(this.options.invoke(fn, [timer], { trigger: 'timer', debugWhenIdle: true }));
      } catch {
        // Logged by invoke; a timer without a retry policy simply waits for its next occurrence.
      } finally {
        clearInterval(renew);
      }
      last = next;
    }
  }

  /** Gives up every lease this host has held, so another host takes the next occurrence without waiting. */
  async releaseLeases(): Promise<void> {
    await Promise.allSettled([...this.leases.values()].filter((lease) => lease.everHeld).map((lease) => lease.release()));
  }
}
