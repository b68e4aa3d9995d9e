import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Who may report what (pure functions, clock passed in). Each cluster signs its reports with its own key,
 * derived from one stored secret: key = hex(HMAC-SHA256(REPORTER_SIGNING_KEY, cluster name)). A leaked
 * cluster key exposes no other cluster, and only one secret needs storing.
 */

export const TIMESTAMP_HEADER = 'x-failover-timestamp';
export const SIGNATURE_HEADER = 'x-failover-signature';
export const CLUSTER_HEADER = 'x-failover-cluster';
/** Reports signed further than this from the server's clock are refused (replay window). */
export const MAX_CLOCK_SKEW_SECONDS = 300;

export function clusterKey(signingKey: string, cluster: string): string {
  return createHmac('sha256', signingKey).update(cluster, 'utf8').digest('hex');
}

/**
 * A cluster's explicit key (REPORTER_CLUSTER_KEYS), if it has one. Own entries only: a cluster named
 * "constructor" or "toString" gets its own key, not what every object inherits.
 */
export function explicitClusterKey(keys: Readonly<Record<string, string>>, cluster: string): string | undefined {
  return Object.hasOwn(keys, cluster) ? keys[cluster] : undefined;
}

/** `sha256=<hex of HMAC-SHA256(key, timestamp + "." + raw body)>` */
export function signReport(key: string, timestamp: string, body: string | Uint8Array): string {
  const mac = createHmac('sha256', key);
  mac.update(`${timestamp}.`, 'utf8');
  mac.update(body);
  return `sha256=${mac.digest('hex')}`;
}

/** Compares secrets in constant time (both sides hashed first, so lengths never leak either). */
export function secretsEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b);
}

export type SignatureVerdict = { ok: true; signedAt: number; signature: string } | { ok: false; status: 401 | 403; message: string };

export interface SignedRequest {
  /** The cluster named in the URL: the one the report would change. */
  target: string;
  /** The reporter's claimed identity (X-Failover-Cluster); the target when absent. */
  claimedIdentity?: string;
  timestamp?: string | null;
  signature?: string | null;
  body: Uint8Array;
}

/**
 * Verifies a signed native report. 401: missing, malformed, stale or wrong signature. 403: a valid
 * signature of another cluster (it may report only about itself).
 */
export function verifyReport(request: SignedRequest, keyOf: (cluster: string) => string, now: Date): SignatureVerdict {
  if (!request.timestamp || !request.signature) {
    return { ok: false, status: 401, message: `signed reports need the ${TIMESTAMP_HEADER} and ${SIGNATURE_HEADER} headers` };
  }
  if (!/^\d{1,12}$/.test(request.timestamp)) return { ok: false, status: 401, message: `${TIMESTAMP_HEADER} must be unix seconds` };
  const signedAt = Number(request.timestamp);
  if (Math.abs(now.getTime() / 1000 - signedAt) > MAX_CLOCK_SKEW_SECONDS) {
    return { ok: false, status: 401, message: `${TIMESTAMP_HEADER} is more than ${MAX_CLOCK_SKEW_SECONDS}s away from the server's clock` };
  }
  if (!/^sha256=[0-9a-f]{64}$/.test(request.signature)) return { ok: false, status: 401, message: `${SIGNATURE_HEADER} must be sha256=<64 hex digits>` };
  const identity = request.claimedIdentity || request.target;
  const expected = signReport(keyOf(identity), request.timestamp, request.body);
  if (!secretsEqual(request.signature, expected)) return { ok: false, status: 401, message: 'the signature does not match' };
  if (identity !== request.target) return { ok: false, status: 403, message: `cluster "${identity}" may not report for cluster "${request.target}"` };
  return { ok: true, signedAt, signature: request.signature };
}

/** `Authorization: Bearer <token>` against the configured token. */
export function bearerMatches(header: string | null, token: string): boolean {
  const match = /^Bearer\s+(.+)$/i.exec(header ?? '');
  return !!match && secretsEqual(match[1].trim(), token);
}
