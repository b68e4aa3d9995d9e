import type { InvocationContext, StorageQueueHandler } from '@azure/functions';
import { ATTR, inSpan, SpanKind, TraceCarrier } from './tracing';

/**
 * A queue trigger that continues the trace its message carries: a CONSUMER span `process <queue>` whose
 * parent is the message's `traceparent` (the Functions queue extension does not read it itself).
 */
export function tracedQueueHandler(queueName: string, handler: (message: unknown, ctx: InvocationContext) => Promise<void>): StorageQueueHandler {
  return (message, ctx) =>
    inSpan(
      `process ${queueName}`,
      { kind: SpanKind.CONSUMER, parent: carrierOf(message), attributes: { [ATTR.queue]: queueName, [ATTR.functionName]: ctx.functionName } },
      () => handler(message, ctx),
    );
}

function carrierOf(message: unknown): TraceCarrier {
  if (typeof message !== 'object' || message === null) return {};
  const { traceparent, tracestate } = message as Record<string, unknown>;
  return typeof traceparent === 'string' ? { traceparent, ...(typeof tracestate === 'string' ? { tracestate } : {}) } : {};
}
