import type { z } from 'zod';
import {
  clusterFailoverAnnotationProblems,
  clusterFailoverAnnotations,
  clusterPropagationPolicySchema,
  clusterTaintPolicySchema,
  propagationPolicySchema,
  type PropagationSpec,
  taintPolicyShape,
  withClusterFailoverAnnotations,
} from '../../api/resources';
import { policyKey } from '../../failover/propagation';
import { FAILOVER, KARMADA, KubeApi, KubeObject, KubeResource } from '../../kube/api';
import { Logger, StateChanges } from '../../telemetry/log';
import type { DocumentStore, Versioned } from '../ports';
import type { PolicyRecord, PropagationPolicyRecord, StoredMetadata } from '../records';
import { listAll, listIfServed, ManagedInKarmadaError, userAnnotations } from './kubeObjects';

/**
 * ClusterTaintPolicies, PropagationPolicies and ClusterPropagationPolicies read from the Karmada API
 * server, validated with the same schemas as an apply. The app never writes them; an object that does not
 * validate is left out (the policy would be refused by our API too) and logged with its field errors.
 * A kind in `optional` may have no CRD on the server (404): it then has no objects.
 */
class KarmadaPolicyStore<T> implements DocumentStore<T> {
  constructor(
    private readonly api: KubeApi,
    private readonly resources: KubeResource[],
    private readonly optional: ReadonlySet<KubeResource>,
    private readonly decode: (object: KubeObject, resource: KubeResource) => T | undefined,
    private readonly idOf: (object: KubeObject, resource: KubeResource) => string,
    private readonly locate: (id: string) => { resource: KubeResource; name: string; namespace?: string },
    private readonly kindName: string,
  ) {}

  async get(id: string): Promise<Versioned<T> | undefined> {
    const { resource, name, namespace } = this.locate(id);
    const object = await this.api.get(resource, name, namespace);
    const value = object && this.decode(object, resource);
    return object && value ? { value, etag: object.metadata.resourceVersion ?? '' } : undefined;
  }

  async list(): Promise<Array<Versioned<T> & { id: string }>> {
    const lists = await Promise.all(this.resources.map(async (resource) => ({ resource, list: await this.listKind(resource) })));
    return lists.flatMap(({ resource, list }) =>
      list.items.flatMap((object) => {
        const value = this.decode(object, resource);
        return value ? [{ id: this.idOf(object, resource), value, etag: object.metadata.resourceVersion ?? '' }] : [];
      }),
    );
  }

  private async listKind(resource: KubeResource): Promise<{ items: KubeObject[] }> {
    return this.optional.has(resource) ? { items: (await listIfServed(this.api, resource)) ?? [] } : listAll(this.api, resource);
  }

  create(): Promise<string> {
    return Promise.reject(new ManagedInKarmadaError(this.kindName));
  }
  replace(): Promise<string> {
    return Promise.reject(new ManagedInKarmadaError(this.kindName));
  }
  delete(): Promise<boolean> {
    return Promise.reject(new ManagedInKarmadaError(this.kindName));
  }
}

function metadataOf(object: KubeObject): StoredMetadata {
  const meta = object.metadata;
  return {
    name: meta.name,
    uid: meta.uid ?? '',
    createdAt: meta.creationTimestamp ?? new Date(0).toISOString(),
    generation: meta.generation ?? 1,
    labels: meta.labels ?? {},
    annotations: userAnnotations(object),
  };
}

/** How many rounds of unknown fields are set aside before an object is taken as invalid (nesting depth, in practice). */
const MAX_PRUNE_ROUNDS = 16;

/** A rule beyond our apply's schema for an object read from Karmada (its webhook's, or Karmada mode's own): where, and why it is refused. */
type KarmadaRule<T> = (parsed: T, object: KubeObject) => Array<{ path: PropertyKey[]; message: string }>;

/**
 * Validates what our apply would validate (name, spec); other metadata is the server's. Fields our schema
 * does not know are set aside, not refused: Karmada's API server fills in defaults the app does not use
 * (`conflictResolution`, `preemption`, ...) and a newer Karmada adds fields; what the app acts on is still
 * validated as our apply validates it. Then `rules`: what Karmada's webhook would refuse (an object can be
 * stored without passing it: created while the webhook was down, or by a server without it), and the
 * annotations that stand in for fields Karmada's schema lacks. An object left out is logged when its
 * errors change, not at every listing (`invalid`: what was logged per object, by `kind`).
 */
