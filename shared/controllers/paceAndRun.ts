import { errorFields } from '../telemetry/log';
import { executeEvictionBatch } from './evictionWorker';
import { announcePassHere, paceAfterPlanning } from './pacer';
import type { ControlPlane, EvictionBatch } from './ports';
import { refreshPolicyStatuses } from './taintPolicies';

export interface RunHereOptions {
  /** Past this moment (epoch ms) the invocation may not start evictions of its own: their messages are sent. */
  until?: number;
  /** Takes the evictions started here and awaits them before the invocation ends; default: awaited here. */
  later?: (work: Promise<unknown>) => void;
}

/**
 * Right after a failure was planned: a pacer pass whose first second of evictions this invocation executes
 * itself, so the first eviction follows the taint by the pass's own time (a queue message would wait for the
 * worker's poll, and the slots for a poll's lead). Whichever pass after planning wins the pacer's row
 * hands out the slots (ETag-checked); the rest of the series goes to the queue as from any pass. An
 * eviction that fails here goes to the worker as a message; one lost with the process is put back in line
 * by the repair, as a lost message is.
 * Beside it, the policies' status round runs at once: their EvictionInProgress turns True as the episode
 * begins, where the 5 s round alone could miss an episode shorter than itself (kubectl wait would never see it).
 */
export async function paceAndRunFirst(plane: ControlPlane, options: RunHereOptions = {}): Promise<void> {
  const release = announcePassHere(plane);
  try {
    await paceAndRun(plane, options);
  } finally {
    release();
  }
}

async function paceAndRun(plane: ControlPlane, options: RunHereOptions): Promise<void> {
  const started: Array<Promise<unknown>> = [];
  const later = options.later ?? ((work: Promise<unknown>) => void started.push(work));
  later(
    refreshPolicyStatuses(plane).catch((error: unknown) =>
      plane.log.warn("policy status round after planning failed: the timer's next round writes it", { ...errorFields(error) }),
    ),
  );
  // Decided before the pass: slots for a caller that cannot run them get the queue's lead, not RUN_HERE_LEAD_MS.
  const canRunHere = options.until === undefined || Date.now() < options.until;
  const runHere = (batch: EvictionBatch) => {
    if (options.until !== undefined && Date.now() > options.until) return false;
    later(
      executeEvictionBatch(plane, batch).catch(async (error: unknown) => {
        plane.log.warn('eviction run right after planning failed: its message goes to the worker', { ...errorFields(error) });
        await plane.evictions.send(batch);
      }),
    );
    return true;
  };
  await paceAfterPlanning(plane, canRunHere ? { runHere } : {});
  await Promise.all(started);
}
