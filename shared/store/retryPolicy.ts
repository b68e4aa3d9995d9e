import type { TableClient } from '@azure/data-tables';

/**
 * The one retry policy for every Table and Queue storage call this app makes. connection.ts installs it
 * in each client's HTTP pipeline in place of the SDK's own retry policy.
 *
 *   What is retried   | connection reset, refused, aborted or timed out (ECONNRESET, ECONNREFUSED, ECONNABORTED,
 *                     | ETIMEDOUT, ESOCKETTIMEDOUT, EPIPE, EAI_AGAIN, ENETUNREACH, EHOSTUNREACH, "socket hang up");
 *                     | a response body cut off mid-stream ("Error reading response as text: aborted");
 *                     | HTTP 408, 429, 500, 502, 503, 504.
 *   What is not       | every other status: 400, 401, 403, 404, 409, 412, 413, ... are answers the callers act on;
 *                     | 501 and 505 will not change. A cancelled call (AbortError). Any other error, for example a
 *                     | body that arrived whole but does not parse.
 *   Tries             | 5 in all (the first try and 4 retries).
 *   Backoff           | full jitter: before retry n, a random wait in [0, min(2 s, 100 ms * 2^(n-1))), so at most
 *                     | 100, 200, 400 and 800 ms, 1.5 s in all. A Retry-After (or x-ms-retry-after-ms) header
 *                     | raises the wait to what it asks, up to 2 s; 8 s in all at worst.
 *   Not retried at all| a request whose body is a stream (it cannot be sent twice); the app sends none.
 *
 * Why these numbers: a control plane should ride out a connection reset or a storage node failover of a
 * second or two inside the call, and should not hold a lease or a queue message for long while storage is
 * down: longer outages fail the call, and the queue delivers the message again (the host's retry).
 *
 * Why this replaces the SDKs' retry policies instead of adding to them: stacked policies multiply (ours 5 ×
 * the Queue SDK's 4 = 20 tries, with its 4 s and 12 s waits), and then the real policy is written in three
 * places (ours, @azure/core-rest-pipeline's default for Tables, @azure/storage-common's for Queues), which
 * disagree: neither retries a body cut off mid-stream; the Tables one does not retry EPIPE or 429 without
 * Retry-After; the Queue one does not retry 408, 429, 502 or 504. So `installStorageRetryPolicy` removes the
 * SDK policy from the pipeline's "Retry" phase, puts this one there (the SDK's later policies, tracing,
 * logging and the queue clients' signing, run again for each try), and checks that no other retry policy
 * is left. Both SDKs also retried ENOTFOUND (and the Queue one ENOENT): not here, a name that does not
 * resolve is a wrong setting; a resolver that is briefly down says EAI_AGAIN.
 *
 * Idempotency: a retry after a lost response repeats a request the service may already have carried out.
 * Reads and upserts are idempotent. For the others, the retry's answer is:
 *   - a create (insert entity, create table or queue, a transaction of creates) → 409 Conflict, although
 *     the row is ours;
 *   - an update or delete with an ETag (If-Match) → 412 Precondition Failed (or 404 for a delete), although
 *     the change was made; a delete without an ETag → 404 ("was not there"), although it deleted the row;
 *   - a queue message update or delete with a pop receipt → 404 (or 400), although it was done;
 *   - a queue send → a second copy of the message; a receive → messages hidden for their visibility timeout
 *     and delivered again later (with a higher dequeue count).
 * The callers already read 409 and 412 as a lost race (TableDocumentStore → ConcurrencyError, leases →
 * not acquired, transactions → each action alone, skipping conflicts) and then read the current state
 * again, where they find their own write; the queue handlers are idempotent, so a duplicate message is
 * harmless. The same was already true of the SDKs' own retries; this policy only retries more failures.
 */

type Pipeline = TableClient['pipeline'];
/** `PipelinePolicy` of @azure/core-rest-pipeline, taken from the SDK's types (the app does not depend on it directly). */
export type PipelinePolicy = Parameters<Pipeline['addPolicy']>[0];
export type PipelineRequest = Parameters<PipelinePolicy['sendRequest']>[0];
export type SendRequest = Parameters<PipelinePolicy['sendRequest']>[1];
export type PipelineResponse = Awaited<ReturnType<SendRequest>>;

