import { mapConcurrent } from '../concurrency';
import { affectedByPolicyChange, type TaintChange } from '../failover/taintPolicy';
import type { Versioned } from '../store/ports';
import { clusterFacts, type ClusterRecord, type PolicyRecord, taintPolicy } from '../store/records';
import { ATTR, inSpan } from '../telemetry/tracing';
import type { ControlPlane } from './ports';
import { type ClusterUpdateOptions, updateCluster } from './state/clusterWrites';
import { requestEvaluations } from './state/evaluationRequests';
import { recountHolds } from './state/policyGuard';
import { beginFleetRecount, loadTaintPolicies } from './state/reads';

export { EVALUATION_LEAD_SECONDS, scheduleEvaluation } from './state/clusterWrites';

/**
 * Taint evaluation outside a health report: at a window's deadline, after a policy change, and the
 * minute resync. The rule itself runs in updateCluster (state/clusterWrites.ts), on every cluster write.
 */

/** Re-evaluates one cluster. A missing cluster is nothing to do. */
export async function evaluateCluster(plane: ControlPlane, name: string, policies?: PolicyRecord[], listed?: Versioned<ClusterRecord>): Promise<TaintChange[]> {
  return (await evaluate(plane, name, policies, { listed })).changes;
}

/**
 * Re-evaluates one cluster whose change of faulty taints the caller plans itself, at once (the Karmada
 * watch): the taint manager's message for it goes delayed (state/clusterWrites.ts). The record as written, too.
 */
export function evaluateToPlan(
  plane: ControlPlane,
  name: string,
  watched?: Versioned<ClusterRecord>,
): Promise<{ changes: TaintChange[]; record?: ClusterRecord }> {
  return evaluate(plane, name, undefined, { listed: watched, plannedByCaller: true });
}

function evaluate(plane: ControlPlane, name: string, policies: PolicyRecord[] | undefined, options: ClusterUpdateOptions) {
  return inSpan('taint.evaluate', { attributes: { [ATTR.cluster]: name } }, async () => {
    const { changes, record } = await updateCluster(
      plane,
      name,
      (current) => (current ? { record: current, result: undefined } : { unchanged: undefined }),
      policies,
      options,
    );
    return { changes, record };
  });
}

/** Clusters a message naming several evaluates at once. */
const EVALUATIONS_AT_ONCE = 4;

/**
 * Re-evaluates the clusters one message names, a few at a time. Each is evaluated even when another fails;
 * then the first failure is thrown, so the message is retried (evaluation is idempotent).
 */
export async function evaluateClusters(plane: ControlPlane, names: readonly string[]): Promise<void> {
  let failure: Error | undefined;
  await mapConcurrent(names, EVALUATIONS_AT_ONCE, (name) =>
    evaluateCluster(plane, name).then(
      () => undefined,
      (error: unknown) => void (failure ??= error instanceof Error ? error : new Error(String(error))),
    ),
  );
  if (failure !== undefined) throw failure;
}

/** The safety net behind the deadline messages: evaluates every cluster against the current policies. */
export async function resyncAllClusters(plane: ControlPlane): Promise<{ clusters: number; changes: number }> {
  const policies = await loadTaintPolicies(plane);
  // The check behind the maintained fleet summary, a full recount once a minute, counts this same listing.
  const recount = await beginFleetRecount(plane);
  const listedAt = plane.clock.now();
  const clusters = await plane.clusters.list();
  // The blast-radius guard's places, checked against the same listing before this resync changes anything
  // (a place taken within 10 s of the listing may be for a write the listing missed: it stays).
  await recountHolds(
    plane,
    clusters,
    new Date(listedAt.getTime() - 10_000),
    policies.map((p) => p.name),
  );
  let changes = 0;
  // From the listed versions: a cluster that needs no change costs no second read (a stale one, one retry).
  for (const entry of clusters) changes += (await evaluateCluster(plane, entry.id, policies, entry)).length;
  // A change this resync made to a faulty taint was noted (the summary's ETag moved): the recount then waits a minute.
  await recount(clusters);
  return { clusters: clusters.length, changes };
}

/**
 * Queues an immediate re-evaluation of the clusters a policy change may affect: with `change`, those a
 * version of the policy targets or that hold a taint it adds (affectedByPolicyChange), so the cost follows what
 * the policy selects, not the fleet; without it (a relist of every policy) every cluster. Returns how many.
 */
export async function fanOutEvaluations(plane: ControlPlane, change?: { versions: ReadonlyArray<PolicyRecord | undefined> }): Promise<number> {
  const clusters = await plane.clusters.list();
  const versions = change?.versions.map((version) => (version ? taintPolicy(version) : undefined)) ?? [];
  const affected = change ? clusters.filter(({ value }) => affectedByPolicyChange(clusterFacts(value), versions)) : clusters;
  await requestEvaluations(
    plane,
    affected.map((entry) => entry.id),
    'policy-changed',
  );
  return affected.length;
}
