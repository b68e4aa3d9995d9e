import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeApiServer, rbacAuthorizer, type RequestAttributes, startKubeApiServer } from '../helpers/kubeApiServer';

/**
 * Holds the Kubernetes API test server (test/helpers/kubeApiServer.ts) to the real API's conventions by
 * driving it with the real kubectl v1.32 and with @kubernetes/client-node, the client the product uses.
 * If the server drifted (discovery, Table output, patch types, status subresource, watch framing,
 * events, auth), these clients would fail here rather than pass against a lenient fake.
 */

const KUBECTL = '/usr/bin/kubectl';
const ADMIN_TOKEN = 'admin-token';
const APP_TOKEN = 'app-token';

const APP_ROLE = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: failover-app
rules:
  - apiGroups: [cluster.karmada.io]
    resources: [clusters]
    verbs: [get, list, watch]
  - apiGroups: [cluster.karmada.io]
    resources: [clusters/status]
    verbs: [get, patch]
  - apiGroups: ['']
    resources: [secrets]
    resourceNames: [app-secret]
    verbs: [get]
`;

const CLUSTER_YAML = (name: string, syncMode: string, labels: Record<string, string>) => `
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: ${name}
  labels: ${JSON.stringify(labels)}
spec:
  syncMode: ${syncMode}
  apiEndpoint: https://${name}.example
status:
  kubernetesVersion: v1.30.0
`;

const TAINT_POLICY_YAML = (effect: string) => `
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata:
  name: not-ready
spec:
  targetClusters:
    clusterNames: [member1]
  addOnConditions:
    - conditionType: Ready
      operator: NotIn
      statusValues: ['True']
  taints:
    - key: cluster.karmada.io/not-ready
      effect: ${effect}
`;

let server: KubeApiServer;
let dir: string;
let adminConfig: string;
let appConfig: string;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** kubectl with only our kubeconfig, cache and HOME: nothing from the machine's own configuration. */
function kubectlEnv(kubeconfig: string) {
  return { HOME: join(dir, 'home'), KUBECONFIG: kubeconfig, PATH: process.env.PATH ?? '/usr/bin:/bin' };
}

function kubectlArgs(args: string[], kubeconfig: string, cacheDir: string) {
  return ['--kubeconfig', kubeconfig, '--cache-dir', cacheDir, ...args];
}

function kubectl(args: string[], opts: { kubeconfig?: string; stdin?: string; cacheDir?: string } = {}): Promise<Run> {
  const kubeconfig = opts.kubeconfig ?? adminConfig;
  return new Promise((resolve) => {
    const child = execFile(
      KUBECTL,
      kubectlArgs(args, kubeconfig, opts.cacheDir ?? join(dir, 'cache')),
      { env: kubectlEnv(kubeconfig), timeout: 20_000 },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
      },
    );
    child.stdin?.end(opts.stdin ?? '');
  });
}

async function ok(args: string[], opts: { kubeconfig?: string; stdin?: string } = {}): Promise<string> {
  const run = await kubectl(args, opts);
  if (run.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${run.code}): ${run.stderr}`);
  return run.stdout;
}

async function waitFor<T>(what: string, probe: () => T | undefined | false | null, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Splits concatenated JSON documents (kubectl -o json --watch prints one after another). */
function jsonDocuments(text: string): any[] {
  const docs: any[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === '{') {
      if (depth++ === 0) start = i;
    } else if (ch === '}' && --depth === 0) docs.push(JSON.parse(text.slice(start, i + 1)));
  }
  return docs;
}

/** eventTime as MicroTime wants it: six fractional digits. */
const microNow = () => new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

