/**
 * `npm run --silent cluster-key -- <cluster>`: prints the key a cluster's reporter signs with, derived from
 * REPORTER_SIGNING_KEY (or the explicit one in REPORTER_CLUSTER_KEYS). Give it to that cluster only.
 */
import { clusterName } from '../shared/api/resources';
import { clusterKey, explicitClusterKey } from '../shared/auth/signing';
import { ConfigError, loadConfig } from '../shared/config';

const cluster = process.argv[2];
if (!cluster) {
  process.stderr.write('usage: npm run --silent cluster-key -- <cluster name>\n');
  process.exit(2);
}
// Only a name a cluster can have: a key for anything else would never be asked for.
const name = clusterName.safeParse(cluster);
if (!name.success) {
  process.stderr.write(`cluster name ${JSON.stringify(cluster)} ${name.error.issues[0].message}\n`);
  process.exit(2);
}
try {
  const { auth } = loadConfig();
  const key = explicitClusterKey(auth.clusterKeys, cluster) ?? (auth.signingKey ? clusterKey(auth.signingKey, cluster) : undefined);
  if (!key) {
    process.stderr.write('REPORTER_SIGNING_KEY is not set\n');
    process.exit(1);
  }
  process.stdout.write(`${key}\n`);
} catch (error) {
  process.stderr.write(`${error instanceof ConfigError ? error.message : String(error)}\n`);
  process.exit(1);
}
