import { z } from 'zod';
import { conditionType } from './resources';

/**
 * The two monitoring webhooks, validated at the edge. Unknown fields are allowed here (unlike our own
 * resources): these payloads belong to Alertmanager and Azure Monitor and grow over time.
 */

const labelMap = z.record(z.string().max(256), z.string().max(4096));

export const alertmanagerPayloadSchema = z.object({
  version: z.literal('4', { message: 'only the version "4" webhook payload is supported' }),
  status: z.enum(['firing', 'resolved']).optional(),
  groupKey: z.string().max(4096).optional(),
  receiver: z.string().max(1024).optional(),
  alerts: z
    .array(
      z.object({
        status: z.enum(['firing', 'resolved']),
        labels: labelMap,
        annotations: labelMap.optional(),
        startsAt: z.iso.datetime({ offset: true }).optional(),
        endsAt: z.string().max(64).optional(),
        fingerprint: z.string().max(256).optional(),
        generatorURL: z.string().max(4096).optional(),
      }),
    )
    .min(1, 'must hold at least one alert')
    .max(2000, 'must hold at most 2000 alerts'),
});
export type AlertmanagerPayload = z.infer<typeof alertmanagerPayloadSchema>;

export const azureMonitorPayloadSchema = z.object({
  schemaId: z.literal('azureMonitorCommonAlertSchema', { message: 'only the common alert schema (azureMonitorCommonAlertSchema) is supported' }),
  data: z.object({
    essentials: z.object({
      alertId: z.string().max(1024).optional(),
      alertRule: z.string().min(1).max(1024),
      severity: z.string().max(32).optional(),
      monitorCondition: z.enum(['Fired', 'Resolved']),
      alertTargetIDs: z.array(z.string().min(1).max(2048)).min(1, 'must name at least one target').max(100),
      firedDateTime: z.string().max(64).optional(),
      resolvedDateTime: z.string().max(64).optional(),
      description: z.string().max(4096).optional(),
    }),
  }),
});
export type AzureMonitorPayload = z.infer<typeof azureMonitorPayloadSchema>;

/** A condition type from a free-form name: kept when valid, otherwise reduced to the allowed characters. */
export function conditionTypeFrom(name: string, fallback: string): string {
  if (conditionType.safeParse(name).success) return name;
  const cleaned = name
    .replace(/[^A-Za-z0-9_.-]+/g, '')
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '')
    .slice(0, 63);
  return cleaned && conditionType.safeParse(cleaned).success ? cleaned : fallback;
}
