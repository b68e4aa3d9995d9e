import { failoverBudgetSchema } from '../../api/resources';
import { KubeApi, KubeApiError, KubeObject, KubeResource } from '../../kube/api';
import { Logger, StateChanges } from '../../telemetry/log';
import type { DocumentStore, Versioned } from '../ports';
import type { FailoverBudgetRecord } from '../records';
import { listAll, ManagedInKarmadaError, userAnnotations } from './kubeObjects';

/** The FailoverBudget custom resource (infra/failoverbudget-crd.yaml), served by the Karmada API server in Karmada mode. */
export const FAILOVER_BUDGETS: KubeResource = {
  group: 'failover.io',
  version: 'v1alpha1',
  plural: 'failoverbudgets',
  kind: 'FailoverBudget',
  namespaced: true,
};

/** Budget document ids: `<namespace>:<name>`. */
const locate = (id: string) => {
  const split = id.indexOf(':');
  return { namespace: id.slice(0, split), name: id.slice(split + 1) };
};

/**
 * Karmada mode: FailoverBudgets are custom resources on the Karmada API server (apply them with kubectl),
 * validated with the schema of our apply; one that does not validate is left out and logged with its field
 * errors (once, and again when they change). The app never writes them. A server without the CRD (404) has no budgets.
 */
export class KarmadaBudgetStore implements DocumentStore<FailoverBudgetRecord> {
  /** The errors logged per budget left out: logged again only when they change. */
  private readonly invalid = new StateChanges();

  constructor(
    private readonly api: KubeApi,
    private readonly log: Logger,
  ) {}

  async get(id: string): Promise<Versioned<FailoverBudgetRecord> | undefined> {
    const { namespace, name } = locate(id);
    const object = await this.absentOn404(() => this.api.get(FAILOVER_BUDGETS, name, namespace), undefined);
    const value = object && this.decode(object);
    return object && value ? { value, etag: object.metadata.resourceVersion ?? '' } : undefined;
  }

  async list(where?: (value: FailoverBudgetRecord) => boolean): Promise<Array<Versioned<FailoverBudgetRecord> & { id: string }>> {
    const { items } = await this.absentOn404(() => listAll(this.api, FAILOVER_BUDGETS), { items: [], resourceVersion: '' });
    return items.flatMap((object) => {
      const value = this.decode(object);
      return value && (!where || where(value)) ? [{ id: `${value.namespace}:${value.name}`, value, etag: object.metadata.resourceVersion ?? '' }] : [];
    });
  }

  create(): Promise<string> {
    return Promise.reject(new ManagedInKarmadaError('FailoverBudget'));
  }
  replace(): Promise<string> {
    return Promise.reject(new ManagedInKarmadaError('FailoverBudget'));
  }
  delete(): Promise<boolean> {
    return Promise.reject(new ManagedInKarmadaError('FailoverBudget'));
  }

  private async absentOn404<T>(read: () => Promise<T>, absent: T): Promise<T> {
    try {
      return await read();
    } catch (error) {
      // The CRD is not installed: no budgets (every other failure is the caller's to see).
      if (error instanceof KubeApiError && error.status === 404) return absent;
      throw error;
    }
  }

  private decode(object: KubeObject): FailoverBudgetRecord | undefined {
    const meta = object.metadata;
    const parsed = failoverBudgetSchema.safeParse({
      apiVersion: 'failover.io/v1alpha1',
      kind: 'FailoverBudget',
      metadata: { name: meta.name, namespace: meta.namespace ?? 'default' },
      spec: object.spec,
    });
    const name = `${meta.namespace ?? 'default'}/${meta.name}`;
    if (!parsed.success) {
      const errors = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
      if (this.invalid.changed(name, errors)) this.log.warn('Karmada object left out: it does not validate', { kind: 'FailoverBudget', name, errors });
      return undefined;
    }
    if (this.invalid.cleared(name)) this.log.info('Karmada object validates again', { kind: 'FailoverBudget', name });
    return {
      name: meta.name,
      namespace: parsed.data.metadata.namespace,
      uid: meta.uid ?? '',
      createdAt: meta.creationTimestamp ?? new Date(0).toISOString(),
      generation: meta.generation ?? 1,
      labels: meta.labels ?? {},
      annotations: userAnnotations(object),
      spec: parsed.data.spec,
    };
  }
}
