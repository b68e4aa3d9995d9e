import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { HttpError, readToken, readTokenNeeded, storeToken, storeTokenNeeded } from './api';

/** Tiny shared stores (the token, the alert messages) that components subscribe to. */
type Listener = () => void;
function store<T>(initial: T) {
  let value = initial;
  const listeners = new Set<Listener>();
  return {
    get: () => value,
    set(next: T) {
      value = next;
      listeners.forEach((l) => l());
    },
    use(): T {
      const [, force] = useState(0);
      useEffect(() => {
        const l = () => force((n) => n + 1);
        listeners.add(l);
        return () => void listeners.delete(l);
      }, []);
      return value;
    },
  };
}

export const token = store(readToken());
export function setToken(next: string): void {
  storeToken(next);
  token.set(next);
}

/** The server asked for the admin token (401/403 on an action): what counts when healthz does not tell the auth mode. */
export const tokenNeeded = store(readTokenNeeded());
export function setTokenNeeded(next: boolean): void {
  if (tokenNeeded.get() === next) return;
  storeTokenNeeded(next);
  tokenNeeded.set(next);
}

/**
 * What GET /api/healthz says of the admin API (`auth`): `none`, anyone may act; `required`, the actions
 * need the admin token. Undefined until it answers, or when the server does not say (then the console
 * learns it from a 401/403 on an action, `tokenNeeded`).
 */
export type AuthMode = 'none' | 'required';
export const authMode = store<AuthMode | undefined>(undefined);
export function setAuthMode(next: AuthMode | undefined): void {
  if (next === undefined || authMode.get() === next) return;
  authMode.set(next);
}

/**
 * Whether the actions that need the admin token must wait for one: the server requires it (healthz) and
 * none is typed in; or, when the server does not say, an action was refused with 401/403. Never under `none`.
 */
export function useTokenMissing(): boolean {
  const hasToken = token.use() !== '';
  const mode = authMode.use();
  const needed = tokenNeeded.use();
  if (hasToken || mode === 'none') return false;
  return mode === 'required' || needed;
}

/** Errors shown in the page's alert region, one per source so a repeated poll failure is not repeated. */
export const alerts = store<Record<string, string>>({});
export function report(source: string, error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  if (alerts.get()[source] === message) return;
  alerts.set({ ...alerts.get(), [source]: message });
}
export function clear(source: string): void {
  if (!(source in alerts.get())) return;
  const next = { ...alerts.get() };
  delete next[source];
  alerts.set(next);
}

/** Notices (action results) for the polite status region. */
export const notice = store('');

/** A failed load: the message, the HTTP status (0: the server cannot be reached) and a 503's Retry-After. */
export interface LoadError {
  message: string;
  status?: number;
  retryAfter?: number;
}

function loadError(e: unknown): LoadError {
  if (e instanceof HttpError) return { message: e.message, status: e.status, retryAfter: e.retryAfter };
  return { message: e instanceof Error ? e.message : String(e) };
}

export interface Poll<T> {
  data: T | undefined;
  error: LoadError | undefined;
  loading: boolean;
  refresh: () => void;
}

/**
 * Loads `load()` now and every `everyMs` (never two at once) while the component is mounted; failures go
 * to the alert region under `source` and clear on the next success. After a failure it tries again in
 * `everyMs`, or when a 503's Retry-After says (also for a load that does not repeat, `everyMs` 0).
 */
export function usePoll<T>(source: string, load: () => Promise<T>, everyMs: number, deps: unknown[] = []): Poll<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<LoadError | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const tick = useRef<() => void>(() => undefined);
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let running = false;
    setData(undefined);
    setLoading(true);
    const run = async () => {
      if (running) return;
      running = true;
      clearTimeout(timer);
      setLoading(true);
      let next = everyMs;
      try {
        const value = await load();
        if (!live) return;
        setData(value);
        setError(undefined);
        clear(source);
      } catch (e) {
        if (!live) return;
        const failed = loadError(e);
        setError(failed);
        report(source, e);
        if (failed.retryAfter !== undefined) next = Math.max(everyMs, failed.retryAfter * 1000, 1000);
      } finally {
        running = false;
        if (live) {
          setLoading(false);
          if (next > 0) timer = setTimeout(() => void run(), next);
        }
      }
    };
    tick.current = () => void run();
    void run();
    return () => {
      live = false;
      clearTimeout(timer);
      clear(source);
    };
  }, deps);
  const refresh = useCallback(() => tick.current(), []);
  return { data, error, loading, refresh };
}

/** The current time, re-read every `everyMs` (for countdowns). */
export function useNow(everyMs = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [everyMs]);
  return now;
}
