import { z } from 'zod';
import { labelValue, objectName, qualifiedName } from './resources';

/**
 * Resource templates: any Kubernetes object that is not one of this app's own kinds (Deployment,
 * StatefulSet, Job, ConfigMap, Secret, Service, custom resources). Stored as given; only what the app
 * reads is validated: apiVersion, kind, metadata (name, namespace, labels, annotations), and a Secret's
 * data (base64), so a broken manifest is refused with the field named, as the API server would.
 */

/** The API groups of this app's own kinds: an object of these groups with another kind is a typo, not a template. */
export const OWN_GROUPS = ['cluster.karmada.io', 'policy.karmada.io', 'work.karmada.io'] as const;

const API_VERSION = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?v[0-9]+((alpha|beta)[0-9]+)?$/;
const KIND = /^[A-Z][A-Za-z0-9]*$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;

const templateMetadata = z.looseObject({
  name: objectName,
  namespace: z
    .string()
    .max(63, 'must be at most 63 characters')
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a DNS label')
    .optional(),
  labels: z.record(qualifiedName, labelValue).optional(),
  annotations: z.record(qualifiedName, z.string()).optional(),
});

export const templateSchema = z
  .looseObject({
    apiVersion: z.string().regex(API_VERSION, 'must be an API version such as "v1", "apps/v1" or "example.com/v1alpha1"'),
    kind: z.string().max(63, 'must be at most 63 characters').regex(KIND, 'must be a kind such as "Deployment" (CamelCase)'),
    metadata: templateMetadata,
  })
  .superRefine((object, ctx) => {
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