export const STORAGE_RETRY_POLICY_NAME = 'appStorageRetryPolicy';

export interface StorageRetryParameters {
  /** Tries in all, the first included. */
  maxTries: number;
  /** Ceiling of the first retry's wait; it doubles for each further retry. */
  baseDelayMs: number;
  /** No wait is longer, whatever the backoff or a Retry-After header says. */
  maxDelayMs: number;
}

export const STORAGE_RETRY: Readonly<StorageRetryParameters> = Object.freeze({ maxTries: 5, baseDelayMs: 100, maxDelayMs: 2_000 });

/** Statuses that may well be different on the next try. */
export const RETRIED_STATUSES: ReadonlySet<number> = new Set([408, 429, 500, 502, 503, 504]);

/** Node system error codes of a connection that failed or broke (nothing about the request itself). */
export const RETRIED_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'ESOCKETTIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
]);

/**
 * Messages of the same failures when the code is lost on the way: the HTTP client wraps a failed body read
 * as `RestError("Error reading response as text: <cause>", { code: "PARSE_ERROR" })`, keeping only the
 * cause's message (for a connection reset mid-body, Node's "aborted").
 */
const RETRIED_MESSAGES: readonly RegExp[] = [
  /^(?:Error reading response as text: )?aborted$/i,
  /socket hang up/i,
  /premature close/i,
  new RegExp(`\\b(?:${[...RETRIED_ERROR_CODES].join('|')})\\b`),
];

export const isRetriedStatus = (status: number): boolean => RETRIED_STATUSES.has(status);

/**
 * Whether a failed storage call may succeed if simply tried again. Pure: looks only at the error (and the
 * errors in its `cause` chain). An error that carries an HTTP status is judged by the status alone.
 */
export function isTransientStorageError(error: unknown): boolean {
  for (let depth = 0, e = error; depth < 4 && e !== null && typeof e === 'object'; depth++, e = (e as { cause?: unknown }).cause) {
    const { name, code, message, statusCode, response } = e as {
      name?: unknown;
      code?: unknown;
      message?: unknown;
      statusCode?: unknown;
      response?: { status?: unknown };
    };
    if (name === 'AbortError') return false;
    const status = typeof statusCode === 'number' ? statusCode : response?.status;
    if (typeof status === 'number' && status > 0) return isRetriedStatus(status);
    if (typeof code === 'string' && RETRIED_ERROR_CODES.has(code)) return true;
    if (typeof message === 'string' && RETRIED_MESSAGES.some((pattern) => pattern.test(message))) return true;
  }
  return false;
}

/** Upper bound of the wait before retry `retry` (1 = the first retry): base × 2^(retry-1), at most maxDelayMs. */
export function backoffCeilingMs(retry: number, parameters: StorageRetryParameters = STORAGE_RETRY): number {
  return Math.min(parameters.maxDelayMs, parameters.baseDelayMs * 2 ** (retry - 1));
}

/**
 * The wait before retry `retry`: full jitter (uniform in [0, ceiling)), or what the service asked for in
 * Retry-After if that is longer, never more than maxDelayMs.
 */
export function retryDelayMs(retry: number, random: () => number, retryAfterMs?: number, parameters: StorageRetryParameters = STORAGE_RETRY): number {
  const jittered = Math.floor(Math.min(Math.max(random(), 0), 1) * backoffCeilingMs(retry, parameters));
  return retryAfterMs === undefined ? jittered : Math.max(jittered, Math.min(Math.max(retryAfterMs, 0), parameters.maxDelayMs));
}

