import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KARMADA } from '../../shared/kube/api';
import { ClientNodeKubeApi, FIELD_MANAGER } from '../../shared/kube/clientNode';
import { type KubeApiServer, startKubeApiServer } from '../helpers/kubeApiServer';

/**
 * The Kubernetes client's watch through the real @kubernetes/client-node against the test API server: a
 * handler that fails ends the watch with that error, and never leaves a rejected promise nobody handles
 * (Node ends the host process on one).
 */
let server: KubeApiServer;
let api: ClientNodeKubeApi;

const cluster = (name: string) => ({ apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name }, spec: {} });

beforeAll(async () => {
  server = await startKubeApiServer();
  api = await ClientNodeKubeApi.connect(server.kubeconfig());
});
afterAll(() => server?.close());

describe('watch with a failing handler', () => {
  it('rejects with the handler error, handles nothing after it, and leaves no unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const start = server.currentResourceVersion();
      const seen: string[] = [];
      const watching = api.watch(KARMADA.clusters, { resourceVersion: start, timeoutSeconds: 30 }, async (event) => {
        if (event.type === 'BOOKMARK') return;
        seen.push(event.object.metadata.name);
        if (seen.length === 1) throw new Error('the handler failed on purpose');
      });
      const outcome = watching.then(
        () => 'resolved',
        (error: Error) => error.message,
      );
      await new Promise((r) => setTimeout(r, 200));
      server.upsert(cluster('first'));
      server.upsert(cluster('second'));
      expect(await outcome).toBe('the handler failed on purpose');
      // Let any stray rejection surface before looking.
      await new Promise((r) => setTimeout(r, 100));
      expect(seen).toEqual(['first']);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('still delivers every event in order to a handler that succeeds', async () => {
    const start = server.currentResourceVersion();
    const controller = new AbortController();
    const seen: string[] = [];
    const watching = api.watch(KARMADA.clusters, { resourceVersion: start, timeoutSeconds: 30, signal: controller.signal }, async (event) => {
      if (event.type === 'BOOKMARK') return;
      seen.push(event.object.metadata.name);
      if (seen.length === 3) controller.abort();
    });
    await new Promise((r) => setTimeout(r, 200));
    for (const name of ['a', 'b', 'c']) server.upsert(cluster(name));
    await watching;
    expect(seen).toEqual(['a', 'b', 'c']);
  });
});

describe('writes', () => {
  it('name the app as their field manager, as kubectl shows in managedFields', async () => {
    server.resetRequests();
    await api.create(KARMADA.clusters, undefined, cluster('managed'));
    await api.patch(KARMADA.clusters, 'managed', undefined, { spec: { taints: [{ key: 'k', effect: 'NoSchedule' }] } }, 'merge');
    const writes = server.requests.filter((r) => r.verb === 'create' || r.verb === 'patch');
    expect(writes.map((r) => [r.verb, r.query.fieldManager])).toEqual([
      ['create', FIELD_MANAGER],
      ['patch', FIELD_MANAGER],
    ]);
  });
});

describe('connections', () => {
  it('requests share keep-alive connections instead of a TLS handshake each', async () => {
    const before = server.connections;
    for (let i = 0; i < 20; i++) await api.list(KARMADA.clusters, { limit: 1 });
    await Promise.all(Array.from({ length: 10 }, () => api.get(KARMADA.clusters, 'first')));
    // One for the sequential requests, and at most one more per request running at once.
    expect(server.connections - before).toBeLessThanOrEqual(10);
    expect(server.connections - before).toBeGreaterThanOrEqual(1);
    const sequential = server.connections;
    for (let i = 0; i < 20; i++) await api.get(KARMADA.clusters, 'first');
    expect(server.connections - sequential).toBe(0);
  });
});
