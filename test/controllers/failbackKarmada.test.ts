import { describe, expect, it } from 'vitest';
import { listFailback } from '../../shared/controllers/failback';
import type { ControlPlane, IndexedPlacement, KarmadaConnection, SyncCursor } from '../../shared/controllers/ports';
import { placementsOf } from '../../shared/controllers/state/bindingWrites';
import { evaluateCluster } from '../../shared/controllers/taintEvaluation';
import { KARMADA, KubeApi, KubeApiError, KubeList, KubeObject, KubeResource, PatchType, resourceName } from '../../shared/kube/api';
import { KarmadaBindingStore } from '../../shared/store/karmada/bindingStore';
import { ClusterOverlay, KarmadaClusterStore } from '../../shared/store/karmada/clusterStore';
import { karmadaPropagationPolicyStore, karmadaTaintPolicyStore } from '../../shared/store/karmada/policyStores';
import { MemoryDocumentStore } from '../../shared/store/memory';
import type { BulkDocumentStore } from '../../shared/store/ports';
import { silentLogger } from '../../shared/telemetry/log';
import { loopSecond, LoopState } from '../helpers/memoryLoop';
import { memoryPlane } from '../helpers/memoryPlane';

/**
 * Failback in Karmada mode, on a small in-memory Karmada API server: the same rule and the same path as
 * standalone, with what the app keeps on Karmada's objects in annotations (`failover.io/failback` on the
 * ResourceBinding) and in its own table (the cluster's healthySince), never in a Karmada field. Karmada's
 * scheduler places the binding after our eviction write (done here by hand, as Karmada would).
 */

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const result: Record<string, unknown> = isObject(target) ? structuredClone(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

type Stored = KubeObject & { spec: any; status: any; metadata: KubeObject['metadata'] & { annotations: Record<string, string> } };

/** Objects by key, an integer resourceVersion, merge patches guarded by metadata.resourceVersion, status as a subresource. */
class FakeKarmada implements KubeApi {
  private readonly objects = new Map<string, KubeObject>();
  private version = 100;

  put(resource: KubeResource, object: KubeObject): KubeObject {
    const stored = structuredClone(object);
    stored.metadata.uid ??= `uid-${object.metadata.name}`;
    stored.metadata.resourceVersion = String(++this.version);
    stored.metadata.generation = (this.objects.get(this.key(resource, stored.metadata.name, stored.metadata.namespace))?.metadata.generation ?? 0) + 1;
    this.objects.set(this.key(resource, stored.metadata.name, stored.metadata.namespace), stored);
    return structuredClone(stored);
  }

  /** What is stored, loosely typed for the test's reading. */
  stored(resource: KubeResource, name: string, namespace?: string): Stored {
    return structuredClone(this.objects.get(this.key(resource, name, namespace))!) as Stored;
  }

  async get(resource: KubeResource, name: string, namespace?: string): Promise<KubeObject | undefined> {
    const object = this.objects.get(this.key(resource, name, namespace));
    return object && structuredClone(object);
  }

  async list(resource: KubeResource): Promise<KubeList> {
    const prefix = `${resource.plural}.${resource.group}/`;
    const items = [...this.objects.entries()].filter(([key]) => key.startsWith(prefix)).map(([, object]) => structuredClone(object));
    return { items, resourceVersion: String(this.version) };
  }

  watch(resource: KubeResource): Promise<void> {
    return Promise.reject(new KubeApiError('watch', resourceName(resource), 405, 'MethodNotAllowed', 'not in this fake'));
  }

  async patch(
    resource: KubeResource,
    name: string,
    namespace: string | undefined,
    patch: unknown,
    _type: PatchType,
    subresource?: 'status',
  ): Promise<KubeObject> {
    const key = this.key(resource, name, namespace);
    const current = this.objects.get(key);
    const what = resourceName(resource, name, namespace, subresource);
    if (!current) throw new KubeApiError('patch', what, 404, 'NotFound', '');
    const wanted = (patch as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion;
    if (wanted !== undefined && wanted !== current.metadata.resourceVersion) throw new KubeApiError('patch', what, 409, 'Conflict', 'modified');
    let next: KubeObject;
    if (subresource === 'status') {
      next = structuredClone(current);
      next.status = mergePatch(current.status, (patch as { status?: unknown }).status ?? {});
    } else {
      next = mergePatch(current, patch) as KubeObject;
      next.status = structuredClone(current.status);
      if (JSON.stringify(next.spec) !== JSON.stringify(current.spec)) next.metadata.generation = (current.metadata.generation ?? 1) + 1;
    }
    next.metadata.resourceVersion = String(++this.version);
    this.objects.set(key, next);
    return structuredClone(next);
  }

  async create(resource: KubeResource, namespace: string | undefined, body: KubeObject): Promise<KubeObject> {
    return this.put(resource, { ...body, metadata: { ...body.metadata, ...(namespace ? { namespace } : {}) } });
  }

  private key(resource: KubeResource, name: string, namespace?: string): string {
    return `${resource.plural}.${resource.group}/${resource.namespaced ? (namespace ?? '') : ''}/${name}`;
  }
}

const HOME = 'member1';
const ALT = 'member2';
const WINDOW = 30;

const clusterObject = (name: string, taints: unknown[] = []): KubeObject => ({
  apiVersion: 'cluster.karmada.io/v1alpha1',
  kind: 'Cluster',
  metadata: { name, creationTimestamp: '2026-01-01T00:00:00.000Z' },
  spec: { taints },
  status: { conditions: [{ type: 'Ready', status: 'True', reason: 'ClusterReady', message: '', lastTransitionTime: '2026-01-01T00:00:00.000Z' }] },
});

function karmadaPlane() {
  const m = memoryPlane({ RESOURCE_EVICTION_RATE: '5' });
  const api = new FakeKarmada();
  const plane: ControlPlane = {
    ...m.plane,
    clusters: new KarmadaClusterStore(api, new MemoryDocumentStore<ClusterOverlay>()),
    bindings: new KarmadaBindingStore(api),
    policies: karmadaTaintPolicyStore(api, silentLogger),
    propagationPolicies: karmadaPropagationPolicyStore(api, silentLogger),
    karmada: {
      api,
      cursors: new MemoryDocumentStore<SyncCursor>(),
      connection: new MemoryDocumentStore<KarmadaConnection>(),
      placements: new MemoryDocumentStore<IndexedPlacement>() as unknown as BulkDocumentStore<IndexedPlacement>,
    },
  };
  return { m: { ...m, plane }, api };
}

describe('failback in Karmada mode', () => {
  it('records the home in an annotation, counts in the app’s own table, and goes back through the same path', async () => {
    const { m, api } = karmadaPlane();
    api.put(KARMADA.clusters, clusterObject(HOME));
    api.put(KARMADA.clusters, clusterObject(ALT));
    api.put(KARMADA.propagationPolicies, {
      apiVersion: 'policy.karmada.io/v1alpha1',
      kind: 'PropagationPolicy',
      metadata: { name: 'web', namespace: 'default', annotations: { 'failover.io/failback-after-seconds': String(WINDOW) } },
      spec: { resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }], placement: { clusterAffinity: { clusterNames: [HOME, ALT] } } },
    });
    // Karmada's detector names the policy on the binding (newer Karmada: in annotations).
    api.put(KARMADA.resourceBindings, {
      apiVersion: 'work.karmada.io/v1alpha2',
      kind: 'ResourceBinding',
      metadata: {
        name: 'web-deployment',
        namespace: 'default',
        annotations: { 'propagationpolicy.karmada.io/name': 'web', 'propagationpolicy.karmada.io/namespace': 'default' },
      },
      spec: {
        resource: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', namespace: 'default' },
        replicas: 2,
        placement: { clusterAffinity: { clusterNames: [HOME, ALT] }, spreadConstraints: [{ spreadByField: 'cluster', maxGroups: 1, minGroups: 1 }] },
        clusters: [{ name: HOME, replicas: 2 }],
      },
      status: { schedulerObservedGeneration: 1 },
    });
    const key = 'rb:default:web-deployment';
    const index = async () => m.plane.ledger.upsertPlacements(placementsOf((await m.plane.bindings.get(key))!.value));
    await index();
    for (const name of [HOME, ALT]) await evaluateCluster(m.plane, name);
    expect((await m.plane.clusters.get(HOME))!.value.healthySince).toBeDefined();
    const state: LoopState = { evictions: [], evaluations: [] };

    // Karmada's taint controller taints the home; the watch hands it to the taint manager.
    const tainted = api.stored(KARMADA.clusters, HOME);
    api.put(KARMADA.clusters, {
      ...tainted,
      spec: { taints: [{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', timeAdded: m.clock.now().toISOString() }] },
    });
    await evaluateCluster(m.plane, HOME);
    expect((await m.plane.clusters.get(HOME))!.value.healthySince).toBeUndefined();
    await m.plane.taintManager.send({ cluster: HOME, reason: 'taints-changed' });
    for (let i = 0; i < 4; i++) await loopSecond(m, state);
    let object = api.stored(KARMADA.resourceBindings, 'web-deployment', 'default');
    expect(object.spec.clusters).toEqual([]);
    // Our bookkeeping is an annotation; no field of Karmada's kind is added.
    const entries = JSON.parse(object.metadata.annotations['failover.io/failback']);
    expect(entries).toEqual({ [HOME]: { home: HOME, kept: [], evictedAt: expect.any(String), windowSeconds: WINDOW } });
    expect(Object.keys(object.spec).sort()).toEqual(['clusters', 'gracefulEvictionTasks', 'placement', 'replicas', 'resource']);

    // Karmada's scheduler places it on the other cluster (the watch would index it).
    api.put(KARMADA.resourceBindings, { ...object, spec: { ...object.spec, clusters: [{ name: ALT, replicas: 2 }] } });
    await index();
    expect((await listFailback(m.plane)).bindings).toEqual([expect.objectContaining({ home: HOME, replacedBy: [ALT], state: 'waiting-for-home' })]);

    // The taint goes: the cluster's healthy run starts (kept in the app's table), the count runs.
    api.put(KARMADA.clusters, { ...api.stored(KARMADA.clusters, HOME), spec: { taints: [] } });
    await evaluateCluster(m.plane, HOME);
    const healthySince = (await m.plane.clusters.get(HOME))!.value.healthySince!;
    expect(healthySince).toBe(m.clock.now().toISOString());
    expect(api.stored(KARMADA.clusters, HOME).status.healthySince).toBeUndefined();
    await loopSecond(m, state);
    expect((await listFailback(m.plane)).bindings).toEqual([
      expect.objectContaining({ state: 'counting', dueAt: new Date(Date.parse(healthySince) + WINDOW * 1000).toISOString() }),
    ]);

    for (let i = 0; i < WINDOW + 3; i++) await loopSecond(m, state);
    object = api.stored(KARMADA.resourceBindings, 'web-deployment', 'default');
    expect(object.spec.clusters).toEqual([{ name: HOME, replicas: 2 }]);
    // The home's own task goes in the same write (Karmada's scheduler would keep a cluster with a task out of
    // the placement); the one left keeps the copy on ALT until the home's is healthy.
    expect(object.spec.gracefulEvictionTasks).toEqual([
      expect.objectContaining({ fromCluster: ALT, reason: 'Failback', producer: 'Failback', purgeMode: 'Gracefully' }),
    ]);
    expect(JSON.parse(object.metadata.annotations['failover.io/failback'])[HOME]).toMatchObject({ doneAt: expect.any(String), from: [ALT], healthySince });
    const rows = (await m.plane.ledger.scanEvictions({ cluster: ALT })).map((r) => r.record);
    expect(rows).toEqual([expect.objectContaining({ reason: 'Failback', state: 'done', home: HOME })]);
    expect(Date.parse(rows[0].executedAt!) - (Date.parse(healthySince) + WINDOW * 1000)).toBeLessThanOrEqual(1000);
  });
});
