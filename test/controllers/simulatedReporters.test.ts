import { describe, expect, it } from 'vitest';
import { reportClusterStatus } from '../../shared/controllers/clusters';
import { CLUSTER_STATUS_UNKNOWN_REASON } from '../../shared/failover/conditions';
import { startSimulatedReporters } from '../../shared/local/simulate';
import { silentLogger } from '../../shared/telemetry/log';
import { cluster } from '../helpers/fleet';
import { applyTo } from '../helpers/memoryLoop';
import { memoryPlane } from '../helpers/memoryPlane';

/** `npm start -- --simulate`: every registered cluster keeps reporting, and a reported failure stands. */
describe('simulated reporters', () => {
  it('report Ready=True for silent clusters, keep a reported failure, and renew every heartbeat', async () => {
    const m = memoryPlane({ AUTO_REGISTER_CLUSTERS: 'false' });
    await applyTo(m, [cluster('quiet'), cluster('failed'), cluster('lost')]);
    for (const name of ['quiet', 'failed', 'lost']) {
      const stored = (await m.plane.clusters.get(name))!;
      await m.plane.clusters.replace(name, { ...stored.value, conditions: [] }, stored.etag);
    }
    await reportClusterStatus(m.plane, 'failed', { conditions: [{ type: 'Ready', status: 'False' }] });
    const lost = (await m.plane.clusters.get('lost'))!;
    await m.plane.clusters.replace(
      'lost',
      {
        ...lost.value,
        conditions: [{ type: 'Ready', status: 'Unknown', reason: CLUSTER_STATUS_UNKNOWN_REASON, lastTransitionTime: m.clock.now().toISOString() }],
      },
      lost.etag,
    );
    m.clock.advance(60_000);
    const reporters = startSimulatedReporters(m.plane, silentLogger, 60_000);
    await reporters.stop();
    const ready = async (name: string) => (await m.plane.clusters.get(name))!.value.conditions.find((c) => c.type === 'Ready');
    expect(await ready('quiet')).toMatchObject({ status: 'True', reason: 'SimulatedReporter' });
    expect(await ready('lost')).toMatchObject({ status: 'True', reason: 'SimulatedReporter' });
    expect(await ready('failed')).toMatchObject({ status: 'False' });
    expect((await m.plane.clusters.get('failed'))!.value.lastReportAt).toBe(m.clock.now().toISOString());
  });
});
