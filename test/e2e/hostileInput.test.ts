import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterKey, signReport } from '../../shared/auth/signing';
import { MAX_ENTITY_BYTES, storedDocumentBytes, TableDocumentStore } from '../../shared/store/tableStorage';
import { startTestStorage, TestStorage } from '../helpers/azurite';
import { HostProcess, startHostProcess } from '../helpers/hostProcess';
import { quietStorageSnapshot, storageSnapshot } from '../helpers/storageSnapshot';

/**
 * Hostile input on a running host: property names every object inherits, encoded slashes and dot segments
 * in route names, bodies far over the limit, duplicate and `__proto__` keys, typo'd kinds, and apply
 * requests whose last object cannot be stored. Each answers its 4xx (never a 5xx, never another object's
 * answer), and the stored state (every table but the timer leases, every queue) is byte-for-byte what it
 * was before that request. Paths are sent as written (no client-side normalisation of `..`).
 */
const ADMIN = 'hostile-admin-token-0123456789';
const ROOT = 'hostile-signing-key-0123456789';
const AZ = 'hostile-azure-monitor-0123456789';
const MAX_BODY = 1_048_576;

let env: TestStorage;
let host: HostProcess;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** One request with its path exactly as given (fetch would resolve `..` and `.` before sending). */
function send(method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer): Promise<Answer> {
  const url = new URL(host.url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path: `/api/${path}`,
        headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const json = { 'content-type': 'application/json' };
const admin = { ...json, authorization: `Bearer ${ADMIN}` };
const yamlAdmin = { 'content-type': 'application/yaml', authorization: `Bearer ${ADMIN}` };
const now = () => String(Math.floor(Date.now() / 1000));
/** Well-formed signature headers that no key made: they reach the key lookup, and must fail there with 401. */
const forgedReport = (claimed?: string) => ({
  ...json,
  'x-failover-timestamp': now(),
  'x-failover-signature': `sha256=${'0'.repeat(64)}`,
  ...(claimed !== undefined ? { 'x-failover-cluster': claimed } : {}),
});
const report = JSON.stringify({ conditions: [{ type: 'Ready', status: 'False' }] });
const cluster = (name: string, metadata: Record<string, unknown> = {}) => ({
  apiVersion: 'cluster.karmada.io/v1alpha1',
  kind: 'Cluster',
  metadata: { name, ...metadata },
});
const configMap = (name: string, data: Record<string, string>) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' }, data });
const azureAlert = (targets: string[]) =>
  JSON.stringify({
    schemaId: 'azureMonitorCommonAlertSchema',
    data: { essentials: { alertRule: 'NodeDown', monitorCondition: 'Fired', alertTargetIDs: targets } },
  });

interface Case {
  name: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** The statuses that are right (an encoded slash may be refused as an invalid name or not found). */
  status: number[];
  /** What the answer must say (the field and the reason). */
  says?: RegExp;
  /** A further check of the answer; returns a problem or undefined. */
  check?: (answer: Answer) => string | undefined;
}

/** An error answer as read: its message, then each field error as "path: message". */
function said(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: string; errors?: Array<{ path: string; message: string }> };
    return [body.error ?? '', ...(body.errors ?? []).map((e) => `${e.path}: ${e.message}`)].join('\n');
  } catch {
    return text;
  }
}

const INHERITED = ['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty'];

