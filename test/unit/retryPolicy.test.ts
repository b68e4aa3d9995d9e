import { Readable } from 'node:stream';
import { RestError } from '@azure/data-tables';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { storageFromConnectionString, storageFromIdentity } from '../../shared/store/connection';
import {
  backoffCeilingMs,
  installStorageRetryPolicy,
  isTransientStorageError,
  type PipelineRequest,
  type PipelineResponse,
  retryAfterMs,
  retryDelayMs,
  STORAGE_RETRY,
  STORAGE_RETRY_POLICY_NAME,
  storageRetryPolicy,
} from '../../shared/store/retryPolicy';

const systemError = (code: string, message: string) => Object.assign(new Error(message), { code });
const restError = (message: string, options: { code?: string; statusCode?: number }) => new RestError(message, options);
const abortError = (message = 'The operation was aborted.') => Object.assign(new Error(message), { name: 'AbortError' });

describe('isTransientStorageError', () => {
  const retried: Array<[string, unknown]> = [
    ['a body cut off mid-stream, as the HTTP client reports it', restError('Error reading response as text: aborted', { code: 'PARSE_ERROR' })],
    ["Node's own error for a body cut off", systemError('ECONNRESET', 'aborted')],
    ['"aborted" with its code lost', new Error('aborted')],
    ['socket hang up', systemError('ECONNRESET', 'socket hang up')],
    ['socket hang up, code lost', new Error('socket hang up')],
    ['read ECONNRESET', systemError('ECONNRESET', 'read ECONNRESET')],
    ['ECONNRESET as the HTTP client wraps it', restError('read ECONNRESET', { code: 'ECONNRESET' })],
    ['ECONNRESET in the message only', restError('Error reading response as text: read ECONNRESET', { code: 'PARSE_ERROR' })],
    ['ECONNREFUSED', systemError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:10002')],
    ['ECONNABORTED', systemError('ECONNABORTED', 'connection aborted')],
    ['ETIMEDOUT', systemError('ETIMEDOUT', 'connect ETIMEDOUT 10.0.0.1:443')],
    ['ESOCKETTIMEDOUT', systemError('ESOCKETTIMEDOUT', 'socket timed out')],
    ['EPIPE', systemError('EPIPE', 'write EPIPE')],
    ['EAI_AGAIN (DNS, try again)', systemError('EAI_AGAIN', 'getaddrinfo EAI_AGAIN acc.table.core.windows.net')],
    ['ENETUNREACH', systemError('ENETUNREACH', 'connect ENETUNREACH')],
    ['EHOSTUNREACH', systemError('EHOSTUNREACH', 'connect EHOSTUNREACH')],
    ['premature close', new Error('Premature close')],
    ['a reset behind a wrapper (cause)', new Error('storage call failed', { cause: systemError('ECONNRESET', 'read ECONNRESET') })],
    ...[408, 429, 500, 502, 503, 504].map((status): [string, unknown] => [`HTTP ${status}`, restError(`status ${status}`, { statusCode: status })]),
    ['HTTP 503 as a response on the error', { message: 'busy', response: { status: 503 } }],
  ];
  const notRetried: Array<[string, unknown]> = [
    ...[400, 401, 403, 404, 409, 412, 413, 416, 501, 505].map((status): [string, unknown] => [
      `HTTP ${status}`,
      restError(`status ${status}`, { statusCode: status }),
    ]),
    ['HTTP 409 whose message mentions a reset (the status decides)', restError('read ECONNRESET', { statusCode: 409 })],
    ['HTTP 412 with a reset code (the status decides)', restError('x', { code: 'ECONNRESET', statusCode: 412 })],
    ['a cancelled call (AbortError)', abortError()],
    ['an AbortError that mentions a reset', Object.assign(abortError('aborted'), { code: 'ECONNRESET' })],
    ['"The operation was aborted." from something else', new Error('The operation was aborted.')],
    [
      'a body that arrived whole and does not parse',
      restError('Error "Unexpected token < in JSON at position 0" occurred while parsing the response body', { code: 'PARSE_ERROR' }),
    ],
    ['a body that is not valid gzip', restError('Error reading response as text: incorrect header check', { code: 'PARSE_ERROR' })],
    ['ENOTFOUND (a wrong account name does not heal)', systemError('ENOTFOUND', 'getaddrinfo ENOTFOUND nope.table.core.windows.net')],
    ['a TLS certificate error', systemError('CERT_HAS_EXPIRED', 'certificate has expired')],
    ['an insecure URL refused by the client', new Error('Cannot connect to http://x while allowInsecureConnection is false.')],
    ['a programming error', new TypeError("Cannot read properties of undefined (reading 'etag')")],
    ['a plain error', new Error('boom')],
    ['a thrown string', 'ECONNRESET'],
    ['undefined', undefined],
    ['null', null],
  ];
  it.each(retried)('retries %s', (_name, error) => expect(isTransientStorageError(error)).toBe(true));
  it.each(notRetried)('does not retry %s', (_name, error) => expect(isTransientStorageError(error)).toBe(false));
});

describe('backoff', () => {
  it('doubles from 100 ms and never exceeds 2 s', () => {
    expect([1, 2, 3, 4, 5, 6, 10].map((n) => backoffCeilingMs(n))).toEqual([100, 200, 400, 800, 1600, 2000, 2000]);
    expect(STORAGE_RETRY).toEqual({ maxTries: 5, baseDelayMs: 100, maxDelayMs: 2000 });
  });

  it('waits a uniformly random part of the ceiling (full jitter)', () => {
    expect(retryDelayMs(3, () => 0)).toBe(0);
    expect(retryDelayMs(3, () => 0.5)).toBe(200);
    expect(retryDelayMs(3, () => 0.999999)).toBe(399);
  });

  it('stays in [0, ceiling) and within maxDelay, whatever the retry, random value and Retry-After', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        fc.option(fc.integer({ min: 0, max: 600_000 }), { nil: undefined }),
        (retry, r, after) => {
          const delay = retryDelayMs(retry, () => r, after);
          expect(delay).toBeGreaterThanOrEqual(0);
          expect(delay).toBeLessThanOrEqual(STORAGE_RETRY.maxDelayMs);
          if (after === undefined) expect(delay).toBeLessThan(Math.max(1, backoffCeilingMs(retry)));
          else expect(delay).toBeGreaterThanOrEqual(Math.min(after, STORAGE_RETRY.maxDelayMs));
        },
      ),
    );
  });

  it.each([
    ['Retry-After in seconds', { 'retry-after': '1' }, 1000],
    ['Retry-After as a date', { 'retry-after': new Date(10_000 + 1500).toUTCString() }, 1000],
    ['retry-after-ms', { 'retry-after-ms': '250' }, 250],
    ['x-ms-retry-after-ms', { 'x-ms-retry-after-ms': '40' }, 40],
    ['no header', {}, undefined],
    ['garbage', { 'retry-after': 'soon' }, undefined],
  ])('reads %s', (_name, headers: Record<string, string>, expected) => {
    expect(retryAfterMs(response(503, headers), () => 10_000)).toBe(expected);
    expect(retryAfterMs({ response: response(503, headers) }, () => 10_000)).toBe(expected);
  });
});

