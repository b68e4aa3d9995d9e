import { describe, expect, it } from 'vitest';
import type { ClusterTaint, Condition } from '../../shared/failover/model';
import { KARMADA, KubeApi, KubeApiError, KubeList, KubeObject, KubeResource, KubeVerb, ListOptions, PatchType, resourceName } from '../../shared/kube/api';
import { bindingKeyOf, bindingPatch, KarmadaBindingStore, toBindingRecord } from '../../shared/store/karmada/bindingStore';
import { ClusterOverlay, KarmadaClusterStore, toRecord } from '../../shared/store/karmada/clusterStore';
import { KubeMirroredEventLog, microTime } from '../../shared/store/karmada/kubeEvents';
import { ManagedInKarmadaError } from '../../shared/store/karmada/kubeObjects';
import { karmadaPropagationPolicyStore, karmadaTaintPolicyStore } from '../../shared/store/karmada/policyStores';
import { MemoryDocumentStore, MemoryEventLog } from '../../shared/store/memory';
import { ConcurrencyError, EventRecord } from '../../shared/store/ports';
import type { ClusterRecord } from '../../shared/store/records';
import type { Logger } from '../../shared/telemetry/log';

// ---------------------------------------------------------------------------------------------
// A tiny in-memory Kubernetes API: objects by key, an integer resourceVersion, JSON merge patches guarded
// by metadata.resourceVersion (409 when stale), status subresource patches that touch only `.status`.

