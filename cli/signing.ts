import { createHmac } from 'node:crypto';

/**
 * How a cluster's reporter signs a health report, as the API documents it (the CLI is a client of the API,
 * like an agent): key = hex(HMAC-SHA256(REPORTER_SIGNING_KEY, cluster)), signature = "sha256=" +
 * hex(HMAC-SHA256(key, timestamp + "." + body)), sent in x-failover-timestamp and x-failover-signature.
 */
export const TIMESTAMP_HEADER = 'x-failover-timestamp';
export const SIGNATURE_HEADER = 'x-failover-signature';

export const derivedClusterKey = (signingKey: string, cluster: string) => createHmac('sha256', signingKey).update(cluster, 'utf8').digest('hex');

export function signedHeaders(key: string, body: string, now = Date.now()): Record<string, string> {
  const timestamp = String(Math.floor(now / 1000));
  const signature = createHmac('sha256', key).update(`${timestamp}.`, 'utf8').update(body, 'utf8').digest('hex');
  return { [TIMESTAMP_HEADER]: timestamp, [SIGNATURE_HEADER]: `sha256=${signature}` };
}
