import { afterAll, beforeAll, expect, it } from 'vitest';
import { applyObjects, cluster } from '../helpers/fleet';
import { api, HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';
import { makeCa, MemberCa, MemberEndpointServer, startMemberEndpoint } from '../helpers/memberEndpoints';

/**
 * Standalone pull-mode health: MEMBER_KUBECONFIGS names each member's endpoint (one context per cluster);
 * the probes write Ready, flip it only after the threshold, and a policy taints the cluster as for a pushed
 * report.
 */
let host: HostProcess;
let ca: MemberCa;
let member: MemberEndpointServer;

const ready = async () => {
  const body = (await api(host.url, 'GET', 'clusters/edge1')).body as { status?: { conditions?: Array<{ type: string; status: string; reason?: string }> } };
  return body.status?.conditions?.find((c) => c.type === 'Ready');
};

beforeAll(async () => {
  ca = makeCa();
  member = await startMemberEndpoint(ca, 'edge1');
  const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: edge1-api
  cluster:
    server: ${member.url}
    certificate-authority-data: ${Buffer.from(ca.caCert).toString('base64')}
users:
- name: edge1-reader
  user:
    token: ${member.token}
contexts:
- name: edge1
  context: { cluster: edge1-api, user: edge1-reader }
current-context: edge1
`;
  host = await startHostProcess({
    MEMBER_KUBECONFIGS: kubeconfig,
    CLUSTER_STATUS_UPDATE_FREQUENCY_SECONDS: '1',
    CLUSTER_FAILURE_THRESHOLD_SECONDS: '3',
    CLUSTER_PROBE_TIMEOUT_SECONDS: '1',
  });
}, 60_000);

afterAll(async () => {
  await host?.stop();
  await member?.close();
  ca?.cleanup();
});

it('probes a member from its kubeconfig context: Ready=True at once, Ready=False only after the threshold, then True again', async () => {
  // No agent reports it: its Ready comes from the probe.
  await applyObjects(host.url, [{ ...cluster('edge1'), status: {} }]);
  await waitFor(async () => ((await ready())?.status === 'True' ? true : undefined), 15_000, 100);
  expect(await ready()).toMatchObject({ status: 'True', reason: 'ClusterReady' });

  member.health = 'notOk';
  const failedAt = Date.now();
  await waitFor(async () => ((await ready())?.status === 'False' ? true : undefined), 20_000, 100);
  expect(Date.now() - failedAt).toBeGreaterThanOrEqual(3000);
  expect(await ready()).toMatchObject({ status: 'False', reason: 'ClusterNotReady' });

  member.health = 'ok';
  await waitFor(async () => ((await ready())?.status === 'True' ? true : undefined), 20_000, 100);
  const events = (await api(host.url, 'GET', 'events?kind=Cluster&name=edge1')).body.items as Array<{ reason: string; message: string }>;
  expect(events.filter((e) => e.reason === 'ConditionChanged').map((e) => e.message)).toEqual([
    expect.stringMatching(/Ready is now True \(ClusterReady\) from probing https:\/\/127\.0\.0\.1/),
    expect.stringMatching(/Ready is now False \(ClusterNotReady\)/),
    expect.stringMatching(/Ready is now True \(ClusterReady\)/),
  ]);
}, 60_000);