interface Call {
  verb: KubeVerb;
  resource: string;
  name?: string;
  namespace?: string;
  type?: PatchType;
  subresource?: string;
  body?: any;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** RFC 7386: objects merge key by key, `null` deletes, anything else (arrays included) replaces. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const result: Record<string, unknown> = isObject(target) ? structuredClone(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

class FakeKubeApi implements KubeApi {
  readonly calls: Call[] = [];
  private readonly objects = new Map<string, KubeObject>();
  private readonly failures = new Map<KubeVerb, KubeApiError>();
  private version = 100;

  /** What someone else does (Karmada, a person): stored with a new resourceVersion, not counted as a call. */
  put(resource: KubeResource, object: KubeObject): KubeObject {
    const stored = structuredClone(object);
    stored.metadata.uid ??= `uid-${object.metadata.name}`;
    stored.metadata.resourceVersion = String(++this.version);
    this.objects.set(this.key(resource, stored.metadata.name, stored.metadata.namespace), stored);
    return structuredClone(stored);
  }

  stored(resource: KubeResource, name: string, namespace?: string): KubeObject | undefined {
    const object = this.objects.get(this.key(resource, name, namespace));
    return object && structuredClone(object);
  }

  failNext(verb: KubeVerb, error: KubeApiError): void {
    this.failures.set(verb, error);
  }

  writes(): Call[] {
    return this.calls.filter((c) => c.verb === 'patch' || c.verb === 'create');
  }

  async get(resource: KubeResource, name: string, namespace?: string): Promise<KubeObject | undefined> {
    this.enter({ verb: 'get', resource: resource.plural, name, namespace });
    return this.stored(resource, name, namespace);
  }

  async list(resource: KubeResource, options: ListOptions = {}): Promise<KubeList> {
    this.enter({ verb: 'list', resource: resource.plural });
    const prefix = `${resource.plural}.${resource.group}/`;
    const items = [...this.objects.entries()]
      .filter(([key, object]) => key.startsWith(prefix) && (!options.namespace || object.metadata.namespace === options.namespace))
      .map(([, object]) => structuredClone(object));
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
    type: PatchType,
    subresource?: 'status',
  ): Promise<KubeObject> {
    this.enter({ verb: 'patch', resource: resource.plural, name, namespace, type, subresource, body: structuredClone(patch) });
    const what = resourceName(resource, name, namespace, subresource);
    if (type !== 'merge') throw new KubeApiError('patch', what, 415, 'UnsupportedMediaType', 'only merge patches in this fake');
    const key = this.key(resource, name, namespace);
    const current = this.objects.get(key);
    if (!current) throw new KubeApiError('patch', what, 404, 'NotFound', '');
    const body = patch as { metadata?: { resourceVersion?: string } };
    const wanted = body.metadata?.resourceVersion;
    if (wanted !== undefined && wanted !== current.metadata.resourceVersion) {
      throw new KubeApiError('patch', what, 409, 'Conflict', 'the object has been modified; please apply your changes to the latest version and try again');
    }
    let next: KubeObject;
    if (subresource === 'status') {
      next = structuredClone(current);
      const status = mergePatch(current.status, (patch as { status?: unknown }).status ?? {});
      next.status = status;
    } else {
      next = mergePatch(current, patch) as KubeObject;
      // The main resource of a kind with a status subresource ignores status; the server keeps identity.
      if (current.status === undefined) delete next.status;
      else next.status = structuredClone(current.status);
      next.metadata = { ...next.metadata, name: current.metadata.name, uid: current.metadata.uid };
    }
    next.metadata.resourceVersion = String(++this.version);
    this.objects.set(key, next);
    return structuredClone(next);
  }

  async create(resource: KubeResource, namespace: string | undefined, body: KubeObject): Promise<KubeObject> {
    this.enter({ verb: 'create', resource: resource.plural, name: body.metadata.name, namespace, body: structuredClone(body) });
    const key = this.key(resource, body.metadata.name, namespace);
    if (this.objects.has(key)) {
      throw new KubeApiError('create', resourceName(resource, body.metadata.name, namespace), 409, 'AlreadyExists', 'already exists');
    }
    return this.put(resource, { ...body, metadata: { ...body.metadata, ...(namespace ? { namespace } : {}) } });
  }

  private enter(call: Call): void {
    this.calls.push(call);
    const failure = this.failures.get(call.verb);
    if (failure) {
      this.failures.delete(call.verb);
      throw failure;
    }
  }

  private key(resource: KubeResource, name: string, namespace?: string): string {
    return `${resource.plural}.${resource.group}/${resource.namespaced ? (namespace ?? '') : ''}/${name}`;
  }
}

function recordingLogger(): Logger & { warnings: Array<{ message: string; fields?: Record<string, unknown> }> } {
  const warnings: Array<{ message: string; fields?: Record<string, unknown> }> = [];
  return { warnings, debug: () => undefined, info: () => undefined, warn: (message, fields) => warnings.push({ message, fields }), error: () => undefined };
}

const T0 = '2026-11-22T10:00:00.000Z';
const T1 = '2026-11-22T10:05:00.000Z';
const T2 = '2026-11-22T10:10:00.000Z';
const OWNERS = 'failover.io/taint-owners';
const NOT_READY = 'cluster.karmada.io/not-ready';
const UNREACHABLE = 'cluster.karmada.io/unreachable';

// ---------------------------------------------------------------------------------------------
// Clusters

/** Three taints: one a policy holds, one a person put there (no owner entry), one of an effect the app does not act on. */
function clusterObject(): KubeObject {
  return {
    apiVersion: 'cluster.karmada.io/v1alpha1',
    kind: 'Cluster',
    metadata: {
      name: 'member1',
      uid: 'uid-member1',
      generation: 3,
      creationTimestamp: T0,
      labels: { region: 'eu' },
      annotations: {
        team: 'payments',
        [OWNERS]: JSON.stringify({ [`${NOT_READY}:NoSchedule`]: { owners: ['not-ready'], manual: false } }),
        'kubectl.kubernetes.io/last-applied-configuration': '{"kind":"Cluster"}',
      },
    },
    spec: {
      apiEndpoint: 'https://m1:6443',
      region: 'eu-west-1',
      taints: [
        { key: NOT_READY, effect: 'NoSchedule', timeAdded: T1 },
        { key: 'maintenance', value: 'disk', effect: 'NoExecute', timeAdded: T1 },
        { key: 'soft', value: 'x', effect: 'FutureEffect', timeAdded: T1 },
      ],
    },
    status: {
      conditions: [
        { type: 'Ready', status: 'False', reason: 'ClusterNotReachable', message: 'cluster is not reachable', lastTransitionTime: T1 },
        { type: 'DiskPressure', status: 'True', reason: 'Pressure', message: '', lastTransitionTime: T0 },
      ],
    },
  };
}

const OVERLAY: ClusterOverlay = {
  policyWindows: { 'not-ready': { matched: true, since: T1, fingerprint: 'f1' } },
  lastReportAt: T2,
  probe: { outcome: 'unreachable', since: T1 },
};

const SOFT_WIRE = { key: 'soft', value: 'x', effect: 'FutureEffect', timeAdded: T1 };
const NOT_READY_WIRE = { key: NOT_READY, effect: 'NoSchedule', timeAdded: T1 };
const MAINTENANCE_WIRE = { key: 'maintenance', value: 'disk', effect: 'NoExecute', timeAdded: T1 };

const withSpec = (patch: Record<string, unknown>, metadata: Record<string, unknown> = {}): KubeObject => {
  const object = clusterObject();
  return { ...object, metadata: { ...object.metadata, ...metadata }, spec: { ...(object.spec as object), ...patch } };
};

describe('toRecord (a Karmada Cluster as the controllers see it)', () => {
  const CASES: Array<[string, KubeObject, ClusterOverlay | undefined, (record: ClusterRecord) => unknown, unknown]> = [
    [
      'conditions come from status.conditions (an empty message is left out)',
      clusterObject(),
      undefined,
      (r) => r.conditions,
      [
        { type: 'Ready', status: 'False', reason: 'ClusterNotReachable', message: 'cluster is not reachable', lastTransitionTime: T1 },
        { type: 'DiskPressure', status: 'True', reason: 'Pressure', lastTransitionTime: T0 },
      ],
    ],
    [
      'a taint a policy holds: owners from the annotation',
      clusterObject(),
      undefined,
      (r) => r.taints.find((t) => t.key === NOT_READY),
      { key: NOT_READY, effect: 'NoSchedule', timeAdded: T1, owners: ['not-ready'], manual: false },
    ],
    [
      'a taint with no owner entry is manual, held by no policy',
      clusterObject(),
      undefined,
      (r) => r.taints.find((t) => t.key === 'maintenance'),
      { key: 'maintenance', value: 'disk', effect: 'NoExecute', timeAdded: T1, owners: [], manual: true },
    ],
    [
      'Karmada and seed ownership both come through',
      withSpec(
        {},
        {
          annotations: {
            [OWNERS]: JSON.stringify({
              [`${NOT_READY}:NoSchedule`]: { owners: ['k'], manual: false, karmadaOwners: ['k'] },
              'maintenance:NoExecute': { owners: [], manual: false, leftBy: 'gone' },
            }),
          },
        },
      ),
      undefined,
      (r) => r.taints.map((t) => [t.key, t.owners, t.manual, t.karmadaOwners, t.leftBy]),
      [
        [NOT_READY, ['k'], false, ['k'], undefined],
        ['maintenance', [], false, undefined, 'gone'],
      ],
    ],
    [
      'an unreadable owners annotation: every taint is manual',
      withSpec({}, { annotations: { [OWNERS]: '{not json' } }),
      undefined,
      (r) => r.taints.map((t) => [t.key, t.owners, t.manual]),
      [
        [NOT_READY, [], true],
        ['maintenance', [], true],
      ],
    ],
    [
      'a taint of an unknown effect (FutureEffect) is not in record.taints',
      clusterObject(),
      undefined,
      (r) => r.taints.map((t) => t.key),
      [NOT_READY, 'maintenance'],
    ],
    [
      'a taint without timeAdded gets the creation time',
      withSpec({ taints: [{ key: 'maintenance', effect: 'NoSchedule' }] }),
      undefined,
      (r) => r.taints.map((t) => t.timeAdded),
      [T0],
    ],
    ["the app's own annotations are not the object's annotations", clusterObject(), undefined, (r) => r.annotations, { team: 'payments' }],
    [
      'metadata and the rest of the spec (taints are not in spec)',
      clusterObject(),
      undefined,
      (r) => [r.name, r.uid, r.createdAt, r.generation, r.labels, r.spec, r.registeredBy],
      ['member1', 'uid-member1', T0, 3, { region: 'eu' }, { apiEndpoint: 'https://m1:6443', region: 'eu-west-1' }, 'apply'],
    ],
    [
      'overlay fields come through',
      clusterObject(),
      OVERLAY,
      (r) => [r.policyWindows, r.probe, r.lastReportAt],
      [OVERLAY.policyWindows, OVERLAY.probe, OVERLAY.lastReportAt],
    ],
    [
      'no overlay: no windows, no probe, no heartbeat',
      clusterObject(),
      undefined,
      (r) => [r.policyWindows, r.probe, r.lastReportAt],
      [{}, undefined, undefined],
    ],
    [
      'no spec, no status: an empty record',
      { apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name: 'bare', resourceVersion: '1' } },
      undefined,
      (r) => [r.taints, r.conditions, r.spec, r.annotations, r.createdAt, r.generation],
      [[], [], {}, {}, new Date(0).toISOString(), 1],
    ],
  ];

  it.each(CASES)('%s', (_name, object, overlay, select, expected) => {
    expect(select(toRecord(object, overlay))).toEqual(expected);
  });
});

interface ClusterFixture {
  api: FakeKubeApi;
  overlays: MemoryDocumentStore<ClusterOverlay>;
  store: KarmadaClusterStore;
  value: ClusterRecord;
  etag: string;
  rv: string;
}

async function clusterFixture(object: KubeObject = clusterObject(), overlay: ClusterOverlay | undefined = OVERLAY): Promise<ClusterFixture> {
  const api = new FakeKubeApi();
  const rv = api.put(KARMADA.clusters, object).metadata.resourceVersion!;
  const overlays = new MemoryDocumentStore<ClusterOverlay>();
  if (overlay) await overlays.create('member1', overlay);
  const store = new KarmadaClusterStore(api, overlays);
  const read = (await store.get('member1'))!;
  api.calls.length = 0;
  return { api, overlays, store, value: read.value, etag: read.etag, rv };
}

const taint = (key: string, effect: ClusterTaint['effect'], owners: string[], extra: Partial<ClusterTaint> = {}): ClusterTaint => ({
  key,
  effect,
  timeAdded: T2,
  owners,
  manual: false,
  ...extra,
});
const readyTrue: Condition = {
  type: 'Ready',
  status: 'True',
  reason: 'ClusterReady',
  message: 'cluster is healthy and ready to accept workloads',
  lastTransitionTime: T2,
};
const wireConditions = (conditions: object[]) => ({ conditions });

/** `rv(0)` is the resourceVersion read, `rv(1)` the one after the first write. */
type ExpectedPatch = (rv: (n: number) => string) => { subresource?: 'status'; body: unknown };

const REPLACE_CASES: Array<[string, (record: ClusterRecord) => void, ExpectedPatch[]]> = [
  ['nothing changed: no request', () => undefined, []],
  [
    'only the overlay changed (a window opens): no Kubernetes request',
    (r) => {
      r.policyWindows = { ...r.policyWindows, unreachable: { matched: true, since: T2, fingerprint: 'f2' } };
      r.lastReportAt = T2;
    },
    [],
  ],
  [
    'a policy adds a taint: one merge patch of spec.taints (FutureEffect kept) and the owners, no status patch',
    (r) => r.taints.push(taint(UNREACHABLE, 'NoExecute', ['unreachable'])),
    [
      (rv) => ({
        body: {
          metadata: {
            resourceVersion: rv(0),
            annotations: {
              [OWNERS]: JSON.stringify({
                [`${NOT_READY}:NoSchedule`]: { owners: ['not-ready'], manual: false },
                [`${UNREACHABLE}:NoExecute`]: { owners: ['unreachable'], manual: false },
              }),
            },
          },
          // Taints that stay keep their places (the FutureEffect one too); the new one is appended.
          spec: { taints: [NOT_READY_WIRE, MAINTENANCE_WIRE, SOFT_WIRE, { key: UNREACHABLE, effect: 'NoExecute', timeAdded: T2 }] },
        },
      }),
    ],
  ],
  [
    'a policy adopts the manual taint: only the owners change (spec.taints is not rewritten)',
    (r) => {
      r.taints = r.taints.map((t) => (t.key === 'maintenance' ? { ...t, owners: ['maint'] } : t));
    },
    [
      (rv) => ({
        body: {
          metadata: {
            resourceVersion: rv(0),
            annotations: {
              [OWNERS]: JSON.stringify({
                [`${NOT_READY}:NoSchedule`]: { owners: ['not-ready'], manual: false },
                'maintenance:NoExecute': { owners: ['maint'], manual: true },
              }),
            },
          },
        },
      }),
    ],
  ],
  [
    'the last policy-held taint goes: the owners annotation is deleted (null), FutureEffect kept',
    (r) => {
      r.taints = r.taints.filter((t) => t.key !== NOT_READY);
    },
    [(rv) => ({ body: { metadata: { resourceVersion: rv(0), annotations: { [OWNERS]: null } }, spec: { taints: [MAINTENANCE_WIRE, SOFT_WIRE] } } })],
  ],
  [
    'only conditions change: one status patch',
    (r) => {
      r.conditions = [readyTrue, r.conditions[1]];
    },
    [
      (rv) => ({
        subresource: 'status',
        body: {
          metadata: { resourceVersion: rv(0) },
          status: wireConditions([readyTrue, { type: 'DiskPressure', status: 'True', reason: 'Pressure', message: '', lastTransitionTime: T0 }]),
        },
      }),
    ],
  ],
  [
    'a reported condition without a reason is written with reason Reported<status>',
    (r) => {
      r.conditions = [{ type: 'Ready', status: 'True', lastTransitionTime: T2 }];
    },
    [
      (rv) => ({
        subresource: 'status',
        body: {
          metadata: { resourceVersion: rv(0) },
          status: wireConditions([{ type: 'Ready', status: 'True', reason: 'ReportedTrue', message: '', lastTransitionTime: T2 }]),
        },
      }),
    ],
  ],
  [
    'conditions and taints: the status patch, then the taints patch at the version the first one made',
    (r) => {
      r.conditions = [readyTrue];
      r.taints = r.taints.filter((t) => t.key !== NOT_READY);
    },
    [
      (rv) => ({ subresource: 'status', body: { metadata: { resourceVersion: rv(0) }, status: wireConditions([readyTrue]) } }),
      (rv) => ({ body: { metadata: { resourceVersion: rv(1), annotations: { [OWNERS]: null } }, spec: { taints: [MAINTENANCE_WIRE, SOFT_WIRE] } } }),
    ],
  ],
];

describe('KarmadaClusterStore.replace', () => {
  it.each(REPLACE_CASES)('%s', async (_name, change, expected) => {
    const { api, store, value, etag, rv } = await clusterFixture();
    const next = structuredClone(value);
    change(next);
    await store.replace('member1', next, etag);
    const at = (n: number) => String(Number(rv) + n);
    expect(api.calls.map((c) => ({ verb: c.verb, resource: c.resource, type: c.type, subresource: c.subresource, body: c.body }))).toEqual(
      expected.map((patch) => {
        const { subresource, body } = patch(at);
        return { verb: 'patch', resource: 'clusters', type: 'merge', subresource, body };
      }),
    );
    // Unknown-effect taints are still there, whatever was written.
    expect((api.stored(KARMADA.clusters, 'member1')!.spec as any).taints).toContainEqual(SOFT_WIRE);
  });

  it.each(REPLACE_CASES)('what is written reads back as written: %s', async (_name, change) => {
    const { store, value, etag } = await clusterFixture();
    const next = structuredClone(value);
    change(next);
    await store.replace('member1', next, etag);
    const fresh = new KarmadaClusterStore(store['api'], store['overlays']);
    const reread = (await fresh.get('member1'))!.value;
    // A condition written without a reason reads back with the reason it was given.
    const expected = {
      ...next,
      conditions: next.conditions.map((c) => ({ ...c, reason: c.reason ?? `Reported${c.status}` })),
    };
    expect(reread).toEqual(expected);
  });

  it('a PreferNoExecute (or PreferNoSchedule) taint, which Karmada refuses in spec.taints, is held in an annotation and reads back', async () => {
    const { api, store, value, etag } = await clusterFixture();
    const prefer = taint(UNREACHABLE, 'PreferNoExecute', ['unreachable']);
    const etag2 = await store.replace('member1', { ...value, taints: [...value.taints, prefer] }, etag);
    const stored = api.stored(KARMADA.clusters, 'member1')!;
    // spec.taints as it was: only the effects Karmada's Cluster validation takes.
    expect((stored.spec as { taints: Array<{ effect: string }> }).taints.map((t) => t.effect)).toEqual(['NoSchedule', 'NoExecute', 'FutureEffect']);
    expect(JSON.parse(stored.metadata.annotations!['failover.io/taints'])).toEqual([{ key: UNREACHABLE, effect: 'PreferNoExecute', timeAdded: T2 }]);
    const fresh = new KarmadaClusterStore(store['api'], store['overlays']);
    const reread = (await fresh.get('member1'))!;
    expect(reread.value.taints).toContainEqual(prefer);
    // Removed: the annotation goes (null in the merge patch).
    await store.replace('member1', { ...reread.value, taints: reread.value.taints.filter((t) => t.effect !== 'PreferNoExecute') }, etag2);
    expect(api.stored(KARMADA.clusters, 'member1')!.metadata.annotations?.['failover.io/taints']).toBeUndefined();
  });

  it('the overlay is written to the overlay store, not to Karmada', async () => {
    const { api, overlays, store, value, etag } = await clusterFixture();
    const window = { matched: false, since: T2, fingerprint: 'f3' };
    await store.replace('member1', { ...value, policyWindows: { other: window } }, etag);
    expect(api.calls).toEqual([]);
    expect((await overlays.get('member1'))!.value).toEqual({ ...OVERLAY, policyWindows: { other: window } });
  });

  const STALE: Array<[string, 'same store' | 'new store', (record: ClusterRecord) => void]> = [
    ['taints, with the object cached from the read', 'same store', (r) => r.taints.push(taint(UNREACHABLE, 'NoExecute', ['unreachable']))],
    ['conditions, with the object cached from the read', 'same store', (r) => (r.conditions = [readyTrue])],
    [
      'conditions and taints, with the object cached from the read',
      'same store',
      (r) => {
        r.conditions = [readyTrue];
        r.taints = [];
      },
    ],
    ['taints, from another store instance (reads the object again)', 'new store', (r) => r.taints.push(taint(UNREACHABLE, 'NoExecute', ['unreachable']))],
    ['conditions, from another store instance', 'new store', (r) => (r.conditions = [readyTrue])],
  ];

  it.each(STALE)('a stale etag is a ConcurrencyError and writes nothing to Karmada: %s', async (_name, which, change) => {
    const { api, overlays, store, value, etag } = await clusterFixture();
    // Someone else changes the Cluster after our read.
    const theirs = api.put(KARMADA.clusters, {
      ...api.stored(KARMADA.clusters, 'member1')!,
      metadata: { ...clusterObject().metadata, labels: { region: 'us' } },
    });
    const next = structuredClone(value);
    change(next);
    const writer = which === 'same store' ? store : new KarmadaClusterStore(api, overlays);
    await expect(writer.replace('member1', next, etag)).rejects.toBeInstanceOf(ConcurrencyError);
    expect(api.stored(KARMADA.clusters, 'member1')).toEqual(theirs);
    if (which === 'new store') expect(api.writes()).toEqual([]);
  });

  it('a vanished Cluster is a ConcurrencyError', async () => {
    const { overlays, value, etag } = await clusterFixture();
    const store = new KarmadaClusterStore(new FakeKubeApi(), overlays);
    await expect(store.replace('member1', value, etag)).rejects.toBeInstanceOf(ConcurrencyError);
  });

  it('a 409 on the patch is a ConcurrencyError; other API errors stay KubeApiErrors', async () => {
    const { api, store, value, etag } = await clusterFixture();
    const next = { ...value, conditions: [readyTrue] };
    api.failNext('patch', new KubeApiError('patch', 'clusters/status', 409, 'Conflict', 'modified'));
    await expect(store.replace('member1', next, etag)).rejects.toBeInstanceOf(ConcurrencyError);
    api.failNext('patch', new KubeApiError('patch', 'clusters/status', 503, 'ServiceUnavailable', ''));
    const error = await store.replace('member1', next, etag).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KubeApiError);
    expect(error).not.toBeInstanceOf(ConcurrencyError);
  });

  const FOLLOW_UP: Array<[string, ClusterOverlay | undefined]> = [
    ['with an overlay row', OVERLAY],
    ['without an overlay row yet (the first write creates it)', undefined],
  ];

  it.each(FOLLOW_UP)('the returned etag is the one a read gives, and works for the next replace (%s)', async (_name, overlay) => {
    const { api, store, value, etag } = await clusterFixture(clusterObject(), overlay);
    const first = { ...value, taints: [...value.taints, taint(UNREACHABLE, 'NoExecute', ['unreachable'])] };
    const etag1 = await store.replace('member1', first, etag);
    expect(etag1).not.toBe(etag);
    expect(etag1).toBe((await new KarmadaClusterStore(api, store['overlays']).get('member1'))!.etag);

    api.calls.length = 0;
    const second = { ...first, conditions: [readyTrue] };
    const etag2 = await store.replace('member1', second, etag1);
    expect(api.writes().map((c) => [c.subresource, c.body.metadata.resourceVersion])).toEqual([['status', etag1.split('|')[0]]]);
    // The same etag again is stale now.
    await expect(store.replace('member1', { ...second, conditions: [] }, etag1)).rejects.toBeInstanceOf(ConcurrencyError);
    // And the newest still works, costing nothing when nothing changes.
    api.calls.length = 0;
    expect(await store.replace('member1', second, etag2)).toBe(etag2);
    expect(api.calls).toEqual([]);
  });

  // Changing nothing must cost no request, whatever the shape of what Karmada holds.
  const UNCHANGED: Array<[string, KubeObject]> = [
    ['a FutureEffect taint listed before the taints the app acts on', withSpec({ taints: [SOFT_WIRE, NOT_READY_WIRE, MAINTENANCE_WIRE] })],
    ['a taint Karmada left without timeAdded', withSpec({ taints: [{ key: NOT_READY, effect: 'NoSchedule' }, MAINTENANCE_WIRE, SOFT_WIRE] })],
  ];

  // Regression: the change check once compared the raw list, so a foreign taint not listed last, or a taint
  // without timeAdded (which toRecord fills with creationTimestamp), cost a patch that reordered the taints
  // or wrote an invented timeAdded.
  it.each(UNCHANGED)('an unchanged record costs no request: %s', async (_name, object) => {
    const { api, store, value, etag } = await clusterFixture(object);
    await store.replace('member1', structuredClone(value), etag);
    expect(api.calls).toEqual([]);
  });

  it('Clusters are not created or deleted through the app', async () => {
    const { store, value } = await clusterFixture();
    await expect(store.create()).rejects.toBeInstanceOf(ManagedInKarmadaError);
    await expect(store.delete()).rejects.toBeInstanceOf(ManagedInKarmadaError);
    expect(value.name).toBe('member1');
  });

  it('list joins each Cluster with its overlay and gives the same etag as get', async () => {
    const { api, store, etag } = await clusterFixture();
    api.put(KARMADA.clusters, { ...clusterObject(), metadata: { name: 'member2', creationTimestamp: T0 } });
    const listed = await store.list();
    expect(listed.map((e) => [e.id, e.value.policyWindows])).toEqual([
      ['member1', OVERLAY.policyWindows],
      ['member2', {}],
    ]);
    expect(listed[0].etag).toBe(etag);
    expect(listed[1].etag).toMatch(/^\d+\|$/);
  });
});

