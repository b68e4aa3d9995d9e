import type { WhyAnswer } from '../api/contract/views';
import { bindingKey, BindingRef, displayName, EvictionRecord } from '../failover/bindingModel';
import { DRAIN_REASON } from '../failover/drain';
import { FAILBACK_REASON } from '../failover/failback';
import { failbackItems } from './failback';
import type { ControlPlane } from './ports';
import { evictionView, FailbackItem } from './views';

/** How many of the binding's events the answer carries (the newest). */
const EVENT_LIMIT = 200;

/**
 * GET .../why: why a workload is where it is. Its placement and graceful-eviction tasks, every ledger row
 * about it (one read per cluster it is, was or is leaving: its placement, its tasks, its eviction marks and
 * its application-failover history), its events, and one sentence per decision, newest last.
 */
export async function explainBinding(plane: ControlPlane, ref: BindingRef): Promise<WhyAnswer | undefined> {
  const key = bindingKey(ref);
  const binding = await plane.bindings.get(key);
  if (!binding) return undefined;
  const { spec } = binding.value;
  const clusters = new Set([
    ...(spec.clusters ?? []).map((c) => c.name),
    ...(spec.gracefulEvictionTasks ?? []).map((t) => t.fromCluster),
    ...Object.keys(binding.value.evictionMarks ?? {}),
    ...(spec.activeEvictionHistory ?? []).map((h) => h.clusterName),
    // Failback: the clusters it went back from (their rows say when).
    ...Object.values(binding.value.failback ?? {}).flatMap((entry) => entry.from ?? []),
  ]);
  const [rows, events, failback] = await Promise.all([
    Promise.all([...clusters].map((cluster) => plane.ledger.getEviction(cluster, key))),
    plane.events.list({ kind: ref.kind, name: displayName(ref), limit: EVENT_LIMIT }),
    failbackItems(plane, binding.value),
  ]);
  const evictions = rows
    .filter((row) => row !== undefined)
    .map((row) => row.record)
    .sort((a, b) => (a.decidedAt < b.decidedAt ? -1 : a.decidedAt > b.decidedAt ? 1 : 0));
  const placedOn = (spec.clusters ?? []).map((c) => ({ name: c.name, replicas: c.replicas ?? spec.replicas ?? 0 }));
  const explanation = [
    placedOn.length > 0 ? `placed on ${placedOn.map((c) => `${c.name} (${c.replicas})`).join(', ')}` : 'not placed on any cluster',
    ...evictions.map(sentence),
    ...(spec.gracefulEvictionTasks ?? []).map((task) =>
      task.suppressDeletion
        ? `the old copy on ${task.fromCluster} stays until a person confirms it is dealt with (purgeMode Never, ${task.reason})`
        : `the old copy on ${task.fromCluster} is removed once the new placement is healthy (${task.reason}, ${task.purgeMode}, since ${task.creationTimestamp ?? 'unknown'})`,
    ),
    ...failback.map(failbackSentence),
  ];
  if (evictions.length === 0) explanation.push('no eviction was ever decided for this binding');
  return {
    binding: { kind: ref.kind, ...(ref.namespace ? { namespace: ref.namespace } : {}), name: ref.name },
    placedOn,
    gracefulEvictionTasks: spec.gracefulEvictionTasks ?? [],
    evictions: evictions.map(evictionView),
    failback: failback.map(({ binding: _binding, ...item }) => item),
    events,
    explanation,
  };
}

/** A failback of the binding, in words: where home is, and when (or why not yet) it goes back. */
function failbackSentence(item: FailbackItem): string {
  const home = `its home is ${item.home} (evicted ${item.evictedAt}; failback after ${item.windowSeconds}s)`;
  switch (item.state) {
    case 'waiting-for-home':
      return `${home}: not going back yet: ${item.why}`;
    case 'counting':
      return `${home}: ${item.home} healthy since ${item.healthySince}, goes back from ${item.replacedBy.join(', ')} at ${item.dueAt}`;
    case 'queued':
      return `${home}: due at ${item.dueAt}, waiting for a slot at the global rate`;
    case 'scheduled':
      return `${home}: goes back from ${item.replacedBy.join(', ')} at its slot ${item.row?.scheduledFor ?? item.dueAt}`;
    case 'done':
      return `${home}: went back from ${item.replacedBy.join(', ')} at ${item.doneAt} (${item.home} healthy since ${item.healthySince})`;
  }
}

/** One decision, in words. */
function sentence(record: EvictionRecord): string {
  const what = record.reason === DRAIN_REASON ? 'drain' : record.reason === FAILBACK_REASON ? `failback to ${record.home ?? 'its home'}` : 'failover';
  switch (record.state) {
    case 'pending':
      return `will leave ${record.cluster} (${what}), due ${record.dueAt}, waiting for a slot at the global rate: ${record.why}${record.message ? ` (${record.message})` : ''}`;
    case 'scheduled':
      return `leaving ${record.cluster} (${what}) at its slot ${record.scheduledFor ?? record.dueAt}: ${record.why}`;
    case 'blocked':
      return `stays on ${record.cluster} for now (${what}): nowhere to go: ${record.message ?? 'blocked'}; tried again when the fleet changes`;
    case 'done':
      return `left ${record.cluster} at ${record.executedAt ?? record.updatedAt} (${what}, ${record.purgeMode}): ${record.why}`;
    case 'abandoned':
      return `did not leave ${record.cluster} (${what} decided ${record.decidedAt}): ${record.message ?? 'abandoned'}`;
    case 'failed':
      return `the eviction from ${record.cluster} failed: ${record.message ?? 'unknown error'}`;
  }
}
