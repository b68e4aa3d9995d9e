import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { HttpRequest, InvocationContext } from '@azure/functions';
import { describe, expect, it } from 'vitest';
import { clusters } from '../../functions/clusters';
import { resourceBindings } from '../../functions/resourceBindings';
import { alertmanagerPayloadSchema, azureMonitorPayloadSchema } from '../../shared/api/alerts';
import { decodeApplyDocuments, MAX_REPORTED_ERRORS, parseDocuments, repeatedJsonKey } from '../../shared/api/decode';
import { ApiError } from '../../shared/api/errors';
import { clusterKey, explicitClusterKey, signReport } from '../../shared/auth/signing';
import type { AuthSettings } from '../../shared/config';
import { objectsTooLargeToStore, STATUS_RESERVE_BYTES } from '../../shared/controllers/apply';
import { mapAlertmanager, mapAzureMonitor } from '../../shared/failover/alertMapping';
import { verifyClusterReport } from '../../shared/http/auth';
import { routeParamProblem, routeParams } from '../../shared/http/pathParams';
import { BadRouteError, compileRoute, dotSegmentOf } from '../../shared/local/routes';
import { MAX_ENTITY_BYTES, storedDocumentBytes } from '../../shared/store/tableStorage';

/**
 * The pure rules behind the hostile-input table (test/e2e/hostileInput.test.ts): inherited property names
 * as keys, route names that are no names, duplicate and "__proto__" keys, typo'd kinds, error floods,
 * alias bombs, and objects too large to store.
 */
const INHERITED = ['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty'];