async function api(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

function clusterEvent(name: string, cluster: { name: string; uid: string }, overrides: Record<string, unknown> = {}) {
  return {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { name },
    eventTime: microNow(),
    regarding: { apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', name: cluster.name, uid: cluster.uid },
    reason: 'TaintAdded',
    note: `Added taint cluster.karmada.io/not-ready:NoExecute to ${cluster.name}`,
    type: 'Warning',
    action: 'Taint',
    reportingController: 'karmada.io/failover',
    reportingInstance: 'failover-0',
    ...overrides,
  };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kube-api-'));
  mkdirSync(join(dir, 'home'));
  server = await startKubeApiServer({
    tokens: { [ADMIN_TOKEN]: 'admin', [APP_TOKEN]: 'app' },
    authorize: rbacAuthorizer(APP_ROLE, 'app'),
    bookmarkIntervalMs: 100,
  });
  adminConfig = server.writeKubeconfig(dir, { token: ADMIN_TOKEN, contextName: 'admin' });
  appConfig = server.writeKubeconfig(dir, { token: APP_TOKEN, contextName: 'app' });
});

afterAll(async () => {
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the test server, driven by the real kubectl', () => {
  it('serves discovery that kubectl reads after falling back from aggregated discovery', async () => {
    server.resetRequests();
    // A fresh cache: kubectl caches discovery on disk, and this test must see it ask.
    const out = (await kubectl(['api-resources'], { cacheDir: join(dir, 'cache-discovery') })).stdout;
    const rows = out
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => l.trim().split(/\s+/));
    const row = (name: string, apiVersion: string) => rows.find((r) => r[0] === name && r.includes(apiVersion));
    expect(row('clusters', 'cluster.karmada.io/v1alpha1')?.slice(-2)).toEqual(['false', 'Cluster']);
    expect(row('clustertaintpolicies', 'policy.karmada.io/v1alpha1')?.slice(-2)).toEqual(['false', 'ClusterTaintPolicy']);
    expect(row('propagationpolicies', 'policy.karmada.io/v1alpha1')?.slice(-2)).toEqual(['true', 'PropagationPolicy']);
    expect(row('clusterpropagationpolicies', 'policy.karmada.io/v1alpha1')?.slice(-2)).toEqual(['false', 'ClusterPropagationPolicy']);
    expect(row('resourcebindings', 'work.karmada.io/v1alpha2')?.slice(-2)).toEqual(['true', 'ResourceBinding']);
    expect(row('clusterresourcebindings', 'work.karmada.io/v1alpha2')?.slice(-2)).toEqual(['false', 'ClusterResourceBinding']);
    expect(row('events', 'events.k8s.io/v1')?.slice(-2)).toEqual(['true', 'Event']);
    expect(row('events', 'v1')?.slice(-2)).toEqual(['true', 'Event']);
    // kubectl 1.32 asks for aggregated discovery first; a plain APIGroupList makes it read each group version.
    const apis = server.requests.find((r) => r.path === '/apis');
    expect(apis?.accept).toContain('as=APIGroupDiscoveryList');
    expect(server.requests.some((r) => r.path === '/apis/cluster.karmada.io/v1alpha1' && r.status === 200)).toBe(true);
  });

  it('kubectl apply creates, then patches with generation following spec only; status is dropped on create', async () => {
    server.resetRequests();
    writeFileSync(join(dir, 'cluster.yaml'), CLUSTER_YAML('member1', 'Push', { region: 'west' }));
    writeFileSync(join(dir, 'policy.yaml'), TAINT_POLICY_YAML('NoSchedule'));
    expect(await ok(['apply', '-f', join(dir, 'cluster.yaml'), '-f', join(dir, 'policy.yaml')])).toMatch(
      /cluster\.cluster\.karmada\.io\/member1 created[\s\S]*clustertaintpolicy\.policy\.karmada\.io\/not-ready created/,
    );
    const created = server.get('clusters', 'member1')!;
    expect(created.metadata.generation).toBe(1);
    expect(created.status).toBeUndefined(); // a CRD with a status subresource drops status on create
    expect(created.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']).toContain('"syncMode":"Push"');
    // With OpenAPI v3 saying the server validates fields, kubectl leaves validation to it.
    expect(server.requests.find((r) => r.method === 'POST')?.query.fieldValidation).toBe('Strict');

    writeFileSync(join(dir, 'cluster.yaml'), CLUSTER_YAML('member1', 'Pull', { region: 'west' }));
    writeFileSync(join(dir, 'policy.yaml'), TAINT_POLICY_YAML('NoExecute'));
    expect(await ok(['apply', '-f', join(dir, 'cluster.yaml'), '-f', join(dir, 'policy.yaml')])).toMatch(/member1 configured[\s\S]*not-ready configured/);
    const patched = server.get('clusters', 'member1')!;
    expect(patched.spec.syncMode).toBe('Pull');
    expect(patched.metadata.generation).toBe(2);
    expect(patched.metadata.uid).toBe(created.metadata.uid);
    expect(server.get('clustertaintpolicies', 'not-ready')!.spec.taints[0].effect).toBe('NoExecute');
    expect(server.requests.filter((r) => r.method === 'PATCH').map((r) => r.contentType)).toEqual([
      'application/merge-patch+json',
      'application/merge-patch+json',
    ]);

    // A metadata-only change does not bump generation.
    writeFileSync(join(dir, 'cluster.yaml'), CLUSTER_YAML('member1', 'Pull', { region: 'west', tier: 'gold' }));
    await ok(['apply', '-f', join(dir, 'cluster.yaml')]);
    const relabelled = server.get('clusters', 'member1')!;
    expect(relabelled.metadata.labels).toEqual({ region: 'west', tier: 'gold' });
    expect(relabelled.metadata.generation).toBe(2);
    expect(Number(relabelled.metadata.resourceVersion)).toBeGreaterThan(Number(patched.metadata.resourceVersion));
  });

  it('kubectl apply of a ClusterRole works twice (a built-in: kubectl sends a strategic merge patch)', async () => {
    server.resetRequests();
    const path = join(dir, 'role.yaml');
    writeFileSync(path, APP_ROLE);
    expect(await ok(['apply', '-f', path])).toContain('clusterrole.rbac.authorization.k8s.io/failover-app created');
    writeFileSync(path, APP_ROLE.replace('verbs: [get, patch]', 'verbs: [get, patch, update]'));
    expect(await ok(['apply', '-f', path])).toContain('clusterrole.rbac.authorization.k8s.io/failover-app configured');
    expect(server.requests.find((r) => r.method === 'PATCH')?.contentType).toBe('application/strategic-merge-patch+json');
    expect(server.get('clusterroles', 'failover-app')!.rules[1].verbs).toEqual(['get', 'patch', 'update']);
  });

  it('kubectl get prints the Table, -o json the List, and applies label and field selectors', async () => {
    server.upsert({
      apiVersion: 'cluster.karmada.io/v1alpha1',
      kind: 'Cluster',
      metadata: { name: 'member2', labels: { region: 'east' } },
      spec: { syncMode: 'Push' },
    });
    server.resetRequests();
    const table = await ok(['get', 'clusters']);
    expect(table.split('\n')[0].split(/\s+/)).toEqual(['NAME', 'VERSION', 'MODE', 'READY', 'AGE']);
    expect(table).toMatch(/^member1\s+Pull\s+\d+s\s*$/m);
    expect(table).toMatch(/^member2\s+Push\s+\d+s\s*$/m);
    expect(server.requests.at(-1)?.accept).toContain('as=Table;v=v1;g=meta.k8s.io');

    const list = JSON.parse(await ok(['get', 'clusters', '-o', 'json']));
    expect(list.items.map((c: any) => c.metadata.name)).toEqual(['member1', 'member2']);

    expect(await ok(['get', 'clusters', '-l', 'region=west', '-o', 'name'])).toBe('cluster.cluster.karmada.io/member1\n');
    expect(await ok(['get', 'clusters', '-l', 'region in (east,north),!tier', '-o', 'name'])).toBe('cluster.cluster.karmada.io/member2\n');
    expect(await ok(['get', 'clusters', '-l', 'region!=west', '-o', 'name'])).toBe('cluster.cluster.karmada.io/member2\n');
    expect(await ok(['get', 'clusters', '--field-selector', 'metadata.name=member2', '-o', 'name'])).toBe('cluster.cluster.karmada.io/member2\n');
    const none = await kubectl(['get', 'clusters', '-l', 'region=south']);
    expect(none.stderr).toContain('No resources found');
    const badField = await kubectl(['get', 'clusters', '--field-selector', 'spec.syncMode=Push']);
    expect(badField.code).not.toBe(0);
    expect(badField.stderr).toContain('field label not supported: spec.syncMode');
    const missing = await kubectl(['get', 'cluster', 'nope']);
    expect(missing.stderr).toContain('Error from server (NotFound): clusters.cluster.karmada.io "nope" not found');

    // Pagination: kubectl follows continue tokens.
    server.resetRequests();
    expect(await ok(['get', 'clusters', '--chunk-size=1', '-o', 'name'])).toBe('cluster.cluster.karmada.io/member1\ncluster.cluster.karmada.io/member2\n');
    expect(server.requests.filter((r) => r.verb === 'list').map((r) => r.query.continue !== undefined)).toEqual([false, true]);
  });

  it('kubectl patch: merge and json work, a failed json test is 422, strategic is 415 for a custom resource', async () => {
    await ok(['patch', 'cluster', 'member2', '--type=merge', '-p', '{"spec":{"syncMode":"Pull"},"metadata":{"labels":{"tier":"silver"}}}']);
    let c = server.get('clusters', 'member2')!;
    expect([c.spec.syncMode, c.metadata.labels.tier, c.metadata.generation]).toEqual(['Pull', 'silver', 2]);

    await ok([
      'patch',
      'cluster',
      'member2',
      '--type=json',
      '-p',
      '[{"op":"test","path":"/spec/syncMode","value":"Pull"},{"op":"replace","path":"/spec/syncMode","value":"Push"}]',
    ]);
    c = server.get('clusters', 'member2')!;
    expect([c.spec.syncMode, c.metadata.generation]).toEqual(['Push', 3]);

    const failedTest = await kubectl(['patch', 'cluster', 'member2', '--type=json', '-p', '[{"op":"test","path":"/spec/syncMode","value":"Pull"}]']);
    expect(failedTest.code).not.toBe(0);
    // A 422 without field causes: kubectl words it "The request is invalid".
    expect(failedTest.stderr).toContain('The request is invalid: testing value /spec/syncMode failed');
    expect(server.requests.at(-1)?.status).toBe(422);

    const strategic = await kubectl(['patch', 'cluster', 'member2', '--type=strategic', '-p', '{"spec":{"syncMode":"Pull"}}']);
    expect(strategic.code).not.toBe(0);
    expect(strategic.stderr).toContain('application/strategic-merge-patch+json is not supported by cluster.karmada.io/v1alpha1, Kind=Cluster');
    expect(server.requests.at(-1)?.status).toBe(415);
    expect(server.get('clusters', 'member2')!.spec.syncMode).toBe('Push');
  });

  it('the status subresource: --subresource=status changes only status; a main patch does not change status', async () => {
    const before = server.get('clusters', 'member1')!;
    await ok([
      'patch',
      'cluster',
      'member1',
      '--subresource=status',
      '--type=merge',
      '-p',
      '{"status":{"kubernetesVersion":"v1.31.0"},"spec":{"syncMode":"Bogus"}}',
    ]);
    const afterStatus = server.get('clusters', 'member1')!;
    expect(afterStatus.status).toEqual({ kubernetesVersion: 'v1.31.0' });
    expect(afterStatus.spec).toEqual(before.spec);
    expect(afterStatus.metadata.generation).toBe(before.metadata.generation);

    await ok(['patch', 'cluster', 'member1', '--type=merge', '-p', '{"status":{"kubernetesVersion":"v9"},"spec":{"syncMode":"Push"}}']);
    const afterMain = server.get('clusters', 'member1')!;
    expect(afterMain.status).toEqual({ kubernetesVersion: 'v1.31.0' });
    expect(afterMain.spec.syncMode).toBe('Push');
    expect(afterMain.metadata.generation).toBe(before.metadata.generation + 1);
    expect(await ok(['get', 'cluster', 'member1', '--no-headers'])).toMatch(/^member1\s+v1\.31\.0\s+Push\s/);
  });

  it('kubectl replace: a stale resourceVersion is a Conflict; a PUT without one is Invalid for a custom resource', async () => {
    const stale = await ok(['get', 'cluster', 'member1', '-o', 'json']);
    await ok(['label', 'cluster', 'member1', 'touched=yes']);
    const conflict = await kubectl(['replace', '-f', '-'], { stdin: stale });
    expect(conflict.code).not.toBe(0);
    expect(conflict.stderr).toContain(
      'Error from server (Conflict): error when replacing "STDIN": Operation cannot be fulfilled on clusters.cluster.karmada.io "member1": the object has been modified; please apply your changes to the latest version and try again',
    );

    // (kubectl replace itself fills in a missing resourceVersion from a GET, so this one goes over HTTP.)
    const noVersion = JSON.parse(stale);
    delete noVersion.metadata.resourceVersion;
    const invalid = await api('PUT', '/apis/cluster.karmada.io/v1alpha1/clusters/member1', noVersion);
    expect([invalid.status, invalid.body.reason]).toEqual([422, 'Invalid']);
    expect(invalid.body.message).toBe(
      'Cluster.cluster.karmada.io "member1" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update',
    );
    // A built-in may be updated unconditionally.
    const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's1' }, stringData: { k: 'v1' } };
    expect((await api('POST', '/api/v1/namespaces/default/secrets', secret)).body.data).toEqual({ k: Buffer.from('v1').toString('base64') });
    const put = await api('PUT', '/api/v1/namespaces/default/secrets/s1', { ...secret, stringData: { k: 'v2' } });
    expect([put.status, put.body.data.k]).toEqual([200, Buffer.from('v2').toString('base64')]);

    const current = JSON.parse(await ok(['get', 'cluster', 'member1', '-o', 'json']));
    current.spec.syncMode = 'Pull';
    expect(await ok(['replace', '-f', '-'], { stdin: JSON.stringify(current) })).toContain('replaced');
    expect(server.get('clusters', 'member1')!.spec.syncMode).toBe('Pull');
  });

  it('kubectl get --watch sees upserts made through the test hook', async () => {
    server.resetRequests();
    const child = spawn(KUBECTL, kubectlArgs(['get', 'clusters', '--watch', '--output-watch-events', '-o', 'json'], adminConfig, join(dir, 'cache')), {
      env: kubectlEnv(adminConfig),
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    try {
      await waitFor('the kubectl watch', () => server.requests.find((r) => r.verb === 'watch' && r.resource === 'clusters' && r.status === 200));
      server.upsert({ apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name: 'member3' }, spec: { syncMode: 'Push' } });
      const added = await waitFor('ADDED member3', () => jsonDocuments(out).find((e) => e.type === 'ADDED' && e.object.metadata.name === 'member3'));
      expect(added.object.metadata.generation).toBe(1);
      server.upsert({ apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name: 'member3' }, spec: { syncMode: 'Pull' } });
      const modified = await waitFor('MODIFIED member3', () => jsonDocuments(out).find((e) => e.type === 'MODIFIED' && e.object.metadata.name === 'member3'));
      expect([modified.object.spec.syncMode, modified.object.metadata.generation]).toEqual(['Pull', 2]);
      server.remove('clusters', 'member3');
      await waitFor('DELETED member3', () => jsonDocuments(out).find((e) => e.type === 'DELETED' && e.object.metadata.name === 'member3'));
    } finally {
      child.kill();
    }
  });

  it('kubectl describe shows the events.k8s.io/v1 Events about the cluster, and no others', async () => {
    const member1 = server.get('clusters', 'member1')!;
    const member2 = server.get('clusters', 'member2')!;
    const posted = await api(
      'POST',
      '/apis/events.k8s.io/v1/namespaces/default/events',
      clusterEvent('member1.taint', { name: 'member1', uid: member1.metadata.uid }),
    );
    expect(posted.status).toBe(201);
    const other = clusterEvent('member2.taint', { name: 'member2', uid: member2.metadata.uid }, { reason: 'OtherReason', note: 'not about member1' });
    expect((await api('POST', '/apis/events.k8s.io/v1/namespaces/default/events', other)).status).toBe(201);

    server.resetRequests();
    const out = await ok(['describe', 'cluster', 'member1']);
    expect(out).toMatch(/Events:\s+Type\s+Reason\s+Age\s+From\s+Message/);
    expect(out).toMatch(/Warning\s+TaintAdded\s+\S+\s+karmada\.io\/failover\s+Added taint cluster\.karmada\.io\/not-ready:NoExecute to member1/);
    expect(out).not.toContain('OtherReason');
    // What kubectl 1.32 asks: core/v1 events in all namespaces, selected on involvedObject.*.
    const search = server.requests.find((r) => r.path === '/api/v1/events');
    // (kubectl builds it from a Go map, so the order of the terms varies from run to run.)
    expect(search?.query.fieldSelector.split(',').sort()).toEqual(
      ['involvedObject.kind=Cluster', 'involvedObject.name=member1', 'involvedObject.namespace=', `involvedObject.uid=${member1.metadata.uid}`].sort(),
    );
  });

  it('events: one store, two views, and the real validation of events.k8s.io/v1', async () => {
    const member1 = server.get('clusters', 'member1')!;
    const created = await api(
      'POST',
      '/apis/events.k8s.io/v1/namespaces/default/events',
      clusterEvent('member1.view', { name: 'member1', uid: member1.metadata.uid }),
    );
    expect(created.status).toBe(201);
    const core = await api('GET', '/api/v1/namespaces/default/events/member1.view');
    expect(core.status).toBe(200);
    expect(core.body).toMatchObject({
      apiVersion: 'v1',
      kind: 'Event',
      involvedObject: { kind: 'Cluster', name: 'member1', uid: member1.metadata.uid },
      message: created.body.note,
      reason: 'TaintAdded',
      reportingComponent: 'karmada.io/failover',
      reportingInstance: 'failover-0',
      eventTime: created.body.eventTime,
      firstTimestamp: null,
      lastTimestamp: null,
      source: {},
    });
    expect(core.body.metadata.resourceVersion).toBe(created.body.metadata.resourceVersion);
    const regarding = await api('GET', `/apis/events.k8s.io/v1/events?fieldSelector=regarding.name%3Dmember1,reason%3DTaintAdded`);
    expect(regarding.body.items.map((e: any) => e.metadata.name).sort()).toEqual(['member1.taint', 'member1.view']);
    expect((await api('GET', '/apis/events.k8s.io/v1/events?fieldSelector=involvedObject.name%3Dmember1')).status).toBe(400);

    for (const eventTime of ['2026-11-22T10:00:00.123Z', '2026-11-22T10:00:00Z', '2026-11-22T10:00:00.123456789Z']) {
      const bad = await api('POST', '/apis/events.k8s.io/v1/namespaces/default/events', clusterEvent('bad-time', { name: 'member1', uid: 'x' }, { eventTime }));
      expect([bad.status, bad.body.reason], eventTime).toEqual([400, 'BadRequest']);
    }
    const missing = await api(
      'POST',
      '/apis/events.k8s.io/v1/namespaces/default/events',
      clusterEvent('bad-fields', { name: 'member1', uid: 'x' }, { reportingController: undefined, action: '' }),
    );
    expect([missing.status, missing.body.reason]).toEqual([422, 'Invalid']);
    expect(missing.body.message).toBe('Event.events.k8s.io "bad-fields" is invalid: [reportingController: Required value, action: Required value]');
    // An event about a cluster-scoped object belongs in default (or kube-system).
    const elsewhere = await api('POST', '/apis/events.k8s.io/v1/namespaces/karmada-system/events', clusterEvent('elsewhere', { name: 'member1', uid: 'x' }));
    expect(elsewhere.body.message).toContain('involvedObject.namespace: Invalid value: "": does not match event.namespace');
  });
});

