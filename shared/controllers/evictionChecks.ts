import type { EvictionRecord } from '../failover/bindingModel';
import { bypassesGate } from '../failover/drain';
import type { PacerState, Versioned } from '../store/ports';
import type { ClusterRecord } from '../store/records';
import type { ControlPlane } from './ports';
import { recentPacerStateAged } from './state/reads';

/** A storage read answered later than this may be stale against a write made meanwhile (a recovery, a pause). */
export const SLOW_READ_MS = 500;

export interface ClusterRead {
  cluster?: Versioned<ClusterRecord>;
  prompt: boolean;
  /** When the read that came back was sent (performance.now()): what it says is as old as the time since. */
  askedAt: number;
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
  let askedAt = performance.now();
  for (let attempt = 0; attempt < 3 && !prompt; attempt++) {
    askedAt = performance.now();
    [cluster] = await Promise.all([plane.clusters.get(name), attempt === 0 ? alongside : undefined]);
    prompt = performance.now() - askedAt <= SLOW_READ_MS;
  }
  return { cluster, prompt, askedAt };
}

/**
 * A cluster read the caller is about to act on: `read` itself while it was sent at most SLOW_READ_MS ago,
 * otherwise read again (promptRead). A prompt answer still ages while the caller waits for its other reads
 * (the switch, the binding): acting on it seconds later would act on the cluster as it was then.
 */
export async function freshClusterRead(plane: ControlPlane, name: string, read: Promise<ClusterRead>): Promise<ClusterRead> {
  const answer = await read;
  // One that was never prompt is answered as such (the caller puts the row back in line).
  return !answer.prompt || performance.now() - answer.askedAt <= SLOW_READ_MS ? answer : promptRead(plane, name);
}

/**
 * How old a copy of the switches the worker takes when it settles a row: young enough that it is still
 * younger than SLOW_READ_MS when the worker acts (so it is rarely read again then), and read beside the
 * row's other reads, so the wait adds nothing. Rows settled together share one read.
 */
const SWITCH_COPY_MAX_AGE_MS = SLOW_READ_MS / 2;
/** A switch read sent within this long is shared by the workers' second checks instead of sending another. */
const SHARED_SWITCH_READ_MS = 100;

/**
 * The switches that hold a scheduled row back when its slot comes: the Failover gate (a drain's row bypasses
 * it), the pause, the halted tier. Read when the row is settled, and again right before acting when what was
 * read is older than SLOW_READ_MS by then (a pause may have come meanwhile). A read is as old as the time
 * since it was sent (a cached copy's age included), not since it was answered: a stalled answer was served
 * before the wait.
 */
export class SwitchCheck {
  private constructor(
    private readonly plane: ControlPlane,
    private readonly record: EvictionRecord,
    /** Why the row is held, as first read (undefined: it may go). */
    readonly hold: string | undefined,
    /** When what the check holds was read (performance.now()). */
    private readAt: number,
  ) {}

  static async read(plane: ControlPlane, record: EvictionRecord): Promise<SwitchCheck> {
    const asked = performance.now();
    const { value, ageMs } = await recentPacerStateAged(plane, SWITCH_COPY_MAX_AGE_MS);
    return new SwitchCheck(plane, record, holdReason(plane, record, value), asked - ageMs);
  }

  /**
   * Why the row is held now. Read again (three tries at most) while what the check holds is older than
   * SLOW_READ_MS; when no read comes back in time the row is held too: it never goes on a stale switch.
   */
  async holdNow(): Promise<string | undefined> {
    let hold = this.hold;
    for (let attempt = 0; attempt < 3 && performance.now() - this.readAt > SLOW_READ_MS; attempt++) {
      const asked = performance.now();
      const { value, ageMs } = await recentPacerStateAged(this.plane, SHARED_SWITCH_READ_MS);
      this.readAt = asked - ageMs;
      hold = holdReason(this.plane, this.record, value);
      if (hold) return hold;
    }
    return performance.now() - this.readAt > SLOW_READ_MS
      ? `the pause switch could not be read promptly (3 reads over ${SLOW_READ_MS} ms): back in line`
      : hold;
  }
}

function holdReason(plane: ControlPlane, record: EvictionRecord, state: PacerState): string | undefined {
  if (!plane.config.failoverEnabled && !bypassesGate(record)) return 'the Failover gate is off';
  if (state.paused) return 'evictions are paused';
  if (state.tier === 'halted') return 'evictions are halted: too many clusters are faulty';
  return undefined;
}