function validated<S extends z.ZodType>(
  schema: S,
  object: KubeObject,
  log: Logger,
  invalid: StateChanges,
  kind: string,
  rules?: KarmadaRule<z.infer<S>>,
): z.infer<S> | undefined {
  const candidate = structuredClone({
    apiVersion: object.apiVersion,
    kind: object.kind,
    metadata: { name: object.metadata.name, ...(object.metadata.namespace ? { namespace: object.metadata.namespace } : {}) },
    spec: object.spec,
  }) as Record<string, unknown>;
  let parsed = schema.safeParse(candidate);
  for (let round = 0; !parsed.success && round < MAX_PRUNE_ROUNDS && setAsideUnknownKeys(candidate, parsed.error.issues); round++)
    parsed = schema.safeParse(candidate);
  const name = object.metadata.namespace ? `${object.metadata.namespace}/${object.metadata.name}` : object.metadata.name;
  const subject = `${kind}/${name}`;
  const issues = parsed.success ? (rules?.(parsed.data, object) ?? []) : parsed.error.issues.map((issue) => ({ path: issue.path, message: issue.message }));
  if (parsed.success && issues.length === 0) {
    if (invalid.cleared(subject)) log.info('Karmada object validates again', { kind, name });
    return parsed.data;
  }
  const errors = issues.map((issue) => `${issue.path.map(String).join('.')}: ${issue.message}`).join('; ');
  if (invalid.changed(subject, errors)) log.warn('Karmada object left out: it does not validate', { kind, name, errors });
  return undefined;
}

/**
 * Removes the keys the issues name as unrecognized (only those, only when every issue is of that kind);
 * answers whether it removed any.
 */
function setAsideUnknownKeys(candidate: Record<string, unknown>, issues: readonly z.core.$ZodIssue[]): boolean {
  if (issues.length === 0 || issues.some((issue) => issue.code !== 'unrecognized_keys')) return false;
  let removed = false;
  for (const issue of issues) {
    if (issue.code !== 'unrecognized_keys') continue;
    let at: unknown = candidate;
    for (const step of issue.path) at = at !== null && typeof at === 'object' ? (at as Record<PropertyKey, unknown>)[step] : undefined;
    if (at === null || typeof at !== 'object') continue;
    for (const key of issue.keys) {
      if (Object.hasOwn(at, key)) {
        delete (at as Record<string, unknown>)[key];
        removed = true;
      }
    }
  }
  return removed;
}

/**
 * Our own ClusterTaintPolicies (failover.io) share the app's policy names with Karmada's: theirs keep their
 * names, ours take this prefix. An id is still a Kubernetes name (the API's routes, Event names take it);
 * a Karmada policy whose name begins with the prefix is left out, so an id never names two policies.
 */
export const OWN_POLICY_PREFIX = 'failover.io.';
export const ownPolicyId = (name: string) => `${OWN_POLICY_PREFIX}${name}`;
export const isReservedPolicyName = (name: string) => name.startsWith(OWN_POLICY_PREFIX);

/** Where a taint policy id lives: Karmada's ClusterTaintPolicy, or ours with the prefix taken off. */
export function locateTaintPolicy(id: string): { resource: KubeResource; name: string } {
  return id.startsWith(OWN_POLICY_PREFIX)
    ? { resource: FAILOVER.clusterTaintPolicies, name: id.slice(OWN_POLICY_PREFIX.length) }
    : { resource: KARMADA.clusterTaintPolicies, name: id };
}

/** The kind as logs and messages name it: ours is told apart from Karmada's by its group. */
const OWN_TAINT_POLICY_KIND = 'ClusterTaintPolicy.failover.io';

/** Our kind holds the seed shape (windows) only: Karmada's shape belongs in Karmada's own kind. */
const seedShapeOnly: KarmadaRule<z.infer<typeof clusterTaintPolicySchema>> = (policy) =>
  taintPolicyShape(policy.spec) === 'seed'
    ? []
    : [
        {
          path: ['spec'],
          message:
            "this kind (failover.io) holds the windowed shape (targetCluster, matchConditions, taintsToAdd); a policy of Karmada's shape is a policy.karmada.io ClusterTaintPolicy",
        },
      ];

/** A Karmada policy may not take a name the app gives ours. */
const notReserved: KarmadaRule<unknown> = (_policy, object) =>
  isReservedPolicyName(object.metadata.name)
    ? [{ path: ['metadata', 'name'], message: `names beginning "${OWN_POLICY_PREFIX}" are the app's for failover.io ClusterTaintPolicies; rename this policy` }]
    : [];

/**
 * Both kinds of ClusterTaintPolicy: Karmada's (policy.karmada.io; ids are their names), read as today, and
 * ours (failover.io, infra/clustertaintpolicy-crd.yaml; ids `failover.io.<name>`), which hold the seed
 * shape with its windows that Karmada's CRD refuses. A server without our CRD has none of ours.
 */
