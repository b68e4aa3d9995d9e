import { z } from 'zod';
import { labelValue, objectName, qualifiedName } from './resources';
import { closestName } from './suggest';

/**
 * Resource templates: any Kubernetes object that is not one of this app's own kinds (Deployment,
 * StatefulSet, Job, ConfigMap, Secret, Service, custom resources). Stored as given; only what the app
 * reads is validated: apiVersion, kind, metadata (name, namespace, labels, annotations), and a Secret's
 * data (base64), so a broken manifest is refused with the field named, as the API server would.
 */

/** The API groups of this app's own kinds: an object of these groups with another kind is a typo, not a template. */
export const OWN_GROUPS = ['cluster.karmada.io', 'policy.karmada.io', 'work.karmada.io'] as const;

/**
 * The kinds of Kubernetes' built-in API groups, by group ("" is the core group of apiVersion "v1"). An
 * object of one of these groups with another kind ("Deploymnet" in apps/v1) is a typo that no policy would
 * ever claim, so it is refused with the closest kind; custom resources have groups of their own.
 */
export const BUILT_IN_KINDS: ReadonlyMap<string, readonly string[]> = new Map<string, readonly string[]>([
  [
    '',
    [
      'Binding',
      'ComponentStatus',
      'ConfigMap',
      'Endpoints',
      'Event',
      'LimitRange',
      'Namespace',
      'Node',
      'PersistentVolume',
      'PersistentVolumeClaim',
      'Pod',
      'PodTemplate',
      'ReplicationController',
      'ResourceQuota',
      'Secret',
      'Service',
      'ServiceAccount',
    ],
  ],
  ['apps', ['ControllerRevision', 'DaemonSet', 'Deployment', 'ReplicaSet', 'StatefulSet']],
  ['batch', ['CronJob', 'Job']],
  ['autoscaling', ['HorizontalPodAutoscaler', 'Scale']],
  ['policy', ['Eviction', 'PodDisruptionBudget']],
  ['networking.k8s.io', ['Ingress', 'IngressClass', 'IPAddress', 'NetworkPolicy', 'ServiceCIDR']],
  ['rbac.authorization.k8s.io', ['ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']],
  ['scheduling.k8s.io', ['PriorityClass']],
  ['storage.k8s.io', ['CSIDriver', 'CSINode', 'CSIStorageCapacity', 'StorageClass', 'VolumeAttachment', 'VolumeAttributesClass']],
  ['apiextensions.k8s.io', ['CustomResourceDefinition']],
  [
    'admissionregistration.k8s.io',
    [
      'MutatingAdmissionPolicy',
      'MutatingAdmissionPolicyBinding',
      'MutatingWebhookConfiguration',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
      'ValidatingWebhookConfiguration',
    ],
  ],
  ['apiregistration.k8s.io', ['APIService']],
  ['node.k8s.io', ['RuntimeClass']],
  ['coordination.k8s.io', ['Lease', 'LeaseCandidate']],
  ['discovery.k8s.io', ['EndpointSlice']],
  ['certificates.k8s.io', ['CertificateSigningRequest', 'ClusterTrustBundle']],
  ['events.k8s.io', ['Event']],
  ['flowcontrol.apiserver.k8s.io', ['FlowSchema', 'PriorityLevelConfiguration']],
  ['resource.k8s.io', ['DeviceClass', 'ResourceClaim', 'ResourceClaimTemplate', 'ResourceSlice']],
]);

const API_VERSION = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?v[0-9]+((alpha|beta)[0-9]+)?$/;
const KIND = /^[A-Z][A-Za-z0-9]*$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;

export const apiVersionSchema = z
  .string()
  .max(300, 'must be at most 300 characters')
  .regex(API_VERSION, 'must be an API version such as "v1", "apps/v1" or "example.com/v1alpha1"');
export const kindSchema = z.string().max(63, 'must be at most 63 characters').regex(KIND, 'must be a kind such as "Deployment" (CamelCase)');
export const templateNamespaceSchema = z
  .string()
  .max(63, 'must be at most 63 characters')
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a DNS label');

const templateMetadata = z.looseObject({
  name: objectName,
  namespace: templateNamespaceSchema.optional(),
  labels: z.record(qualifiedName, labelValue).optional(),
  annotations: z.record(qualifiedName, z.string()).optional(),
});

/** The API group of an apiVersion ("apps" of "apps/v1", "" of "v1"). */
export const groupOf = (apiVersion: string): string => (apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.lastIndexOf('/')) : '');

/** Why `kind` is not a kind of the built-in group of `apiVersion` (with the closest one), or undefined. */
export function unknownBuiltInKind(apiVersion: string, kind: string): string | undefined {
  const group = groupOf(apiVersion);
  const kinds = BUILT_IN_KINDS.get(group);
  if (!kinds || kinds.includes(kind)) return undefined;
  const near = closestName(kind, kinds);
  return `unknown kind "${kind}" in ${apiVersion}${near ? `; did you mean "${near}"?` : ''} (kinds of ${group === '' ? 'the core group' : group}: ${kinds.join(', ')})`;
}

export const templateSchema = z
  .looseObject({
    apiVersion: apiVersionSchema,
    kind: kindSchema,
    metadata: templateMetadata,
  })
  .superRefine((object, ctx) => {
    const unknownKind = unknownBuiltInKind(object.apiVersion, object.kind);
    if (unknownKind) ctx.addIssue({ code: 'custom', path: ['kind'], message: unknownKind });
    if (object.apiVersion !== 'v1' || object.kind !== 'Secret') return;
    const data = (object as Record<string, unknown>).data;
    if (data === undefined) return;
    if (typeof data !== 'object' || data === null || Array.isArray(data)) {
      ctx.addIssue({ code: 'custom', path: ['data'], message: 'must be a map of key to base64 value' });
      return;
    }
    for (const [key, value] of Object.entries(data)) {
      if (!SECRET_KEY.test(key)) ctx.addIssue({ code: 'custom', path: ['data', key], message: 'key must consist of letters, digits, "-", "_" or "."' });
      if (typeof value !== 'string' || !BASE64.test(value))
        ctx.addIssue({ code: 'custom', path: ['data', key], message: 'must be base64 (a Secret holds encoded data; use stringData for plain text)' });
    }
  });

export type TemplateInput = z.infer<typeof templateSchema>;

/** Whether an object of this apiVersion and kind belongs to this app (not a template). */
export const isOwnGroup = (apiVersion: unknown) => typeof apiVersion === 'string' && OWN_GROUPS.some((group) => apiVersion.startsWith(`${group}/`));
