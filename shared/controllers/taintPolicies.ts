import { randomUUID } from 'node:crypto';
import { type ClusterTaintPolicyInput, type TaintPolicyShape, taintPolicyShape } from '../api/resources';
import { mutate } from '../store/optimistic';
import type { ControlPlane } from './ports';
import type { PolicyRecord } from './records';
import { appliedPolicy, ApplyAction } from './state/derivation';
import { policyEvent } from './state/events';
import { forgetTaintPolicies } from './state/reads';
import { fanOutEvaluations } from './taintEvaluation';
import { policyResource } from './views';

/** How many of a policy's latest taint actions GET /api/clustertaintpolicies/{name} shows. */
export const RECENT_ACTIONS = 20;

const shapeText = (shape: TaintPolicyShape) =>
  shape === 'karmada'
    ? 'Karmada shape: adds at once when all addOnConditions match, removes when all removeOnConditions match; its taints stay when it is deleted'
    : 'seed shape: adds after addOnMatchSeconds of match, removes after removeOnMismatchSeconds of mismatch; its taints are released when it is deleted';

/** Apply a ClusterTaintPolicy (either shape), then queue a re-evaluation of every cluster when it changed. */
export async function applyTaintPolicy(plane: ControlPlane, input: ClusterTaintPolicyInput): Promise<ApplyAction> {
  const name = input.metadata.name;
  const { result } = await mutate<PolicyRecord, ApplyAction>(plane.policies, name, (current) =>
    appliedPolicy(
      current?.value,
      () => ({ name, uid: randomUUID(), createdAt: plane.clock.now().toISOString(), generation: 1, labels: {}, annotations: {}, spec: input.spec }),
      input,
    ),
  );
  if (result !== 'unchanged') {
    await plane.events.append([
      policyEvent(
        'ClusterTaintPolicy',
        name,
        plane.clock.now(),
        result === 'created' ? 'Created' : 'Configured',
        `policy ${result} (${shapeText(taintPolicyShape(input.spec))})`,
      ),
    ]);
    forgetTaintPolicies(plane);
    await fanOutEvaluations(plane);
  }
  return result;
}

/**
 * Delete a policy. A seed-shape policy's taints that only it held are released at the next evaluation
 * (queued now); a Karmada-shape policy's taints stay, as upstream ("never automatically removed").
 */
export async function deleteTaintPolicy(plane: ControlPlane, name: string): Promise<boolean> {
  const existing = await plane.policies.get(name);
  const deleted = await plane.policies.delete(name);
  if (deleted) {
    const karmada = existing !== undefined && taintPolicyShape(existing.value.spec) === 'karmada';
    const message = karmada
      ? 'policy deleted; its taints stay on the clusters (Karmada shape)'
      : 'policy deleted; taints only it held are released (seed shape)';
    await plane.events.append([policyEvent('ClusterTaintPolicy', name, plane.clock.now(), 'Deleted', message)]);
    forgetTaintPolicies(plane);
    await fanOutEvaluations(plane);
  }
  return deleted;
}

/** Every ClusterTaintPolicy as the API shows it, by name, with its shape. */
export async function listTaintPolicies(plane: ControlPlane) {
  return (await plane.policies.list())
    .map((entry) => ({ ...policyResource(entry.value, entry.etag), status: { shape: taintPolicyShape(entry.value.spec) } }))
    .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
}

/** One taint action of a policy, from its events. */
export interface TaintPolicyAction {
  time: string;
  cluster: string;
  action: 'added' | 'removed';
  taint: { key: string; value?: string; effect: string };
  shape: TaintPolicyShape;
  rule: string;
  reason: string;
}

/**
 * One ClusterTaintPolicy, with its shape, what that shape does, and its latest taint actions (newest
 * last): on which cluster, which taint, and which rule acted. `status` is ignored on apply.
 */
export async function getTaintPolicy(plane: ControlPlane, name: string) {
  const entry = await plane.policies.get(name);
  if (!entry) return undefined;
  const shape = taintPolicyShape(entry.value.spec);
  const events = await plane.events.list({ kind: 'ClusterTaintPolicy', name, since: entry.value.createdAt, limit: 200 });
  const actions: TaintPolicyAction[] = events
    .filter((e) => (e.reason === 'TaintAdded' || e.reason === 'TaintRemoved') && e.details)
    .map((e) => {
      const d = e.details as Record<string, unknown>;
      return {
        time: e.time,
        cluster: String(d.cluster),
        action: e.reason === 'TaintAdded' ? 'added' : 'removed',
        taint: d.taint as TaintPolicyAction['taint'],
        shape: d.shape as TaintPolicyShape,
        rule: String(d.rule),
        reason: String(d.reason),
      };
    });
  return {
    ...policyResource(entry.value, entry.etag),
    status: { shape, rules: shapeText(shape), recentActions: actions.slice(-RECENT_ACTIONS) },
  };
}
