import { flag, UsageError } from '../args';
import { Context } from '../context';
import { printData } from '../output';
import { derivedClusterKey, signedHeaders } from '../signing';

const STATUSES = ['True', 'False', 'Unknown'];

/**
 * `report CLUSTER TYPE=STATUS...`: a health report for one cluster, as its agent would send it (POST
 * /api/clusters/NAME/status). Signed when a key is at hand: the cluster's own (--cluster-key or
 * CLUSTER_FAILOVER_CLUSTER_KEY), or one derived from REPORTER_SIGNING_KEY, the server's secret, which a
 * local operator holds; unsigned otherwise (a server with AUTH_MODE=none takes it).
 */
export async function report(ctx: Context, env: NodeJS.ProcessEnv): Promise<void> {
  const [cluster, ...pairs] = ctx.args;
  if (!cluster) throw new UsageError('report needs a cluster name and at least one condition: report CLUSTER Ready=False');
  if (pairs.length === 0) throw new UsageError(`report ${cluster} needs at least one condition, such as Ready=False`);
  const reason = flag(ctx.parsed, 'reason');
  const message = flag(ctx.parsed, 'message');
  const conditions = pairs.map((pair) => {
    const match = /^([^=]+)=(.*)$/.exec(pair);
    if (!match) throw new UsageError(`condition "${pair}" must be TYPE=STATUS, such as Ready=False`);
    const [, type, status] = match;
    if (!STATUSES.includes(status)) throw new UsageError(`condition ${type}: status must be one of ${STATUSES.join(', ')} (got "${status}")`);
    return { type, status, ...(reason !== undefined ? { reason } : {}), ...(message !== undefined ? { message } : {}) };
  });
  const body = JSON.stringify({ conditions });
  const key =
    flag(ctx.parsed, 'cluster-key') ??
    (env.CLUSTER_FAILOVER_CLUSTER_KEY || (env.REPORTER_SIGNING_KEY ? derivedClusterKey(env.REPORTER_SIGNING_KEY, cluster) : undefined));
  const headers = key ? signedHeaders(key, body) : {};
  const data = await ctx.client.post<{ status: { conditions: Array<{ type: string; status: string }> } }>(`clusters/${encodeURIComponent(cluster)}/status`, {
    body,
    headers,
  });
  if (ctx.output === 'json' || ctx.output === 'yaml') return printData(data, ctx.output);
  const now = data.status.conditions.map((c) => `${c.type}=${c.status}`).join(', ');
  process.stdout.write(`cluster/${cluster} reported${key ? ' (signed)' : ''}: ${now}\n`);
}
