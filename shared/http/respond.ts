import type { HttpRequest, HttpResponseInit, InvocationContext } from '@azure/functions';
import { bodyFormat, parseDocuments, readBodyText } from '../api/decode';
import { ApiError } from '../api/errors';
import { ConfigError } from '../config';
import { errorFields } from '../telemetry/log';
import { ATTR, inSpan, SpanKind, TraceCarrier } from '../telemetry/tracing';

export const ALL_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;

export type HttpHandler = (req: HttpRequest, ctx: InvocationContext) => Promise<HttpResponseInit>;

export const json = (status: number, body: unknown, headers: Record<string, string> = {}): HttpResponseInit => ({
  status,
  jsonBody: body,
  headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
});

/** Throws 405 (with Allow) unless the request's method is one the route serves. */
export function allowMethods(req: HttpRequest, allowed: readonly string[]): void {
  if (!allowed.includes(req.method.toUpperCase())) {
    throw new ApiError(405, `method ${req.method} is not allowed here; allowed: ${allowed.join(', ')}`, [], { allow: allowed.join(', ') });
  }
}

/** Reads and parses the body as JSON or YAML documents, with the size limit and content-type check. */
export async function readDocuments(req: HttpRequest, maxBytes: number): Promise<unknown[]> {
  const format = bodyFormat(req.headers.get('content-type'));
  return parseDocuments(await readBodyText(req, maxBytes), format);
}

/**
 * Wraps an HTTP handler: a SERVER span per request (continuing a caller's `traceparent` header), and
 * errors mapped to JSON bodies: ApiError keeps its status; anything else is a 500 without internals.
 */
export function httpFunction(handler: HttpHandler): HttpHandler {
  return (req, ctx) =>
    inSpan(
      `${req.method.toUpperCase()} ${ctx.functionName}`,
      {
        kind: SpanKind.SERVER,
        parent: callerTrace(req),
        attributes: { 'http.request.method': req.method.toUpperCase(), [ATTR.functionName]: ctx.functionName },
      },
      async (span) => {
        const response = await answer(handler, req, ctx);
        span.setAttribute('http.response.status_code', response.status ?? 200);
        return response;
      },
    );
}

async function answer(handler: HttpHandler, req: HttpRequest, ctx: InvocationContext): Promise<HttpResponseInit> {
  try {
    return await handler(req, ctx);
  } catch (error) {
    if (error instanceof ApiError) {
      return json(error.status, { error: error.message, ...(error.errors.length > 0 ? { errors: error.errors } : {}) }, error.headers);
    }
    if (error instanceof ConfigError) {
      ctx.error('configuration error', error.message);
      return json(503, { error: 'the app is misconfigured; see the host log' });
    }
    ctx.error('unhandled error', JSON.stringify(errorFields(error)));
    return json(500, { error: 'internal error' });
  }
}

/** A caller's W3C trace headers, if it sent them; else the active context (the host's invocation in Azure). */
function callerTrace(req: HttpRequest): TraceCarrier | undefined {
  const traceparent = req.headers.get('traceparent');
  if (!traceparent) return undefined;
  const tracestate = req.headers.get('tracestate');
  return { traceparent, ...(tracestate ? { tracestate } : {}) };
}
