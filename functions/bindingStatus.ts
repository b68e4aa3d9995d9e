import { app, HttpRequest, InvocationContext, Timer } from '@azure/functions';
import { badRequest, notFound } from '../shared/api/errors';
import { decodeSingle } from '../shared/api/decode';
import { bindingStatusReportSchema, clusterName } from '../shared/api/resources';
import { confirmEvictionTask, reportWorkloadStatus } from '../shared/controllers/applicationFailover';
import { displayName } from '../shared/controllers/bindings';
import { sweepAllBindings, sweepBinding } from '../shared/controllers/gracefulEviction';
import { bindingResource } from '../shared/controllers/records';
import { BindingRef, bindingKey } from '../shared/failover/bindingModel';
import { requireAdmin } from '../shared/http/auth';
import { ALL_METHODS, allowMethods, httpFunction, json, readDocuments } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

/**
 * Workload health per cluster (status.aggregatedStatus), then application failover (the Unhealthy
 * stretch, a due eviction) and the graceful-eviction sweep of that binding.
 */
async function reportBindingStatus(req: HttpRequest, ref: BindingRef) {
  allowMethods(req, ['POST']);
  const plane = controlPlane();
  requireAdmin(req, plane.config.auth);
  const report = decodeSingle(await readDocuments(req, plane.config.maxRequestBodyBytes), bindingStatusReportSchema);
  const key = bindingKey(ref);
  const outcome = await reportWorkloadStatus(plane, key, report);
  if (!outcome.found) throw notFound(`${ref.kind} "${displayName(ref)}" not found`);
  const cleared = await sweepBinding(plane, key);
  const entry = await plane.bindings.get(key);
  return json(200, { ...bindingResource(entry!.value, entry!.etag), evictedClusters: outcome.evicted, clearedTasks: cleared.map((c) => ({ fromCluster: c.task.fromCluster, why: c.why })) });
}

/** DELETE .../evictiontasks/{cluster}: confirms the old copy is gone (the only way a purgeMode Never task ends). */
async function confirmTask(req: HttpRequest, ref: BindingRef) {
  allowMethods(req, ['DELETE']);
  const plane = controlPlane();
  requireAdmin(req, plane.config.auth);
  const cluster = clusterName.safeParse(req.params.cluster);
  if (!cluster.success) throw badRequest([{ path: 'cluster', message: cluster.error.issues[0].message }]);
  const outcome = await confirmEvictionTask(plane, bindingKey(ref), cluster.data);
  if (outcome === 'absent') throw notFound(`${ref.kind} "${displayName(ref)}" not found`);
  if (outcome === 'no-task') throw notFound(`${ref.kind} "${displayName(ref)}" has no graceful eviction task for cluster "${cluster.data}"`);
  const entry = await plane.bindings.get(bindingKey(ref));
  return json(200, bindingResource(entry!.value, entry!.etag));
}

/** DELETE /api/resourcebindings/{namespace}/{name}/evictiontasks/{cluster} */
export const resourceBindingTask = httpFunction(async (req) => confirmTask(req, { kind: 'ResourceBinding', namespace: req.params.namespace, name: req.params.name }));

/** DELETE /api/clusterresourcebindings/{name}/evictiontasks/{cluster} */
export const clusterResourceBindingTask = httpFunction(async (req) => confirmTask(req, { kind: 'ClusterResourceBinding', name: req.params.name }));

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
app.http('resourceBindingTask', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'resourcebindings/{namespace}/{name}/evictiontasks/{cluster}', handler: resourceBindingTask });
app.http('clusterResourceBindingTask', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'clusterresourcebindings/{name}/evictiontasks/{cluster}', handler: clusterResourceBindingTask });
