/** The console's HTTP client: reads need no token; actions send the admin token typed by the user. */
const TOKEN_KEY = 'cluster-failover.adminToken';

/** The API root: the console is served at <root>/console, the API at <root>/... (normally /api). */
export const API_ROOT = location.pathname.replace(/\/console(\/.*)?$/, '') || '/api';

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export function readToken(): string {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? '';
  } catch {
    return '';
  }
}

export function storeToken(token: string): void {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // storage disabled: the token lives only in memory for this page
  }
}

async function call<T>(method: string, path: string, body?: unknown, admin = false): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const token = admin ? readToken() : '';
  if (token) headers.authorization = `Bearer ${token}`;
  let res: Response;
  try {
    res = await fetch(`${API_ROOT}/${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
  } catch (error) {
    throw new HttpError(0, `${method} /${path}: the API cannot be reached (${error instanceof Error ? error.message : String(error)})`);
  }
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!res.ok) {
    const detail = describeError(parsed) ?? `HTTP ${res.status}`;
    const hint = res.status === 401 ? (token ? ' (is the admin token right?)' : ' (enter the admin token above)') : '';
    throw new HttpError(res.status, `${method} /${path}: ${detail}${hint}`);
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
