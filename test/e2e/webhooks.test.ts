import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostProcess, startHostProcess } from '../helpers/hostProcess';

const ADMIN = 'hooks-admin-token-0123456789';
const AM = 'alertmanager-token-0123456789';
const AZ = 'azure-monitor-token-0123456789';
const AKS = '/subscriptions/0000/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks-west';
let host: HostProcess;
beforeAll(async () => {
  host = await startHostProcess({
    AUTH_MODE: 'required',
    ADMIN_TOKEN: ADMIN,
    ALERTMANAGER_TOKEN: AM,
    AZURE_MONITOR_TOKEN: AZ,
    AZURE_MONITOR_CLUSTER_MAP: JSON.stringify({ [AKS]: 'west' }),
  });
  const clusters = ['east', 'west', 'north'].map((name) => ({
    apiVersion: 'cluster.karmada.io/v1alpha1',
    kind: 'Cluster',
    metadata: {
      name,
      ...(name === 'north'
        ? {
            annotations: {
              'failover.io/azure-resource-id': '/subscriptions/0000/resourcegroups/rg/providers/microsoft.containerservice/managedclusters/aks-north',
            },
          }
        : {}),
    },
  }));
  const res = await fetch(`${host.url}/api/apply`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` },
    body: JSON.stringify(clusters),
  });
  expect(res.status).toBe(200);
}, 30_000);
afterAll(async () => host?.stop());

const conditionsOf = async (cluster: string) =>
  Object.fromEntries(
    (((await (await fetch(`${host.url}/api/clusters/${cluster}`)).json()) as any).status.conditions as Array<{ type: string; status: string }>).map((c) => [
      c.type,
      c.status,
    ]),
  );

describe('Alertmanager webhook', () => {
  const notification = {
    version: '4',
    status: 'firing',
    receiver: 'cluster-failover',
    groupKey: '{}:{alertname="KubeAPIDown"}',
    alerts: [
      {
        status: 'firing',
        labels: { alertname: 'KubeAPIDown', cluster: 'east', condition: 'APIServerReachable' },
        annotations: { summary: 'API down' },
        startsAt: '2026-01-01T00:00:00Z',
        endsAt: '0001-01-01T00:00:00Z',
        fingerprint: 'a',
      },
      {
        status: 'firing',
        labels: { alertname: 'NodeNotReady', cluster: 'west' },
        annotations: {},
        startsAt: '2026-01-01T00:00:00Z',
        endsAt: '0001-01-01T00:00:00Z',
        fingerprint: 'b',
      },
      {
        status: 'firing',
        labels: { alertname: 'KubeAPIDown', cluster: 'nowhere' },
        annotations: {},
        startsAt: '2026-01-01T00:00:00Z',
        endsAt: '0001-01-01T00:00:00Z',
        fingerprint: 'c',
      },
      {
        status: 'firing',
        labels: { alertname: 'Orphan' },
        annotations: {},
        startsAt: '2026-01-01T00:00:00Z',
        endsAt: '0001-01-01T00:00:00Z',
        fingerprint: 'd',
      },
    ],
  };
  const post = (token?: string) =>
    fetch(`${host.url}/api/webhooks/alertmanager`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(notification),
    });

  it('needs its bearer token', async () => {
    expect((await post()).status).toBe(401);
    expect((await post(ADMIN)).status).toBe(401);
  });

  it('applies a grouped notification per cluster and reports what it could not apply', async () => {
    const res = await post(AM);
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.applied.map((a: { cluster: string }) => a.cluster).sort()).toEqual(['east', 'west']);
    expect(body.unknownClusters).toEqual(['nowhere']);
    expect(body.unmatched).toEqual([{ alert: 'Orphan', why: 'no "cluster" label' }]);
    expect(await conditionsOf('east')).toMatchObject({ APIServerReachable: 'False' });
    expect(await conditionsOf('west')).toMatchObject({ NodeNotReady: 'False' });
    expect((await fetch(`${host.url}/api/clusters/nowhere`)).status).toBe(404);
    const resolved = { ...notification, status: 'resolved', alerts: [{ ...notification.alerts[0], status: 'resolved', endsAt: '2026-01-01T00:10:00Z' }] };
    await fetch(`${host.url}/api/webhooks/alertmanager`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${AM}` },
      body: JSON.stringify(resolved),
    });
    expect(await conditionsOf('east')).toMatchObject({ APIServerReachable: 'True' });
  });
});

describe('Azure Monitor webhook', () => {
  const alert = (monitorCondition: string, target: string) => ({
    schemaId: 'azureMonitorCommonAlertSchema',
    data: {
      essentials: {
        alertId: 'id',
        alertRule: 'NodeNotReady',
        severity: 'Sev1',
        signalType: 'Metric',
        monitorCondition,
        monitoringService: 'Platform',
        alertTargetIDs: [target],
        firedDateTime: '2026-01-01T00:00:00Z',
        description: 'nodes',
      },
      alertContext: {},
    },
  });
  const post = (body: unknown, token = AZ) =>
    fetch(`${host.url}/api/webhooks/azure-monitor?token=${encodeURIComponent(token)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('needs its token in the URL', async () => {
    expect((await post(alert('Fired', AKS), 'wrong-token-0123456789')).status).toBe(401);
  });

  it('maps targets through the mapping setting and the cluster annotation, case-insensitively', async () => {
    expect((await post(alert('Fired', AKS.toUpperCase()))).status).toBe(200);
    expect(await conditionsOf('west')).toMatchObject({ NodeNotReady: 'False' });
    const north = (await (
      await post(alert('Fired', '/subscriptions/0000/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks-north'))
    ).json()) as any;
    expect(north.applied).toEqual([expect.objectContaining({ cluster: 'north', conditions: ['NodeNotReady'] })]);
    await post(alert('Resolved', AKS));
    expect(await conditionsOf('west')).toMatchObject({ NodeNotReady: 'True' });
  });

  it('names the bad field of a payload it does not understand', async () => {
    const res = await post({ schemaId: 'somethingElse', data: {} });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).errors.map((e: { path: string }) => e.path)).toContain('schemaId');
  });
});