function table(): Case[] {
  const cases: Case[] = [];

  // Names every plain object inherits, used as a key into a map of secrets or kinds.
  for (const name of INHERITED) {
    cases.push({
      name: `report claiming to be cluster "${name}"`,
      method: 'POST',
      path: 'clusters/member1/status',
      headers: forgedReport(name),
      body: report,
      status: [401],
    });
  }
  cases.push({
    name: 'unsigned report for cluster "constructor"',
    method: 'POST',
    path: 'clusters/constructor/status',
    headers: forgedReport(),
    body: report,
    status: [401],
  });
  for (const kind of INHERITED) {
    cases.push({
      name: `apply kind "${kind}" of this app's group`,
      method: 'POST',
      path: 'apply',
      headers: admin,
      body: JSON.stringify({ apiVersion: 'cluster.karmada.io/v1alpha1', kind, metadata: { name: 'x' } }),
      status: [400],
      says: /kind/,
    });
  }
  cases.push(
    {
      name: 'apply kind "toString" without apiVersion',
      method: 'POST',
      path: 'apply',
      headers: admin,
      body: JSON.stringify({ kind: 'toString', metadata: { name: 'x' } }),
      status: [400],
      says: /kind|apiVersion/,
    },
    {
      name: 'apply kind "constructor" in apps/v1',
      method: 'POST',
      path: 'apply',
      headers: admin,
      body: JSON.stringify({ apiVersion: 'apps/v1', kind: 'constructor', metadata: { name: 'x' } }),
      status: [400],
      says: /kind/,
    },
  );
  for (const target of ['constructor', '__proto__']) {
    cases.push({
      name: `Azure Monitor alert on resource "${target}"`,
      method: 'POST',
      path: `webhooks/azure-monitor?token=${AZ}`,
      headers: json,
      body: azureAlert([target]),
      status: [200],
      check: (answer) => (JSON.parse(answer.text).unmatched?.length === 1 ? undefined : `expected one unmatched target: ${answer.text.slice(0, 200)}`),
    });
  }

  // Encoded slashes (and other characters no stored key may hold) in a route name.
  const endpoints: Array<[string, string, Record<string, string>?]> = [
    ['GET', 'clusters/{}'],
    ['DELETE', 'clusters/{}', admin],
    ['POST', 'clusters/{}/status', forgedReport()],
    ['POST', 'clusters/{}/drain', admin],
    ['GET', 'resourcebindings/default/{}'],
    ['GET', 'resourcebindings/{}/victim'],
    ['DELETE', 'resourcebindings/default/{}', admin],
    ['GET', 'resourcebindings/default/{}/why'],
    ['DELETE', 'resourcebindings/default/victim/evictiontasks/{}', admin],
    ['GET', 'clusterresourcebindings/{}'],
    ['GET', 'clustertaintpolicies/{}'],
    ['GET', 'propagationpolicies/default/{}'],
    ['GET', 'failoverbudgets/default/{}'],
  ];
  for (const [method, template, headers] of endpoints) {
    for (const name of ['member1%2Fstatus', '..%2F..%2Fapply', 'victim%2F']) {
      cases.push({
        name: `${method} ${template} with "${name}"`,
        method,
        path: template.replace('{}', name),
        headers,
        body: method === 'POST' ? report : undefined,
        status: [400, 404],
      });
    }
  }
  for (const name of ['a%5Cb', 'a%23b', 'a%3Fb', 'a%00b', 'a%0Ab', 'a%7Fb']) {
    cases.push({ name: `GET clusters/${name}`, method: 'GET', path: `clusters/${name}`, status: [400, 404] });
  }

  // Template queries become a storage key: a value no template can have is refused, not looked up.
  cases.push(
    {
      name: 'GET a template of apiVersion a/b/c',
      method: 'GET',
      path: 'templates?apiVersion=a/b/c&kind=Deployment&name=web',
      status: [400],
      says: /apiVersion/,
    },
    { name: 'GET a template of kind a#b', method: 'GET', path: 'templates?apiVersion=apps/v1&kind=a%23b&name=web', status: [400], says: /kind/ },
    { name: 'GET templates with a __proto__ parameter', method: 'GET', path: 'templates?__proto__=x', status: [400] },
    {
      name: 'DELETE a template of namespace a/b',
      method: 'DELETE',
      path: 'templates?apiVersion=v1&kind=ConfigMap&namespace=a%2Fb&name=web',
      headers: admin,
      status: [400],
      says: /namespace/,
    },
  );

  // Dot segments, which URL normalisation would resolve to another route before it is matched.
  for (const [method, path, headers] of [
    ['DELETE', 'resourcebindings/default/victim/evictiontasks/%2e%2e', admin],
    ['DELETE', 'resourcebindings/default/victim/evictiontasks/%2E%2E', admin],
    ['DELETE', 'resourcebindings/default/victim/evictiontasks/..', admin],
    ['DELETE', 'resourcebindings/default/victim/evictiontasks/.%2e', admin],
    ['DELETE', 'clusters/member1/drain/%2e%2e', admin],
    ['DELETE', 'clusters/member1/status/..', admin],
    ['GET', 'clusters/%2e', undefined],
    ['GET', 'clusters/./member1', undefined],
    ['GET', 'resourcebindings/default/%2e%2e/default/victim', undefined],
  ] as Array<[string, string, Record<string, string> | undefined]>) {
    cases.push({ name: `${method} ${path}`, method, path, headers, status: [400], says: /dot segment|"\."|"\.\."/ });
  }

  // Bodies: duplicate keys, __proto__ keys, typo'd kinds, thousands of errors.
  cases.push(
    {
      name: 'duplicate key in JSON',
      method: 'POST',
      path: 'apply',
      headers: admin,
      body: '{"apiVersion":"cluster.karmada.io/v1alpha1","kind":"Cluster","metadata":{"name":"dup-a","name":"dup-b"}}',
      status: [400],
      says: /metadata\.name.*duplicate|duplicate.*metadata\.name/i,
    },
    {
      name: 'duplicate key, spelled with an escape',
      method: 'POST',
      path: 'apply',
      headers: admin,
      body: '{"apiVersion":"cluster.karmada.io/v1alpha1","kind":"Cluster","metadata":{"name":"dup-a","n\\u0061me":"dup-b"}}',
      status: [400],
      says: /duplicate/i,
    },
    {
      name: 'duplicate key in YAML',
      method: 'POST',
      path: 'apply',
      headers: yamlAdmin,
      body: 'apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: dup-a\n  name: dup-b\n',
      status: [400],
    },
    {
      name: '__proto__ label key (JSON)',
      method: 'POST',
      path: 'apply',
      headers: admin,
      body: '{"apiVersion":"cluster.karmada.io/v1alpha1","kind":"Cluster","metadata":{"name":"proto1","labels":{"__proto__":"x","app":"y"}}}',
      status: [400],
      says: /metadata\.labels\.__proto__/,
    },
    {
      name: '__proto__ label key (YAML)',
      method: 'POST',
      path: 'apply',
      headers: yamlAdmin,
      body: 'apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: proto2\n  labels:\n    __proto__: x\n',
      status: [400],
      says: /metadata\.labels\.__proto__/,
    },
    {
      name: '__proto__ key in a ConfigMap',
      method: 'POST',
      path: 'apply',
      headers: admin,
      body: '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"proto3"},"data":{"__proto__":{"polluted":"yes"}}}',
      status: [400],
      says: /data\.__proto__/,
    },
    {
      name: 'kind Deploymnet in apps/v1',
      method: 'POST',
      path: 'apply',
      headers: admin,
      body: JSON.stringify({ apiVersion: 'apps/v1', kind: 'Deploymnet', metadata: { name: 'web' } }),
      status: [400],
      says: /"Deployment"/,
    },
    {
      name: 'kind Confgmap in v1',
      method: 'POST',
      path: 'apply',
      headers: admin,
      body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMpa', metadata: { name: 'web' } }),
      status: [400],
      says: /"ConfigMap"/,
    },
    {
      name: 'kind CronJb in batch/v1',
      method: 'POST',
      path: 'apply',
      headers: admin,
      body: JSON.stringify({ apiVersion: 'batch/v1', kind: 'CronJb', metadata: { name: 'web' } }),
      status: [400],
      says: /"CronJob"/,
    },
    {
      name: '15,000 invalid objects in one request',
      method: 'POST',
      path: 'apply',
      headers: admin,
      body: JSON.stringify(Array.from({ length: 15_000 }, () => ({ kind: 'Clustr' }))),
      status: [400],
      says: /more/,
      check: (answer) => {
        const errors = (JSON.parse(answer.text) as { errors?: unknown[] }).errors ?? [];
        if (answer.text.length > 64 * 1024) return `error body of ${answer.text.length} bytes`;
        return errors.length <= 101 ? undefined : `${errors.length} errors reported`;
      },
    },
  );

  // Apply is all-or-nothing: an object that cannot be stored is refused before anything is written.
  const big = 'x'.repeat(950 * 1024);
  cases.push(
    {
      name: 'a List of a Cluster and a 950 KB ConfigMap',
      method: 'POST',
      path: 'apply',
      headers: admin,
      body: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [cluster('first-of-list'), configMap('big-config', { big })] }),
      status: [400, 413],
      says: /big-config/,
    },
    {
      // 960 KB of body, each "\u0000" stored as the 6 characters it is written with: twice that in UTF-16.
      name: 'a Cluster, then a ConfigMap of 960 KB of \\u0000 escapes',
      method: 'POST',
      path: 'apply',
      headers: admin,
      body: JSON.stringify([cluster('first-of-nul'), configMap('nul-config', { nul: '\u0000'.repeat(160_000) })]),
      status: [400, 413],
      says: /nul-config/,
    },
    {
      name: '24 KB of YAML whose aliases expand to 1 MB',
      method: 'POST',
      path: 'apply',
      headers: yamlAdmin,
      body: [
        'apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: first-of-aliases\n---',
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: alias-config\ndata:',
        `  k0: &big ${'y'.repeat(24 * 1024)}`,
        ...Array.from({ length: 45 }, (_, i) => `  k${i + 1}: *big`),
      ].join('\n'),
      status: [400, 413],
      says: /aliases expand/,
    },
  );
  return cases;
}