describe('extra resources', () => {
  it('addResource() serves a new resource in discovery, OpenAPI and CRUD', async () => {
    server.addResource({ group: 'apps', version: 'v1', kind: 'Deployment', plural: 'deployments', namespaced: true, hasStatus: true, shortNames: ['deploy'] });
    const discovery = await api('GET', '/apis/apps/v1');
    expect(discovery.body.resources.map((r: any) => r.name)).toEqual(['deployments', 'deployments/status']);
    expect((await api('GET', '/openapi/v3')).body.paths['apis/apps/v1'].serverRelativeURL).toMatch(/^\/openapi\/v3\/apis\/apps\/v1\?hash=/);
    const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' }, spec: { replicas: 1 }, status: { replicas: 9 } };
    const created = await api('POST', '/apis/apps/v1/namespaces/team/deployments', deployment);
    expect([created.status, created.body.metadata.namespace, created.body.metadata.generation, created.body.status]).toEqual([201, 'team', 1, undefined]);
    const rePost = await api('POST', '/apis/apps/v1/namespaces/team/deployments', deployment);
    expect([rePost.status, rePost.body.reason, rePost.body.message]).toEqual([409, 'AlreadyExists', 'deployments.apps "web" already exists']);
    // The strategic merge patch a built-in accepts (read as a merge patch here).
    const scaled = await api(
      'PATCH',
      '/apis/apps/v1/namespaces/team/deployments/web',
      { spec: { replicas: 3 } },
      { 'Content-Type': 'application/strategic-merge-patch+json' },
    );
    expect([scaled.body.spec.replicas, scaled.body.metadata.generation]).toEqual([3, 2]);
    expect((await api('GET', '/apis/apps/v1/deployments')).body.items.map((d: any) => `${d.metadata.namespace}/${d.metadata.name}`)).toEqual(['team/web']);
    expect((await api('DELETE', '/apis/apps/v1/namespaces/team/deployments/web')).status).toBe(200);
    const gone = await api('GET', '/apis/apps/v1/namespaces/team/deployments/web');
    expect([gone.status, gone.body.message, gone.body.details]).toEqual([
      404,
      'deployments.apps "web" not found',
      { name: 'web', group: 'apps', kind: 'deployments' },
    ]);
  });
});

