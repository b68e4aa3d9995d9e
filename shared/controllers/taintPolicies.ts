import { randomUUID } from 'node:crypto';
import type { ClusterTaintPolicyInput } from '../api/resources';
import { mutate } from '../store/optimistic';
import type { ControlPlane } from './ports';
import type { PolicyRecord } from './records';
import { ApplyAction, appliedPolicy } from './state/derivation';
import { policyEvent } from './state/events';
import { forgetTaintPolicies } from './state/reads';
import { fanOutEvaluations } from './taintEvaluation';
import { policyResource } from './views';

/** Apply a ClusterTaintPolicy, then queue a re-evaluation of every cluster when it changed. */
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
      policyEvent('ClusterTaintPolicy', name, plane.clock.now(), result === 'created' ? 'Created' : 'Configured', `policy ${result}`),
    ]);
    forgetTaintPolicies(plane);
    await fanOutEvaluations(plane);
  }
  return result;
}

/** Delete a policy; the taints it alone held are released at the next evaluation (queued now). */
export async function deleteTaintPolicy(plane: ControlPlane, name: string): Promise<boolean> {
  const deleted = await plane.policies.delete(name);
  if (deleted) {
    await plane.events.append([policyEvent('ClusterTaintPolicy', name, plane.clock.now(), 'Deleted', 'policy deleted; taints only it held are released')]);
    forgetTaintPolicies(plane);
    await fanOutEvaluations(plane);
  }
  return deleted;
}

/** Every ClusterTaintPolicy as the API shows it, by name. */
export async function listTaintPolicies(plane: ControlPlane) {
  return (await plane.policies.list()).map((entry) => policyResource(entry.value, entry.etag)).sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
}

export async function getTaintPolicy(plane: ControlPlane, name: string) {
  const entry = await plane.policies.get(name);
  return entry ? policyResource(entry.value, entry.etag) : undefined;
}
