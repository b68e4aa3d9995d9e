import type { EvictionRecord } from '../failover/bindingModel';
import { bypassesGate } from '../failover/drain';
import type { PacerState, Versioned } from '../store/ports';
import type { ClusterRecord } from '../store/records';
import type { ControlPlane } from './ports';
import { recentPacerState, recentPacerStateAged } from './state/reads';

/** A storage read answered later than this may be stale against a write made meanwhile (a recovery, a pause). */
export const SLOW_READ_MS = 500;

export interface ClusterRead {
  cluster?: Versioned<ClusterRecord>;
  prompt: boolean;
}

/**
 * A cluster read from storage until an answer comes back promptly (three tries at most): an answer that took
 * long may describe the cluster as it was before a write made meanwhile (a recovery, a new failure).
 * `alongside`: a read the caller needs before it acts, made beside the first try; that try counts as prompt
 * only when both came back in time (what counts is the age of the answer when the caller acts).
 */
export async function promptRead(plane: ControlPlane, name: string, alongside?: Promise<unknown>): Promise<ClusterRead> {
  let cluster: Versioned<ClusterRecord> | undefined;
  let prompt = false;
  for (let attempt = 0; attempt < 3 && !prompt; attempt++) {
    const asked = performance.now();
    [cluster] = await Promise.all([plane.clusters.get(name), attempt === 0 ? alongside : undefined]);
    prompt = performance.now() - asked <= SLOW_READ_MS;
  }
  return { cluster, prompt };
}

/**
 * The switches that hold a scheduled row back when its slot comes: the Failover gate (a drain's row bypasses
 * it), the pause, the halted tier. Read when the row is settled, and again, fresh, right before acting when
 * the storage reads in between were slow (a pause may have come meanwhile).
 */
export class SwitchCheck {
  private constructor(
    private readonly plane: ControlPlane,
    private readonly record: EvictionRecord,
    /** Why the row is held, as first read (undefined: it may go). */
    readonly hold: string | undefined,
    /** When what `hold` says was read (performance.now()): when the read was sent, not when it was answered. */
    private readAt: number,
  ) {}

  static async read(plane: ControlPlane, record: EvictionRecord): Promise<SwitchCheck> {
    const asked = performance.now();
    const { value, ageMs } = await recentPacerStateAged(plane);
    // A stalled answer was served when asked for, not when it came back: a pause written while it was on the
    // way is caught by `holdNow`, since the read counts as old as the wait for it (plus a cached copy's age).
    return new SwitchCheck(plane, record, holdReason(plane, record, value), asked - ageMs);
  }

  /** Why the row is held now: read again, uncached, only when the first read is older than SLOW_READ_MS. */
  async holdNow(): Promise<string | undefined> {
    if (performance.now() - this.readAt <= SLOW_READ_MS) return undefined;
    this.readAt = performance.now();
    return holdReason(this.plane, this.record, await recentPacerState(this.plane, 0));
  }
}

function holdReason(plane: ControlPlane, record: EvictionRecord, state: PacerState): string | undefined {
  if (!plane.config.failoverEnabled && !bypassesGate(record)) return 'the Failover gate is off';
  if (state.paused) return 'evictions are paused';
  if (state.tier === 'halted') return 'evictions are halted: too many clusters are faulty';
  return undefined;
}
