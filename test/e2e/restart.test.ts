import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestStorage, TestStorage } from '../helpers/azurite';
import { api, startHostProcess, waitFor } from '../helpers/hostProcess';

let env: TestStorage;
beforeAll(async () => {
  env = await startTestStorage();
});
afterAll(async () => env.close());

it('keeps the deadline when the host is killed during a window and another one starts', async () => {
  const first = await startHostProcess({ AzureWebJobsStorage: env.azurite.connectionString });
  await api(first.url, 'POST', 'apply', {
    apiVersion: 'policy.karmada.io/v1alpha1',
    kind: 'ClusterTaintPolicy',
    metadata: { name: 'restart-window' },
    spec: {
      targetCluster: { clusterNames: ['restart1'] },
      matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False'] }],
      taintsToAdd: [{ key: 'restart/not-ready', effect: 'NoExecute', addOnMatchSeconds: 5 }],
    },
  });
  const down = await api(first.url, 'POST', 'clusters/restart1/status', { conditions: [{ type: 'Ready', status: 'False' }] });
  const downAt = Date.parse(down.body.status.conditions[0].lastTransitionTime);
  await new Promise((r) => setTimeout(r, 1000));
  expect(await first.stop('SIGKILL')).toBe(null);

  const second = await startHostProcess({ AzureWebJobsStorage: env.azurite.connectionString });
  // When the second host serves, relative to the transition (one machine, one clock).
  const ready = Date.now() - downAt;
  try {
    const taint = await waitFor(async () => (await api(second.url, 'GET', 'clusters/restart1')).body.spec.taints[0], 9000, 25);
    const after = Date.parse(taint.timeAdded) - downAt;
    // The window runs from the persisted transition time, not from the restart: at the deadline, or as soon
    // as the second host polls when it started after it (a loaded machine), never 5 s after that host started.
    expect(after).toBeGreaterThanOrEqual(5000);
    expect(after).toBeLessThanOrEqual(Math.max(6000, ready + 1500));
    expect(after).toBeLessThan(ready + 5000);
  } finally {
    await second.stop();
  }
});
