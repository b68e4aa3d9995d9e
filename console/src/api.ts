/** The console's HTTP client: reads need no token; actions send the admin token typed by the user. */
const TOKEN_KEY = 'cluster-failover.adminToken';
const TOKEN_NEEDED_KEY = 'cluster-failover.tokenNeeded';

/** The API root: the console is served at <root>/console, the API at <root>/... (normally /api). */
export const API_ROOT = location.pathname.replace(/\/console(\/.*)?$/, '') || '/api';

/** A failed call: `status` 0 when the server cannot be reached; `retryAfter` (seconds) when a 503 says when to try again. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly retryAfter?: number,
    readonly body?: unknown,
  ) {
    super(message);
  }
}

function readSession(key: string): string {
  try {
    return sessionStorage.getItem(key) ?? '';
  } catch {
    return '';
  }
}

function writeSession(key: string, value: string): void {
  try {
    if (value) sessionStorage.setItem(key, value);
    else sessionStorage.removeItem(key);
  } catch {
    // storage disabled: the value lives only in memory for this page
  }
}

export const readToken = () => readSession(TOKEN_KEY);
export const storeToken = (token: string) => writeSession(TOKEN_KEY, token);

/**
 * Whether the server asked for the admin token (an action answered 401 or 403; kept for the tab): the
 * fallback for a server whose GET /api/healthz does not tell its auth mode (state.ts, `authMode`).
 */
export const readTokenNeeded = () => readSession(TOKEN_NEEDED_KEY) === '1';
export const storeTokenNeeded = (needed: boolean) => writeSession(TOKEN_NEEDED_KEY, needed ? '1' : '');

async function call<T>(method: string, path: string, body?: unknown, admin = false): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const token = admin ? readToken() : '';
  if (token) headers.authorization = `Bearer ${token}`;
  let res: Response;
  try {
    res = await fetch(`${API_ROOT}/${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
  } catch (error) {
    throw new HttpError(0, `${method} /${path}: cannot reach the server (${error instanceof Error ? error.message : String(error)})`);
  }
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!res.ok) {
    const detail = describeError(parsed) ?? res.statusText;
    const hint = res.status === 401 ? (token ? ' (is the admin token right?)' : ' (enter the admin token above)') : '';
    const seconds = Number(res.headers.get('retry-after') ?? '');
    const retryAfter = res.headers.has('retry-after') && Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
    const later = retryAfter === undefined ? '' : `; the server asks to retry in ${retryAfter} s`;
    throw new HttpError(res.status, `${method} /${path} failed with HTTP ${res.status}${detail ? `: ${detail}` : ''}${hint}${later}`, retryAfter, parsed);
  }
  return parsed as T;
}

function describeError(body: unknown): string | undefined {
  if (!body || typeof body !== 'object') return undefined;
  const { error, errors } = body as { error?: unknown; errors?: Array<{ path?: string; message?: string }> };
  if (typeof error !== 'string') return undefined;
  const fields = Array.isArray(errors) ? errors.map((e) => `${e.path ?? ''}: ${e.message ?? ''}`).join('; ') : '';
  return fields ? `${error} (${fields})` : error;
}

export const get = <T>(path: string) => call<T>('GET', path);
export const post = <T>(path: string, body?: unknown, admin = true) => call<T>('POST', path, body, admin);
export const q = encodeURIComponent;
