import { KARMADA, KubeApi, KubeApiError, MemberEndpoint } from '../../kube/api';
import type { ClusterRecord } from '../../store/records';
import type { Logger } from '../../telemetry/log';
import type { MemberDirectory } from '../ports';

/**
 * Where each member cluster's health endpoint is and how to authenticate to it.
 * - Karmada mode: as Karmada's own cluster-status controller finds it, `spec.apiEndpoint` and the Secret
 *   named by `spec.secretRef` (keys `token` and `caBundle`), read through the Karmada API.
 * - Standalone: a kubeconfig with one context per cluster, the context named after the cluster.
 */

const SECRET_TTL_MS = 60_000;

export class KarmadaMemberDirectory implements MemberDirectory {
  private readonly secrets = new Map<string, { at: number; data: Record<string, string> | 'forbidden' | undefined }>();
  /** Clusters whose Secret was found without a token (said once per cluster, again after it had one). */
  private readonly withoutToken = new Set<string>();

  constructor(
    private readonly api: KubeApi,
    private readonly log: Logger,
  ) {}

  async endpoints(clusters: ClusterRecord[]): Promise<MemberEndpoint[]> {
    const found = await Promise.all(
      clusters.map(async (cluster): Promise<MemberEndpoint[]> => {
        const { apiEndpoint, secretRef, insecureSkipTLSVerification } = cluster.spec;
        if (!apiEndpoint || !secretRef) return [];
        const data = await this.secret(secretRef.namespace, secretRef.name);
        if (data === 'forbidden') return [];
        if (!data?.token) {
          if (!this.withoutToken.has(cluster.name))
            this.log.warn('cluster not probed: its secretRef Secret has no token', {
              cluster: cluster.name,
              secret: `${secretRef.namespace}/${secretRef.name}`,
            });
          this.withoutToken.add(cluster.name);
          return [];
        }
        this.withoutToken.delete(cluster.name);
        return [
          {
            cluster: cluster.name,
            server: apiEndpoint,
            token: decode(data.token),
            ...(data.caBundle ? { caBundle: decode(data.caBundle) } : {}),
            ...(insecureSkipTLSVerification ? { insecureSkipTLSVerification: true } : {}),
          },
        ];
      }),
    );
    return found.flat();
  }

  /** The Secret's data; `forbidden` when the app may not read Secrets. */
  private async secret(namespace: string, name: string): Promise<Record<string, string> | 'forbidden' | undefined> {
    const key = `${namespace}/${name}`;
    const hit = this.secrets.get(key);
    if (hit && Date.now() - hit.at < SECRET_TTL_MS) return hit.data;
    let object;
    try {
      object = await this.api.get(KARMADA.secrets, name, namespace);
    } catch (error) {
      // No `get` on Secrets is a supported choice: no endpoint, no probe (Karmada's controller writes Ready).
      if (!(error instanceof KubeApiError) || error.status !== 403) throw error;
      this.secrets.set(key, { at: Date.now(), data: 'forbidden' });
      return 'forbidden';
    }
    const data = (object?.data ?? undefined) as Record<string, string> | undefined;
    this.secrets.set(key, { at: Date.now(), data });
    return data;
  }
}

/** Secret data is base64. */
const decode = (value: string) => Buffer.from(value, 'base64').toString('utf8');

export class StaticMemberDirectory implements MemberDirectory {
  constructor(private readonly load: () => Promise<MemberEndpoint[]>) {}

  async endpoints(clusters: ClusterRecord[]): Promise<MemberEndpoint[]> {
    const names = new Set(clusters.map((c) => c.name));
    return (await this.load()).filter((endpoint) => names.has(endpoint.cluster));
  }
}
