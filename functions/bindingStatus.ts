import { app, HttpRequest, InvocationContext, Timer } from '@azure/functions';
import { notFound } from '../shared/api/errors';
import { decodeSingle } from '../shared/api/decode';
import { bindingStatusReportSchema } from '../shared/api/resources';
import { displayName, writeBinding } from '../shared/controllers/bindings';
import { sweepAllBindings, sweepBinding } from '../shared/controllers/gracefulEviction';
import { bindingResource } from '../shared/controllers/records';
import { BindingRef, bindingKey } from '../shared/failover/bindingModel';
import { requireAdmin } from '../shared/http/auth';
import { ALL_METHODS, allowMethods, httpFunction, json, readDocuments } from '../shared/http/respond';
import { keep, write } from '../shared/store/optimistic';
import { controlPlane } from '../shared/runtime';

/** Workload health per cluster (status.aggregatedStatus), then the graceful-eviction sweep of that binding. */
async function reportBindingStatus(req: HttpRequest, ref: BindingRef) {
  allowMethods(req, ['POST']);
  const plane = controlPlane();
  requireAdmin(req, plane.config.auth);
  const report = decodeSingle(await readDocuments(req, plane.config.maxRequestBodyBytes), bindingStatusReportSchema);
  const key = bindingKey(ref);
  const { result } = await writeBinding<boolean>(plane, key, (current) => {
    if (!current) return keep(false);
    current.status.aggregatedStatus = report.aggregatedStatus;
    return write(current, true);
  });
  if (!result) throw notFound(`${ref.kind} "${displayName(ref)}" not found`);
  const cleared = await sweepBinding(plane, key);
  const entry = await plane.bindings.get(key);
  return json(200, { ...bindingResource(entry!.value, entry!.etag), clearedTasks: cleared.map((c) => ({ fromCluster: c.task.fromCluster, why: c.why })) });
}

/** POST /api/resourcebindings/{namespace}/{name}/status */
export const resourceBindingStatus = httpFunction(async (req) => reportBindingStatus(req, { kind: 'ResourceBinding', namespace: req.params.namespace, name: req.params.name }));

/** POST /api/clusterresourcebindings/{name}/status */
export const clusterResourceBindingStatus = httpFunction(async (req) => reportBindingStatus(req, { kind: 'ClusterResourceBinding', name: req.params.name }));

/** Every 10 s: the graceful-eviction sweep over every binding with tasks (grace periods, Directly, health). */
export async function gracefulEvictionSweep(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const dropped = await sweepAllBindings(controlPlane());
  if (dropped > 0) ctx.log(`graceful eviction sweep cleared ${dropped} task(s)`);
}

app.http('resourceBindingStatus', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'resourcebindings/{namespace}/{name}/status', handler: resourceBindingStatus });
app.http('clusterResourceBindingStatus', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'clusterresourcebindings/{name}/status', handler: clusterResourceBindingStatus });
app.timer('gracefulEvictionSweep', { schedule: '*/10 * * * * *', runOnStartup: false, useMonitor: false, handler: gracefulEvictionSweep });
