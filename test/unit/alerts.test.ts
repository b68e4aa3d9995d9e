import { describe, expect, it } from 'vitest';
import { alertmanagerPayloadSchema, azureMonitorPayloadSchema, conditionTypeFrom } from '../../shared/api/alerts';
import { mapAlertmanager, mapAzureMonitor } from '../../shared/failover/alertMapping';

const mapping = { clusterLabel: 'cluster', conditionLabel: 'condition', statusLabel: 'condition_status' };
const alert = (status: 'firing' | 'resolved', labels: Record<string, string>, startsAt = '2026-01-01T00:00:00Z', endsAt = '0001-01-01T00:00:00Z') => ({
  status,
  labels,
  annotations: { summary: `${labels.alertname} ${status}` },
  startsAt,
  endsAt,
  fingerprint: 'f',
});
const payload = (alerts: unknown[]) => alertmanagerPayloadSchema.parse({ version: '4', status: 'firing', receiver: 'failover', groupKey: 'g', alerts });

describe('Alertmanager mapping', () => {
  it('maps firing to False and resolved to True, by the cluster and condition labels, per cluster', () => {
    const batch = mapAlertmanager(
      payload([
        alert('firing', { alertname: 'KubeAPIDown', cluster: 'member1', condition: 'APIServerReachable' }),
        alert('firing', { alertname: 'NodeNotReady', cluster: 'member1' }),
        alert('resolved', { alertname: 'KubeAPIDown', cluster: 'member2', condition: 'APIServerReachable' }, '2026-01-01T00:00:00Z', '2026-01-01T00:05:00Z'),
        alert('firing', { alertname: 'DiskFull', cluster: 'member3', condition: 'Disk', condition_status: 'Unknown' }),
      ]),
      mapping,
    );
    expect(Object.fromEntries([...batch.byCluster].map(([c, list]) => [c, list.map((x) => `${x.type}=${x.status}`)]))).toEqual({
      member1: ['APIServerReachable=False', 'NodeNotReady=False'],
      member2: ['APIServerReachable=True'],
      member3: ['Disk=Unknown'],
    });
    expect(batch.unmatched).toEqual([]);
  });

  it('keeps the latest alert when one notification holds several for the same condition', () => {
    const batch = mapAlertmanager(
      payload([
        alert('resolved', { alertname: 'A', cluster: 'm1', condition: 'Ready' }, '2026-01-01T00:00:00Z', '2026-01-01T00:10:00Z'),
        alert('firing', { alertname: 'A', cluster: 'm1', condition: 'Ready' }, '2026-01-01T00:03:00Z'),
      ]),
      mapping,
    );
    expect(batch.byCluster.get('m1')).toEqual([expect.objectContaining({ type: 'Ready', status: 'True' })]);
  });

  it('reports alerts it cannot map instead of dropping them', () => {
    const batch = mapAlertmanager(payload([alert('firing', { alertname: 'NoCluster' })]), mapping);
    expect(batch.unmatched).toEqual([{ alert: 'NoCluster', why: 'no "cluster" label' }]);
  });
});

describe('Azure Monitor mapping', () => {
  const aks = '/subscriptions/0000/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks-west';
  const body = (monitorCondition: 'Fired' | 'Resolved', targets = [aks]) =>
    azureMonitorPayloadSchema.parse({
      schemaId: 'azureMonitorCommonAlertSchema',
      data: {
        essentials: {
          alertId: 'x',
          alertRule: 'aks node not ready',
          severity: 'Sev1',
          monitorCondition,
          alertTargetIDs: targets,
          firedDateTime: '2026-01-01T00:00:00Z',
          description: 'nodes down',
        },
        alertContext: {},
      },
    });
  const clusterOf = (id: string) => (id.toLowerCase() === aks.toLowerCase() ? 'member-west' : undefined);
  it('maps Fired to False and Resolved to True on the mapped cluster', () => {
    expect(mapAzureMonitor(body('Fired'), clusterOf).byCluster.get('member-west')).toEqual([
      expect.objectContaining({ type: 'aksnodenotready', status: 'False' }),
    ]);
    expect(mapAzureMonitor(body('Resolved'), clusterOf).byCluster.get('member-west')).toEqual([expect.objectContaining({ status: 'True' })]);
  });
  it('reports targets that map to no cluster', () => {
    expect(mapAzureMonitor(body('Fired', ['/subscriptions/x/other']), clusterOf).unmatched).toEqual([
      { alert: 'aks node not ready', why: 'no cluster is mapped to /subscriptions/x/other' },
    ]);
  });
});

describe('condition types from free-form names', () => {
  it.each([
    ['Ready', 'Ready'],
    ['example.com/DiskPressure', 'example.com/DiskPressure'],
    ['aks node not ready', 'aksnodenotready'],
    ['!!!', 'Fallback'],
  ])('%s → %s', (name, type) => {
    expect(conditionTypeFrom(name, 'Fallback')).toBe(type);
  });
});
