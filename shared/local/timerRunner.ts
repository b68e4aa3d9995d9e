import { CronExpressionParser } from 'cron-parser';
import type { LeaseStore } from '../store/ports';
import { errorFields, Logger } from '../telemetry/log';
import type { RegisteredFunction } from './functionsCore';
import { triggerOf } from './functionsCore';
import type { Invoke } from './invoke';
import type { HostLifecycle } from './lifecycle';

/**
 * The local host's timer triggers: each function runs on its 6-field NCRONTAB schedule (UTC), and each
 * occurrence runs on one host only, even when several hosts share a storage account. A lease row stands
 * in for the Functions host's blob lease.
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

// Long enough to outlive a slow lease write, renewed every third of it while the function runs.
const TIMER_LEASE_MS = 15_000;

export class TimerRunner {
  private readonly heldLeases = new Set<string>();

  constructor(private readonly options: TimerRunnerOptions) {}

  /** Runs `fn` at each occurrence of its schedule until the host stops. */
  async run(fn: RegisteredFunction): Promise<void> {
    const { leases, hostId, lifecycle, log } = this.options;
    const schedule = String(triggerOf(fn).schedule);
    if (schedule.trim().split(/\s+/).length !== 6) throw new Error(`timer ${fn.name}: schedule "${schedule}" is not a 6-field NCRONTAB expression`);
    const lease = `timer-${fn.name}`;
    let last: Date | undefined;
    while (!lifecycle.stopping) {
      const next = CronExpressionParser.parse(schedule, { currentDate: new Date(), tz: 'UTC' }).next().toDate();
      if (!(await lifecycle.sleep(Math.max(0, next.getTime() - Date.now())))) return;
      // One host at a time runs a timer, as the Functions host does with its blob lease.
      let held = false;
      try {
        held = await leases.acquire(lease, hostId, TIMER_LEASE_MS);
      } catch (error) {
        log.warn('timer lease check failed', { function: fn.name, ...errorFields(error) });
      }
      if (!held) continue;
      this.heldLeases.add(lease);
      const renew = setInterval(() => void leases.acquire(lease, hostId, TIMER_LEASE_MS).catch(() => undefined), TIMER_LEASE_MS / 3);
      const isPastDue = Date.now() - next.getTime() > 1000;
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
    await Promise.allSettled([...this.heldLeases].map((name) => this.options.leases.release(name, this.options.hostId)));
  }
}
