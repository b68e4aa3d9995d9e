import { Attributes, Context, context, isSpanContextValid, propagation, ROOT_CONTEXT, Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

/**
 * Tracing helpers over `@opentelemetry/api`. Without a registered SDK every call is a cheap no-op, so the
 * code traces unconditionally; `shared/telemetry/setup.ts` decides where spans go.
 *
 * One failure story is one trace: the W3C `traceparent` of the current span travels in every queue
 * message and in each eviction ledger row, and whoever picks the work up continues that trace.
 */

export const TRACER_NAME = 'cluster-failover';
const tracer = () => trace.getTracer(TRACER_NAME);

/** Span attribute names (low-cardinality values only: names of clusters and bindings, tiers, outcomes). */
export const ATTR = {
  cluster: 'failover.cluster',
  binding: 'failover.binding',
  taint: 'failover.taint',
  tier: 'failover.tier',
  rate: 'failover.rate',
  outcome: 'failover.outcome',
  count: 'failover.count',
  queue: 'messaging.destination.name',
  functionName: 'faas.name',
} as const;

/** What a message or a ledger row carries of the trace it belongs to. */
export interface TraceCarrier {
  traceparent?: string;
  tracestate?: string;
}

/** The current trace context as W3C headers (empty when nothing is traced). */
export function currentTraceCarrier(): TraceCarrier {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ? { traceparent: carrier.traceparent, ...(carrier.tracestate ? { tracestate: carrier.tracestate } : {}) } : {};
}

/** The context a carrier names, or the root context when it names none (a missing traceparent is normal). */
export function contextOf(carrier: TraceCarrier | undefined): Context {
  if (!carrier?.traceparent) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, { traceparent: carrier.traceparent, ...(carrier.tracestate ? { tracestate: carrier.tracestate } : {}) });
}

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** Continue this trace instead of the active one (a message's or a ledger row's). */
  parent?: TraceCarrier | Context;
}

/** Runs `fn` in a new active span; an exception marks the span as an error and is rethrown. */
export async function inSpan<T>(name: string, options: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  const parent = parentOf(options);
  return tracer().startActiveSpan(
    name,
    { kind: options.kind ?? SpanKind.INTERNAL, ...(options.attributes ? { attributes: options.attributes } : {}) },
    parent,
    async (span) => {
      try {
        return await fn(span);
      } catch (error) {
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

/**
 * Records a finished span after the fact: for periodic work that should appear in a trace only when it
 * did something (a sweep over thousands of bindings must not emit a span per binding every tick).
 */
export function recordSpan(name: string, options: SpanOptions & { startTime: number }): void {
  const parent = parentOf(options);
  tracer()
    .startSpan(
      name,
      { kind: options.kind ?? SpanKind.INTERNAL, startTime: options.startTime, ...(options.attributes ? { attributes: options.attributes } : {}) },
      parent,
    )
    .end();
}

/** Adds attributes to the active span, if any. */
export function annotate(attributes: Attributes): void {
  trace.getActiveSpan()?.setAttributes(attributes);
}

/** The active trace and span ids, for log lines (empty when nothing is traced). */
export function traceIds(): { traceId?: string; spanId?: string } {
  const spanContext = trace.getActiveSpan()?.spanContext();
  return spanContext && isSpanContextValid(spanContext) ? { traceId: spanContext.traceId, spanId: spanContext.spanId } : {};
}

const isContext = (value: TraceCarrier | Context): value is Context => typeof (value as Context).getValue === 'function';

/** The active context, or the one the options name (a context, or a message's or row's carrier). */
const parentOf = (options: SpanOptions): Context =>
  options.parent === undefined ? context.active() : isContext(options.parent) ? options.parent : contextOf(options.parent);

export { SpanKind };
