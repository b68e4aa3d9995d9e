import { ApiError } from '../api/errors';
import type { EvictionState } from '../failover/bindingModel';
import { KubeApiError } from '../kube/api';
import { applicationFailoverResync } from './applicationFailover';
import { karmadaConnection } from './karmadaSync';
import { setPaused } from './pacer';
import type { ControlPlane } from './ports';
import { currentFleetHealth } from './state/reads';
import { evictionView, fleetView } from './views';

/** The app's own health: degraded in Karmada mode when the Karmada API server cannot be used, with why. */
export async function serviceHealth(
  plane: ControlPlane,
): Promise<{ status: 'ok' | 'degraded'; mode: 'standalone' | 'karmada'; reason?: string; since?: string }> {
  if (!plane.karmada) return { status: 'ok', mode: 'standalone' };
  const connection = await karmadaConnection(plane);
  if (!connection) return { status: 'degraded', mode: 'karmada', reason: 'not synchronised with the Karmada API server yet' };
  return { status: connection.state, mode: 'karmada', ...(connection.reason ? { reason: connection.reason } : {}), since: connection.since };
}

/** GET /api/fleet: fleet health, the eviction tier and rate, the switches, and the ledger's waiting rows. */
export async function fleetStatus(plane: ControlPlane): Promise<ReturnType<typeof fleetView> & Awaited<ReturnType<typeof serviceHealth>>> {
  const service = await serviceHealth(plane);
  try {
    const [health, { state }, waiting] = await Promise.all([
      currentFleetHealth(plane, 0),
      plane.ledger.getPacerState(),
      plane.ledger.scanEvictions({ states: ['pending', 'scheduled'] }),
    ]);
    const pending = waiting.filter((row) => row.record.state === 'pending').length;
    return {
      ...fleetView(health, { failoverEnabled: plane.config.failoverEnabled, paused: state.paused }, { pending, scheduled: waiting.length - pending }),
      ...service,
    };
  } catch (error) {
    // The fleet is read from Karmada: when that fails, say so instead of failing the request.
    if (!(error instanceof KubeApiError)) throw error;
    throw new ApiError(503, `degraded: ${error.message}`);
  }
}

/** GET /api/evictions: the ledger, by due time then cluster. */
export async function listEvictions(plane: ControlPlane, filter: { cluster?: string; state?: EvictionState }): Promise<Array<ReturnType<typeof evictionView>>> {
  const rows = await plane.ledger.scanEvictions(filter);
  return rows.map(({ record }) => evictionView(record)).sort((a, b) => (a.dueAt < b.dueAt ? -1 : a.dueAt > b.dueAt ? 1 : a.cluster.localeCompare(b.cluster)));
}

/** POST /api/failover/pause | resume. A resume also lets the application failovers the pause held go now. */
export async function switchEvictions(plane: ControlPlane, action: 'pause' | 'resume'): Promise<{ paused: boolean; failoverEnabled: boolean }> {
  await setPaused(plane, action === 'pause');
  if (action === 'resume') await applicationFailoverResync(plane);
  return { paused: action === 'pause', failoverEnabled: plane.config.failoverEnabled };
}
