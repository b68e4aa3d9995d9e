import { app } from '@azure/functions';
import { azureMonitorPayloadSchema } from '../shared/api/alerts';
import { decodeSingle } from '../shared/api/decode';
import { applyAlertBatch, azureResourceClusters } from '../shared/controllers/alerts';
import { mapAzureMonitor } from '../shared/failover/alertMapping';
import { requireToken } from '../shared/http/auth';
import { ALL_METHODS, allowMethods, httpFunction, json, readDocuments } from '../shared/http/respond';
import { handingOff } from '../shared/queue/handOff';
import { invocationPlane } from '../shared/runtime';

/** POST /api/webhooks/azure-monitor?token=: an action group webhook with the common alert schema. */
export const azureMonitorWebhook = httpFunction(async (req, ctx) => {
  allowMethods(req, ['POST']);
  const plane = invocationPlane(ctx);
  requireToken(req.query.get('token'), plane.config.auth.azureMonitorToken, 'AZURE_MONITOR_TOKEN', plane.config.auth);
  const payload = decodeSingle(await readDocuments(req, plane.config.maxRequestBodyBytes), azureMonitorPayloadSchema);
  return json(200, await applyAlertBatch(plane, mapAzureMonitor(payload, await azureResourceClusters(plane))));
});

app.http('azureMonitorWebhook', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'webhooks/azure-monitor', ...handingOff(azureMonitorWebhook) });
