import { readFileSync } from 'node:fs';
import { z } from 'zod';

/** "hh:mm:ss" (optionally "d.hh:mm:ss" and fractional seconds), as host.json writes durations, in ms. */
export function parseTimeSpan(value: string): number {
  const match = /^(?:(\d+)\.)?(\d{1,2}):(\d{2}):(\d{2}(?:\.\d+)?)$/.exec(value.trim());
  if (!match) throw new Error(`"${value}" is not a duration like 00:00:05`);
  const [, days, hours, minutes, seconds] = match;
  return ((Number(days ?? 0) * 24 + Number(hours)) * 3600 + Number(minutes) * 60 + Number(seconds)) * 1000;
}

const timeSpan = z.string().transform((value, ctx) => {
  try {
    return parseTimeSpan(value);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: (error as Error).message });
    return z.NEVER;
  }
});

const hostJsonSchema = z.object({
  version: z.literal('2.0'),
  functionTimeout: timeSpan.optional(),
  extensions: z
    .object({
      http: z.object({ routePrefix: z.string().optional() }).optional(),
      queues: z
        .object({
          batchSize: z.number().int().min(1).max(32).optional(),
          newBatchThreshold: z.number().int().min(0).optional(),
          maxPollingInterval: timeSpan.optional(),
          visibilityTimeout: timeSpan.optional(),
          maxDequeueCount: z.number().int().min(1).optional(),
          messageEncoding: z.enum(['base64', 'none']).optional(),
        })
        .optional(),
    })
    .optional(),
});

/** The host.json settings the local host honours, with the Functions host's defaults. */
export interface HostSettings {
  routePrefix: string;
  functionTimeoutMs: number;
  queues: {
    batchSize: number;
    newBatchThreshold: number;
    maxPollingIntervalMs: number;
    visibilityTimeoutMs: number;
    maxDequeueCount: number;
    messageEncoding: 'base64' | 'none';
  };
}

export function readHostSettings(path: string): HostSettings {
  const parsed = hostJsonSchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
  if (!parsed.success) {
    throw new Error(`host.json is invalid: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  const queues = parsed.data.extensions?.queues ?? {};
  const batchSize = queues.batchSize ?? 16;
  return {
    routePrefix: parsed.data.extensions?.http?.routePrefix ?? 'api',
    functionTimeoutMs: parsed.data.functionTimeout ?? 30 * 60 * 1000,
    queues: {
      batchSize,
      newBatchThreshold: queues.newBatchThreshold ?? Math.floor(batchSize / 2),
      maxPollingIntervalMs: Math.max(100, queues.maxPollingInterval ?? 60_000),
      visibilityTimeoutMs: queues.visibilityTimeout ?? 0,
      maxDequeueCount: queues.maxDequeueCount ?? 5,
      messageEncoding: queues.messageEncoding ?? 'base64',
    },
  };
}
