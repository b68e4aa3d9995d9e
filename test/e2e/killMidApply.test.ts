import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config';
import type { ControlPlane } from '../../shared/controllers/ports';
import { bindingKey } from '../../shared/failover/bindingModel';
import { createControlPlane } from '../../shared/runtime';
import { startTestStorage, TestStorage } from '../helpers/azurite';
import { applyObjects, binding, cluster } from '../helpers/fleet';
import { api, HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';

/**
 * A real host SIGKILLed in the middle of a bulk apply, at the exact step: its placement rows are stored,
 * and it dies as its first write of the bindings reaches the Table endpoint (a proxy in front of Azurite
 * kills it there and forwards nothing more). A second host takes over. What the kill left is counted in
 * storage; what-if and a drain must never list or plan a binding that was never written, and the repair
 * timer must leave no orphan placement row.
 */

const GHOSTS = 400;
let env: TestStorage;
let proxy: KillSwitchProxy;
let plane: ControlPlane;

beforeAll(async () => {
  env = await startTestStorage();
  proxy = await startKillSwitchProxy(env.azurite.tableEndpoint);
  plane = createControlPlane(env.storage, loadConfig({ AzureWebJobsStorage: env.azurite.connectionString }));
});
afterAll(async () => {
  await proxy?.close();
  await env?.close();
});

/** Placement rows of `cluster` whose binding is not stored: the orphans. */
async function orphans(cluster: string): Promise<string[]> {
  const rows = await plane.ledger.listPlacements(cluster);
  const stored = await Promise.all(rows.map((row) => plane.bindings.get(bindingKey(row))));
  return rows.filter((_, i) => !stored[i]).map((row) => row.name);
}

it(
  'a host killed between the placement rows and the bindings of a bulk apply leaves no phantom for what-if, a drain or the repair',
  { timeout: 120_000 },
  async () => {
    const connection = env.azurite.connectionString.replace(/TableEndpoint=[^;]+;/, `TableEndpoint=${proxy.endpoint};`);
    const settings = { AzureWebJobsStorage: connection, FAILOVER_ENABLED: 'true' };
    const first = await startHostProcess(settings);
    let second: HostProcess | undefined;
    try {
      const real = Array.from({ length: 10 }, (_, i) => binding(`real-${i}`, ['m1'], { placement: { clusterAffinity: { clusterNames: ['m1', 'm2'] } } }));
      await applyObjects(first.url, [notReady, cluster('m1'), cluster('m2'), cluster('m3'), ...real]);

      // One request of many bindings; the host dies as it starts writing them, after their placement rows.
      proxy.killOnBindingsWrite(() => void first.stop('SIGKILL'));
      const ghosts = Array.from({ length: GHOSTS }, (_, i) =>
        binding(`ghost-${i}`, ['m1'], { placement: { clusterAffinity: { clusterNames: ['m1', 'm2'] } } }),
      );
      await expect(api(first.url, 'POST', 'apply', ghosts)).rejects.toThrow();
      expect(await first.stop()).toBe(null);
      expect(proxy.killed).toBe(true);

      const left = await orphans('m1');
      console.log(`orphan placement rows after the kill: ${left.length}`);
      expect(left).toHaveLength(GHOSTS);

      second = await startHostProcess({ AzureWebJobsStorage: env.azurite.connectionString, FAILOVER_ENABLED: 'true' });
      // At once, before any repair: a drain plans the stored bindings only (no phantom takes a rate slot).
      // Evictions are paused so the drain's rows stay where what-if can see them.
      expect((await api(second.url, 'POST', 'failover/pause')).status).toBe(200);
      const drained = await api(second.url, 'POST', 'clusters/m1/drain');
      expect(drained.status).toBe(200);
      expect(drained.body).toMatchObject({ planned: 10, alreadyDecided: 0 });
      const rows = (await api(second.url, 'GET', 'evictions?cluster=m1')).body.items as Array<{ binding: { name: string } }>;
      expect(rows.map((r) => r.binding.name).sort()).toEqual(real.map((b) => b.metadata.name).sort());

      // The repair timer (every 10 s, for intents open past the 20 s grace) removes every orphan row.
      const started = Date.now();
      await waitFor(async () => ((await orphans('m1')).length === 0 ? true : undefined), 60_000, 500);
      console.log(`orphan placement rows after the repair: 0 (${Math.round((Date.now() - started) / 1000)} s after the second host started)`);
      expect(await plane.ledger.listPlacements('m1')).toHaveLength(10);

      const answer = (await api(second.url, 'POST', 'whatif', { failClusters: ['m1'] })).body;
      const listed = ['evictions', 'blocked', 'tolerated', 'alreadyDecided'].flatMap((part) =>
        (answer[part] as Array<{ binding: { name: string } }>).map((e) => e.binding.name),
      );
      expect(listed.filter((name) => name.startsWith('ghost'))).toEqual([]);
      expect(new Set(listed)).toEqual(new Set(real.map((b) => b.metadata.name)));
    } finally {
      await first.stop('SIGKILL');
      await second?.stop();
    }
  },
);

const notReady = {
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind: 'ClusterTaintPolicy',
  metadata: { name: 'not-ready' },
  spec: {
    matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False'] }],
    taintsToAdd: [{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', addOnMatchSeconds: 1 }],
  },
};

interface KillSwitchProxy {
  /** The Table endpoint through the proxy (`http://127.0.0.1:<port>/<account>`). */
  endpoint: string;
  /** Armed: the first write to the bindings table calls `kill`, and from then on nothing is forwarded. */
  killOnBindingsWrite(kill: () => void): void;
  readonly killed: boolean;
  close(): Promise<void>;
}

/** An HTTP proxy in front of Azurite's Table endpoint that stops forwarding, and kills the host, at its first bindings write. */
async function startKillSwitchProxy(tableEndpoint: string): Promise<KillSwitchProxy> {
  const target = new URL(tableEndpoint);
  let kill: (() => void) | undefined;
  let killed = false;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const writesBindings = req.method !== 'GET' && /\/bindings[ (?]|\/bindings$/.test(`${req.url ?? ''} ${body.toString('latin1')}`);
      if (killed || (kill && writesBindings)) {
        if (!killed) {
          killed = true;
          kill?.();
        }
        req.socket.destroy();
        return;
      }
      const upstream = request(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host } },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => req.socket.destroy());
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}${target.pathname}`,
    killOnBindingsWrite: (fn) => (kill = fn),
    get killed() {
      return killed;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
