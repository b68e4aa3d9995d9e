import { app, InvocationContext, Timer } from '@azure/functions';
import { probeSchedule } from '../shared/config';
import { probeClusters } from '../shared/controllers/probes';
import { controlPlane } from '../shared/runtime';

/**
 * Every CLUSTER_STATUS_UPDATE_FREQUENCY_SECONDS (10): probes each member cluster with an endpoint and
 * credentials (Karmada: spec.apiEndpoint + secretRef; standalone: MEMBER_KUBECONFIGS) and writes Ready
 * once an answer has held for CLUSTER_FAILURE_THRESHOLD_SECONDS.
 */
export async function clusterProbes(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const plane = controlPlane();
  if (!plane.members) return;
  const round = await probeClusters(plane);
  if (round.changed.length > 0) ctx.log(`probes: Ready changed on ${round.changed.join(', ')} (${round.probed} probed in ${round.durationMs} ms)`);
}

app.timer('clusterProbes', { schedule: probeSchedule(process.env), runOnStartup: false, useMonitor: false, handler: clusterProbes });
