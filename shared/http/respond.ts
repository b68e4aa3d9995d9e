import type { HttpRequest, HttpResponseInit, InvocationContext } from '@azure/functions';
import { bodyFormat, parseDocuments, readBodyText } from '../api/decode';
import { ApiError } from '../api/errors';
import { ConfigError } from '../config';
import { KubeApiError } from '../kube/api';
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
  // HEAD is GET without the body (the hosts drop it): allowed wherever GET is.
  const method = req.method.toUpperCase();
  if (!allowed.includes(method) && !(method === 'HEAD' && allowed.includes('GET'))) {
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
 * errors mapped to JSON bodies: ApiError keeps its status; a Karmada API server that cannot be used
 * (unreachable, 401, 403, 5xx, 429) is a 503 with the reason and Retry-After; anything else is a 500
 * without internals.
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

/**
 * Seconds a client should wait before asking again when the app cannot answer for now: the Karmada sync's
 * period, within which a recovery is noticed.
 */
export const RETRY_AFTER_SECONDS = 10;

async function answer(handler: HttpHandler, req: HttpRequest, ctx: InvocationContext): Promise<HttpResponseInit> {
  try {
    return await handler(req, ctx);
  } catch (error) {
    if (error instanceof ApiError) {
      // Every 503 says when to try again.
      const headers = error.status === 503 ? { 'retry-after': String(RETRY_AFTER_SECONDS), ...error.headers } : error.headers;
      return json(error.status, { error: error.message, ...(error.errors.length > 0 ? { errors: error.errors } : {}) }, headers);
    }
    if (error instanceof KubeApiError && (error.unavailable || error.status === 429)) {
      // The Karmada API server is down, overloaded or refuses us: this app's state, not the request's fault,
      // and already logged when it began (KubeAccess), so not once per request.
      return json(503, { error: `degraded: ${error.explanation}` }, { 'retry-after': String(RETRY_AFTER_SECONDS) });
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