const errorOf = (run: () => unknown): ApiError => {
  try {
    run();
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected an ApiError');
};
const said = (error: ApiError) => [error.message, ...error.errors.map((e) => `${e.path}: ${e.message}`)].join('\n');

describe('inherited property names as keys', () => {
  const ROOT = 'unit-signing-key-0123456789';
  const auth: AuthSettings = { mode: 'required', signingKey: ROOT, clusterKeys: {} };
  const now = new Date('2026-06-01T12:00:00Z');
  const ts = String(now.getTime() / 1000);
  const body = new TextEncoder().encode('{"conditions":[]}');
  const request = (headers: Record<string, string>) => new HttpRequest({ method: 'POST', url: 'http://h/api/clusters/member1/status', headers });

  it.each(INHERITED)('a report claiming to be cluster "%s" is refused with 401', (name) => {
    const error = errorOf(() =>
      verifyClusterReport(
        request({ 'x-failover-cluster': name, 'x-failover-timestamp': ts, 'x-failover-signature': `sha256=${'0'.repeat(64)}` }),
        auth,
        'member1',
        body,
        now,
      ),
    );
    expect(error.status).toBe(401);
  });

  it('a cluster named "constructor" signs with its own derived key', () => {
    const signature = signReport(clusterKey(ROOT, 'constructor'), ts, body);
    const req = new HttpRequest({
      method: 'POST',
      url: 'http://h/api/clusters/constructor/status',
      headers: { 'x-failover-timestamp': ts, 'x-failover-signature': signature },
    });
    expect(verifyClusterReport(req, auth, 'constructor', body, now)).toEqual({ signedAt: Number(ts), signature });
  });

  it('explicit keys are own entries only', () => {
    for (const name of INHERITED) expect(explicitClusterKey({}, name)).toBeUndefined();
    expect(explicitClusterKey({ constructor: 'k'.repeat(16) }, 'constructor')).toBe('k'.repeat(16));
  });

  it.each(INHERITED)('apply refuses kind "%s" with 400 naming the kind', (kind) => {
    for (const apiVersion of ['cluster.karmada.io/v1alpha1', 'apps/v1', undefined]) {
      const error = errorOf(() => decodeApplyDocuments([{ apiVersion, kind, metadata: { name: 'x' } }]));
      expect(error.status).toBe(400);
      expect(error.errors.map((e) => e.path)).toContain('kind');
    }
  });

  it('an Azure Monitor target that a plain-object map would answer with an inherited member matches no cluster', () => {
    const map: Record<string, string> = { '/subscriptions/s/aks-west': 'west' };
    const payload = azureMonitorPayloadSchema.parse({
      schemaId: 'azureMonitorCommonAlertSchema',
      data: {
        essentials: { alertRule: 'NodeDown', monitorCondition: 'Fired', alertTargetIDs: ['constructor', '__proto__', 'toString', '/subscriptions/s/aks-west'] },
      },
    });
    const batch = mapAzureMonitor(payload, (id) => map[id]);
    expect([...batch.byCluster.keys()]).toEqual(['west']);
    expect(batch.unmatched.map((u) => u.why)).toEqual([
      'no cluster is mapped to constructor',
      'no cluster is mapped to __proto__',
      'no cluster is mapped to toString',
    ]);
  });

  it('Alertmanager labels are read as own labels only', () => {
    const payload = alertmanagerPayloadSchema.parse({ version: '4', alerts: [{ status: 'firing', labels: { alertname: 'X' } }] });
    const batch = mapAlertmanager(payload, { clusterLabel: 'constructor', conditionLabel: 'toString', statusLabel: 'valueOf' });
    expect(batch.byCluster.size).toBe(0);
    expect(batch.unmatched).toEqual([{ alert: 'X', why: 'no "constructor" label' }]);
  });

  it('npm run cluster-key prints the key of a cluster named "constructor", and refuses a name no cluster can have', () => {
    const run = (name: string) =>
      spawnSync(process.execPath, ['--import', 'tsx', join(__dirname, '..', '..', 'scripts', 'clusterKey.ts'), name], {
        env: { ...process.env, REPORTER_SIGNING_KEY: ROOT, REPORTER_CLUSTER_KEYS: '' },
        encoding: 'utf8',
      });
    const named = run('constructor');
    expect(named.stdout.trim()).toBe(clusterKey(ROOT, 'constructor'));
    const invalid = run('__proto__');
    expect(invalid.status).toBe(2);
    expect(invalid.stderr).toMatch(/DNS label/);
  }, 30_000);
});

describe('route names', () => {
  it.each([
    ['/api/resourcebindings/default/victim/evictiontasks/%2e%2e', '%2e%2e'],
    ['/api/resourcebindings/default/victim/evictiontasks/..', '..'],
    ['/api/clusters/./member1', '.'],
    ['/api/clusters/%2E', '%2E'],
    ['/api/clusters/.%2e/x', '.%2e'],
    ['/api/clusters\\..\\apply', '..'],
    ['/api/clusters/member1/status/..?x=1', '..'],
  ])('%s holds the dot segment %s', (target, dot) => {
    expect(dotSegmentOf(target)).toBe(dot);
  });

  it.each(['/api/clusters/member1', '/api/clusters/...', '/api/clusters/a..b', '/api/clusters/..%2F..%2Fapply', '/api/events?since=..'])(
    '%s holds none',
    (target) => {
      expect(dotSegmentOf(target)).toBeUndefined();
    },
  );

  it('a parameter that decodes to more than one segment is refused; a catch-all is not one', () => {
    for (const value of ['member1%2Fstatus', '..%2F..%2Fapply', 'a%5Cb', 'a%23b', 'a%3Fb', 'a%00b', 'a%0Ab']) {
      expect(() => compileRoute('api/clusters/{name}', null).match(`/api/clusters/${value}`)).toThrow(BadRouteError);
    }
    expect(compileRoute('api/console/{*path}', null).match('/api/console/a%2Fb/c')).toEqual({ path: 'a/b/c' });
    expect(compileRoute('api/clusters/{name}', null).match('/api/clusters/constructor')).toEqual({ name: 'constructor' });
  });

  it('routeParams checks each parameter by its rule, naming it', () => {
    expect(routeParams({ params: { namespace: 'default', name: 'web.v1', cluster: 'member1' } })).toEqual({
      namespace: 'default',
      name: 'web.v1',
      cluster: 'member1',
    });
    expect(routeParams({ params: { name: 'constructor' } })).toEqual({ name: 'constructor' });
    for (const [params, field] of [
      [{ name: 'member1/status' }, 'name'],
      [{ name: '..' }, 'name'],
      [{ name: 'a\u0000b' }, 'name'],
      [{ namespace: 'a.b', name: 'x' }, 'namespace'],
      [{ cluster: 'Not_A_Name' }, 'cluster'],
      [{ other: 'a/b' }, 'other'],
    ] as Array<[Record<string, string>, string]>) {
      const error = errorOf(() => routeParams({ params }));
      expect(error.status).toBe(400);
      expect(error.errors.map((e) => e.path)).toEqual([field]);
    }
    expect(routeParamProblem('name', '.')).toMatch(/dot segment/);
  });

  it.each([
    ['clusters', clusters, { name: 'member1/status' }],
    ['clusters', clusters, { name: '../../apply' }],
    ['resourcebindings', resourceBindings, { namespace: 'default', name: 'victim/evictiontasks' }],
    ['resourcebindings', resourceBindings, { namespace: '..', name: 'victim' }],
  ] as const)('the %s function refuses %j itself, as on Azure, before it reads anything', async (_route, handler, params) => {
    const req = new HttpRequest({ method: 'GET', url: 'http://h/api/x', params: { ...params } });
    const response = await handler(req, new InvocationContext({ functionName: 'test' }));
    expect(response.status).toBe(400);
    expect(JSON.stringify(response.jsonBody)).toMatch(/in the URL/);
  });
});

describe('request bodies', () => {
  it.each([
    ['{"a":1,"a":2}', 'a', 'a'],
    ['{"metadata":{"name":"x","name":"y"}}', 'name', 'metadata.name'],
    ['[{"a":1},{"b":{"c":1,"c":2}}]', 'c', '[1].b.c'],
    ['{"items":[1,[2,{"k":1,"k\\u0000":2,"k":3}]]}', 'k', 'items[1][1].k'],
    ['{"n\\u0061me":1,"name":2}', 'name', 'name'],
    ['{"x":"}{\\"a\\":1,","a":1,"a":2}', 'a', 'a'],
  ])('JSON %s gives key %s twice, at %s', (text, key, path) => {
    expect(repeatedJsonKey(text)).toEqual({ key, path });
    const error = errorOf(() => parseDocuments(text, 'json'));
    expect(error.status).toBe(400);
    expect(error.errors[0]).toMatchObject({ path });
    expect(said(error)).toMatch(/duplicate key/);
  });

  it.each([
    '{"a":{"b":1},"c":{"b":1}}',
    '[{"a":1},{"a":2}]',
    '{"a":"\\"a\\":1","b":"a"}',
    '{"a":"x\\\\","a\\\\":1}',
    '{"a":[],"b":{},"c":[{}],"d":"[{,"}',
    '"just a string"',
  ])('JSON %s repeats no key', (text) => {
    expect(repeatedJsonKey(text)).toBeUndefined();
    expect(() => parseDocuments(text, 'json')).not.toThrow();
  });

  it('refuses a "__proto__" key in JSON and YAML, naming where it is', () => {
    const json = errorOf(() => parseDocuments('{"metadata":{"labels":{"__proto__":"x"}}}', 'json'));
    expect(json.errors[0]).toMatchObject({ path: 'metadata.labels.__proto__', document: 0 });
    const yaml = errorOf(() => parseDocuments('a: 1\n---\nmetadata:\n  labels:\n    __proto__: x\n', 'yaml'));
    expect(yaml.errors[0]).toMatchObject({ path: 'metadata.labels.__proto__', document: 1 });
    expect(said(yaml)).toMatch(/"__proto__" is not allowed/);
  });

  it('bounds what YAML aliases expand to, and keeps a few aliases', () => {
    const small = 'a: &x {k: v}\nb: *x\nc: *x\n';
    expect(parseDocuments(small, 'yaml')).toEqual([{ a: { k: 'v' }, b: { k: 'v' }, c: { k: 'v' } }]);
    // Within maxAliasCount (which bounds how often aliases nest), yet 24 KB of YAML becomes 1 MB.
    const bomb = ['data:', `  k0: &big ${'y'.repeat(24 * 1024)}`, ...Array.from({ length: 45 }, (_, i) => `  k${i + 1}: *big`)].join('\n');
    const error = errorOf(() => parseDocuments(bomb, 'yaml'));
    expect(error.status).toBe(400);
    expect(said(error)).toMatch(/aliases expand/);
  });

  it('reports the first errors of a bad bulk import and counts the rest', () => {
    const error = errorOf(() => decodeApplyDocuments(Array.from({ length: 5000 }, () => ({ apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Clustr' }))));
    expect(error.errors).toHaveLength(MAX_REPORTED_ERRORS + 1);
    expect(error.errors[MAX_REPORTED_ERRORS].message).toBe(`and 4900 more errors (the first ${MAX_REPORTED_ERRORS} are listed)`);
    const yaml = Array.from({ length: 300 }, () => 'a: [').join('\n---\n');
    expect(errorOf(() => parseDocuments(yaml, 'yaml')).errors.length).toBeLessThanOrEqual(MAX_REPORTED_ERRORS + 1);
  });

  it.each([
    ['apps/v1', 'Deploymnet', 'Deployment'],
    ['apps/v1', 'Statefulset', 'StatefulSet'],
    ['v1', 'ConfigMpa', 'ConfigMap'],
    ['batch/v1', 'CronJb', 'CronJob'],
    ['networking.k8s.io/v1', 'Ingres', 'Ingress'],
  ])('refuses %s kind %s, suggesting %s', (apiVersion, kind, near) => {
    const error = errorOf(() => decodeApplyDocuments([{ apiVersion, kind, metadata: { name: 'web' } }]));
    expect(error.errors).toEqual([expect.objectContaining({ path: 'kind', message: expect.stringContaining(`did you mean "${near}"`) as string })]);
  });

  it('keeps templates of built-in kinds and of custom groups', () => {
    const objects = decodeApplyDocuments([
      { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' } },
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'web' } },
      { apiVersion: 'example.com/v1', kind: 'Deploymnet', metadata: { name: 'web' } },
    ]);
    expect(objects.map((o) => o.kind === 'ResourceTemplate' && o.object.kind)).toEqual(['Deployment', 'ConfigMap', 'Deploymnet']);
  });

  it('refuses a List whose items are not an array', () => {
    const error = errorOf(() => decodeApplyDocuments([{ apiVersion: 'v1', kind: 'List', items: { a: 1 } }]));
    expect(error.errors).toEqual([expect.objectContaining({ path: 'items' })]);
  });
});

describe('objects too large to store', () => {
  const configMap = (name: string, data: Record<string, string>, annotations?: Record<string, string>) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, ...(annotations ? { annotations } : {}) },
    data,
  });

  it('measures strings as the service does (UTF-16), escapes as written', () => {
    const plain = storedDocumentBytes({ v: 'x'.repeat(100_000) });
    expect(plain).toBeGreaterThan(200_000);
    expect(plain).toBeLessThan(210_000);
    // Each NUL is stored as the 6 characters of its escape.
    expect(storedDocumentBytes({ v: '\u0000'.repeat(100_000) })).toBeGreaterThan(1_200_000);
  });

  it('names each object that would not fit, and passes the ones that would', () => {
    const objects = decodeApplyDocuments([
      { apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name: 'small' } },
      configMap('fits', { v: 'x'.repeat(300 * 1024) }),
      configMap('big', { v: 'x'.repeat(950 * 1024) }),
      configMap('nul', { v: '\u0000'.repeat(90_000) }),
      // Annotations are stored twice (the record's own and the manifest's): 300 KB of them is 1.2 MB.
      configMap('annotated', {}, { note: 'x'.repeat(300 * 1024) }),
    ]);
    const measure = (value: unknown) => ({ bytes: storedDocumentBytes(value), limit: MAX_ENTITY_BYTES });
    expect(objectsTooLargeToStore(objects, measure).map((o) => [o.document, o.object])).toEqual([
      [2, 'ConfigMap default/big'],
      [3, 'ConfigMap default/nul'],
      [4, 'ConfigMap default/annotated'],
    ]);
    expect(objectsTooLargeToStore(objects, measure)[0].limit).toBe(MAX_ENTITY_BYTES - STATUS_RESERVE_BYTES);
  });
});
