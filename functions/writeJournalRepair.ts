import { app, InvocationContext, Timer } from '@azure/functions';
import { repairInterruptedWrites } from '../shared/controllers/propagationPolicies';
import { controlPlane } from '../shared/runtime';

/**
 * Every 10 s: finishes the writes that span tables (a binding and its placement rows, a propagation policy
 * and the bindings derived from it) whose host died or failed between their steps, from the write journal:
 * the placement rows of a binding that never landed go, and an interrupted policy change is derived again.
 * Idle, it costs one query of the journal partition.
 */
export async function writeJournalRepair(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const outcome = await repairInterruptedWrites(controlPlane());
  if (Object.keys(outcome).length > 0) ctx.log(`write journal repair: ${JSON.stringify(outcome)}`);
}

app.timer('writeJournalRepair', { schedule: '6-59/10 * * * * *', runOnStartup: false, useMonitor: false, handler: writeJournalRepair });