/** A fake of the rest of the pipeline: answers each try with the next outcome; records the tries. */
function fakeNext(outcomes: Array<PipelineResponse | Error>) {
  const tries: PipelineRequest[] = [];
  const next = async (request: PipelineRequest): Promise<PipelineResponse> => {
    tries.push(request);
    const outcome = outcomes[Math.min(tries.length, outcomes.length) - 1];
    if (outcome instanceof Error) throw outcome;
    return outcome;
  };
  return { next, tries };
}

function response(status: number, headers: Record<string, string> = {}): PipelineResponse {
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  return { status, headers: { get: (name: string) => lower[name.toLowerCase()] }, request: request() } as unknown as PipelineResponse;
}

function request(extra: Partial<PipelineRequest> = {}): PipelineRequest {
  return { url: 'http://127.0.0.1/devstoreaccount1/t', method: 'GET', headers: { get: () => undefined }, ...extra } as unknown as PipelineRequest;
}

/** The policy with recorded, instant sleeps and a fixed random value. */
function policy(random = 0.5, options: { maxTries?: number } = {}) {
  const sleeps: number[] = [];
  const p = storageRetryPolicy({ ...options, random: () => random, sleep: async (ms) => void sleeps.push(ms) });
  return { p, sleeps };
}

const reset = () => restError('Error reading response as text: aborted', { code: 'PARSE_ERROR' });

