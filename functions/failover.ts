import { applicationFailoverResync } from '../shared/controllers/applicationFailover';
import { app } from '@azure/functions';
import { z } from 'zod';
import { badRequest, notFound, toFieldErrors } from '../shared/api/errors';
import { clusterName } from '../shared/api/resources';
import { currentFleetHealth } from '../shared/controllers/fleet';
import { setPaused } from '../shared/controllers/pacer';
import type { EvictionState } from '../shared/failover/bindingModel';
import { requireAdmin } from '../shared/http/auth';
import { ALL_METHODS, allowMethods, httpFunction, json } from '../shared/http/respond';
import { controlPlane } from '../shared/runtime';

/** GET /api/fleet: fleet health, the eviction tier and rate, the switches, and the ledger's waiting rows. */
export const fleet = httpFunction(async (req) => {
  allowMethods(req, ['GET']);
  const plane = controlPlane();
  const [health, { state }, waiting] = await Promise.all([currentFleetHealth(plane, 0), plane.ledger.getPacerState(), plane.ledger.scanEvictions({ states: ['pending', 'scheduled'] })]);
  const pending = waiting.filter((row) => row.record.state === 'pending');
  const scheduled = waiting.filter((row) => row.record.state === 'scheduled');
  return json(200, {
    total: health.total,
    faulty: health.faulty,
    failureRatio: health.failureRatio,
    tier: health.tier,
    rate: health.rate,
    failoverEnabled: plane.config.failoverEnabled,
    paused: state.paused,
    pending: pending.length,
    scheduled: scheduled.length,
    faultyClusters: health.faultyClusters,
  });
});

const STATES = ['pending', 'scheduled', 'done', 'abandoned', 'blocked', 'failed'] as const;
const evictionQuery = z.strictObject({ cluster: clusterName.optional(), state: z.enum(STATES).optional() });

/** GET /api/evictions?cluster=&state=: the ledger. */
export const evictions = httpFunction(async (req) => {
  allowMethods(req, ['GET']);
  const parsed = evictionQuery.safeParse(Object.fromEntries(req.query.entries()));
  if (!parsed.success) throw badRequest(toFieldErrors(parsed.error).map((e) => ({ ...e, path: `query.${e.path}` })));
  const rows = await controlPlane().ledger.scanEvictions(parsed.data as { cluster?: string; state?: EvictionState });
  const items = rows
    .map(({ record }) => ({
      cluster: record.cluster,
      binding: { kind: record.kind, ...(record.namespace ? { namespace: record.namespace } : {}), name: record.name },
      resourceKind: record.resourceKind,
      state: record.state,
      reason: record.reason,
      why: record.why,
      purgeMode: record.purgeMode,
      decidedAt: record.decidedAt,
      dueAt: record.dueAt,
      scheduledFor: record.scheduledFor ?? null,
      executedAt: record.executedAt ?? null,
      attempts: record.attempts,
      message: record.message ?? null,
    }))
    .sort((a, b) => (a.dueAt < b.dueAt ? -1 : a.dueAt > b.dueAt ? 1 : a.cluster.localeCompare(b.cluster)));
  return json(200, { items });
});

/** POST /api/failover/pause | /api/failover/resume: stop and restart evictions without a restart. */
export const failoverSwitch = httpFunction(async (req) => {
  allowMethods(req, ['POST']);
  const action = req.params.action;
  if (action !== 'pause' && action !== 'resume') throw notFound(`no failover action "${action}"; use pause or resume`);
  const plane = controlPlane();
  requireAdmin(req, plane.config.auth);
  await setPaused(plane, action === 'pause');
  // Application failovers held by the pause go now rather than at the next resync.
  if (action === 'resume') await applicationFailoverResync(plane);
  return json(200, { paused: action === 'pause', failoverEnabled: plane.config.failoverEnabled });
});

app.http('fleet', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'fleet', handler: fleet });
app.http('evictions', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'evictions', handler: evictions });
app.http('failoverSwitch', { methods: [...ALL_METHODS], authLevel: 'anonymous', route: 'failover/{action}', handler: failoverSwitch });
