import { describe, expect, it } from 'vitest';
import { EVALUATIONS_PER_MESSAGE, taintEvaluationMessage } from '../../shared/controllers/ports';
import { evaluationTargets } from '../../shared/controllers/state/evaluationRequests';
import { evaluateClusters } from '../../shared/controllers/taintEvaluation';
import { deleteTaintPolicy } from '../../shared/controllers/taintPolicies';
import { cluster } from '../helpers/fleet';
import { applyTo } from '../helpers/memoryLoop';
import { type MemoryPlane, memoryPlane } from '../helpers/memoryPlane';

/**
 * A ClusterTaintPolicy change re-evaluates the clusters it may affect: those a version of it (before or
 * after) targets, and those that hold a taint it adds. Not the fleet: the cost of an apply follows what the
 * policy selects.
 */

const policy = (name: string, targetCluster?: Record<string, unknown>) => ({
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind: 'ClusterTaintPolicy',
  metadata: { name },
  spec: {
    ...(targetCluster ? { targetCluster } : {}),
    matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False'] }],
    taintsToAdd: [{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', addOnMatchSeconds: 30 }],
  },
});

/** The clusters sent for evaluation since the last call, sorted. */
const evaluated = (m: MemoryPlane) => [...new Set(m.evaluations.takeAll().flatMap((sent) => evaluationTargets(sent.message)))].sort();

async function fleet() {
  const m = memoryPlane();
  await applyTo(m, [
    cluster('east-1', false, { region: 'east' }),
    cluster('east-2', false, { region: 'east' }),
    cluster('west-1', false, { region: 'west' }),
    cluster('west-2', false, { region: 'west' }),
  ]);
  evaluated(m);
  return m;
}

describe('ClusterTaintPolicy changes re-evaluate the clusters they affect', () => {
  it('a new policy: the clusters it targets', async () => {
    const m = await fleet();
    await applyTo(m, [policy('east-only', { labelSelector: { matchLabels: { region: 'east' } } })]);
    expect(evaluated(m)).toEqual(['east-1', 'east-2']);
    await applyTo(m, [policy('named', { clusterNames: ['west-2'] })]);
    expect(evaluated(m)).toEqual(['west-2']);
    await applyTo(m, [policy('none', { clusterNames: ['elsewhere'] })]);
    expect(evaluated(m)).toEqual([]);
  });

  it('a policy without a target: every cluster; the same apply again: none', async () => {
    const m = await fleet();
    await applyTo(m, [policy('all')]);
    expect(evaluated(m)).toEqual(['east-1', 'east-2', 'west-1', 'west-2']);
    await applyTo(m, [policy('all')]);
    expect(evaluated(m)).toEqual([]);
  });

  it('a changed target: the clusters it targeted and the ones it targets now', async () => {
    const m = await fleet();
    await applyTo(m, [policy('moving', { clusterNames: ['east-1'] })]);
    evaluated(m);
    await applyTo(m, [policy('moving', { clusterNames: ['west-1'] })]);
    expect(evaluated(m)).toEqual(['east-1', 'west-1']);
  });

  it('a deleted policy: the clusters it targeted, and those that still hold a taint it added', async () => {
    const m = await fleet();
    await applyTo(m, [policy('leaving', { clusterNames: ['east-1'] })]);
    // A taint of its kind left on a cluster it does not target (written while its target was another).
    const west = (await m.clusters.get('west-2'))!;
    const left = { key: 'cluster.karmada.io/not-ready', effect: 'NoExecute' as const, timeAdded: '2026-01-01T00:00:00Z', owners: ['leaving'], manual: false };
    await m.clusters.replace('west-2', { ...west.value, taints: [...west.value.taints, left] }, west.etag);
    evaluated(m);
    expect(await deleteTaintPolicy(m.plane, 'leaving')).toBe(true);
    expect(evaluated(m)).toEqual(['east-1', 'west-2']);
  });
});

describe('evaluations requested for many clusters', () => {
  it('go EVALUATIONS_PER_MESSAGE clusters to a message, and the handler evaluates every one it names', async () => {
    const m = memoryPlane();
    const names = Array.from({ length: 250 }, (_, i) => `c${i}`);
    await applyTo(
      m,
      names.map((name) => cluster(name)),
    );
    m.evaluations.takeAll();
    await applyTo(m, [policy('all')]);
    const messages = m.evaluations.takeAll().map((sent) => sent.message);
    expect(messages.map((message) => evaluationTargets(message).length)).toEqual([EVALUATIONS_PER_MESSAGE, EVALUATIONS_PER_MESSAGE, 50]);
    expect(messages.every((message) => taintEvaluationMessage.safeParse(message).success)).toBe(true);
    // Every cluster named is Ready=False from now on: an evaluation of each records the policy's window.
    for (const name of names) {
      const current = (await m.clusters.get(name))!;
      await m.clusters.replace(name, { ...current.value, conditions: [{ ...current.value.conditions[0], status: 'False' }] }, current.etag);
    }
    for (const message of messages) await evaluateClusters(m.plane, evaluationTargets(message));
    const scheduled = m.evaluations.takeAll().map((sent) => sent.message);
    expect(new Set(scheduled.flatMap(evaluationTargets)).size).toBe(250);
    expect(scheduled.every((message) => 'dueAt' in message && message.dueAt !== undefined)).toBe(true);
  });
});
