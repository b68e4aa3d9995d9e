import type { z } from 'zod';
import { clusterPropagationPolicySchema, clusterTaintPolicySchema, propagationPolicySchema } from '../../../api/resources';
import { policyKey } from '../../../failover/propagation';
import { KARMADA, KubeApi, KubeObject, KubeResource } from '../../../kube/api';
import type { DocumentStore, Versioned } from '../../../store/ports';
import { Logger, StateChanges } from '../../../telemetry/log';
import type { PolicyRecord, PropagationPolicyRecord, StoredMetadata } from '../../records';
import { listAll, ManagedInKarmadaError, userAnnotations } from './kubeObjects';

/**
 * ClusterTaintPolicies, PropagationPolicies and ClusterPropagationPolicies read from the Karmada API
 * server, validated with the same schemas as an apply. The app never writes them; an object that does not
 * validate is left out (the policy would be refused by our API too) and logged with its field errors.
 */
class KarmadaPolicyStore<T> implements DocumentStore<T> {
  constructor(
    private readonly api: KubeApi,
    private readonly resources: KubeResource[],
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
    const lists = await Promise.all(this.resources.map(async (resource) => ({ resource, list: await listAll(this.api, resource) })));
    return lists.flatMap(({ resource, list }) =>
      list.items.flatMap((object) => {
        const value = this.decode(object, resource);
        return value ? [{ id: this.idOf(object, resource), value, etag: object.metadata.resourceVersion ?? '' }] : [];
      }),
    );
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

/**
 * Validates what our apply would validate (name, spec); other metadata is the server's. Fields our schema
 * does not know are set aside, not refused: Karmada's API server fills in defaults the app does not use
 * (`conflictResolution`, `preemption`, ...) and a newer Karmada adds fields; what the app acts on is still
 * validated as our apply validates it. An object left out is logged when its errors change, not at every
 * listing (`invalid`: what was logged per object).
 */
function validated<S extends z.ZodType>(schema: S, object: KubeObject, log: Logger, invalid: StateChanges): z.infer<S> | undefined {
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
  const subject = `${object.kind}/${name}`;
  if (parsed.success) {
    if (invalid.cleared(subject)) log.info('Karmada object validates again', { kind: object.kind, name });
    return parsed.data;
  }
  const errors = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
  if (invalid.changed(subject, errors)) log.warn('Karmada object left out: it does not validate', { kind: object.kind, name, errors });
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

export function karmadaTaintPolicyStore(api: KubeApi, log: Logger): DocumentStore<PolicyRecord> {
  const invalid = new StateChanges();
  return new KarmadaPolicyStore<PolicyRecord>(
    api,
    [KARMADA.clusterTaintPolicies],
    (object) => {
      const input = validated(
        clusterTaintPolicySchema,
        { ...object, apiVersion: object.apiVersion ?? 'policy.karmada.io/v1alpha1', kind: 'ClusterTaintPolicy' },
        log,
        invalid,
      );
      return input ? { ...metadataOf(object), spec: input.spec } : undefined;
    },
    (object) => object.metadata.name,
    (id) => ({ resource: KARMADA.clusterTaintPolicies, name: id }),
    'ClusterTaintPolicy',
  );
}

export function karmadaPropagationPolicyStore(api: KubeApi, log: Logger): DocumentStore<PropagationPolicyRecord> {
  const invalid = new StateChanges();
  return new KarmadaPolicyStore<PropagationPolicyRecord>(
    api,
    [KARMADA.propagationPolicies, KARMADA.clusterPropagationPolicies],
    (object, resource) => {
      if (resource === KARMADA.propagationPolicies) {
        const input = validated(propagationPolicySchema, { ...object, apiVersion: 'policy.karmada.io/v1alpha1', kind: 'PropagationPolicy' }, log, invalid);
        return input ? { ...metadataOf(object), kind: 'PropagationPolicy', namespace: object.metadata.namespace ?? 'default', spec: input.spec } : undefined;
      }
      const input = validated(
        clusterPropagationPolicySchema,
        { ...object, apiVersion: 'policy.karmada.io/v1alpha1', kind: 'ClusterPropagationPolicy' },
        log,
        invalid,
      );
      return input ? { ...metadataOf(object), kind: 'ClusterPropagationPolicy', spec: input.spec } : undefined;
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
