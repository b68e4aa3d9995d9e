import { loadConfig } from '../../shared/config';
import type { ControlPlane } from '../../shared/controllers/ports';
import { createControlPlane } from '../../shared/runtime';
import { MemoryMessageQueue } from '../../shared/store/memory/messageQueue';
import { silentLogger } from '../../shared/telemetry/log';
import { startTestStorage, type TestStorage } from './azurite';
import { type KubeApiServer, startKubeApiServer } from './kubeApiServer';

export interface KarmadaTestPlane {
  env: TestStorage;
  server: KubeApiServer;
  plane: ControlPlane;
  close(): Promise<void>;
}

/**
 * A Karmada-mode control plane on real Azurite and the Kubernetes API test server, failover on. Its
 * taint-manager, evaluation and eviction queues are in memory (a test reads what was sent, or passes its own).
 */
export async function startKarmadaTestPlane(queues: Pick<Partial<ControlPlane>, 'taintManager' | 'evaluations' | 'evictions'> = {}): Promise<KarmadaTestPlane> {
  const env = await startTestStorage();
  const server = await startKubeApiServer({ bookmarkIntervalMs: 200 });
  const plane = createControlPlane(env.storage, loadConfig({ FAILOVER_ENABLED: 'true', KARMADA_KUBECONFIG: server.kubeconfig() }), {
    log: silentLogger,
    taintManager: new MemoryMessageQueue(),
    evaluations: new MemoryMessageQueue(),
    evictions: new MemoryMessageQueue(),
    ...queues,
  });
  return {
    env,
    server,
    plane,
    async close() {
      await server.close();
      await env.close();
    },
  };
}
