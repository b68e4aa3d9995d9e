import { randomUUID } from 'node:crypto';
import type { ClusterTaintPolicyInput } from '../api/resources';
import { mutate, keep, write } from '../store/optimistic';
import type { ControlPlane } from './deps';
import type { ApplyAction } from './clusters';
import type { PolicyRecord } from './records';
import { fanOutEvaluations, forgetPolicies } from './taintController';

const userView = (record: PolicyRecord) => JSON.stringify({ labels: record.labels, annotations: record.annotations, spec: record.spec });

/** Apply a ClusterTaintPolicy, then queue a re-evaluation of every cluster when it changed. */
export async function applyTaintPolicy(plane: ControlPlane, input: ClusterTaintPolicyInput): Promise<ApplyAction> {
  const name = input.metadata.name;
  const { result } = await mutate<PolicyRecord, ApplyAction>(plane.policies, name, (current) => {
    const now = plane.clock.now();
    const record: PolicyRecord = current
      ? { ...current.value }
      : { name, uid: randomUUID(), createdAt: now.toISOString(), generation: 1, labels: {}, annotations: {}, spec: input.spec };
    record.labels = input.metadata.labels ?? {};
    record.annotations = input.metadata.annotations ?? {};
    record.spec = input.spec;
    if (!current) return write(record, 'created');
    if (userView(current.value) === userView(record)) return keep('unchanged');
    record.generation += 1;
    return write(record, 'configured');
  });
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
