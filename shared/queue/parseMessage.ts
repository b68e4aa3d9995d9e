import type { InvocationContext } from '@azure/functions';
import type { z } from 'zod';

/**
 * Validates a queue message at the edge. A malformed message can never succeed, so it is logged and
 * dropped (undefined) rather than retried into the poison queue.
 */
export function parseQueueMessage<S extends z.ZodType>(schema: S, message: unknown, ctx: InvocationContext, what: string): z.infer<S> | undefined {
  const parsed = schema.safeParse(message);
  if (parsed.success) return parsed.data;
  ctx.error(`dropping malformed ${what} message: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return undefined;
}