// ---------------------------------------------------------------------------------------------
// Bindings

const WORKLOAD_STATE = 'failover.io/workload-state';
const EVICTION_MARKS = 'failover.io/eviction-marks';

function bindingObject(spec: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'work.karmada.io/v1alpha2',
    kind: 'ResourceBinding',
    metadata: { name: 'web-deployment', namespace: 'shop', uid: 'uid-web', generation: 4, creationTimestamp: T0, annotations: { team: 'shop' } },
    spec: {
      resource: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name: 'web' },
      replicas: 2,
      clusters: [
        { name: 'member1', replicas: 1 },
        { name: 'member2', replicas: 1 },
      ],
      placement: { clusterAffinity: { clusterNames: ['member1', 'member2', 'member3'] } },
      failover: { application: { decisionConditions: {} } },
      ...spec,
    },
    status: {
      schedulerObservedGeneration: 4,
      aggregatedStatus: [
        { clusterName: 'member1', applied: true, health: 'Unhealthy', status: { readyReplicas: 0 } },
        { clusterName: 'member2', applied: true, health: 'Healthy' },
      ],
    },
  };
}

const RB_ID = 'rb:shop:web-deployment';

async function bindingFixture(object: KubeObject = bindingObject()) {
  const api = new FakeKubeApi();
  const rv = api.put(KARMADA.resourceBindings, object).metadata.resourceVersion!;
  const store = new KarmadaBindingStore(api);
  const read = (await store.get(RB_ID))!;
  api.calls.length = 0;
  return { api, store, value: read.value, etag: read.etag, rv };
}

