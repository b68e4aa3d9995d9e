import type { GracefulEvictionTask } from '../api/resources';
import { assessTasks } from '../failover/gracefulEviction';
import { keep, write } from '../store/optimistic';
import type { EventRecord, Versioned } from '../store/ports';
import type { BindingRecord } from '../store/records';
import { annotate, ATTR, inSpan, recordSpan } from '../telemetry/tracing';
import type { ControlPlane } from './ports';
import { writeBinding } from './state/bindingWrites';
import { bindingEvent } from './state/events';
import { bindingsNeeding } from './state/reads';

/**
 * The graceful-eviction sweep for one binding: drops the tasks whose old copy may now go and records an
 * event for each (what a downstream deployer acts on to delete the old copy). Returns the dropped tasks.
 */
export async function sweepBinding(plane: ControlPlane, key: string, current?: Versioned<BindingRecord>): Promise<DroppedTask[]> {
  return inSpan('gracefulEviction.sweep', { attributes: { [ATTR.binding]: key } }, async () => {
    const dropped = await sweep(plane, key, current);
    annotate({ [ATTR.count]: dropped.length, [ATTR.outcome]: dropped.length > 0 ? 'cleared' : 'kept' });
    return dropped;
  });
}

export type DroppedTask = { task: GracefulEvictionTask; why: string };

/**
 * The sweep's rule on one binding version (changed in place): drops the tasks whose old copy may now go.
 * Used by the sweep and by the eviction worker (a purge mode Directly task goes in the eviction's own write).
 */
export function sweepRecord(record: BindingRecord, now: Date, config: ControlPlane['config']): DroppedTask[] {
  const tasks = record.spec.gracefulEvictionTasks ?? [];
  if (tasks.length === 0) return [];
  const assessment = assessTasks(
    tasks,
    {
      generation: record.generation,
      schedulerObservedGeneration: record.status.schedulerObservedGeneration,
      clusters: (record.spec.clusters ?? []).map((c) => c.name),
      aggregatedStatus: record.status.aggregatedStatus ?? [],
    },
    now,
    { globalTimeoutSeconds: config.gracefulEvictionTimeoutSeconds, plugins: config.evictionPlugins },
  );
  // Tasks are bookkeeping of the old copies: removing one does not change what is scheduled, so the
  // generation stays (a bump would make every other task wait for a new scheduling round).
  if (assessment.drop.length > 0) record.spec.gracefulEvictionTasks = assessment.keep;
  return assessment.drop;
}

/** One OldCopyRemoved event per dropped task: what a downstream deployer acts on to delete the old copy. */
export function oldCopyRemovedEvents(record: BindingRecord, dropped: readonly DroppedTask[], now: Date | string): EventRecord[] {
  return dropped.map(({ task, why }) =>
    bindingEvent(
      record,
      now,
      'OldCopyRemoved',
      `graceful eviction task for ${task.fromCluster} cleared (${task.purgeMode ?? 'Gracefully'}): ${why}; the copy on ${task.fromCluster} may be deleted`,
      'Normal',
      { cluster: task.fromCluster, purgeMode: task.purgeMode ?? 'Gracefully', why },
    ),
  );
}

async function sweep(plane: ControlPlane, key: string, known?: Versioned<BindingRecord>): Promise<DroppedTask[]> {
  let dropped: DroppedTask[] = [];
  const { record } = await writeBinding<null>(
    plane,
    key,
    (current, now) => {
      dropped = current ? sweepRecord(current, now, plane.config) : [];
      return current && dropped.length > 0 ? write(current, null) : keep(null);
    },
    known ? { current: known } : {},
  );
  if (record && dropped.length > 0) {
    await plane.events.append(oldCopyRemovedEvents(record, dropped, plane.clock.now().toISOString()));
    plane.log.info('graceful eviction tasks cleared', { binding: key, clusters: dropped.map((d) => d.task.fromCluster) });
  }
  return dropped;
}

/** The periodic sweep: every binding that has tasks. */
export async function sweepAllBindings(plane: ControlPlane): Promise<number> {
  let dropped = 0;
  for (const entry of await bindingsNeeding(plane, 'needsSweep')) {
    if ((entry.value.spec.gracefulEvictionTasks ?? []).length > 0) {
      const startTime = Date.now();
      // From the listed version: a binding whose tasks all stay costs no further request.
      const cleared = await sweep(plane, entry.id, { value: entry.value, etag: entry.etag });
      dropped += cleared.length;
      // A span only when the sweep did something, in the trace of the failure that made the tasks.
      if (cleared.length > 0)
        recordSpan('gracefulEviction.sweep', {
          parent: { traceparent: entry.value.traceparent },
          startTime,
          attributes: { [ATTR.binding]: entry.id, [ATTR.count]: cleared.length, [ATTR.outcome]: 'cleared' },
        });
    }
  }
  return dropped;
}