beforeAll(async () => {
  env = await startTestStorage();
  host = await startHostProcess({
    AzureWebJobsStorage: env.azurite.connectionString,
    AUTH_MODE: 'required',
    ADMIN_TOKEN: ADMIN,
    REPORTER_SIGNING_KEY: ROOT,
    AZURE_MONITOR_TOKEN: AZ,
    MAX_REQUEST_BODY_BYTES: String(MAX_BODY),
    CLUSTER_MONITOR_GRACE_PERIOD_SECONDS: '3600',
    CLUSTER_STARTUP_GRACE_PERIOD_SECONDS: '3600',
  });
  const seed = [
    cluster('member1'),
    cluster('member2'),
    {
      apiVersion: 'work.karmada.io/v1alpha2',
      kind: 'ResourceBinding',
      metadata: { name: 'victim', namespace: 'default' },
      spec: { resource: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'victim' }, clusters: [{ name: 'member1' }] },
    },
  ];
  const seeded = await send('POST', 'apply', admin, JSON.stringify(seed));
  expect(seeded.status, seeded.text).toBe(200);
}, 60_000);
afterAll(async () => {
  await host?.stop();
  await env?.close();
});

describe('hostile input', () => {
  it('answers each request of the table with its 4xx (never a 5xx), and stores nothing', async () => {
    await quietStorageSnapshot(env.storage);
    const failures: string[] = [];
    let serverErrors = 0;
    const cases = table();
    for (const c of cases) {
      const before = await storageSnapshot(env.storage);
      const answer = await send(c.method, c.path, c.headers, c.body);
      const after = await storageSnapshot(env.storage);
      if (answer.status >= 500) serverErrors++;
      const problems: string[] = [];
      if (!c.status.includes(answer.status)) problems.push(`${answer.status} (expected ${c.status.join(' or ')}) ${answer.text.slice(0, 300)}`);
      else if (answer.status >= 400 && !/"error"/.test(answer.text)) problems.push('no JSON error');
      else if (c.says && !c.says.test(said(answer.text))) problems.push(`does not say ${c.says}: ${said(answer.text).slice(0, 300)}`);
      else if (c.check) {
        const problem = c.check(answer);
        if (problem) problems.push(problem);
      }
      if (after !== before) problems.push('stored state changed');
      if (problems.length > 0) failures.push(`${c.name}: ${problems.join('; ')}`);
    }
    expect({ serverErrors, failures }).toEqual({ serverErrors: 0, failures: [] });
    // The seed is intact: the dot-segment requests deleted nothing.
    expect((await send('GET', 'resourcebindings/default/victim')).status).toBe(200);
    expect((await send('GET', 'clusters/member1')).status).toBe(200);
  }, 180_000);

  it('lets a cluster named "constructor" register and report', async () => {
    expect((await send('POST', 'apply', admin, JSON.stringify(cluster('constructor')))).status).toBe(200);
    const ts = now();
    const answer = await send(
      'POST',
      'clusters/constructor/status',
      { ...json, 'x-failover-timestamp': ts, 'x-failover-signature': signReport(clusterKey(ROOT, 'constructor'), ts, report) },
      report,
    );
    expect(answer.status, answer.text).toBe(200);
  });

  it('answers HEAD like GET, without a body', async () => {
    for (const path of ['clusters', 'clusters/member1', 'resourcebindings/default/victim', 'templates']) {
      const get = await send('GET', path);
      const head = await send('HEAD', path);
      expect({ path, status: head.status, body: head.text }).toEqual({ path, status: get.status, body: '' });
      expect(head.headers['content-type']).toBe(get.headers['content-type']);
    }
  });

  it('answers 413 on a declared body over the limit without waiting for it', async () => {
    const url = new URL(host.url);
    const started = Date.now();
    const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request({
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path: '/api/apply',
        headers: { ...json, 'content-length': String(99 * 1024 * 1024) },
      });
      const timer = setTimeout(() => {
        req.destroy();
        reject(new Error('no answer within 10 s: the host waits for the whole body'));
      }, 10_000);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          clearTimeout(timer);
          req.destroy();
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() });
        });
      });
      req.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      req.flushHeaders();
      req.write(Buffer.alloc(64 * 1024, 'a'));
    });
    expect(answer.status).toBe(413);
    expect(answer.text).toContain(String(MAX_BODY));
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('stops reading a streamed body at the limit', async () => {
    const url = new URL(host.url);
    const chunk = Buffer.alloc(64 * 1024, 'a');
    const outcome = await new Promise<{ status: number; written: number }>((resolve, reject) => {
      let written = 0;
      let answered = false;
      const req = request({ host: url.hostname, port: url.port, method: 'POST', path: '/api/apply', headers: json });
      req.on('response', (res) => {
        answered = true;
        res.resume();
        resolve({ status: res.statusCode ?? 0, written });
        req.destroy();
      });
      req.on('error', (error) => {
        if (!answered) reject(error);
      });
      // Chunked: no length is declared, so only the bytes read so far can tell.
      const pump = () => {
        while (!answered && written < 64 * 1024 * 1024) {
          written += chunk.length;
          if (!req.write(chunk)) return void req.once('drain', pump);
        }
        if (!answered) req.end();
      };
      pump();
    });
    expect(outcome.status).toBe(413);
    // The answer comes once the limit is passed, not after 64 MiB (socket buffers hold a few MiB more).
    expect(outcome.written).toBeLessThan(16 * 1024 * 1024);
  });

  it('measures documents so that one measured to fit is one the store accepts', async () => {
    const table = 'hostilesize';
    await env.storage.tableService().createTable(table);
    const store = new TableDocumentStore<{ v: string }>(env.storage.table(table), 'size');
    // Plain text, escapes (each stored as 6 characters), quotes (escaped again on the wire), three-byte UTF-8.
    const shapes: Array<[string, (n: number) => { v: string }]> = [
      ['ASCII', (n) => ({ v: 'x'.repeat(n) })],
      ['NUL', (n) => ({ v: '\u0000'.repeat(n) })],
      ['quotes', (n) => ({ v: '"'.repeat(n) })],
      ['CJK', (n) => ({ v: '\u6f22'.repeat(n) })],
    ];
    for (const [shape, make] of shapes) {
      // The largest n measured to fit.
      let low = 1;
      let high = MAX_ENTITY_BYTES;
      while (low < high) {
        const mid = Math.ceil((low + high) / 2);
        if (storedDocumentBytes(make(mid)) <= MAX_ENTITY_BYTES) low = mid;
        else high = mid - 1;
      }
      // Not needlessly strict: the limit leaves room for at least 80,000 of the worst characters (a NUL is 12 bytes stored).
      expect(low, shape).toBeGreaterThan(80_000);
      await expect(store.create(`${shape}-fits`, make(low)), shape).resolves.toBeTypeOf('string');
    }
  }, 60_000);
});