describe('bindingKeyOf', () => {
  const CASES: Array<[string, KubeObject, 'ResourceBinding' | 'ClusterResourceBinding', string]> = [
    ['a ResourceBinding', { metadata: { name: 'web', namespace: 'shop' } }, 'ResourceBinding', 'rb:shop:web'],
    ['a ResourceBinding without a namespace', { metadata: { name: 'web' } }, 'ResourceBinding', 'rb:default:web'],
    ['a ClusterResourceBinding', { metadata: { name: 'crds' } }, 'ClusterResourceBinding', 'crb:crds'],
  ];
  it.each(CASES)('%s', (_name, object, kind, key) => expect(bindingKeyOf(object, kind)).toBe(key));
});

describe('toBindingRecord', () => {
  const CASES: Array<[string, Record<string, unknown>, (record: ReturnType<typeof toBindingRecord>) => unknown, unknown]> = [
    [
      'application failover without tolerationSeconds gets the defaults',
      { failover: { application: { decisionConditions: {} } } },
      (r) => r.spec.failover,
      { application: { decisionConditions: { tolerationSeconds: 10 }, purgeMode: 'Gracefully', gracePeriodSeconds: 600, blockPredecessorSeconds: 600 } },
    ],
    [
      'application failover without decisionConditions gets them',
      { failover: { application: {} } },
      (r) => r.spec.failover?.application?.decisionConditions,
      { tolerationSeconds: 10 },
    ],
    [
      'a tolerationSeconds Karmada has is kept',
      { failover: { application: { decisionConditions: { tolerationSeconds: 45 } } } },
      (r) => r.spec.failover?.application?.decisionConditions,
      { tolerationSeconds: 45 },
    ],
    [
      'cluster failover gets the defaults',
      { failover: { cluster: {} } },
      (r) => r.spec.failover,
      { cluster: { purgeMode: 'Gracefully', tolerationSeconds: 300 } },
    ],
    [
      'placement gets the defaults',
      { placement: { replicaScheduling: {} } },
      (r) => r.spec.placement,
      { replicaScheduling: { replicaSchedulingType: 'Duplicated' } },
    ],
    [
      'a failover that does not validate is left as Karmada has it',
      { failover: { application: { decisionConditions: { tolerationSeconds: -1 } } } },
      (r) => r.spec.failover,
      { application: { decisionConditions: { tolerationSeconds: -1 } } },
    ],
    ['no failover: none invented', { failover: undefined }, (r) => r.spec.failover, undefined],
    [
      'the record names the binding (rev is the generation)',
      {},
      (r) => [r.kind, r.namespace, r.name, r.uid, r.generation, r.rev, r.createdAt, r.annotations],
      ['ResourceBinding', 'shop', 'web-deployment', 'uid-web', 4, 4, T0, { team: 'shop' }],
    ],
    [
      'aggregatedStatus as Karmada has it, without extras',
      {},
      (r) => r.status.aggregatedStatus,
      [
        { clusterName: 'member1', applied: true, health: 'Unhealthy', status: { readyReplicas: 0 } },
        { clusterName: 'member2', applied: true, health: 'Healthy' },
      ],
    ],
  ];

  it.each(CASES)('%s', (_name, spec, select, expected) => {
    expect(select(toBindingRecord(bindingObject(spec), 'ResourceBinding'))).toEqual(expected);
  });

  it('a ClusterResourceBinding has no namespace', () => {
    const object = { ...bindingObject(), kind: 'ClusterResourceBinding', metadata: { name: 'crds', resourceVersion: '1' } };
    const record = toBindingRecord(object, 'ClusterResourceBinding');
    expect([record.kind, 'namespace' in record, record.name]).toEqual(['ClusterResourceBinding', false, 'crds']);
  });
});

