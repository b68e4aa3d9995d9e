import { app } from '@azure/functions';
import { alertmanagerPayloadSchema, azureMonitorPayloadSchema } from '../shared/api/alerts';
import { decodeSingle } from '../shared/api/decode';
import { applyAlertBatch } from '../shared/controllers/alerts';
import { mapAlertmanager, mapAzureMonitor } from '../shared/failover/alertMapping';
import { requireToken } from '../shared/http/auth';
import { ALL_METHODS, allowMethods, httpFunction, json, readDocuments } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

/** The annotation (resource IDs hold "/", which label values may not) that maps an Azure resource to a cluster. */
export const AZURE_RESOURCE_ANNOTATION = 'failover.io/azure-resource-id';

/** POST /api/webhooks/alertmanager: Alertmanager's webhook (payload version 4), `Authorization: Bearer`. */
export const alertmanagerWebhook = httpFunction(async (req) => {
  allowMethods(req, ['POST']);
  const plane = controlPlane();
  const bearer = /^Bearer\s+(.+)$/i.exec(req.headers.get('authorization') ?? '')?.[1]?.trim() ?? null;
  requireToken(bearer, plane.config.auth.alertmanagerToken, 'ALERTMANAGER_TOKEN', plane.config.auth);
  const payload = decodeSingle(await readDocuments(req, plane.config.maxRequestBodyBytes), alertmanagerPayloadSchema);
  return json(200, await applyAlertBatch(plane, mapAlertmanager(payload, plane.config.alerts.alertmanager)));
});

/** POST /api/webhooks/azure-monitor?token=: an action group webhook with the common alert schema. */
export const azureMonitorWebhook = httpFunction(async (req) => {
  allowMethods(req, ['POST']);
  const plane = controlPlane();
  requireToken(req.query.get('token'), plane.config.auth.azureMonitorToken, 'AZURE_MONITOR_TOKEN', plane.config.auth);
  const payload = decodeSingle(await readDocuments(req, plane.config.maxRequestBodyBytes), azureMonitorPayloadSchema);
  const byAnnotation = new Map<string, string>();
  for (const { value } of await plane.clusters.list()) {
    const id = value.annotations[AZURE_RESOURCE_ANNOTATION];
    if (id) byAnnotation.set(id.toLowerCase(), value.name);
  }
  const clusterOf = (resourceId: string) => plane.config.alerts.azureMonitorClusterMap[resourceId.toLowerCase()] ?? byAnnotation.get(resourceId.toLowerCase());
  return json(200, await applyAlertBatch(plane, mapAzureMonitor(payload, clusterOf)));
});

app.http('alertmanagerWebhook', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'webhooks/alertmanager', handler: alertmanagerWebhook });
app.http('azureMonitorWebhook', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'webhooks/azure-monitor', handler: azureMonitorWebhook });
