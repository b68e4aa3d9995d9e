/** The HTTP side of the CLI: one request to the cluster-failover API, with its errors sorted for exit codes. */

export interface FieldError {
  path: string;
  message: string;
  document?: number;
}

/** The server answered with an error status (exit code 1). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors: FieldError[] = [],
  ) {
    super(message);
  }
}

/** The server could not be reached or did not answer in time (exit code 3). */
export class UnreachableError extends Error {}

export interface ClientOptions {
  server: string;
  token?: string;
  timeoutMs: number;
}

export interface RequestOptions {
  body?: string;
  contentType?: string;
  headers?: Record<string, string>;
  query?: Record<string, string | undefined>;
}

/** Normalises the server URL: no trailing slash, and no trailing `/api` (it is added per request). */
export function serverBase(server: string): string {
  return server.replace(/\/+$/, '').replace(/\/api$/, '');
}

export class Client {
  readonly server: string;

  constructor(private readonly options: ClientOptions) {
    this.server = serverBase(options.server);
  }

  get hasToken(): boolean {
    return Boolean(this.options.token);
  }

  get<T>(path: string, query?: Record<string, string | undefined>): Promise<T> {
    return this.request<T>('GET', path, { query });
  }

  post<T>(path: string, options: RequestOptions = {}): Promise<T> {
    return this.request<T>('POST', path, options);
  }

  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const url = new URL(`${this.server}/api/${path}`);
    for (const [key, value] of Object.entries(options.query ?? {})) if (value !== undefined && value !== '') url.searchParams.set(key, value);
    const headers: Record<string, string> = { ...options.headers, accept: 'application/json', 'user-agent': 'cluster-failover-cli' };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    if (options.body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
    let res: Response;
    try {
      res = await fetch(url, { method, headers, body: options.body, signal: AbortSignal.timeout(this.options.timeoutMs) });
    } catch (err) {
      throw new UnreachableError(this.describeFailure(err));
    }
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      throw new UnreachableError(this.describeFailure(err));
    }
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (!res.ok) {
      const answer = (body ?? {}) as { error?: unknown; errors?: unknown };
      const message = typeof answer.error === 'string' ? answer.error : `${res.status} ${res.statusText || 'error'}${text ? `: ${text.slice(0, 200)}` : ''}`;
      const errors = Array.isArray(answer.errors) ? (answer.errors as FieldError[]) : [];
      throw new ApiError(res.status, message, errors);
    }
    if (body === undefined && text !== '')
      throw new ApiError(res.status, `the server at ${this.server} answered ${method} /api/${path} with something that is not JSON`);
    return body as T;
  }

  private describeFailure(err: unknown): string {
    const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
    if (e.name === 'TimeoutError' || e.name === 'AbortError') {
      return `the server at ${this.server} did not answer within ${this.options.timeoutMs / 1000}s`;
    }
    const cause = e.cause?.code ?? e.cause?.message ?? e.message ?? String(err);
    return `cannot reach the server at ${this.server} (${cause}); set --server or CLUSTER_FAILOVER_SERVER`;
  }
}
