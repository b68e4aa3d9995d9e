import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeApiServer, rbacAuthorizer, startKubeApiServer } from './kubeApiServer';
import { makeCa, MemberCa, MemberEndpointServer, startMemberEndpoint } from './memberEndpoints';

/** The app's identity in the Kubernetes API test server (authorized by exactly infra/karmada-rbac.yaml) and an admin's. */
export const APP_USER = 'cluster-failover';
export const APP_TOKEN = 'app-token-0123456789';
export const ADMIN_TOKEN = 'admin-token-0123456789';

/** Host settings that make member probes fast enough for a test: Ready=False 2 s after the first failed probe. */
export const FAST_PROBE_SETTINGS = {
  CLUSTER_STATUS_UPDATE_FREQUENCY_SECONDS: '1',
  CLUSTER_FAILURE_THRESHOLD_SECONDS: '2',
  CLUSTER_PROBE_TIMEOUT_SECONDS: '1',
};

export interface KarmadaFleet {
  server: KubeApiServer;
  members: MemberEndpointServer[];
  /** A scratch folder: the kubeconfigs, and HOME for kubectl. */
  dir: string;
  adminKubeconfig: string;
  /** A kubeconfig for the app (KARMADA_KUBECONFIG); each call writes a new one. */
  appKubeconfig(): string;
  close(): Promise<void>;
}

/**
 * A Karmada control plane for end-to-end tests: the Kubernetes API test server with RBAC from
 * infra/karmada-rbac.yaml, member clusters as TLS endpoints with their own CA, and for each a push-mode
 * Cluster and the Secret holding its token and CA bundle, as `karmadactl join` leaves them.
 */
export async function startKarmadaFleet(options: { prefix: string; members?: string[]; clusterLabels?: Record<string, string> }): Promise<KarmadaFleet> {
  const dir = mkdtempSync(join(tmpdir(), options.prefix));
  const rbac = readFileSync(join(__dirname, '..', '..', 'infra', 'karmada-rbac.yaml'), 'utf8');
  const server = await startKubeApiServer({
    tokens: { [ADMIN_TOKEN]: 'admin', [APP_TOKEN]: APP_USER },
    authorize: rbacAuthorizer(rbac, APP_USER),
    bookmarkIntervalMs: 500,
  });
  const ca: MemberCa = makeCa();
  const members: MemberEndpointServer[] = [];
  for (const name of options.members ?? ['member1', 'member2', 'member3']) members.push(await startMemberEndpoint(ca, name));
  server.upsert({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'karmada-cluster' } });
  for (const member of members) {
    server.upsert({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: member.cluster, namespace: 'karmada-cluster' },
      data: { token: Buffer.from(member.token).toString('base64'), caBundle: Buffer.from(member.caBundle).toString('base64') },
    });
    server.upsert({
      apiVersion: 'cluster.karmada.io/v1alpha1',
      kind: 'Cluster',
      metadata: { name: member.cluster, ...(options.clusterLabels ? { labels: options.clusterLabels } : {}) },
      spec: { syncMode: 'Push', apiEndpoint: member.url, secretRef: { namespace: 'karmada-cluster', name: member.cluster } },
    });
  }
  return {
    server,
    members,
    dir,
    adminKubeconfig: server.writeKubeconfig(dir, { token: ADMIN_TOKEN, contextName: 'admin' }),
    appKubeconfig: () => server.writeKubeconfig(dir, { token: APP_TOKEN, contextName: 'app' }),
    async close() {
      for (const member of members) await member.close();
      await server.close();
      ca.cleanup();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
