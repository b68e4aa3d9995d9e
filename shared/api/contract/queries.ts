import { z } from 'zod';
import { clusterName, objectName } from '../resources';
import { apiVersionSchema, kindSchema, templateNamespaceSchema } from '../templates';
import { EVICTION_STATES } from './views';

/**
 * The query strings the read routes accept: the functions parse with these, and the OpenAPI document lists
 * their fields as query parameters. Strict, so an unknown parameter is a 400 naming it.
 */

/** GET /api/events. */
export const eventQuerySchema = z.strictObject({
  kind: z
    .string()
    .max(64)
    .regex(/^[A-Za-z]+$/, 'must be a kind such as Cluster')
    .optional(),
  name: z.string().max(253).optional(),
  since: z.iso
    .datetime({ offset: true, message: 'must be an RFC 3339 time' })
    .transform((s) => new Date(s).toISOString())
    .optional(),
  limit: z.coerce.number().int().min(1).max(10000).optional(),
});

/** GET /api/evictions. */
export const evictionQuerySchema = z.strictObject({ cluster: clusterName.optional(), state: z.enum(EVICTION_STATES).optional() });

/** GET /api/fleet/history. */
export const fleetHistoryQuerySchema = z.strictObject({ minutes: z.coerce.number().int().min(1).max(1440).optional() });

/** GET and DELETE /api/templates: the rules of a template's own fields (anything else names no template and is no valid storage key). */
export const templateQuerySchema = z.strictObject({
  apiVersion: apiVersionSchema.optional(),
  kind: kindSchema.optional(),
  namespace: templateNamespaceSchema.optional(),
  name: objectName.optional(),
});

/** DELETE /api/templates: the template is named in full. */
export const templateDeleteQuerySchema = templateQuerySchema.required({ apiVersion: true, kind: true, name: true });
