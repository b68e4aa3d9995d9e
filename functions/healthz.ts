import { app } from '@azure/functions';
import { serviceHealth } from '../shared/controllers/fleet';
import { ALL_METHODS, allowMethods, httpFunction, json, RETRY_AFTER_SECONDS } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

/**
 * GET /api/healthz: the app is up and its functions are loaded. In Karmada mode it also says whether the
 * Karmada API server can be used (`degraded`, with the verb and resource that failed, reads and writes
 * alike: `forbidden: patch clusters/status`): 503 then, so a monitor notices that failover is holding still.
 */
export const healthz = httpFunction(async (req) => {
  allowMethods(req, ['GET', 'HEAD']);
  const plane = controlPlane();
  // Which actions need the admin token (the console labels its buttons by it); no secret is told.
  const auth = plane.config.auth.mode;
  // Standalone needs no storage read here: the answer is the process being up.
  if (!process.env.KARMADA_KUBECONFIG) return json(200, { status: 'ok', mode: 'standalone', auth });
  const health = { ...(await serviceHealth(plane)), auth };
  return health.status === 'ok' ? json(200, health) : json(503, health, { 'retry-after': String(RETRY_AFTER_SECONDS) });
});

app.http('healthz', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'healthz', handler: healthz });
