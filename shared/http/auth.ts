import type { HttpRequest } from '@azure/functions';
import { ApiError } from '../api/errors';
import { bearerMatches, CLUSTER_HEADER, clusterKey, explicitClusterKey, SIGNATURE_HEADER, TIMESTAMP_HEADER, verifyReport } from '../auth/signing';
import type { AuthSettings } from '../config';

/** The admin API (apply, DELETE, pause/resume): `Authorization: Bearer <ADMIN_TOKEN>`. */
/**
 * Checks the admin token and says who acted, for the events an operator's action records: the holder of
 * the admin token (or anyone, with AUTH_MODE=none) and the client they used (its User-Agent).
 */
export function requireAdmin(req: HttpRequest, auth: AuthSettings): string {
  const client = (req.headers.get('user-agent') ?? '').slice(0, 120);
  const via = client ? ` via ${client}` : '';
  if (auth.mode === 'none') return `anyone (AUTH_MODE=none)${via}`;
  if (!auth.adminToken) throw new ApiError(503, 'the admin API is disabled: ADMIN_TOKEN is not configured and AUTH_MODE is required');
  if (!bearerMatches(req.headers.get('authorization'), auth.adminToken)) {
    throw new ApiError(401, 'this endpoint needs Authorization: Bearer <admin token>', [], { 'www-authenticate': 'Bearer' });
  }
  return `the admin token${via}`;
}

/** The token of an `Authorization: Bearer <token>` header, or null. */
export function bearerToken(req: HttpRequest): string | null {
  return /^Bearer\s+(.+)$/i.exec(req.headers.get('authorization') ?? '')?.[1]?.trim() ?? null;
}

/** A shared-token webhook sender (Alertmanager's bearer token, Azure Monitor's ?token=). */
export function requireToken(given: string | null, token: string | undefined, setting: string, auth: AuthSettings): void {
  if (auth.mode === 'none') return;
  if (!token) throw new ApiError(503, `this webhook is disabled: ${setting} is not configured and AUTH_MODE is required`);
  if (!given || !bearerMatches(`Bearer ${given}`, token)) throw new ApiError(401, 'missing or wrong webhook token');
}

export interface ReportAuth {
  signedAt: number;
  signature: string;
}

/** Derived cluster keys, per settings object: one HMAC per cluster and process, not one per report. */
const derivedKeys = new WeakMap<AuthSettings, Map<string, string>>();
const MAX_CACHED_KEYS = 10_000;

function derivedKey(auth: AuthSettings, signingKey: string, cluster: string): string {
  let keys = derivedKeys.get(auth);
  if (!keys) derivedKeys.set(auth, (keys = new Map<string, string>()));
  let key = keys.get(cluster);
  if (key === undefined) {
    if (keys.size >= MAX_CACHED_KEYS) keys.clear();
    key = clusterKey(signingKey, cluster);
    keys.set(cluster, key);
  }
  return key;
}

/**
 * A native report must be signed by the cluster it is about. Returns what the replay check needs
 * (the signed time and signature), or undefined when checks are off.
 */
export function verifyClusterReport(req: HttpRequest, auth: AuthSettings, cluster: string, body: Uint8Array, now: Date): ReportAuth | undefined {
  if (auth.mode === 'none') return undefined;
  const keyOf = (name: string): string => {
    const explicit = explicitClusterKey(auth.clusterKeys, name);
    if (explicit) return explicit;
    if (!auth.signingKey) throw new ApiError(503, 'health reports are disabled: REPORTER_SIGNING_KEY is not configured and AUTH_MODE is required');
    return derivedKey(auth, auth.signingKey, name);
  };
  const verdict = verifyReport(
    {
      target: cluster,
      claimedIdentity: req.headers.get(CLUSTER_HEADER) ?? undefined,
      timestamp: req.headers.get(TIMESTAMP_HEADER),
      signature: req.headers.get(SIGNATURE_HEADER),
      body,
    },
    keyOf,
    now,
  );
  if (!verdict.ok) throw new ApiError(verdict.status, verdict.message);
  return { signedAt: verdict.signedAt, signature: verdict.signature };
}

/** What the host says at start about authentication: checks off, or secrets missing while required. */
export function authWarnings(auth: AuthSettings): string[] {
  if (auth.mode === 'none')
    return ['AUTH_MODE=none: webhook signatures and admin tokens are NOT checked; anyone who can reach the API can change cluster health and move workloads'];
  const missing: string[] = [];
  if (!auth.adminToken) missing.push('ADMIN_TOKEN is not set: the admin API (apply, DELETE, pause/resume) answers 503');
  if (!auth.signingKey && Object.keys(auth.clusterKeys).length === 0) missing.push('REPORTER_SIGNING_KEY is not set: health reports answer 503');
  if (!auth.alertmanagerToken) missing.push('ALERTMANAGER_TOKEN is not set: the Alertmanager webhook answers 503');
  if (!auth.azureMonitorToken) missing.push('AZURE_MONITOR_TOKEN is not set: the Azure Monitor webhook answers 503');
  return missing;
}

let warned = false;

/** Logs the warnings once per process (the local host at start, or the first invocation in Azure). */
export function warnAboutAuth(auth: AuthSettings, warn: (message: string) => void): void {
  if (warned) return;
  warned = true;
  for (const warning of authWarnings(auth)) warn(warning);
}