/** The wait a response (or an error carrying one) asks for: `retry-after-ms`, `x-ms-retry-after-ms`, or `Retry-After` (seconds or a date). */
export function retryAfterMs(source: unknown, now: () => number = Date.now): number | undefined {
  const response = (source as { headers?: unknown; response?: { headers?: unknown } } | undefined) ?? {};
  const headers = (response.headers ?? response.response?.headers) as { get?: (name: string) => string | undefined } | undefined;
  if (typeof headers?.get !== 'function') return undefined;
  for (const name of ['retry-after-ms', 'x-ms-retry-after-ms']) {
    const value = headers.get(name)?.trim();
    if (value && Number.isFinite(Number(value)) && Number(value) >= 0) return Number(value);
  }
  const retryAfter = headers.get('retry-after');
  if (retryAfter === undefined || retryAfter.trim() === '') return undefined;
  const seconds = Number(retryAfter);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(retryAfter);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now());
}

export interface StorageRetryOptions extends Partial<StorageRetryParameters> {
  /** Waits `ms`, or rejects with an AbortError when `signal` aborts. Injected by tests. */
  sleep?: (ms: number, signal?: PipelineRequest['abortSignal']) => Promise<void>;
  /** Uniform in [0, 1). Injected by tests. */
  random?: () => number;
}

const abortError = () => Object.assign(new Error('The operation was aborted.'), { name: 'AbortError' });

function abortableSleep(ms: number, signal?: PipelineRequest['abortSignal']): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError());
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort);
  });
}

/** A body that can be sent again: none, a string, bytes, a Blob or FormData, or a function that makes a fresh stream each time. */
function replayable(request: PipelineRequest): boolean {
  const body = request.body as unknown;
  if (body === undefined || body === null || typeof body !== 'object') return true;
  return typeof (body as { pipe?: unknown }).pipe !== 'function' && typeof (body as { getReader?: unknown }).getReader !== 'function';
}

/** The policy: tries a request up to maxTries times while it fails transiently, waiting as `retryDelayMs` says. */
export function storageRetryPolicy(options: StorageRetryOptions = {}): PipelinePolicy {
  const parameters: StorageRetryParameters = {
    maxTries: options.maxTries ?? STORAGE_RETRY.maxTries,
    baseDelayMs: options.baseDelayMs ?? STORAGE_RETRY.baseDelayMs,
    maxDelayMs: options.maxDelayMs ?? STORAGE_RETRY.maxDelayMs,
  };
  const sleep = options.sleep ?? abortableSleep;
  const random = options.random ?? Math.random;
  return {
    name: STORAGE_RETRY_POLICY_NAME,
    async sendRequest(request: PipelineRequest, next: SendRequest): Promise<PipelineResponse> {
      for (let attempt = 1; ; attempt++) {
        let response: PipelineResponse | undefined;
        let error: unknown;
        try {
          response = await next(request);
        } catch (caught) {
          error = caught;
        }
        const mayRetry = attempt < parameters.maxTries && replayable(request) && !request.abortSignal?.aborted;
        if (response) {
          if (!mayRetry || !isRetriedStatus(response.status)) return response;
          // A streamed body nobody will read would hold its connection: let it drain.
          response.readableStreamBody?.resume();
        } else if (!mayRetry || !isTransientStorageError(error)) {
          throw error;
        }
        await sleep(retryDelayMs(attempt, random, retryAfterMs(response ?? error), parameters), request.abortSignal);
      }
    },
  };
}

/** The policy instance every client shares (it holds no state). */
export const STORAGE_RETRY_POLICY: PipelinePolicy = storageRetryPolicy();

/**
 * Makes `policy` the pipeline's only retry policy: removes whatever the SDK put in the "Retry" phase, adds
 * `policy` there, and throws if any other policy named like a retry policy is left (a new SDK version that
 * adds one elsewhere must fail the tests, not quietly multiply the tries). Idempotent.
 */
export function installStorageRetryPolicy(pipeline: Pipeline, policy: PipelinePolicy = STORAGE_RETRY_POLICY): void {
  pipeline.removePolicy({ phase: 'Retry' });
  pipeline.removePolicy({ name: policy.name });
  pipeline.addPolicy(policy, { phase: 'Retry' });
  const retries = pipeline
    .getOrderedPolicies()
    .map((p) => p.name)
    .filter((name) => /retry/i.test(name));
  if (retries.length !== 1 || retries[0] !== policy.name)
    throw new Error(`storage pipeline: expected only the ${policy.name} retry policy, found ${retries.join(', ')}`);
}
