import type { GracefulEvictionTask } from '../api/resources';
import { assessTasks } from '../failover/gracefulEviction';
import { keep, write } from '../store/optimistic';
import type { Versioned } from '../store/ports';
import { annotate, ATTR, inSpan, recordSpan } from '../telemetry/tracing';
import type { ControlPlane } from './ports';
import type { BindingRecord } from './records';
import { writeBinding } from './state/bindingWrites';
import { bindingEvent } from './state/events';
import { bindingsNeeding } from './state/reads';

/**
 * The graceful-eviction sweep for one binding: drops the tasks whose old copy may now go and records an
 * event for each (what a downstream deployer acts on to delete the old copy). Returns the dropped tasks.
 */
export async function sweepBinding(
  plane: ControlPlane,
  key: string,
  current?: Versioned<BindingRecord>,
): Promise<Array<{ task: GracefulEvictionTask; why: string }>> {
  return inSpan('gracefulEviction.sweep', { attributes: { [ATTR.binding]: key } }, async () => {
    const dropped = await sweep(plane, key, current);
    annotate({ [ATTR.count]: dropped.length, [ATTR.outcome]: dropped.length > 0 ? 'cleared' : 'kept' });
    return dropped;
  });
}

async function sweep(plane: ControlPlane, key: string, known?: Versioned<BindingRecord>): Promise<Array<{ task: GracefulEvictionTask; why: string }>> {
  let dropped: Array<{ task: GracefulEvictionTask; why: string }> = [];
  const { record } = await writeBinding<null>(
    plane,
    key,
    (current, now) => {
      dropped = [];
      const tasks = current?.spec.gracefulEvictionTasks ?? [];
      if (!current || tasks.length === 0) return keep(null);
      const assessment = assessTasks(
        tasks,
        {
          generation: current.generation,
          schedulerObservedGeneration: current.status.schedulerObservedGeneration,
          clusters: (current.spec.clusters ?? []).map((c) => c.name),
          aggregatedStatus: current.status.aggregatedStatus ?? [],
        },
        now,
        { globalTimeoutSeconds: plane.config.gracefulEvictionTimeoutSeconds, plugins: plane.config.evictionPlugins },
      );
      if (assessment.drop.length === 0) return keep(null);
      dropped = assessment.drop;
      // Tasks are bookkeeping of the old copies: removing one does not change what is scheduled, so the
      // generation stays (a bump would make every other task wait for a new scheduling round).
      current.spec.gracefulEvictionTasks = assessment.keep;
      return write(current, null);
    },
    known ? { current: known } : {},
  );
  if (record && dropped.length > 0) {
    const now = plane.clock.now().toISOString();
    const events = dropped.map(({ task, why }) =>
      bindingEvent(
        record,
        now,
        'OldCopyRemoved',
        `graceful eviction task for ${task.fromCluster} cleared (${task.purgeMode ?? 'Gracefully'}): ${why}; the copy on ${task.fromCluster} may be deleted`,
        'Normal',
        { cluster: task.fromCluster, purgeMode: task.purgeMode ?? 'Gracefully', why },
      ),
    );
    await plane.events.append(events);
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