/** An eviction from member1, as the taint manager writes it. */
function evict(record: ReturnType<typeof toBindingRecord>): void {
  record.spec.clusters = record.spec.clusters!.filter((c) => c.name !== 'member1');
  record.spec.gracefulEvictionTasks = [
    ...(record.spec.gracefulEvictionTasks ?? []),
    { fromCluster: 'member1', replicas: 1, reason: 'TaintUntolerated', producer: 'TaintManager', purgeMode: 'Gracefully', creationTimestamp: T2 },
  ];
  record.evictionMarks = { member1: { decision: T2, at: T2 } };
}

const EXTRAS = { creationTimestamp: T0, settled: true, unhealthySince: T1, failoverHeld: 'no other cluster to go to' };

describe('bindingPatch / KarmadaBindingStore.replace', () => {
  it('an eviction is one merge patch: resourceVersion, spec.clusters, spec.gracefulEvictionTasks and the marks; never status', async () => {
    const { api, store, value, etag, rv } = await bindingFixture();
    const next = structuredClone(value);
    evict(next);
    const written = await store.replace(RB_ID, next, etag);
    expect(api.calls).toEqual([
      {
        verb: 'patch',
        resource: 'resourcebindings',
        name: 'web-deployment',
        namespace: 'shop',
        type: 'merge',
        subresource: undefined,
        body: {
          metadata: { resourceVersion: rv, annotations: { [EVICTION_MARKS]: JSON.stringify({ member1: { decision: T2, at: T2 } }) } },
          spec: {
            clusters: [{ name: 'member2', replicas: 1 }],
            gracefulEvictionTasks: [
              { fromCluster: 'member1', replicas: 1, reason: 'TaintUntolerated', producer: 'TaintManager', purgeMode: 'Gracefully', creationTimestamp: T2 },
            ],
          },
        },
      },
    ]);
    const stored = api.stored(KARMADA.resourceBindings, 'web-deployment', 'shop')!;
    expect(stored.status).toEqual(bindingObject().status);
    // The schema defaults of the record are not written back.
    expect((stored.spec as any).failover).toEqual({ application: { decisionConditions: {} } });
    expect(written).toBe(stored.metadata.resourceVersion);
  });

  const NO_WRITE: Array<[string, (record: ReturnType<typeof toBindingRecord>) => void]> = [
    ['nothing changed (the defaults the record got from the schemas included)', () => undefined],
    [
      'only what Karmada writes changed (health, conditions, placement)',
      (r) => {
        r.status.aggregatedStatus![0].health = 'Healthy';
        r.status.conditions = [{ type: 'Scheduled', status: 'True', lastTransitionTime: T2 }];
        r.spec.placement = { clusterAffinity: { clusterNames: ['member9'] } };
      },
    ],
  ];

  it.each(NO_WRITE)('no request: %s', async (_name, change) => {
    const { api, store, value, etag } = await bindingFixture();
    const next = structuredClone(value);
    change(next);
    expect(bindingPatch(api.stored(KARMADA.resourceBindings, 'web-deployment', 'shop')!, next)).toBeUndefined();
    expect(await store.replace(RB_ID, next, etag)).toBe(etag);
    expect(api.calls).toEqual([]);
  });

  const ANNOTATED: Array<[string, (record: ReturnType<typeof toBindingRecord>) => void, Record<string, string | null>]> = [
    [
      'aggregatedStatus extras and the queued check go to the workload-state annotation',
      (r) => {
        r.status.aggregatedStatus![0] = { ...r.status.aggregatedStatus![0], ...EXTRAS };
        r.status.applicationFailoverCheckAt = T2;
      },
      { [WORKLOAD_STATE]: JSON.stringify({ clusters: { member1: EXTRAS }, checkAt: T2 }) },
    ],
    [
      'activeEvictionHistory and the traceparent go to their annotations',
      (r) => {
        r.spec.activeEvictionHistory = [{ clusterName: 'member1', creationTimestamp: T2 }];
        r.traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
      },
      {
        'failover.io/eviction-history': JSON.stringify([{ clusterName: 'member1', creationTimestamp: T2 }]),
        'failover.io/traceparent': '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      },
    ],
  ];

  it.each(ANNOTATED)('%s, and read back through toBindingRecord', async (_name, change, annotations) => {
    const { api, store, value, etag, rv } = await bindingFixture();
    const next = structuredClone(value);
    change(next);
    await store.replace(RB_ID, next, etag);
    expect(api.writes().map((c) => c.body)).toEqual([{ metadata: { resourceVersion: rv, annotations } }]);
    const stored = api.stored(KARMADA.resourceBindings, 'web-deployment', 'shop')!;
    expect(stored.status).toEqual(bindingObject().status);
    expect(toBindingRecord(stored, 'ResourceBinding')).toEqual(next);
  });

  it('annotations that become empty are deleted (null)', async () => {
    const { api, store, value, etag } = await bindingFixture();
    const next = structuredClone(value);
    evict(next);
    next.status.aggregatedStatus![0] = { ...next.status.aggregatedStatus![0], ...EXTRAS };
    const etag1 = await store.replace(RB_ID, next, etag);
    api.calls.length = 0;
    const cleared = structuredClone(next);
    delete cleared.evictionMarks;
    cleared.status.aggregatedStatus![0] = { clusterName: 'member1', applied: true, health: 'Unhealthy', status: { readyReplicas: 0 } };
    await store.replace(RB_ID, cleared, etag1);
    expect(api.writes().map((c) => c.body)).toEqual([
      { metadata: { resourceVersion: etag1, annotations: { [EVICTION_MARKS]: null, [WORKLOAD_STATE]: null } } },
    ]);
    expect(api.stored(KARMADA.resourceBindings, 'web-deployment', 'shop')!.metadata.annotations).toEqual({ team: 'shop' });
  });

  it('the returned etag works for the next replace; the old one is stale', async () => {
    const { api, store, value, etag } = await bindingFixture();
    const next = structuredClone(value);
    evict(next);
    const etag1 = await store.replace(RB_ID, next, etag);
    const second = structuredClone(next);
    second.spec.clusters = [...second.spec.clusters!, { name: 'member3', replicas: 1 }];
    await expect(store.replace(RB_ID, second, etag)).rejects.toBeInstanceOf(ConcurrencyError);
    await store.replace(RB_ID, second, etag1);
    expect((api.stored(KARMADA.resourceBindings, 'web-deployment', 'shop')!.spec as any).clusters).toEqual([
      { name: 'member2', replicas: 1 },
      { name: 'member3', replicas: 1 },
    ]);
  });

  const STALE: Array<[string, 'same store' | 'new store']> = [
    ['with the object cached from the read', 'same store'],
    ['from another store instance', 'new store'],
  ];

  it.each(STALE)('a stale etag is a ConcurrencyError and writes nothing (%s)', async (_name, which) => {
    const { api, store, value, etag } = await bindingFixture();
    const theirs = api.put(KARMADA.resourceBindings, {
      ...api.stored(KARMADA.resourceBindings, 'web-deployment', 'shop')!,
      spec: bindingObject({ replicas: 3 }).spec,
    });
    const next = structuredClone(value);
    evict(next);
    const writer = which === 'same store' ? store : new KarmadaBindingStore(api);
    await expect(writer.replace(RB_ID, next, etag)).rejects.toBeInstanceOf(ConcurrencyError);
    expect(api.stored(KARMADA.resourceBindings, 'web-deployment', 'shop')).toEqual(theirs);
  });

  it('a ClusterResourceBinding is patched cluster-scoped', async () => {
    const api = new FakeKubeApi();
    api.put(KARMADA.clusterResourceBindings, { ...bindingObject(), kind: 'ClusterResourceBinding', metadata: { name: 'crds', creationTimestamp: T0 } });
    const store = new KarmadaBindingStore(api);
    const [entry] = await store.list();
    expect(entry.id).toBe('crb:crds');
    const next = structuredClone(entry.value);
    evict(next);
    await store.replace(entry.id, next, entry.etag);
    expect(api.writes().map((c) => [c.resource, c.name, c.namespace])).toEqual([['clusterresourcebindings', 'crds', undefined]]);
  });
});

// ---------------------------------------------------------------------------------------------
// Events

describe('microTime', () => {
  const CASES: Array<[string, string]> = [
    ['2026-11-22T10:00:00.123Z', '2026-11-22T10:00:00.123000Z'],
    ['2026-11-22T10:00:00Z', '2026-11-22T10:00:00.000000Z'],
    ['2026-11-22T10:00:00.5Z', '2026-11-22T10:00:00.500000Z'],
    ['2026-11-22T11:00:00.007+01:00', '2026-11-22T10:00:00.007000Z'],
  ];
  it.each(CASES)('%s → %s', (iso, expected) => {
    expect(microTime(iso)).toBe(expected);
    expect(microTime(iso)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });
});

function eventFixture() {
  const api = new FakeKubeApi();
  api.put(KARMADA.clusters, { metadata: { name: 'member1', uid: 'uid-member1' } });
  api.put(KARMADA.resourceBindings, { metadata: { name: 'web', namespace: 'shop', uid: 'uid-web' } });
  api.put(KARMADA.clusterResourceBindings, { metadata: { name: 'crds', uid: 'uid-crds' } });
  api.put(KARMADA.clusterTaintPolicies, { metadata: { name: 'not-ready', uid: 'uid-ctp' } });
  api.calls.length = 0;
  const inner = new MemoryEventLog();
  const log = recordingLogger();
  return { api, inner, log, events: new KubeMirroredEventLog(inner, api, log, 'host-1') };
}

const event = (kind: string, name: string, extra: Partial<EventRecord> = {}): EventRecord => ({
  time: '2026-11-22T10:00:00.123Z',
  kind,
  name,
  type: 'Warning',
  reason: 'TaintAdded',
  message: 'added taint',
  ...extra,
});

describe('KubeMirroredEventLog', () => {
  const POSTED: Array<[string, string, string, Record<string, unknown>]> = [
    ['Cluster', 'member1', 'default', { apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', name: 'member1', uid: 'uid-member1' }],
    [
      'ResourceBinding',
      'shop/web',
      'shop',
      { apiVersion: 'work.karmada.io/v1alpha2', kind: 'ResourceBinding', name: 'web', namespace: 'shop', uid: 'uid-web' },
    ],
    ['ClusterResourceBinding', 'crds', 'default', { apiVersion: 'work.karmada.io/v1alpha2', kind: 'ClusterResourceBinding', name: 'crds', uid: 'uid-crds' }],
    ['ClusterTaintPolicy', 'not-ready', 'default', { apiVersion: 'policy.karmada.io/v1alpha1', kind: 'ClusterTaintPolicy', name: 'not-ready', uid: 'uid-ctp' }],
    ['Cluster', 'unknown-cluster', 'default', { apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', name: 'unknown-cluster' }],
  ];

  it.each(POSTED)('an event on a %s "%s" is posted to namespace %s', async (kind, name, namespace, regarding) => {
    const { api, inner, events } = eventFixture();
    await events.append([event(kind, name)]);
    const posts = api.writes();
    expect(posts.map((c) => [c.verb, c.resource, c.namespace])).toEqual([['create', 'events', namespace]]);
    const body = posts[0].body;
    expect(body.regarding).toEqual(regarding);
    expect(body).toMatchObject({
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { namespace },
      eventTime: '2026-11-22T10:00:00.123000Z',
      reportingController: 'failover.io/cluster-failover',
      reportingInstance: 'host-1',
      action: 'TaintAdded',
      reason: 'TaintAdded',
      note: 'added taint',
      type: 'Warning',
    });
    expect(body.metadata.name).toMatch(new RegExp(`^${regarding.name as string}\\.[0-9a-f]{16}$`));
    expect(await inner.all()).toHaveLength(1);
  });

  const NOT_POSTED: Array<[string, string]> = [
    ['Failover', 'evictions'],
    ['Deployment', 'shop/web'],
  ];

  it.each(NOT_POSTED)('an event on a %s (not a Karmada kind) is kept but not posted', async (kind, name) => {
    const { api, inner, events } = eventFixture();
    await events.append([event(kind, name)]);
    expect(api.calls).toEqual([]);
    expect(await inner.all()).toHaveLength(1);
  });

  const FAILURES: Array<[string, KubeVerb, KubeApiError]> = [
    ['the post fails (500)', 'create', new KubeApiError('create', 'events.events.k8s.io', 500, 'InternalError', 'boom')],
    ['the API server is unreachable', 'create', new KubeApiError('create', 'events.events.k8s.io', 0, '', '')],
    ['the uid lookup fails (403)', 'get', new KubeApiError('get', 'clusters', 403, 'Forbidden', '')],
  ];

  it.each(FAILURES)('best effort: when %s, append does not throw and the event is kept', async (_name, verb, error) => {
    const { api, inner, log, events } = eventFixture();
    api.failNext(verb, error);
    await expect(events.append([event('Cluster', 'member1')])).resolves.toBeUndefined();
    expect((await inner.all()).map((e) => e.reason)).toEqual(['TaintAdded']);
    expect(log.warnings).toHaveLength(1);
    expect(log.warnings[0].fields).toMatchObject({ kind: 'Cluster', name: 'member1', reason: 'TaintAdded' });
  });

  it('an event time that is not a time is not posted, and does not throw', async () => {
    const { api, log, events } = eventFixture();
    await expect(events.append([event('Cluster', 'member1', { time: 'yesterday' })])).resolves.toBeUndefined();
    expect(api.writes()).toEqual([]);
    expect(log.warnings).toHaveLength(1);
  });

  const NAMES: Array<[string, EventRecord, EventRecord, boolean]> = [
    ['the same id (a retried step, later time)', event('Cluster', 'member1', { id: 'step-1' }), event('Cluster', 'member1', { id: 'step-1', time: T2 }), true],
    ['different ids', event('Cluster', 'member1', { id: 'step-1' }), event('Cluster', 'member1', { id: 'step-2' }), false],
    ['no id, same content', event('Cluster', 'member1'), event('Cluster', 'member1'), true],
    ['no id, another message', event('Cluster', 'member1'), event('Cluster', 'member1', { message: 'other' }), false],
  ];

  it.each(NAMES)('Event names: %s', async (_name, first, second, same) => {
    const { api, log, events } = eventFixture();
    await events.append([first]);
    await events.append([second]);
    const names = api.writes().map((c) => c.body.metadata.name as string);
    expect(names).toHaveLength(2);
    expect(names[0] === names[1]).toBe(same);
    // The second post of the same name is a 409, which is the point: no warning.
    expect(log.warnings).toEqual([]);
  });

  it("looks each object's uid up once (from one append to the next)", async () => {
    const { api, events } = eventFixture();
    await events.append([event('Cluster', 'member1', { id: 'a' })]);
    await events.append([event('Cluster', 'member1', { id: 'b' })]);
    await events.append([event('Cluster', 'member1', { id: 'c' })]);
    expect(api.calls.filter((c) => c.verb === 'get')).toHaveLength(1);
    expect(api.writes()).toHaveLength(3);
  });
});

// ---------------------------------------------------------------------------------------------
// Policies (read-only)

describe('policy stores', () => {
  const seedPolicy = (name: string, effect: string): KubeObject => ({
    apiVersion: 'policy.karmada.io/v1alpha1',
    kind: 'ClusterTaintPolicy',
    metadata: { name, creationTimestamp: T0, annotations: { [OWNERS]: '{}', note: 'x' } },
    spec: { targetCluster: { clusterNames: ['member1'] }, taintsToAdd: [{ key: NOT_READY, effect }] },
  });

  it('ClusterTaintPolicies are validated with the apply schema: an invalid one is left out and logged', async () => {
    const api = new FakeKubeApi();
    api.put(KARMADA.clusterTaintPolicies, seedPolicy('good', 'NoExecute'));
    api.put(KARMADA.clusterTaintPolicies, seedPolicy('bad', 'Sometimes'));
    const log = recordingLogger();
    const store = karmadaTaintPolicyStore(api, log);
    const listed = await store.list();
    expect(listed.map((p) => p.id)).toEqual(['good']);
    // Defaults from the schema; the app's annotations left out.
    expect(listed[0].value.spec).toEqual({
      targetCluster: { clusterNames: ['member1'] },
      taintsToAdd: [{ key: NOT_READY, effect: 'NoExecute', addOnMatchSeconds: 300, removeOnMismatchSeconds: 180 }],
    });
    expect(listed[0].value.annotations).toEqual({ note: 'x' });
    expect(await store.get('bad')).toBeUndefined();
    expect((await store.get('good'))?.value.name).toBe('good');
    expect(log.warnings.map((w) => w.fields?.name)).toEqual(['bad']);
    expect(String(log.warnings[0].fields?.errors)).toContain('spec.taintsToAdd.0.effect');
    await expect(store.replace('good', listed[0].value, listed[0].etag)).rejects.toBeInstanceOf(ManagedInKarmadaError);
  });

  it('PropagationPolicies and ClusterPropagationPolicies by their keys', async () => {
    const api = new FakeKubeApi();
    const spec = { resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }] };
    api.put(KARMADA.propagationPolicies, { metadata: { name: 'web', namespace: 'shop' }, spec });
    api.put(KARMADA.clusterPropagationPolicies, { metadata: { name: 'global' }, spec });
    api.put(KARMADA.clusterPropagationPolicies, { metadata: { name: 'empty' }, spec: { resourceSelectors: [] } });
    const store = karmadaPropagationPolicyStore(api, recordingLogger());
    expect((await store.list()).map((p) => [p.id, p.value.kind])).toEqual([
      ['pp:shop:web', 'PropagationPolicy'],
      ['cpp:global', 'ClusterPropagationPolicy'],
    ]);
    expect((await store.get('pp:shop:web'))?.value).toMatchObject({ kind: 'PropagationPolicy', namespace: 'shop', name: 'web' });
    expect((await store.get('cpp:global'))?.value.name).toBe('global');
    expect(await store.get('cpp:empty')).toBeUndefined();
  });

  it('a policy as Karmada stores it (defaulted fields, fields of a newer Karmada) is read, what the app acts on still validated', async () => {
    const api = new FakeKubeApi();
    // What Karmada v1.18.2's API server answers for a PropagationPolicy applied with only selectors, placement and failover.
    const defaulted = {
      resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }],
      propagateDeps: true,
      conflictResolution: 'Abort',
      preemption: 'Never',
      priority: 0,
      placement: {
        clusterAffinity: { clusterNames: ['member1', 'member2'] },
        clusterTolerations: [{ key: 'cluster.karmada.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 }],
        replicaScheduling: { replicaSchedulingType: 'Duplicated' },
        aFieldOfANewerKarmada: { enabled: true },
      },
      failover: { application: { decisionConditions: { tolerationSeconds: 10 }, purgeMode: 'Gracefully', gracePeriodSeconds: 600, stateFailoverPolicy: {} } },
      suspension: { dispatching: false },
    };
    api.put(KARMADA.propagationPolicies, { metadata: { name: 'web', namespace: 'shop' }, spec: defaulted });
    const invalid = structuredClone(defaulted);
    invalid.failover.application.decisionConditions.tolerationSeconds = -1;
    api.put(KARMADA.propagationPolicies, { metadata: { name: 'broken', namespace: 'shop' }, spec: invalid });
    const log = recordingLogger();
    const store = karmadaPropagationPolicyStore(api, log);
    const read = (await store.get('pp:shop:web'))?.value;
    expect(read?.spec.placement).toMatchObject({
      clusterAffinity: { clusterNames: ['member1', 'member2'] },
      replicaScheduling: { replicaSchedulingType: 'Duplicated' },
    });
    expect(read?.spec.failover?.application?.decisionConditions.tolerationSeconds).toBe(10);
    expect(read?.spec).not.toHaveProperty('conflictResolution');
    expect(await store.get('pp:shop:broken')).toBeUndefined();
    expect(log.warnings.map((w) => w.fields?.name)).toEqual(['shop/broken']);
    expect(String(log.warnings[0].fields?.errors)).toContain('failover.application.decisionConditions.tolerationSeconds');
  });
});