export function karmadaTaintPolicyStore(api: KubeApi, log: Logger): DocumentStore<PolicyRecord> {
  const invalid = new StateChanges();
  return new KarmadaPolicyStore<PolicyRecord>(
    api,
    [KARMADA.clusterTaintPolicies, FAILOVER.clusterTaintPolicies],
    new Set([FAILOVER.clusterTaintPolicies]),
    (object, resource) => {
      const own = resource === FAILOVER.clusterTaintPolicies;
      const input = validated(
        clusterTaintPolicySchema,
        // Our schema names Karmada's group: ours is validated as our apply validates a ClusterTaintPolicy.
        { ...object, apiVersion: own ? 'policy.karmada.io/v1alpha1' : (object.apiVersion ?? 'policy.karmada.io/v1alpha1'), kind: 'ClusterTaintPolicy' },
        log,
        invalid,
        own ? OWN_TAINT_POLICY_KIND : 'ClusterTaintPolicy',
        own ? seedShapeOnly : notReserved,
      );
      return input ? { ...metadataOf(object), ...(own ? { name: ownPolicyId(object.metadata.name) } : {}), spec: input.spec } : undefined;
    },
    (object, resource) => (resource === FAILOVER.clusterTaintPolicies ? ownPolicyId(object.metadata.name) : object.metadata.name),
    locateTaintPolicy,
    'ClusterTaintPolicy',
  );
}

type PropagationPolicyParsed = { spec: PropagationSpec };

/**
 * Karmada's webhook rules on a (Cluster)PropagationPolicy that our standalone apply does not have (there a
 * policy applies without them, e.g. application failover without propagateDeps), with Karmada's messages;
 * and the cluster-failover annotations.
 */
const karmadaPropagationRules: KarmadaRule<PropagationPolicyParsed> = (policy, object) => {
  const issues: Array<{ path: PropertyKey[]; message: string }> = [];
  if (policy.spec.failover?.application && policy.spec.propagateDeps !== true)
    issues.push({ path: ['spec', 'propagateDeps'], message: 'application failover is set, propagateDeps must be true' });
  const namespace = object.metadata.namespace;
  if (namespace) {
    policy.spec.resourceSelectors.forEach((selector, index) => {
      if (selector.namespace !== undefined && selector.namespace !== namespace)
        issues.push({
          path: ['spec', 'resourceSelectors', index, 'namespace'],
          message: 'namespace of resource selector must be the same as the namespace of the policy',
        });
    });
  }
  for (const { annotation, message } of clusterFailoverAnnotationProblems(object.metadata.annotations, policy.spec.failover?.cluster))
    issues.push({ path: ['metadata', `annotations["${annotation}"]`], message });
  return issues;
};

/** The spec the app acts on: Karmada's, with the cluster-failover annotations in failover.cluster. */
function effectiveSpec(spec: PropagationSpec, object: KubeObject): PropagationSpec {
  const failover = withClusterFailoverAnnotations(spec.failover, clusterFailoverAnnotations(object.metadata.annotations));
  return failover === spec.failover ? spec : { ...spec, failover };
}

export function karmadaPropagationPolicyStore(api: KubeApi, log: Logger): DocumentStore<PropagationPolicyRecord> {
  const invalid = new StateChanges();
  return new KarmadaPolicyStore<PropagationPolicyRecord>(
    api,
    [KARMADA.propagationPolicies, KARMADA.clusterPropagationPolicies],
    new Set(),
    (object, resource) => {
      if (resource === KARMADA.propagationPolicies) {
        const input = validated(
          propagationPolicySchema,
          { ...object, apiVersion: 'policy.karmada.io/v1alpha1', kind: 'PropagationPolicy' },
          log,
          invalid,
          'PropagationPolicy',
          karmadaPropagationRules,
        );
        return input
          ? { ...metadataOf(object), kind: 'PropagationPolicy', namespace: object.metadata.namespace ?? 'default', spec: effectiveSpec(input.spec, object) }
          : undefined;
      }
      const input = validated(
        clusterPropagationPolicySchema,
        { ...object, apiVersion: 'policy.karmada.io/v1alpha1', kind: 'ClusterPropagationPolicy' },
        log,
        invalid,
        'ClusterPropagationPolicy',
        karmadaPropagationRules,
      );
      return input ? { ...metadataOf(object), kind: 'ClusterPropagationPolicy', spec: effectiveSpec(input.spec, object) } : undefined;
    },
    (object, resource) =>
      resource === KARMADA.propagationPolicies
        ? policyKey({ kind: 'PropagationPolicy', namespace: object.metadata.namespace, name: object.metadata.name })
        : policyKey({ kind: 'ClusterPropagationPolicy', name: object.metadata.name }),
    (id) => {
      if (id.startsWith('pp:')) {
        const [, namespace, name] = /^pp:([^:]*):(.*)$/.exec(id) ?? [];
        return { resource: KARMADA.propagationPolicies, namespace, name };
      }
      return { resource: KARMADA.clusterPropagationPolicies, name: id.slice(4) };
    },
    'PropagationPolicy',
  );
}
