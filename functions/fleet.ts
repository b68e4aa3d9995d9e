import { app } from '@azure/functions';
import { fleetStatus } from '../shared/controllers/fleet';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

/** GET /api/fleet: fleet health, the eviction tier and rate, the switches, and the ledger's waiting rows. */
export const fleet = httpFunction(async (req) => {
  allowMethods(req, ['GET']);
  return json(200, await fleetStatus(controlPlane()));
});

app.http('fleet', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'fleet', handler: fleet });