describe('the test server, driven by @kubernetes/client-node', () => {
  async function client(token = ADMIN_TOKEN) {
    const k8s = await import('@kubernetes/client-node');
    const kc = new k8s.KubeConfig();
    kc.loadFromString(server.kubeconfig({ token }));
    return { k8s, kc };
  }

  it('Watch with allowWatchBookmarks gets events from the RV on, then BOOKMARKs; without it, no BOOKMARK', async () => {
    const { k8s, kc } = await client();
    const from = server.currentResourceVersion();
    server.upsert({ apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name: 'member4' }, spec: { syncMode: 'Push' } });
    const withBookmarks: [string, any][] = [];
    const without: [string, any][] = [];
    const path = '/apis/cluster.karmada.io/v1alpha1/clusters';
    const a = await new k8s.Watch(kc).watch(
      path,
      { allowWatchBookmarks: true, resourceVersion: from },
      (t, o) => withBookmarks.push([t, o]),
      () => undefined,
    );
    const b = await new k8s.Watch(kc).watch(
      path,
      { resourceVersion: from },
      (t, o) => without.push([t, o]),
      () => undefined,
    );
    try {
      await waitFor('two bookmarks', () => withBookmarks.filter(([t]) => t === 'BOOKMARK').length >= 2);
      expect(withBookmarks[0][0]).toBe('ADDED');
      expect(withBookmarks[0][1].metadata.name).toBe('member4');
      const bookmark = withBookmarks.find(([t]) => t === 'BOOKMARK')![1];
      expect(bookmark).toEqual({ kind: 'Cluster', apiVersion: 'cluster.karmada.io/v1alpha1', metadata: { resourceVersion: server.currentResourceVersion() } });
      expect(without.map(([t, o]) => [t, o.metadata.name])).toEqual([['ADDED', 'member4']]);
    } finally {
      a.abort();
      b.abort();
    }
  });

  it('after compact(), a Watch from an older RV gets an ERROR event with a 410 Expired Status, then the stream ends', async () => {
    const { k8s, kc } = await client();
    const old = server.currentResourceVersion();
    server.upsert({ apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name: 'member5' } });
    server.compact();
    const seen: [string, any][] = [];
    // client-node's Watch hands the ERROR event to the callback as phase 'ERROR' with the Status object, and then
    // calls done(null) when the server ends the stream: a 410 is not an error to done(), the caller must look.
    const done = await new Promise<unknown>((resolve) => {
      void new k8s.Watch(kc).watch('/apis/cluster.karmada.io/v1alpha1/clusters', { resourceVersion: old }, (t, o) => seen.push([t, o]), resolve);
    });
    expect(done).toBeNull();
    expect(seen).toHaveLength(1);
    expect(seen[0][0]).toBe('ERROR');
    expect(seen[0][1]).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'Expired', code: 410 });

    // A list continue token from before the compaction is 410 too; the current RV still watches fine.
    server.compact();
    const page = await api('GET', '/apis/cluster.karmada.io/v1alpha1/clusters?limit=1');
    expect(page.body.metadata.continue).toBeTruthy();
    server.upsert({ apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name: 'member5' }, spec: { syncMode: 'Pull' } });
    server.compact();
    const expired = await api('GET', `/apis/cluster.karmada.io/v1alpha1/clusters?limit=1&continue=${encodeURIComponent(page.body.metadata.continue)}`);
    expect([expired.status, expired.body.reason]).toEqual([410, 'Expired']);
  });

  it('Watch applies selectors (leaving the selection is DELETED), ends after timeoutSeconds; history overflow is 410', async () => {
    const { k8s, kc } = await client();
    const cluster = (labels: Record<string, string>) => ({ apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name: 'member6', labels } });
    server.upsert(cluster({ zone: 'a' }));
    const seen: string[] = [];
    const started = Date.now();
    const done = new Promise<unknown>((resolve) => {
      void new k8s.Watch(kc).watch(
        '/apis/cluster.karmada.io/v1alpha1/clusters',
        { labelSelector: 'zone=a', timeoutSeconds: 1 },
        (t, o) => seen.push(`${t} ${o.metadata.name} ${o.metadata.labels?.zone}`),
        resolve,
      );
    });
    await waitFor('the initial ADDED', () => seen.length === 1);
    server.upsert(cluster({ zone: 'b' }));
    server.upsert(cluster({ zone: 'a' }));
    expect(await done).toBeNull();
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    // The object as it was, when it leaves the selection; ADDED when it comes back.
    expect(seen).toEqual(['ADDED member6 a', 'DELETED member6 a', 'ADDED member6 a']);

    const small = await startKubeApiServer({ historyLimit: 2 });
    try {
      const from = small.currentResourceVersion();
      for (const n of [1, 2, 3]) small.upsert({ apiVersion: 'v1', kind: 'Secret', metadata: { name: `s${n}` } });
      const res = await fetch(`${small.url}/api/v1/secrets?watch=1&resourceVersion=${from}`, { headers: { Authorization: 'Bearer test-admin-token' } });
      expect(res.status).toBe(200);
      expect(JSON.parse(await res.text())).toMatchObject({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } });
    } finally {
      await small.close();
    }
  });

  it('finalizers hold a deleted object until the last one is removed', async () => {
    server.upsert({ apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name: 'member7', finalizers: ['karmada.io/cluster-controller'] } });
    const path = '/apis/cluster.karmada.io/v1alpha1/clusters/member7';
    expect((await api('DELETE', path)).status).toBe(200);
    expect(server.get('clusters', 'member7')?.metadata.deletionTimestamp).toBeTruthy();
    await api('PATCH', path, { metadata: { finalizers: null } }, { 'Content-Type': 'application/merge-patch+json' });
    expect(server.get('clusters', 'member7')).toBeUndefined();
  });

  it('CustomObjectsApi.patchClusterCustomObject: merge patch via setHeaderOptions; a stale RV in the body is a 409 ApiException', async () => {
    const { k8s, kc } = await client();
    const customObjects = kc.makeApiClient(k8s.CustomObjectsApi);
    const ref = { group: 'cluster.karmada.io', version: 'v1alpha1', plural: 'clusters', name: 'member2' };
    const current: any = await customObjects.getClusterCustomObject(ref);
    // client-node 1.4.0 picks application/json-patch+json by default, so an object body is a 400 there.
    const defaulted = await customObjects.patchClusterCustomObject({ ...ref, body: { spec: { syncMode: 'Pull' } } }).catch((e: unknown) => e);
    expect(defaulted).toBeInstanceOf(k8s.ApiException);
    expect((defaulted as InstanceType<typeof k8s.ApiException<string>>).code).toBe(400);

    const merge = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
    const body = { metadata: { resourceVersion: current.metadata.resourceVersion }, spec: { syncMode: 'Pull' } };
    const patched: any = await customObjects.patchClusterCustomObject({ ...ref, body }, merge);
    expect(patched.spec.syncMode).toBe('Pull');
    expect(Number(patched.metadata.resourceVersion)).toBeGreaterThan(Number(current.metadata.resourceVersion));

    const stale = await customObjects.patchClusterCustomObject({ ...ref, body: { ...body, spec: { syncMode: 'Push' } } }, merge).catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(k8s.ApiException);
    const err = stale as InstanceType<typeof k8s.ApiException<string>>;
    expect(err.code).toBe(409);
    expect(JSON.parse(err.body)).toMatchObject({ kind: 'Status', reason: 'Conflict', code: 409 });
    expect(server.get('clusters', 'member2')!.spec.syncMode).toBe('Pull');
  });
});

