import { afterAll, beforeAll, expect, it } from 'vitest';
import { resourceBindingSchema } from '../../shared/api/resources';
import { ManualClock } from '../../shared/clock';
import { loadConfig } from '../../shared/config';
import { applicationFailoverResync, checkApplicationFailover, reportWorkloadStatus } from '../../shared/controllers/applicationFailover';
import { applyBinding } from '../../shared/controllers/bindings';
import { applyCluster, reportClusterStatus } from '../../shared/controllers/clusters';
import type { ControlPlane } from '../../shared/controllers/ports';
import { decodeMessage } from '../../shared/queue/encoding';
import { QUEUES } from '../../shared/queue/storageQueue';
import { createControlPlane } from '../../shared/runtime';
import { silentLogger } from '../../shared/telemetry/log';
import { startTestStorage, TestStorage } from '../helpers/azurite';
import { binding, cluster } from '../helpers/fleet';

let env: TestStorage;
let plane: ControlPlane;
let clock: ManualClock;
beforeAll(async () => {
  env = await startTestStorage();
  clock = new ManualClock(new Date());
  plane = createControlPlane(env.storage, loadConfig({ FAILOVER_ENABLED: 'true' }), { clock, log: silentLogger });
});
afterAll(async () => env.close());

/** Every queued check (they are delayed, so peeking would miss them: count them through the queue's properties). */
async function queuedChecks(): Promise<number> {
  return (await env.storage.queue(QUEUES.applicationFailover).getProperties()).approximateMessagesCount ?? 0;
}

const unhealthy = { aggregatedStatus: [{ clusterName: 'a1', health: 'Unhealthy' as const }] };
const healthy = { aggregatedStatus: [{ clusterName: 'a1', health: 'Healthy' as const }] };

it('queues one check per deadline however often the workload reports, and evicts at the deadline', async () => {
  for (const name of ['a1', 'a2']) {
    await applyCluster(plane, cluster(name) as never);
    await reportClusterStatus(plane, name, { conditions: [{ type: 'Ready', status: 'True' }] });
  }
  await applyBinding(
    plane,
    resourceBindingSchema.parse(
      binding('steady', ['a1'], {
        placement: { clusterAffinity: { clusterNames: ['a1', 'a2'] } },
        failover: { application: { decisionConditions: { tolerationSeconds: 30 } } },
      }),
    ),
  );
  const key = 'rb:default:steady';
  for (let i = 0; i < 5; i++) {
    await reportWorkloadStatus(plane, key, unhealthy);
    clock.advance(2000);
  }
  expect(await queuedChecks()).toBe(1);
  const stored = (await plane.bindings.get(key))!.value;
  const since = Date.parse(stored.status.aggregatedStatus![0].unhealthySince!);
  expect(stored.status.applicationFailoverCheckAt).toBe(new Date(since + 30_000).toISOString());
  const [message] = (await env.storage.queue(QUEUES.applicationFailover).receiveMessages({ numberOfMessages: 1, visibilityTimeout: 1 })).receivedMessageItems;
  // Delayed: not yet visible.
  expect(message).toBeUndefined();

  // A flap ends the stretch (the old message will find nothing due); a new stretch gets its own check.
  await reportWorkloadStatus(plane, key, healthy);
  expect((await plane.bindings.get(key))!.value.status.applicationFailoverCheckAt).toBeUndefined();
  await reportWorkloadStatus(plane, key, unhealthy);
  expect(await queuedChecks()).toBe(2);

  // The resync leaves a future deadline to its message; at the deadline the check evicts.
  expect(await applicationFailoverResync(plane)).toBe(0);
  expect(await queuedChecks()).toBe(2);
  clock.advance(29_000);
  expect((await checkApplicationFailover(plane, key)).evicted).toEqual([]);
  clock.advance(1000);
  expect((await checkApplicationFailover(plane, key)).evicted).toEqual(['a1']);
  const moved = (await plane.bindings.get(key))!.value;
  expect(moved.spec.activeEvictionHistory).toEqual([{ clusterName: 'a1', creationTimestamp: clock.now().toISOString() }]);
  expect(moved.status.applicationFailoverCheckAt).toBeUndefined();
  // The messages carry the binding and their deadline.
  const peeked = (await env.storage.queue(QUEUES.applicationFailover).peekMessages({ numberOfMessages: 32 })).peekedMessageItems.map((m) =>
    decodeMessage(m.messageText),
  );
  expect(peeked.every((m) => m.ok)).toBe(true);
});

it('a lost deadline message is caught by the resync once the deadline has passed', async () => {
  await applyBinding(
    plane,
    resourceBindingSchema.parse(
      binding('lost', ['a2'], {
        placement: { clusterAffinity: { clusterNames: ['a1', 'a2'] } },
        failover: { application: { decisionConditions: { tolerationSeconds: 10 } } },
      }),
    ),
  );
  await env.storage.queue(QUEUES.applicationFailover).clearMessages();
  await reportWorkloadStatus(plane, 'rb:default:lost', { aggregatedStatus: [{ clusterName: 'a2', health: 'Unhealthy' }] });
  await env.storage.queue(QUEUES.applicationFailover).clearMessages();
  clock.advance(11_000);
  expect(await applicationFailoverResync(plane)).toBe(1);
  expect((await plane.bindings.get('rb:default:lost'))!.value.spec.activeEvictionHistory?.map((h) => h.clusterName)).toEqual(['a2']);
});
