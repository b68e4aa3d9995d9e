import { app, InvocationContext, Timer } from '@azure/functions';
import { refreshPolicyStatuses } from '../shared/controllers/taintPolicies';
import { controlPlane } from '../shared/runtime';

/**
 * Every 5 s: each ClusterTaintPolicy's status conditions (EvictionInProgress, BlastRadiusExceeded), written
 * only when one changed; in Karmada mode also where kubectl reads them: the status subresource of our
 * failover.io ClusterTaintPolicies, a TaintPolicyStatus of the same name for Karmada's (which have none).
 */
export async function policyStatus(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const { written, published } = await refreshPolicyStatuses(controlPlane());
  if (written > 0 || published > 0) ctx.log(`policy status: ${written} changed, ${published} written to Karmada`);
}

app.timer('policyStatus', { schedule: '4-59/5 * * * * *', runOnStartup: false, useMonitor: false, handler: policyStatus });