describe('storageRetryPolicy', () => {
  it.each([0, 1, 2, 3, 4])('succeeds after %i transient failures, waiting half of each ceiling (random = 0.5)', async (failures) => {
    const { p, sleeps } = policy(0.5);
    const ok = response(200);
    const { next, tries } = fakeNext([...Array.from({ length: failures }, reset), ok]);
    await expect(p.sendRequest(request(), next)).resolves.toBe(ok);
    expect(tries).toHaveLength(failures + 1);
    expect(sleeps).toEqual([50, 100, 200, 400].slice(0, failures));
  });

  it('gives up after 5 tries with the last error, having waited at most 1.5 s in all', async () => {
    const { p, sleeps } = policy(0.999999);
    const errors = Array.from({ length: 6 }, reset);
    const { next, tries } = fakeNext(errors);
    await expect(p.sendRequest(request(), next)).rejects.toBe(errors[4]);
    expect(tries).toHaveLength(5);
    expect(sleeps).toEqual([99, 199, 399, 799]);
    expect(sleeps.reduce((a, b) => a + b)).toBeLessThan(1500);
  });

  it('honours maxTries', async () => {
    const { p } = policy(0, { maxTries: 2 });
    const { next, tries } = fakeNext([reset(), reset(), response(200)]);
    await expect(p.sendRequest(request(), next)).rejects.toThrow('aborted');
    expect(tries).toHaveLength(2);
  });

  it.each([
    ['HTTP 404', restError('not found', { statusCode: 404 })],
    ['HTTP 409', restError('conflict', { statusCode: 409 })],
    ['a cancelled call', abortError()],
    ['a programming error', new TypeError('x is not a function')],
  ])('does not retry %s: one try, the error as is', async (_name, error) => {
    const { p, sleeps } = policy();
    const { next, tries } = fakeNext([error, response(200)]);
    await expect(p.sendRequest(request(), next)).rejects.toBe(error);
    expect(tries).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it.each([408, 429, 500, 502, 503, 504])('retries a %i response, and returns the 200 that follows', async (status) => {
    const { p } = policy();
    const ok = response(200);
    const { next, tries } = fakeNext([response(status), ok]);
    await expect(p.sendRequest(request(), next)).resolves.toBe(ok);
    expect(tries).toHaveLength(2);
  });

  it.each([400, 404, 409, 412, 413])('returns a %i response at once (the caller acts on it)', async (status) => {
    const { p } = policy();
    const answer = response(status);
    const { next, tries } = fakeNext([answer, response(200)]);
    await expect(p.sendRequest(request(), next)).resolves.toBe(answer);
    expect(tries).toHaveLength(1);
  });

  it('returns the last 503 after 5 tries (the SDK turns it into its error)', async () => {
    const { p } = policy();
    const busy = Array.from({ length: 5 }, () => response(503));
    const { next, tries } = fakeNext(busy);
    await expect(p.sendRequest(request(), next)).resolves.toBe(busy[4]);
    expect(tries).toHaveLength(5);
  });

  it('waits what Retry-After asks, up to 2 s', async () => {
    const { p, sleeps } = policy(0);
    const { next } = fakeNext([
      response(429, { 'Retry-After': '1' }),
      response(503, { 'Retry-After': '30' }),
      response(503, { 'x-ms-retry-after-ms': '5' }),
      response(200),
    ]);
    await p.sendRequest(request(), next);
    expect(sleeps).toEqual([1000, 2000, 5]);
  });

  it('does not retry a request whose body is a stream (it cannot be sent twice)', async () => {
    const { p } = policy();
    const { next, tries } = fakeNext([reset(), response(200)]);
    await expect(p.sendRequest(request({ method: 'PUT', body: Readable.from(['x']) }), next)).rejects.toThrow('aborted');
    expect(tries).toHaveLength(1);
  });

  it('retries a request with a string body (as every table and queue request has)', async () => {
    const { p } = policy();
    const { next, tries } = fakeNext([reset(), response(201)]);
    await expect(p.sendRequest(request({ method: 'POST', body: '{"a":1}' }), next)).resolves.toMatchObject({ status: 201 });
    expect(tries).toHaveLength(2);
  });

  it('stops waiting and rejects with an AbortError when the call is cancelled during the backoff', async () => {
    const controller = new AbortController();
    const p = storageRetryPolicy({ random: () => 0.999, baseDelayMs: 10_000, maxDelayMs: 10_000 });
    const { next, tries } = fakeNext([reset(), response(200)]);
    const started = Date.now();
    const call = p.sendRequest(request({ abortSignal: controller.signal }), next);
    setTimeout(() => controller.abort(), 20);
    await expect(call).rejects.toMatchObject({ name: 'AbortError' });
    expect(Date.now() - started).toBeLessThan(2000);
    expect(tries).toHaveLength(1);
  });

  it('does not retry once the call is cancelled', async () => {
    const controller = new AbortController();
    const { p } = policy();
    const error = reset();
    const next = async () => {
      controller.abort();
      throw error;
    };
    await expect(p.sendRequest(request({ abortSignal: controller.signal }), next)).rejects.toBe(error);
  });
});

describe('every storage client uses the one policy', () => {
  const CONNECTION =
    'DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;QueueEndpoint=http://127.0.0.1:1/devstoreaccount1;TableEndpoint=http://127.0.0.1:2/devstoreaccount1;';
  const credential = { getToken: async () => ({ token: 't', expiresOnTimestamp: Date.now() + 60_000 }) };
  const retryPolicies = (pipeline: { getOrderedPolicies(): Array<{ name: string }> }) =>
    pipeline
      .getOrderedPolicies()
      .map((p) => p.name)
      .filter((name) => /retry/i.test(name));

  it.each([
    ['a connection string', () => storageFromConnectionString(CONNECTION)],
    [
      'an identity',
      () => storageFromIdentity({ queueServiceUri: 'https://acc.queue.core.windows.net', tableServiceUri: 'https://acc.table.core.windows.net' }, credential),
    ],
  ])('from %s: tables, table service, queues and queue service', (_name, make) => {
    const storage = make();
    const pipelines = [
      storage.table('ledger').pipeline,
      storage.tableService().pipeline,
      (storage.queue('evictions') as any).storageClientContext.pipeline,
      (storage.queue('scheduler') as any).storageClientContext.pipeline,
      (storage.queueService() as any).storageClientContext.pipeline,
    ];
    for (const pipeline of pipelines) {
      expect(retryPolicies(pipeline)).toEqual([STORAGE_RETRY_POLICY_NAME]);
      // In the SDK's Retry phase: after deserialization (it sees status codes), before signing and logging (each try is signed and logged).
      const names = pipeline.getOrderedPolicies().map((p: { name: string }) => p.name);
      expect(names.indexOf(STORAGE_RETRY_POLICY_NAME)).toBeGreaterThan(names.indexOf('deserializationPolicy'));
      expect(names.indexOf(STORAGE_RETRY_POLICY_NAME)).toBeLessThan(names.indexOf('logPolicy'));
    }
  });

  it('installs idempotently and refuses a pipeline with another retry policy left in it', () => {
    const pipeline = storageFromConnectionString(CONNECTION).table('ledger').pipeline;
    installStorageRetryPolicy(pipeline);
    expect(retryPolicies(pipeline)).toEqual([STORAGE_RETRY_POLICY_NAME]);
    pipeline.addPolicy({ name: 'someNewRetryPolicy', sendRequest: (req, next) => next(req) });
    expect(() => installStorageRetryPolicy(pipeline)).toThrow(/expected only the appStorageRetryPolicy retry policy, found .*someNewRetryPolicy/);
  });
});