describe('authentication, RBAC and faults', () => {
  it('401 without a token or with an unknown one, from fetch and from kubectl', async () => {
    const res = await fetch(`${server.url}/apis/cluster.karmada.io/v1alpha1/clusters`);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Unauthorized',
      reason: 'Unauthorized',
      code: 401,
    });
    const wrong = server.writeKubeconfig(dir, { token: 'nobody', contextName: 'wrong' });
    const run = await kubectl(['get', 'clusters'], { kubeconfig: wrong });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/provide credentials|Unauthorized/);
  });

  it('403 from rbacAuthorizer with the real message; the role allows what it lists, subresources apart', async () => {
    expect(await ok(['get', 'clusters', '-o', 'name'], { kubeconfig: appConfig })).toContain('cluster.cluster.karmada.io/member1');
    const main = await kubectl(['patch', 'cluster', 'member1', '--type=merge', '-p', '{"spec":{"syncMode":"Pull"}}'], { kubeconfig: appConfig });
    expect(main.stderr).toContain(
      'Error from server (Forbidden): clusters.cluster.karmada.io "member1" is forbidden: User "app" cannot patch resource "clusters" in API group "cluster.karmada.io" at the cluster scope',
    );
    await ok(['patch', 'cluster', 'member1', '--subresource=status', '--type=merge', '-p', '{"status":{"kubernetesVersion":"v1.32.0"}}'], {
      kubeconfig: appConfig,
    });
    expect(server.get('clusters', 'member1')!.status.kubernetesVersion).toBe('v1.32.0');
    const secrets = await kubectl(['get', 'secrets', '-n', 'default'], { kubeconfig: appConfig });
    expect(secrets.stderr).toContain('secrets is forbidden: User "app" cannot list resource "secrets" in API group "" in the namespace "default"');

    const authorize = rbacAuthorizer(APP_ROLE, 'app');
    const attrs = (a: Partial<RequestAttributes>): RequestAttributes => ({ verb: 'get', apiGroup: 'cluster.karmada.io', resource: 'clusters', ...a });
    expect(authorize('app', attrs({ verb: 'patch', subresource: 'status', name: 'member1' }))).toBe(true);
    expect(authorize('app', attrs({ verb: 'update', subresource: 'status', name: 'member1' }))).toBe(false);
    expect(authorize('app', attrs({ verb: 'get', apiGroup: '', resource: 'secrets', namespace: 'ns', name: 'app-secret' }))).toBe(true);
    expect(authorize('app', attrs({ verb: 'get', apiGroup: '', resource: 'secrets', namespace: 'ns', name: 'other' }))).toBe(false);
    expect(authorize('app', attrs({ verb: 'list', apiGroup: '', resource: 'secrets', namespace: 'ns' }))).toBe(false);
    expect(authorize('admin', attrs({ verb: 'delete', apiGroup: '', resource: 'secrets', namespace: 'ns' }))).toBe(true);
    const wildcard = rbacAuthorizer('kind: ClusterRole\nrules:\n  - {apiGroups: ["*"], resources: ["*/status"], verbs: ["*"]}\n', 'app');
    expect(wildcard('app', attrs({ verb: 'update', subresource: 'status' }))).toBe(true);
    expect(wildcard('app', attrs({ verb: 'update' }))).toBe(false);
  });

  it('injected faults: a 409 and a 500 as the real server words them, a reset, a hang', async () => {
    const conflict = server.inject({ method: 'PATCH', pathIncludes: '/clusters/member2', status: 409 });
    const run = await kubectl(['patch', 'cluster', 'member2', '--type=merge', '-p', '{"metadata":{"labels":{"f":"1"}}}']);
    expect(run.stderr).toContain('Operation cannot be fulfilled on clusters.cluster.karmada.io "member2": the object has been modified');
    expect([conflict.hits, conflict.remaining]).toEqual([1, 0]);
    await ok(['patch', 'cluster', 'member2', '--type=merge', '-p', '{"metadata":{"labels":{"f":"1"}}}']);

    server.inject({ pathRegex: /\/clusters\/member2$/, method: 'GET', status: 500, message: 'etcd is down' });
    const internal = await api('GET', '/apis/cluster.karmada.io/v1alpha1/clusters/member2');
    expect([internal.status, internal.body.reason, internal.body.message]).toEqual([500, 'InternalError', 'Internal error occurred: etcd is down']);

    server.inject({ pathIncludes: '/clusters/member2', reset: true });
    await expect(api('GET', '/apis/cluster.karmada.io/v1alpha1/clusters/member2')).rejects.toThrow();

    server.inject({ pathIncludes: '/clusters/member2', hang: true });
    await expect(
      fetch(`${server.url}/apis/cluster.karmada.io/v1alpha1/clusters/member2`, {
        headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
        signal: AbortSignal.timeout(200),
      }),
    ).rejects.toThrow();
    expect((await api('GET', '/apis/cluster.karmada.io/v1alpha1/clusters/member2')).status).toBe(200);
    server.clearFaults();
  });

  it('close() ends open watches and hung requests promptly', async () => {
    const own = await startKubeApiServer();
    const k8s = await import('@kubernetes/client-node');
    const kc = new k8s.KubeConfig();
    kc.loadFromString(own.kubeconfig({ plainHttp: true }));
    let ended: unknown = 'open';
    await new k8s.Watch(kc).watch(
      '/api/v1/namespaces',
      {},
      () => undefined,
      (err) => (ended = err),
    );
    await waitFor('the watch', () => own.requests.find((r) => r.verb === 'watch' && r.status === 200));
    own.inject({ hang: true });
    const hung = fetch(`${own.url}/api/v1/namespaces`, { headers: { Authorization: 'Bearer test-admin-token' } }).then(
      () => 'answered',
      () => 'failed',
    );
    await waitFor('the hung request', () => own.requests.length === 2 && own.requests[1]);
    const started = Date.now();
    await own.close();
    await waitFor('the watch to end', () => ended !== 'open', 2000);
    expect(await hung).toBe('failed');
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
