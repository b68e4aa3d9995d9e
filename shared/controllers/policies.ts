import { randomUUID } from 'node:crypto';
import type { ClusterTaintPolicyInput } from '../api/resources';
import { mutate, keep, write, Mutation } from '../store/optimistic';
import type { ControlPlane } from './deps';
import type { ApplyAction } from './clusters';
import type { PolicyRecord, StoredMetadata } from './records';
import { fanOutEvaluations, forgetPolicies } from './taintController';

/**
 * The apply step of a policy-like object (metadata plus spec): created, configured (generation + 1) or
 * unchanged, from what the user gave.
 */
export function appliedPolicy<R extends StoredMetadata & { spec: unknown }>(
  current: R | undefined,
  created: () => R,
  input: { metadata: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: R['spec'] },
): Mutation<R, ApplyAction> {
  const record: R = current ? { ...current } : created();
  record.labels = input.metadata.labels ?? {};
  record.annotations = input.metadata.annotations ?? {};
  record.spec = input.spec;
  if (!current) return write(record, 'created');
  const view = (r: R) => JSON.stringify({ labels: r.labels, annotations: r.annotations, spec: r.spec });
  if (view(current) === view(record)) return keep('unchanged');
  record.generation += 1;
  return write(record, 'configured');
}

/** Apply a ClusterTaintPolicy, then queue a re-evaluation of every cluster when it changed. */
export async function applyTaintPolicy(plane: ControlPlane, input: ClusterTaintPolicyInput): Promise<ApplyAction> {
  const name = input.metadata.name;
  const { result } = await mutate<PolicyRecord, ApplyAction>(plane.policies, name, (current) =>
    appliedPolicy(current?.value, () => ({ name, uid: randomUUID(), createdAt: plane.clock.now().toISOString(), generation: 1, labels: {}, annotations: {}, spec: input.spec }), input),
  );
  if (result !== 'unchanged') {
    await plane.events.append([{ time: plane.clock.now().toISOString(), kind: 'ClusterTaintPolicy', name, type: 'Normal', reason: result === 'created' ? 'Created' : 'Configured', message: `policy ${result}` }]);
    forgetPolicies(plane);
    await fanOutEvaluations(plane);
  }
  return result;
}

/** Delete a policy; the taints it alone held are released at the next evaluation (queued now). */
export async function deleteTaintPolicy(plane: ControlPlane, name: string): Promise<boolean> {
  const deleted = await plane.policies.delete(name);
  if (deleted) {
    await plane.events.append([{ time: plane.clock.now().toISOString(), kind: 'ClusterTaintPolicy', name, type: 'Normal', reason: 'Deleted', message: 'policy deleted; taints only it held are released' }]);
    forgetPolicies(plane);
    await fanOutEvaluations(plane);
  }
  return deleted;
}
