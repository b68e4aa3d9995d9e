import { PlaneState } from '../cache';
import { sleep } from '../clock';
import { SharedPass } from '../concurrency';
import { evictionRowId } from '../failover/evictionRow';
import type { VersionedEviction } from '../store/ports';
import { errorFields } from '../telemetry/log';
import { executeEvictionBatch } from './evictionWorker';
import { announcePassHere, firstRowsExpected, offerShortPass, paceAfterPlanning, paceUnlessOvertaken, passesHereAnnounced, passHereAnnounced } from './pacer';
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
  refreshStatuses(plane, later);
  // Decided before the pass: slots for a caller that cannot run them get the queue's lead, not RUN_HERE_LEAD_MS.
  const canRunHere = options.until === undefined || Date.now() < options.until;
  await paceAfterPlanning(plane, canRunHere ? { runHere: runnerHere(plane, options.until, later) } : {});
  await Promise.all(started);
}

function refreshStatuses(plane: ControlPlane, later: (work: Promise<unknown>) => void): void {
  later(
    refreshPolicyStatuses(plane).catch((error: unknown) =>
      plane.log.warn("policy status round after planning failed: the timer's next round writes it", { ...errorFields(error) }),
    ),
  );
}

/** Runs a pass's batch in this invocation (unless `until` has passed: then false, and the batch is sent). */
function runnerHere(plane: ControlPlane, until: number | undefined, later: (work: Promise<unknown>) => void): (batch: EvictionBatch) => boolean {
  return (batch) => {
    if (until !== undefined && Date.now() > until) return false;
    later(
      executeEvictionBatch(plane, batch).catch(async (error: unknown) => {
        plane.log.warn('eviction run right after planning failed: its message goes to the worker', { ...errorFields(error) });
        await plane.evictions.send(batch);
      }),
    );
    return true;
  };
}

/** While failures are being planned here: how often a short pass runs, and how far ahead it hands out slots. */
const PLANNING_PASS_INTERVAL_MS = 200;
/**
 * The loop's own passes skipped in a row at most while planners here have yet to hand over their first
 * rows (a planner stuck on a slow read must not hold up rows due from elsewhere for long).
 */
const PASSES_SKIPPED_FOR_FIRST_ROWS = 5;
const PLANNING_PASS_LOOK_AHEAD_MS = 800;

/** Per process: the short passes that run while failures are being planned here (one loop, shared). */
const planningLoops = new PlaneState<{ loop?: Promise<void> }>('pacerPlanningLoop');

/**
 * Plans a failure (`plan`) while this process paces as its rows are stored: from before planning begins
 * until every planning announced here has ended, a short pacer pass runs every PLANNING_PASS_INTERVAL_MS,
 * hands out slots only PLANNING_PASS_LOOK_AHEAD_MS ahead, and runs them here. Clusters failing together are
 * planned side by side, each its first rows first (taintManager.ts), so every one of them gets its first
 * slots within a pass of its first rows being stored, in turns with the others, instead of waiting behind
 * the slots a full pass (seconds ahead) gave the first cluster planned. Then one full pass, as after any
 * planning. The timer's ticks hand out nothing meanwhile (they yield to passes announced here). Every
 * invocation that planned awaits the loop, and with it the evictions it ran.
 */
export async function planAndPaceHere<T>(plane: ControlPlane, plan: () => Promise<T>): Promise<T> {
  const release = announcePassHere(plane);
  const state = planningLoops.of(plane, () => ({}));
  const loop = (state.loop ??= planningLoop(plane).finally(() => (state.loop = undefined)));
  try {
    return await plan();
  } finally {
    release();
    await loop;
  }
}

async function planningLoop(plane: ControlPlane): Promise<void> {
  const started: Array<Promise<unknown>> = [];
  const later = (work: Promise<unknown>) => void started.push(work);
  const runHere = runnerHere(plane, undefined, later);
  // Whether a planner has stored rows since the last pass began (it asked for this one): then the pass reads
  // beside the pacer's row; a pass of the loop's own, which may find nothing, reads only what it needs.
  let rowsStored = false;
  let anyRowsStored = false;
  let anySlots = false;
  // The planners' first rows as they stored them, with their ETags: while it holds any, a pass hands out
  // slots to these without reading storage (runPacer's `planned`).
  const planned = new Map<string, VersionedEviction>();
  const passes = new SharedPass(async () => {
    const rowsJustStored = rowsStored;
    rowsStored = false;
    // The planners waiting for this pass would have their first rows slotted a pass later if it lost the row.
    const outcome = await paceUnlessOvertaken(plane, {
      runHere,
      lookAheadMs: PLANNING_PASS_LOOK_AHEAD_MS,
      lanesExpected: passesHereAnnounced(plane),
      firstRowsAwaited: firstRowsExpected(plane),
      rowsJustStored,
      planned,
    });
    plane.log.debug('pacer pass while planning', { ...outcome });
    if (outcome.scheduled > 0) anySlots = true;
    return outcome;
  });
  // A planner whose first rows are stored asks for a pass at once (paceFirstRows) instead of waiting for the next.
  offerShortPass(plane, (rows) => {
    for (const row of rows) planned.set(evictionRowId(row.record), row);
    rowsStored = anyRowsStored = true;
    return passes.after(passes.ticket());
  });
  let skipped = 0;
  try {
    while (passHereAnnounced(plane)) {
      await sleep(PLANNING_PASS_INTERVAL_MS);
      // Holding no rows while planners here have yet to hand over theirs, a pass would read storage only to
      // find rows a planner stored a moment before handing them over, and the pass their handover asks for
      // would wait for it (seconds of storage time while the plans are being written).
      if (planned.size === 0 && firstRowsExpected(plane) && skipped < PASSES_SKIPPED_FOR_FIRST_ROWS) {
        skipped++;
        continue;
      }
      skipped = 0;
      try {
        await passes.after(passes.ticket());
      } catch (error) {
        plane.log.warn('pacer pass while planning failed: the next one paces the rows', { ...errorFields(error) });
      }
    }
    offerShortPass(plane, undefined);
    // After planning that stored rows, the policies' status round at once (their EvictionInProgress turns
    // True as the episode begins; the 5 s round alone could miss a short episode).
    if (anyRowsStored) refreshStatuses(plane, later);
    // And one full pass when the short ones handed out slots: it carries the series a full look-ahead out,
    // so the timer's first tick (which needs a queue poll's lead) continues it without a gap.
    if (anyRowsStored || anySlots) await paceAfterPlanning(plane, { runHere, allHere: true, rowsJustStored: anyRowsStored });
  } finally {
    offerShortPass(plane, undefined);
    await Promise.all(started);
  }
}
