import { decodeApplyDocuments } from '../../shared/api/decode';
import type { StatusReport } from '../../shared/api/resources';
import { applyObjects } from '../../shared/controllers/apply';
import { reportClusterStatus } from '../../shared/controllers/clusters';
import { executeEviction, WorkerOutcome } from '../../shared/controllers/evictionWorker';
import { runPacer } from '../../shared/controllers/pacer';
import type { EvictionMessage, TaintEvaluationMessage } from '../../shared/controllers/ports';
import { evaluationTargets } from '../../shared/controllers/state/evaluationRequests';
import { evaluateCluster } from '../../shared/controllers/taintEvaluation';
import { handleTaintManagerMessage } from '../../shared/controllers/taintManager';
import { createdClusterReports } from './fleet';
import { MemoryPlane, takeEvictions } from './memoryPlane';

/**
 * Applies objects as POST /api/apply does; a created Cluster fixture's agent then reports the conditions
 * it carries (test/helpers/fleet.ts). Answers what the apply answered.
 */
export async function applyTo(m: MemoryPlane, objects: unknown[]): Promise<Array<{ kind: string; name: string; action: string }>> {
  const results = await applyObjects(m.plane, decodeApplyDocuments(objects));
  for (const { name, conditions } of createdClusterReports(objects, results)) {
    await reportClusterStatus(m.plane, name, { conditions: conditions as StatusReport['conditions'] });
  }
  return results;
}

/**
 * One second of the app's eviction path: the pacer ticks, then the worker executes each queued message
 * whose slot falls within the second, at its slot (as the queue and the worker's wait do). Returns what ran.
 */
export async function second(m: MemoryPlane, queued: EvictionMessage[]): Promise<Array<{ message: EvictionMessage; outcome: WorkerOutcome }>> {
  const tick = m.clock.now().getTime();
  await runPacer(m.plane);
  queued.push(...takeEvictions(m).map((s) => s.message));
  queued.sort((a, b) => a.slot.localeCompare(b.slot));
  const results = [];
  while (queued.length > 0 && Date.parse(queued[0].slot) < tick + 1000) {
    const message = queued.shift()!;
    m.clock.set(new Date(Math.max(tick, Date.parse(message.slot))));
    results.push({ message, outcome: await executeEviction(m.plane, message) });
  }
  m.clock.set(new Date(tick + 1000));
  return results;
}

/** The loop's messages between seconds: evaluations are held until their deadline, as the handler waits. */
export interface LoopState {
  evictions: EvictionMessage[];
  evaluations: TaintEvaluationMessage[];
}

/**
 * One second of the whole failover loop: taint evaluations due by now (at their deadline), taint-manager
 * messages, then the pacer and the worker (`second`).
 */
export async function loopSecond(m: MemoryPlane, state: LoopState): Promise<Array<{ message: EvictionMessage; outcome: WorkerOutcome }>> {
  const now = m.clock.now().getTime();
  state.evaluations.push(...m.evaluations.takeVisible().map((s) => s.message));
  const due = state.evaluations.filter((e) => !('dueAt' in e) || !e.dueAt || Date.parse(e.dueAt) <= now);
  state.evaluations = state.evaluations.filter((e) => !due.includes(e));
  for (const evaluation of due) for (const cluster of evaluationTargets(evaluation)) await evaluateCluster(m.plane, cluster);
  for (const { message } of m.taintManager.takeVisible()) await handleTaintManagerMessage(m.plane, message);
  return second(m, state.evictions);
}
