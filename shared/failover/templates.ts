/**
 * Resource templates as Karmada's detector sees them (pure): where a template lives, which binding it
 * derives, and how many replicas that binding carries.
 */

export interface TemplateRef {
  apiVersion: string;
  kind: string;
  /** Undefined for a cluster-scoped template. */
  namespace?: string;
  name: string;
}

/**
 * Kinds that are cluster-scoped in Kubernetes; any other kind given without a namespace is put in
 * `default`, as kubectl does for namespaced kinds (custom resources: give the namespace, or none for a
 * cluster-scoped kind listed here).
 */
const CLUSTER_SCOPED = new Set([
  'Namespace',
  'Node',
  'PersistentVolume',
  'StorageClass',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'PriorityClass',
  'IngressClass',
  'RuntimeClass',
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
  'APIService',
  'CSIDriver',
]);

export function templateNamespace(kind: string, namespace: string | undefined): string | undefined {
  if (CLUSTER_SCOPED.has(kind)) return undefined;
  return namespace ?? 'default';
}

/** One string per template, safe as a Table row key ("/" is not allowed there). */
export function templateKey(ref: TemplateRef): string {
  return `${ref.apiVersion.replace('/', '|')}|${ref.kind}|${ref.namespace ?? ''}|${ref.name}`;
}

/** The binding Karmada's detector derives: `<name>-<kind in lower case>`, a ResourceBinding in the template's namespace, else a ClusterResourceBinding. */
export function derivedBindingRef(ref: TemplateRef): { kind: 'ResourceBinding' | 'ClusterResourceBinding'; namespace?: string; name: string } {
  const name = `${ref.name}-${ref.kind.toLowerCase()}`;
  return ref.namespace !== undefined ? { kind: 'ResourceBinding', namespace: ref.namespace, name } : { kind: 'ClusterResourceBinding', name };
}

/** Kinds whose replicas Karmada's default interpreter reads at `spec.replicas`. */
const REPLICA_KINDS = new Set(['apps/v1|Deployment', 'apps/v1|StatefulSet', 'apps/v1|ReplicaSet']);

/**
 * The replicas a binding carries for this template, as Karmada's default interpreter reads them:
 * `spec.replicas` of a Deployment, StatefulSet or ReplicaSet (1 when absent), a Job's `spec.parallelism`
 * (1 when absent), 1 for a Pod; undefined for kinds without replicas (ConfigMap, Secret, Service, ...).
 */
export function templateReplicas(apiVersion: string, kind: string, object: Record<string, unknown>): number | undefined {
  const spec = (object.spec ?? {}) as Record<string, unknown>;
  const count = (value: unknown) => (typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : 1);
  if (REPLICA_KINDS.has(`${apiVersion}|${kind}`)) return count(spec.replicas);
  if (apiVersion === 'batch/v1' && kind === 'Job') return count(spec.parallelism);
  if (apiVersion === 'v1' && kind === 'Pod') return 1;
  return undefined;
}

/** Kubernetes' PriorityClass (cluster-scoped), applied through /api/apply as a template. */
export const PRIORITY_CLASS = { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass' } as const;

export const isPriorityClass = (ref: Pick<TemplateRef, 'apiVersion' | 'kind'>): boolean =>
  ref.apiVersion === PRIORITY_CLASS.apiVersion && ref.kind === PRIORITY_CLASS.kind;

/**
 * The PriorityClass a policy's `spec.schedulePriority` names, as Karmada's detector reads it: only with
 * `priorityClassSource: KubePriorityClass` (the other sources are Karmada's plans, not its behaviour).
 */
export function priorityClassOf(schedulePriority: { priorityClassSource: string; priorityClassName: string } | undefined): TemplateRef | undefined {
  if (schedulePriority?.priorityClassSource !== 'KubePriorityClass') return undefined;
  return { ...PRIORITY_CLASS, name: schedulePriority.priorityClassName };
}

/** A PriorityClass manifest's `value` (a 32-bit integer, as Kubernetes requires), or undefined when it has none. */
export function priorityClassValue(manifest: Record<string, unknown>): number | undefined {
  const value = manifest.value;
  return typeof value === 'number' && Number.isInteger(value) && value >= -2_147_483_648 && value <= 2_147_483_647 ? value : undefined;
}
