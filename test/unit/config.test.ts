import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../shared/config';
import { parseTimeSpan, readHostSettings } from '../../shared/local/hostJson';
import { compileRoute } from '../../shared/local/routes';
import { decodeMessage, encodeMessage } from '../../shared/queue/encoding';
import { storageFromIdentity } from '../../shared/store/connection';

describe('app settings', () => {
  it('has the documented defaults', () => {
    expect(loadConfig({})).toEqual({
      storageConnectionString: undefined,
      autoRegisterClusters: true,
      clusterMonitorGracePeriodSeconds: 40,
      clusterStartupGracePeriodSeconds: 60,
      applyInlineMaxObjects: 1000,
      maxRequestBodyBytes: 1048576,
      eventListLimit: 1000,
      failoverEnabled: false,
      rates: { resourceEvictionRate: 0.5, secondaryResourceEvictionRate: 0.1, unhealthyClusterThreshold: 0.55, largeClusterNumThreshold: 10 },
      maxFleetShareTaintedByPolicy: 0.5,
      auth: { mode: 'required', signingKey: undefined, clusterKeys: {}, adminToken: undefined, alertmanagerToken: undefined, azureMonitorToken: undefined },
      evictionPlugins: ['ResourceHealth'],
      logLevel: 'info',
      probes: { updateFrequencySeconds: 10, failureThresholdSeconds: 30, probeTimeoutSeconds: 5, probeConcurrency: 50 },
      alerts: { alertmanager: { clusterLabel: 'cluster', conditionLabel: 'condition', statusLabel: 'condition_status' }, azureMonitorClusterMap: {} },
    });
  });

  const invalid: Array<[Record<string, string>, string]> = [
    [{ AUTO_REGISTER_CLUSTERS: 'maybe' }, 'AUTO_REGISTER_CLUSTERS: must be true or false, got "maybe"'],
    [{ CLUSTER_MONITOR_GRACE_PERIOD_SECONDS: '0' }, 'CLUSTER_MONITOR_GRACE_PERIOD_SECONDS: must be a whole number ≥ 1, got "0"'],
    [{ CLUSTER_STARTUP_GRACE_PERIOD_SECONDS: 'soon' }, 'CLUSTER_STARTUP_GRACE_PERIOD_SECONDS: must be a number, got "soon"'],
    [{ MAX_REQUEST_BODY_BYTES: '10' }, 'MAX_REQUEST_BODY_BYTES: must be a whole number of bytes between 1024 and 104857600, got "10"'],
    [{ RESOURCE_EVICTION_RATE: '-1' }, 'RESOURCE_EVICTION_RATE: must be an eviction rate per second between 0 and 1000, got "-1"'],
    [{ SECONDARY_RESOURCE_EVICTION_RATE: 'fast' }, 'SECONDARY_RESOURCE_EVICTION_RATE: must be a number, got "fast"'],
    [{ UNHEALTHY_CLUSTER_THRESHOLD: '55' }, 'UNHEALTHY_CLUSTER_THRESHOLD: must be a fraction between 0 and 1, got "55"'],
    [{ LARGE_CLUSTER_NUM_THRESHOLD: '2.5' }, 'LARGE_CLUSTER_NUM_THRESHOLD: must be a whole number ≥ 0, got "2.5"'],
    [{ MAX_FLEET_SHARE_TAINTED_BY_POLICY: '0' }, 'MAX_FLEET_SHARE_TAINTED_BY_POLICY: must be a fraction of the fleet above 0 and at most 1, got "0"'],
    [{ MAX_FLEET_SHARE_TAINTED_BY_POLICY: '1.5' }, 'MAX_FLEET_SHARE_TAINTED_BY_POLICY: must be a fraction of the fleet above 0 and at most 1, got "1.5"'],
    [{ FAILOVER_ENABLED: 'on' }, 'FAILOVER_ENABLED: must be true or false, got "on"'],
    [{ EVICTION_PLUGINS: 'ResourceHealth,Magic' }, 'EVICTION_PLUGINS: unknown plugin(s) Magic; known: ResourceHealth (empty for none)'],
    [{ AUTH_MODE: 'optional' }, 'AUTH_MODE: must be required or none, got "optional"'],
    [{ ADMIN_TOKEN: 'short-secret' }, 'ADMIN_TOKEN: must be at least 16 characters (the value is not shown)'],
    [
      { REPORTER_CLUSTER_KEYS: '{"member1": "abc"}' },
      'REPORTER_CLUSTER_KEYS: must be a JSON object of cluster name to key (keys of at least 16 characters); the value is not shown',
    ],
    [{ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL: must be one of debug, info, warn, error, got "verbose"'],
    [{ LOG_LEVEL: 'warning' }, 'LOG_LEVEL: must be one of debug, info, warn, error, got "warning"'],
    [{ LOG_LEVEL: '2' }, 'LOG_LEVEL: must be one of debug, info, warn, error, got "2"'],
    [{ CLUSTER_STATUS_UPDATE_FREQUENCY_SECONDS: '7' }, 'CLUSTER_STATUS_UPDATE_FREQUENCY_SECONDS: must be a whole number of seconds that divides 60, got "7"'],
    [{ CLUSTER_FAILURE_THRESHOLD_SECONDS: '0' }, 'CLUSTER_FAILURE_THRESHOLD_SECONDS: must be a whole number ≥ 1, got "0"'],
    [{ CLUSTER_PROBE_CONCURRENCY: '5000' }, 'CLUSTER_PROBE_CONCURRENCY: must be a whole number between 1 and 1000, got "5000"'],
  ];
  it.each(invalid)('refuses %j, naming the setting', (env, problem) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    try {
      loadConfig(env);
    } catch (error) {
      expect((error as ConfigError).problems).toEqual([problem]);
    }
  });

  it.each([
    ['debug', 'debug'],
    ['info', 'info'],
    ['warn', 'warn'],
    ['error', 'error'],
    [' DEBUG ', 'debug'],
    ['Error', 'error'],
    ['', 'info'],
  ])('reads LOG_LEVEL=%j as %s', (value, level) => {
    expect(loadConfig({ LOG_LEVEL: value }).logLevel).toBe(level);
  });

  it('accepts false spellings', () => {
    expect(loadConfig({ AUTO_REGISTER_CLUSTERS: 'FALSE' }).autoRegisterClusters).toBe(false);
  });
});

describe('host.json', () => {
  it('is read with the values the design needs', () => {
    const settings = readHostSettings(join(__dirname, '..', '..', 'host.json'));
    expect(settings.routePrefix).toBe('api');
    expect(settings.queues).toMatchObject({ maxPollingIntervalMs: 1000, maxDequeueCount: 5, messageEncoding: 'base64' });
  });
  it.each([
    ['00:00:01', 1000],
    ['00:10:00', 600_000],
    ['1.00:00:00', 86_400_000],
    ['00:00:00.5', 500],
  ])('parses the duration %s', (text, ms) => {
    expect(parseTimeSpan(text)).toBe(ms);
  });
});

describe('routes', () => {
  const cases: Array<[string, string, Record<string, string> | undefined]> = [
    ['api/clusters/{name?}', '/api/clusters', {}],
    ['api/clusters/{name?}', '/api/clusters/member1', { name: 'member1' }],
    ['api/clusters/{name?}', '/api/clusters/member1/status', undefined],
    ['api/clusters/{name}/status', '/api/clusters/member1/status', { name: 'member1' }],
    ['api/clusters/{name}/status', '/api/clusters//status', undefined],
    ['api/files/{*path}', '/api/files/a/b/c', { path: 'a/b/c' }],
    ['api/items/{id:int}', '/API/items/7/', { id: '7' }],
  ];
  it.each(cases)('%s on %s', (template, path, params) => {
    expect(compileRoute(template, null).match(path)).toEqual(params);
  });
});

describe('queue message encoding', () => {
  it('round-trips JSON through base64, as the Functions host expects', () => {
    const text = encodeMessage({ cluster: 'member1', dueAt: '2026-01-01T00:00:00.000Z' });
    expect(text).toMatch(/^[A-Za-z0-9+/]+=*$/);
    expect(decodeMessage(text)).toEqual({ ok: true, value: { cluster: 'member1', dueAt: '2026-01-01T00:00:00.000Z' } });
  });
  it.each(['{"raw":"json"}', 'abc', 'not base64!!'])('refuses %s as not base64', (text) => {
    expect(decodeMessage(text).ok).toBe(false);
  });
  it('passes plain base64 text through as a string', () => {
    expect(decodeMessage(Buffer.from('hello').toString('base64'))).toEqual({ ok: true, value: 'hello' });
  });
});

describe('identity-based storage', () => {
  it.each<[Record<string, string>, unknown]>([
    [
      { AzureWebJobsStorage__accountName: 'stfailover1' },
      { queueServiceUri: 'https://stfailover1.queue.core.windows.net', tableServiceUri: 'https://stfailover1.table.core.windows.net' },
    ],
    [
      {
        AzureWebJobsStorage__queueServiceUri: 'https://q.example/',
        AzureWebJobsStorage__tableServiceUri: 'https://t.example/',
        AzureWebJobsStorage__clientId: 'abc',
        AzureWebJobsStorage__credential: 'managedidentity',
      },
      { queueServiceUri: 'https://q.example/', tableServiceUri: 'https://t.example/', clientId: 'abc' },
    ],
    [{ AzureWebJobsStorage__queueServiceUri: 'https://q.example/' }, undefined],
    [{ AzureWebJobsStorage__accountName: '' }, undefined],
  ])('reads %j', (env, expected) => {
    expect(loadConfig(env).identityStorage).toEqual(expected);
  });
  it('refuses a bad account name or credential, naming the setting', () => {
    expect(() => loadConfig({ AzureWebJobsStorage__accountName: 'Not_An_Account' })).toThrow(
      'AzureWebJobsStorage__accountName: must be a storage account name',
    );
    expect(() => loadConfig({ AzureWebJobsStorage__credential: 'secret' })).toThrow('AzureWebJobsStorage__credential: must be managedidentity');
  });
  it('builds clients on the service URIs with the credential, no key', () => {
    const credential = { getToken: async () => ({ token: 't', expiresOnTimestamp: Date.now() + 60_000 }) };
    const storage = storageFromIdentity(
      { queueServiceUri: 'https://acc.queue.core.windows.net', tableServiceUri: 'https://acc.table.core.windows.net' },
      credential,
    );
    expect(storage.queue('evictions').url).toBe('https://acc.queue.core.windows.net/evictions');
    expect(storage.queue('evictions')).toBe(storage.queue('evictions'));
    expect(storage.table('ledger').url).toBe('https://acc.table.core.windows.net');
    expect(storage.table('ledger').tableName).toBe('ledger');
  });
});
