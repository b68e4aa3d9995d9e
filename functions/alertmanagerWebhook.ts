import { app } from '@azure/functions';
import { alertmanagerPayloadSchema } from '../shared/api/alerts';
import { decodeSingle } from '../shared/api/decode';
import { applyAlertBatch } from '../shared/controllers/alerts';
import { mapAlertmanager } from '../shared/failover/alertMapping';
import { bearerToken, requireToken } from '../shared/http/auth';
import { ALL_METHODS, allowMethods, httpFunction, json, readDocuments } from '../shared/http/respond';
import { handingOff } from '../shared/queue/handOff';
import { invocationPlane } from '../shared/runtime';

/** POST /api/webhooks/alertmanager: Alertmanager's webhook (payload version 4), `Authorization: Bearer`. */
export const alertmanagerWebhook = httpFunction(async (req, ctx) => {
  allowMethods(req, ['POST']);
  const plane = invocationPlane(ctx);
  requireToken(bearerToken(req), plane.config.auth.alertmanagerToken, 'ALERTMANAGER_TOKEN', plane.config.auth);
  const payload = decodeSingle(await readDocuments(req, plane.config.maxRequestBodyBytes), alertmanagerPayloadSchema);
  return json(200, await applyAlertBatch(plane, mapAlertmanager(payload, plane.config.alerts.alertmanager)));
});

app.http('alertmanagerWebhook', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'webhooks/alertmanager', ...handingOff(alertmanagerWebhook) });
