import { PlaneState } from '../../cache';
import type { Condition } from '../../failover/model';
import { FAILOVER, isConflict, KARMADA, KubeApiError, type KubeObject, type KubeResource } from '../../kube/api';
import { listAll, listIfServed } from '../../store/karmada/kubeObjects';
import { isReservedPolicyName, ownPolicyId } from '../../store/karmada/policyStores';
import { errorFields, StateChanges } from '../../telemetry/log';
import type { ControlPlane } from '../ports';

/**
 * ClusterTaintPolicy status in Karmada. Where one ClusterTaintPolicy's conditions are published in Karmada, and what they are there now. Ours
 * (failover.io) have a status subresource. Karmada's have none (a status patch answers 404), so theirs go
 * to a TaintPolicyStatus of the same name (infra/taintpolicystatus-crd.yaml), owned by the policy so that
 * Kubernetes' garbage collector deletes it with the policy.
 */
export interface PolicyStatusTarget {
  /** The app's policy id (ours are prefixed). */
  id: string;
  createdAt?: string;
  /** The conditions kubectl reads now. */
  conditions: readonly Condition[];
  place:
    | { kind: 'own'; object: KubeObject }
    | { kind: 'companion'; policy: KubeObject; companion?: KubeObject }
    /** Karmada's policy, on a server without the TaintPolicyStatus CRD: its conditions are the API's only. */
    | { kind: 'unpublished'; policy: KubeObject };
}

const conditionsOf = (object: KubeObject | undefined): Condition[] => (object?.status as { conditions?: Condition[] } | undefined)?.conditions ?? [];

/** Every ClusterTaintPolicy in Karmada (both kinds) with where its status goes: what the status round works from. */
export async function listPolicyStatusTargets(plane: ControlPlane): Promise<PolicyStatusTarget[]> {
  const api = plane.karmada?.api;
  if (!api) return [];
  const [karmadaPolicies, own, companions] = await Promise.all([
    listAll(api, KARMADA.clusterTaintPolicies),
    listIfServed(api, FAILOVER.clusterTaintPolicies),
    listIfServed(api, FAILOVER.taintPolicyStatuses),
  ]);
  const companionOf = new Map((companions ?? []).map((object) => [object.metadata.name, object]));
  return [
    ...karmadaPolicies.items
      .filter((policy) => !isReservedPolicyName(policy.metadata.name))
      .map((policy): PolicyStatusTarget => {
        const companion = companionOf.get(policy.metadata.name);
        return {
          id: policy.metadata.name,
          ...(policy.metadata.creationTimestamp ? { createdAt: policy.metadata.creationTimestamp } : {}),
          conditions: conditionsOf(companion),
          place: companions ? { kind: 'companion', policy, ...(companion ? { companion } : {}) } : { kind: 'unpublished', policy },
        };
      }),
    ...(own ?? []).map((object): PolicyStatusTarget => ({
      id: ownPolicyId(object.metadata.name),
      ...(object.metadata.creationTimestamp ? { createdAt: object.metadata.creationTimestamp } : {}),
      conditions: conditionsOf(object),
      place: { kind: 'own', object },
    })),
  ];
}

const conditionTuples = (conditions: readonly Condition[]) =>
  JSON.stringify(
    [...conditions].sort((a, b) => a.type.localeCompare(b.type)).map((c) => [c.type, c.status, c.reason ?? '', c.message ?? '', c.lastTransitionTime]),
  );

/** Per process: why each policy's status could not be written last, so a refusal repeated every round is logged once. */
const statusRefusals = new PlaneState<StateChanges>('policyStatusRefusals');
const UNPUBLISHED = 'TaintPolicyStatus not served';

/** The TaintPolicyStatus for a Karmada ClusterTaintPolicy: named after it, owned by it (deleted with it). */
function companionFor(policy: KubeObject): KubeObject {
  const policyRef = { apiVersion: 'policy.karmada.io/v1alpha1', kind: 'ClusterTaintPolicy', name: policy.metadata.name };
  return {
    apiVersion: `${FAILOVER.taintPolicyStatuses.group}/${FAILOVER.taintPolicyStatuses.version}`,
    kind: FAILOVER.taintPolicyStatuses.kind,
    metadata: {
      name: policy.metadata.name,
      ...(policy.metadata.uid ? { ownerReferences: [{ ...policyRef, uid: policy.metadata.uid }] } : {}),
    },
    spec: { policyRef },
  };
}

/**
 * Policy status in Karmada mode: each ClusterTaintPolicy's conditions (`statuses`, by policy id) written
 * where kubectl reads them (see PolicyStatusTarget) when they differ from what is there, with its
 * resourceVersion (a lost race waits for the next round). So `kubectl wait
 * --for=condition=EvictionInProgress=false clustertaintpolicies.failover.io/<name>` (ours) or
 * `taintpolicystatus/<name>` (Karmada's) reads them. A refusal (no RBAC, a CRD without the subresource) is
 * logged when it begins or changes, not fatal: the API's own view of the status stays right. An RBAC
 * refusal or an outage is reported by the API's access tracking (and makes the app degraded).
 */
export async function publishPolicyStatuses(
  plane: ControlPlane,
  targets: readonly PolicyStatusTarget[],
  statuses: ReadonlyMap<string, readonly Condition[]>,
): Promise<number> {
  const karmada = plane.karmada;
  if (!karmada || statuses.size === 0) return 0;
  let written = 0;
  const refusals = statusRefusals.get(plane) ?? new StateChanges();
  statusRefusals.set(plane, refusals);
  const writeStatus = (resource: KubeResource, object: KubeObject, conditions: readonly Condition[]) =>
    karmada.api.patch(
      resource,
      object.metadata.name,
      undefined,
      { metadata: { resourceVersion: object.metadata.resourceVersion }, status: { conditions } },
      'merge',
      'status',
    );
  for (const target of targets) {
    const conditions = statuses.get(target.id);
    if (!conditions || conditionTuples(target.conditions) === conditionTuples(conditions)) continue;
    const place = target.place;
    if (place.kind === 'unpublished') {
      if (refusals.changed(UNPUBLISHED, 'absent'))
        plane.log.warn(
          'Karmada ClusterTaintPolicy conditions are not published: the TaintPolicyStatus CRD is not installed (infra/taintpolicystatus-crd.yaml); the API serves them',
          { policy: target.id },
        );
      continue;
    }
    if (place.kind === 'companion' && refusals.cleared(UNPUBLISHED))
      plane.log.info('TaintPolicyStatus served now: Karmada ClusterTaintPolicy conditions are published');
    try {
      if (place.kind === 'own') await writeStatus(FAILOVER.clusterTaintPolicies, place.object, conditions);
      else {
        // A create ignores status (status subresource): the conditions follow as a status write.
        const companion = place.companion ?? (await karmada.api.create(FAILOVER.taintPolicyStatuses, undefined, companionFor(place.policy)));
        await writeStatus(FAILOVER.taintPolicyStatuses, companion, conditions);
      }
      written++;
      if (refusals.cleared(target.id)) plane.log.info('ClusterTaintPolicy status written to Karmada again', { policy: target.id });
    } catch (error) {
      if (isConflict(error)) continue;
      if (!(error instanceof KubeApiError)) throw error;
      if (refusals.changed(target.id, `${error.status} ${error.reason}`)) {
        plane.log.warn('ClusterTaintPolicy status not written to Karmada (said again when the answer changes)', {
          policy: target.id,
          ...errorFields(error),
        });
      }
    }
  }
  return written;
}
