import { notFound } from '../api/errors';
import { bindingKey, pendingEviction } from '../failover/bindingModel';
import { CORDON_TAINT, DRAIN_REASON, isCordoned, isCordonTaint } from '../failover/drain';
import { drain as drainRow, plan, type RowChange } from '../failover/evictionRow';
import { currentTraceCarrier } from '../telemetry/tracing';
import { setDraining } from './pacer';
import type { ControlPlane } from './ports';
import { listClusterPlacements } from './state/bindingWrites';
import { updateCluster } from './state/clusterWrites';
import { clusterEvent } from './state/events';
import { applyRowChanges, planRows } from './state/evictionRows';
import { abandonEvictions } from './taintManager';

/**
 * Drain and uncordon: a command, not a NoExecute taint written by hand (docs/architecture.md, decision 13). A
 * drain cordons the cluster (the `karmadactl cordon` taint, held by hand), then evacuates every binding
 * placed there through the ledger: rows of reason `Drain`, due now, paced at the global rate like any
 * eviction, with the pre-scheduling check and each binding's purge mode. They go whatever the Failover gate
 * says and wait while evictions are paused. Both calls are idempotent.
 */

export interface DrainOutcome {
  cluster: string;
  /** This call put the cordon taint on (false: it was already there). */
  cordoned: boolean;
  /** New rows of reason Drain (including waiting rows of a failure the drain took over). */
  planned: number;
  /** Bindings already scheduled to leave, or already drained. */
  alreadyDecided: number;
}

export async function drainCluster(plane: ControlPlane, name: string, actor?: string): Promise<DrainOutcome> {
  const cordon = await updateCluster<boolean>(plane, name, (current, now) => {
    if (!current) return { unchanged: false };
    if (isCordoned(current.taints)) return { unchanged: false };
    current.taints = [...current.taints, { ...CORDON_TAINT, timeAdded: now.toISOString(), owners: [], manual: true }];
    current.generation += 1;
    return {
      record: current,
      result: true,
      events: [
        clusterEvent(
          name,
          now,
          'Cordoned',
          `cordoned for a drain${actor ? ` by ${actor}` : ''}: taint ${CORDON_TAINT.key}:${CORDON_TAINT.effect}; nothing new is placed here`,
          'Normal',
          actor ? { actor } : undefined,
        ),
      ],
    };
  });
  if (!cordon.record) throw notFound(`cluster "${name}" not found`);
  await setDraining(plane, name, true);

  const now = plane.clock.now();
  const at = now.toISOString();
  const { traceparent } = currentTraceCarrier();
  // Rows of a binding write that never landed (a host killed mid-apply) are not drained: no phantom row takes a slot.
  const { placements, evictions } = await listClusterPlacements(plane, name);
  const prior = new Map(evictions.map((row) => [row.record.bindingKey, row]));
  const why = `the cluster is drained (cordoned ${cordon.record.taints.find(isCordonTaint)?.timeAdded ?? at})`;
  const rows: Array<{ change: RowChange; replaceEtag?: string }> = [];
  const takeOver: Array<{ change: RowChange; etag: string }> = [];
  let alreadyDecided = 0;
  for (const placement of placements) {
    const key = bindingKey(placement);
    const before = prior.get(key);
    const state = before?.record.state;
    // A failure's row still waiting becomes the drain's, due now; a scheduled row goes at its slot anyway.
    if (before && (state === 'pending' || state === 'blocked') && before.record.reason !== DRAIN_REASON) {
      takeOver.push({
        etag: before.etag,
        change: drainRow(before.record, { reason: DRAIN_REASON, why: `${why}; it was waiting: ${before.record.why}`, dueAt: at }, at),
      });
      continue;
    }
    if (before && (state === 'pending' || state === 'blocked' || state === 'scheduled')) {
      alreadyDecided++;
      continue;
    }
    rows.push({
      replaceEtag: before?.etag,
      change: plan(
        pendingEviction(placement, { reason: DRAIN_REASON, why, taints: `${CORDON_TAINT.key}:${CORDON_TAINT.effect}`, dueAt: at }, at, traceparent),
        before?.record,
      ),
    });
  }
  await planRows(plane, rows);
  // ETag-checked: a row the pacer took meanwhile goes at its slot as it is.
  const tookOver = (await applyRowChanges(plane, takeOver)).filter((etag) => etag !== undefined).length;
  alreadyDecided += takeOver.length - tookOver;
  const planned = rows.length + tookOver;
  if (planned > 0 || cordon.result) {
    await plane.events.append([
      clusterEvent(
        name,
        now,
        'DrainStarted',
        `drain${actor ? ` by ${actor}` : ''}: ${planned} binding(s) to move at the global rate; ${alreadyDecided} already leaving`,
        'Warning',
        {
          ...(actor ? { actor } : {}),
          planned,
          alreadyDecided,
          bindings: rows.slice(0, 50).map((r) => r.change.record.bindingKey),
        },
      ),
    ]);
  }
  plane.log.info('drain', { cluster: name, planned, alreadyDecided, cordoned: cordon.result });
  return { cluster: name, cordoned: cordon.result, planned, alreadyDecided };
}

export interface UncordonOutcome {
  cluster: string;
  /** This call removed the cordon taint (false: there was none). */
  uncordoned: boolean;
  /** The drain's waiting rows (pending, blocked) abandoned now. */
  abandoned: number;
  /**
   * The drain's rows already given a slot: their worker re-reads the cluster right before acting, finds no
   * cordon and abandons them at their slot (docs/architecture.md, decision 8: a scheduled row is its worker's to settle).
   */
  abandonedAtSlot: number;
}

export async function uncordonCluster(plane: ControlPlane, name: string, actor?: string): Promise<UncordonOutcome> {
  const outcome = await updateCluster<boolean>(plane, name, (current, now) => {
    if (!current) return { unchanged: false };
    const cordon = current.taints.find(isCordonTaint);
    if (!cordon || !cordon.manual) return { unchanged: false };
    // Only the hand-held hold goes: a policy that also holds the taint keeps it.
    current.taints = current.taints.flatMap((t) => (isCordonTaint(t) ? (t.owners.length > 0 ? [{ ...t, manual: false }] : []) : [t]));
    current.generation += 1;
    return {
      record: current,
      result: true,
      events: [
        clusterEvent(
          name,
          now,
          'Uncordoned',
          `uncordoned${actor ? ` by ${actor}` : ''}: taint ${CORDON_TAINT.key}:${CORDON_TAINT.effect} removed`,
          'Normal',
          actor ? { actor } : undefined,
        ),
      ],
    };
  });
  if (!outcome.record) throw notFound(`cluster "${name}" not found`);
  await setDraining(plane, name, false);
  const abandoned = await abandonEvictions(plane, name, 'the cluster was uncordoned: the drain is over', (record) => record.reason === DRAIN_REASON);
  const abandonedAtSlot = (await plane.ledger.listEvictions(name, ['scheduled'])).filter(({ record }) => record.reason === DRAIN_REASON).length;
  return { cluster: name, uncordoned: outcome.result, abandoned, abandonedAtSlot };
}
