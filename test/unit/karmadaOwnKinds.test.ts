import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import {
  CLUSTER_GRACE_PERIOD_SECONDS_ANNOTATION,
  CLUSTER_PURGE_MODE_ANNOTATION,
  CLUSTER_TOLERATION_SECONDS_ANNOTATION,
  type ClusterFailover,
  clusterFailoverAnnotationProblems,
  clusterTaintPolicySchema,
  withClusterFailoverAnnotations,
} from '../../shared/api/resources';
import { syncKarmada } from '../../shared/controllers/karmadaSync';
import type { ControlPlane, IndexedPlacement, KarmadaConnection, SyncCursor } from '../../shared/controllers/ports';
import { listPolicyStatusTargets, publishPolicyStatuses } from '../../shared/controllers/state/karmadaPolicyStatuses';
import { refreshPolicyStatuses } from '../../shared/controllers/taintPolicies';
import type { Condition } from '../../shared/failover/model';
import {
  FAILOVER,
  KARMADA,
  KubeApi,
  KubeApiError,
  KubeList,
  KubeObject,
  KubeResource,
  ListOptions,
  PatchType,
  resourceName,
  WatchEvent,
  WatchOptions,
} from '../../shared/kube/api';
import { KarmadaBindingStore } from '../../shared/store/karmada/bindingStore';
import { ClusterOverlay, KarmadaClusterStore } from '../../shared/store/karmada/clusterStore';
import { karmadaPropagationPolicyStore, karmadaTaintPolicyStore } from '../../shared/store/karmada/policyStores';
import { MemoryDocumentStore } from '../../shared/store/memory';
import type { BulkDocumentStore } from '../../shared/store/ports';
import type { Logger } from '../../shared/telemetry/log';
import { memoryPlane } from '../helpers/memoryPlane';
import { SEED_000_CTP } from '../helpers/seedYaml';

/**
 * What Karmada's strict schemas cannot hold, in Karmada mode: windowed ClusterTaintPolicies of our own kind
 * (failover.io), policy status on our kinds (Karmada's ClusterTaintPolicy has no status subresource), the
 * cluster-failover settings as annotations on PropagationPolicies, and Karmada's webhook rules on reading.
 * On a small in-memory Kubernetes API that serves only the kinds it is told to (404 for the others, as a
 * server without the CRD).
 */

const ROOT = join(__dirname, '..', '..');
const T0 = '2026-11-22T10:00:00.000Z';
const NOT_READY = 'cluster.karmada.io/not-ready';

// ---------------------------------------------------------------------------------------------
// A tiny Kubernetes API: served kinds only, merge patches guarded by resourceVersion, status as a
// subresource, and a watch that delivers what changed since a resourceVersion.

interface Call {
  verb: string;
  resource: string;
  group: string;
  name?: string;
  subresource?: string;
  body?: any;
}

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

class FakeKubeApi implements KubeApi {
  readonly calls: Call[] = [];
  private readonly objects = new Map<string, KubeObject>();
  private readonly history: Array<{ kind: string; event: WatchEvent & { object: KubeObject } }> = [];
  private readonly served: Set<string>;
  private version = 100;

  constructor(served: KubeResource[] = [...Object.values(KARMADA), ...Object.values(FAILOVER)]) {
    this.served = new Set(served.map((r) => this.kindOf(r)));
  }

  /** What someone else does (Karmada, a person): stored with a new resourceVersion (generation moves with the spec). */
  put(resource: KubeResource, object: KubeObject): KubeObject {
    const key = this.key(resource, object.metadata.name, object.metadata.namespace);
    const before = this.objects.get(key);
    const stored = structuredClone(object);
    stored.metadata.uid ??= before?.metadata.uid ?? `uid-${object.metadata.name}`;
    stored.metadata.creationTimestamp ??= before?.metadata.creationTimestamp ?? T0;
    stored.metadata.generation = (before?.metadata.generation ?? 0) + (before && JSON.stringify(before.spec) === JSON.stringify(stored.spec) ? 0 : 1);
    return this.commit(resource, key, stored, before ? 'MODIFIED' : 'ADDED');
  }

  stored(resource: KubeResource, name: string, namespace?: string): any {
    const object = this.objects.get(this.key(resource, name, namespace));
    return object && structuredClone(object);
  }

  writes(): Call[] {
    return this.calls.filter((c) => c.verb === 'patch' || c.verb === 'create');
  }

  async get(resource: KubeResource, name: string, namespace?: string): Promise<KubeObject | undefined> {
    this.calls.push({ verb: 'get', resource: resource.plural, group: resource.group, name });
    return this.stored(resource, name, namespace);
  }

  async list(resource: KubeResource, options: ListOptions = {}): Promise<KubeList> {
    this.calls.push({ verb: 'list', resource: resource.plural, group: resource.group });
    this.checkServed('list', resource);
    const prefix = `${this.kindOf(resource)}/`;
    const items = [...this.objects.entries()]
      .filter(([key, object]) => key.startsWith(prefix) && (!options.namespace || object.metadata.namespace === options.namespace))
      .map(([, object]) => structuredClone(object));
    return { items, resourceVersion: String(this.version) };
  }

  async watch(resource: KubeResource, options: WatchOptions, onEvent: (event: WatchEvent) => Promise<void>): Promise<void> {
    this.checkServed('watch', resource);
    const since = Number(options.resourceVersion);
    for (const { kind, event } of this.history)
      if (kind === this.kindOf(resource) && Number(event.object.metadata.resourceVersion) > since) await onEvent(structuredClone(event));
    // The sync watches again until its budget is spent: a short pause, not a busy loop.
    await new Promise((resolve) => setTimeout(resolve, 20));
  }

  async patch(
    resource: KubeResource,
    name: string,
    namespace: string | undefined,
    patch: unknown,
    type: PatchType,
    subresource?: 'status',
  ): Promise<KubeObject> {
    this.calls.push({ verb: 'patch', resource: resource.plural, group: resource.group, name, subresource, body: structuredClone(patch) });
    const what = resourceName(resource, name, namespace, subresource);
    if (type !== 'merge') throw new KubeApiError('patch', what, 415, 'UnsupportedMediaType', '');
    const key = this.key(resource, name, namespace);
    const current = this.objects.get(key);
    if (!current) throw new KubeApiError('patch', what, 404, 'NotFound', '');
    const wanted = (patch as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion;
    if (wanted !== undefined && wanted !== current.metadata.resourceVersion) throw new KubeApiError('patch', what, 409, 'Conflict', 'modified');
    const next = structuredClone(current);
    if (subresource === 'status') next.status = mergePatch(current.status, (patch as { status?: unknown }).status ?? {});
    else Object.assign(next, mergePatch(current, patch), { status: structuredClone(current.status) });
    return this.commit(resource, key, next, 'MODIFIED');
  }

  async create(resource: KubeResource, namespace: string | undefined, body: KubeObject): Promise<KubeObject> {
    this.calls.push({ verb: 'create', resource: resource.plural, group: resource.group, name: body.metadata.name, body: structuredClone(body) });
    this.checkServed('create', resource);
    const key = this.key(resource, body.metadata.name, namespace);
    if (this.objects.has(key)) throw new KubeApiError('create', resourceName(resource, body.metadata.name), 409, 'AlreadyExists', '');
    // A create of a kind with a status subresource ignores status.
    const { status: _ignored, ...rest } = structuredClone(body);
    return this.put(resource, rest);
  }

  private commit(resource: KubeResource, key: string, object: KubeObject, type: 'ADDED' | 'MODIFIED'): KubeObject {
    object.metadata.resourceVersion = String(++this.version);
    this.objects.set(key, object);
    this.history.push({ kind: this.kindOf(resource), event: { type, object: structuredClone(object) } });
    return structuredClone(object);
  }

  private checkServed(verb: 'list' | 'watch' | 'create', resource: KubeResource): void {
    if (!this.served.has(this.kindOf(resource)))
      throw new KubeApiError(verb, resourceName(resource), 404, 'NotFound', 'the server could not find the requested resource');
  }

  private kindOf(resource: KubeResource): string {
    return `${resource.plural}.${resource.group}`;
  }

  private key(resource: KubeResource, name: string, namespace?: string): string {
    return `${this.kindOf(resource)}/${resource.namespaced ? (namespace ?? '') : ''}/${name}`;
  }
}

function recordingLogger(): Logger & { lines: Array<{ level: string; message: string; fields?: Record<string, unknown> }> } {
  const lines: Array<{ level: string; message: string; fields?: Record<string, unknown> }> = [];
  const at = (level: string) => (message: string, fields?: Record<string, unknown>) => void lines.push({ level, message, fields });
  return { lines, debug: () => undefined, info: at('info'), warn: at('warn'), error: at('error') };
}

/** The placement index's store in memory, with the bulk write the sync uses. */
class MemoryBulkStore<T> extends MemoryDocumentStore<T> implements BulkDocumentStore<T> {
  async upsertMany(entries: Array<{ id: string; value: T }>): Promise<void> {
    for (const { id, value } of entries) {
      const current = await this.get(id);
      if (current) await this.replace(id, value, current.etag);
      else await this.create(id, value);
    }
  }
}

/** A control plane in Karmada mode on the fake API (the app's own tables in memory). */
function karmadaPlane(api: FakeKubeApi, log = recordingLogger()) {
  const m = memoryPlane();
  const plane: ControlPlane = {
    ...m.plane,
    log,
    clusters: new KarmadaClusterStore(api, new MemoryDocumentStore<ClusterOverlay>()),
    bindings: new KarmadaBindingStore(api),
    policies: karmadaTaintPolicyStore(api, log),
    propagationPolicies: karmadaPropagationPolicyStore(api, log),
    karmada: {
      api,
      cursors: new MemoryDocumentStore<SyncCursor>(),
      connection: new MemoryDocumentStore<KarmadaConnection>(),
      placements: new MemoryBulkStore<IndexedPlacement>(),
    },
  };
  return { plane, ledger: m.ledger, log };
}

const seedSpec = () => (parse(SEED_000_CTP) as { spec: Record<string, unknown> }).spec;
const windowedPolicy = (name: string): KubeObject => ({ apiVersion: 'failover.io/v1alpha1', kind: 'ClusterTaintPolicy', metadata: { name }, spec: seedSpec() });
const karmadaShapePolicy = (name: string): KubeObject => ({
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind: 'ClusterTaintPolicy',
  metadata: { name },
  spec: {
    addOnConditions: [{ conditionType: 'Ready', operator: 'NotIn', statusValues: ['True'] }],
    removeOnConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['True'] }],
    taints: [{ key: NOT_READY, effect: 'NoExecute' }],
  },
});

// ---------------------------------------------------------------------------------------------
// The CRDs: structural, serving the kinds the app reads, validating what our apply validates

type Schema = Record<string, any>;
const readCrd = (file: string) => parse(readFileSync(join(ROOT, 'infra', file), 'utf8')) as Schema;

/**
 * Why a CRD schema is not structural, as the real API server says it (empty: it is): every node typed,
 * no `type` inside anyOf/allOf/oneOf/not but for the bare int-or-string form, no preserve-unknown-fields
 * (none of our kinds needs it), metadata only `type: object`, list-map keys required scalars.
 */
function structuralProblems(schema: Schema, path = ''): string[] {
  const problems: string[] = [];
  const intOrString = schema['x-kubernetes-int-or-string'] === true;
  for (const logic of ['anyOf', 'allOf', 'oneOf']) {
    for (const [i, branch] of ((schema[logic] ?? []) as Schema[]).entries()) {
      const bare = intOrString && logic === 'anyOf' && Object.keys(branch).length === 1 && ['integer', 'string'].includes(branch.type);
      if (branch.type !== undefined && !bare) problems.push(`${path}.${logic}[${i}].type: must be empty to be structural`);
    }
  }
  if (schema.not?.type !== undefined) problems.push(`${path}.not.type: must be empty to be structural`);
  if (!schema.type && !intOrString) problems.push(`${path}.type: Required value: must not be empty for specified object fields`);
  if (schema['x-kubernetes-preserve-unknown-fields']) problems.push(`${path}: x-kubernetes-preserve-unknown-fields where no field needs it`);
  if (schema['x-kubernetes-list-type'] === 'map') {
    for (const key of (schema['x-kubernetes-list-map-keys'] ?? []) as string[]) {
      const item = schema.items ?? {};
      if (!(item.required ?? []).includes(key) && item.properties?.[key]?.default === undefined) problems.push(`${path}: map key ${key} must be required`);
      if (!['string', 'integer', 'boolean'].includes(item.properties?.[key]?.type)) problems.push(`${path}: map key ${key} must be a scalar`);
    }
  }
  for (const [name, child] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) {
    if (path === '' && name === 'metadata') {
      if (JSON.stringify(child) !== JSON.stringify({ type: 'object' })) problems.push('.metadata: only type: object');
      continue;
    }
    problems.push(...structuralProblems(child, `${path}.properties[${name}]`));
  }
  if (schema.items) problems.push(...structuralProblems(schema.items as Schema, `${path}.items`));
  if (isObject(schema.additionalProperties)) problems.push(...structuralProblems(schema.additionalProperties, `${path}.additionalProperties`));
  return problems;
}

/** What the real API server refuses of `value` under a structural schema (the checks our CRDs use). */
function schemaErrors(schema: Schema, value: unknown, path: string): string[] {
  if (value === undefined) return [];
  const type = Array.isArray(value) ? 'array' : Number.isInteger(value) ? 'integer' : typeof value === 'number' ? 'number' : typeof value;
  if (schema.type && schema.type !== type && !(schema.type === 'number' && type === 'integer'))
    return [`${path}: Invalid value: must be of type ${schema.type}`];
  const errors: string[] = [];
  if (schema.enum && !schema.enum.includes(value)) errors.push(`${path}: Unsupported value: ${JSON.stringify(value)}`);
  if (typeof value === 'string') {
    if (schema.minLength !== undefined && value.length < schema.minLength) errors.push(`${path}: should be at least ${schema.minLength} chars long`);
    if (schema.maxLength !== undefined && value.length > schema.maxLength) errors.push(`${path}: may not be more than ${schema.maxLength} bytes`);
    if (schema.pattern && !new RegExp(schema.pattern).test(value)) errors.push(`${path}: should match '${schema.pattern}'`);
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) errors.push(`${path}: should be greater than or equal to ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) errors.push(`${path}: should be less than or equal to ${schema.maximum}`);
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) errors.push(`${path}: should have at least ${schema.minItems} items`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems) errors.push(`${path}: must have at most ${schema.maxItems} items`);
    const keys = schema['x-kubernetes-list-map-keys'] as string[] | undefined;
    if (keys) {
      const seen = new Set<string>();
      value.forEach((item: any, i) => {
        const id = JSON.stringify(keys.map((k) => item?.[k]));
        if (seen.has(id)) errors.push(`${path}[${i}]: Duplicate value`);
        seen.add(id);
      });
    }
    value.forEach((item, i) => errors.push(...schemaErrors(schema.items ?? {}, item, `${path}[${i}]`)));
  }
  if (type === 'object' && isObject(value)) {
    for (const key of (schema.required ?? []) as string[]) if (value[key] === undefined) errors.push(`${path}.${key}: Required value`);
    for (const [key, child] of Object.entries(value)) {
      const declared = schema.properties?.[key] ?? (isObject(schema.additionalProperties) ? schema.additionalProperties : undefined);
      if (!declared) errors.push(`${path}.${key}: field not declared in schema`);
      else errors.push(...schemaErrors(declared as Schema, child, `${path}.${key}`));
    }
  }
  return errors;
}

describe('infra/clustertaintpolicy-crd.yaml and infra/taintpolicystatus-crd.yaml', () => {
  const ctp = readCrd('clustertaintpolicy-crd.yaml');
  const tps = readCrd('taintpolicystatus-crd.yaml');

  it('are structural, as a real API server requires', () => {
    for (const crd of [ctp, tps]) {
      expect(crd.spec.versions).toHaveLength(1);
      expect(structuralProblems(crd.spec.versions[0].schema.openAPIV3Schema)).toEqual([]);
    }
    // The checker finds what the real server refused before (a typed anyOf branch of an int-or-string).
    const intOrString = { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string', pattern: '%$' }] };
    expect(structuralProblems({ type: 'object', properties: { n: intOrString, untyped: {} } })).toEqual([
      '.properties[n].anyOf[1].type: must be empty to be structural',
      '.properties[untyped].type: Required value: must not be empty for specified object fields',
    ]);
  });

  it('serve the kinds the app reads, each with a status subresource (kubectl wait reads status.conditions)', () => {
    for (const [crd, resource] of [
      [ctp, FAILOVER.clusterTaintPolicies],
      [tps, FAILOVER.taintPolicyStatuses],
    ] as const) {
      expect(crd.metadata.name).toBe(`${resource.plural}.${resource.group}`);
      expect(crd.spec).toMatchObject({ group: resource.group, scope: 'Cluster', names: { kind: resource.kind, plural: resource.plural } });
      expect(crd.spec.versions[0]).toMatchObject({ name: resource.version, served: true, storage: true, subresources: { status: {} } });
      const condition = crd.spec.versions[0].schema.openAPIV3Schema.properties.status.properties.conditions.items;
      expect(condition.required).toEqual(['type', 'status', 'lastTransitionTime']);
    }
  });

  it('takes the windowed shape as our apply takes it, and refuses what it refuses', () => {
    const spec = ctp.spec.versions[0].schema.openAPIV3Schema.properties.spec;
    const taint = { key: NOT_READY, effect: 'NoExecute' };
    const cases: Array<[string, Record<string, unknown>]> = [
      ['the seed example', seedSpec()],
      ['no conditions, windows defaulted', { taintsToAdd: [taint] }],
      [
        'a label selector',
        { targetCluster: { labelSelector: { matchExpressions: [{ key: 'env', operator: 'In', values: ['prod'] }] } }, taintsToAdd: [taint] },
      ],
      ['an unknown effect', { taintsToAdd: [{ ...taint, effect: 'Sometimes' }] }],
      ['a zero window', { taintsToAdd: [{ ...taint, addOnMatchSeconds: 0 }] }],
      ['no taints', { matchConditions: [] }],
      ['an empty taint list', { taintsToAdd: [] }],
      ['no status values', { matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: [] }], taintsToAdd: [taint] }],
      ['operator Exists', { matchConditions: [{ conditionType: 'Ready', operator: 'Exists', statusValues: ['True'] }], taintsToAdd: [taint] }],
      ['a key with a space', { taintsToAdd: [{ ...taint, key: 'not ready' }] }],
      ['a value too long', { taintsToAdd: [{ ...taint, value: 'v'.repeat(64) }] }],
      ['one key and effect twice', { taintsToAdd: [taint, { ...taint, value: 'x' }] }],
      ['a cluster name in capitals', { targetCluster: { clusterNames: ['Member1'] }, taintsToAdd: [taint] }],
      [
        'a field selector on a label',
        { targetCluster: { fieldSelector: { matchExpressions: [{ key: 'env', operator: 'In', values: ['x'] }] } }, taintsToAdd: [taint] },
      ],
    ];
    for (const [what, candidate] of cases) {
      const apply = clusterTaintPolicySchema.safeParse({
        apiVersion: 'policy.karmada.io/v1alpha1',
        kind: 'ClusterTaintPolicy',
        metadata: { name: 'p' },
        spec: candidate,
      });
      const crd = schemaErrors(spec, candidate, 'spec');
      expect({ what, crdAccepts: crd.length === 0 }, crd.join('; ')).toEqual({ what, crdAccepts: apply.success });
    }
  });

  it("refuses Karmada's shape as the real server refuses the windowed shape in Karmada's kind: field not declared in schema", () => {
    const spec = ctp.spec.versions[0].schema.openAPIV3Schema.properties.spec;
    expect(schemaErrors(spec, karmadaShapePolicy('k').spec, 'spec')).toEqual(
      expect.arrayContaining(['spec.addOnConditions: field not declared in schema', 'spec.taints: field not declared in schema']),
    );
  });
});

describe('infra/karmada-rbac.yaml', () => {
  const role = parseAllDocuments(readFileSync(join(ROOT, 'infra', 'karmada-rbac.yaml'), 'utf8'))
    .map((d) => d.toJS() as Schema)
    .find((d) => d.kind === 'ClusterRole')!;
  const verbs = (group: string, resource: string) =>
    (role.rules as Schema[])
      .filter((r) => r.apiGroups.includes(group) && r.resources.includes(resource))
      .flatMap((r) => r.verbs as string[])
      .sort();

  it('lets the app read and watch both kinds of policy, and write only the status of ours', () => {
    expect(verbs('failover.io', 'clustertaintpolicies')).toEqual(['get', 'list', 'watch']);
    expect(verbs('failover.io', 'clustertaintpolicies/status')).toEqual(['patch']);
    expect(verbs('failover.io', 'taintpolicystatuses')).toEqual(['create', 'list']);
    expect(verbs('failover.io', 'taintpolicystatuses/status')).toEqual(['patch']);
    expect(verbs('policy.karmada.io', 'clustertaintpolicies')).toEqual(['get', 'list', 'watch']);
    // Karmada's kind has no status subresource: nothing to grant there.
    expect(verbs('policy.karmada.io', 'clustertaintpolicies/status')).toEqual([]);
    expect(verbs('policy.karmada.io', 'propagationpolicies')).toEqual(['get', 'list', 'watch']);
    expect(verbs('policy.karmada.io', 'clusterpropagationpolicies')).toEqual(['get', 'list', 'watch']);
  });
});

// ---------------------------------------------------------------------------------------------
// Reading both kinds of ClusterTaintPolicy

describe('the taint policy store in Karmada mode', () => {
  it("reads Karmada's ClusterTaintPolicies and ours, ours named failover.io.<name> so the same name never collides", async () => {
    const api = new FakeKubeApi();
    api.put(KARMADA.clusterTaintPolicies, karmadaShapePolicy('not-ready'));
    api.put(FAILOVER.clusterTaintPolicies, windowedPolicy('not-ready'));
    const store = karmadaTaintPolicyStore(api, recordingLogger());
    const listed = await store.list();
    expect(listed.map((p) => [p.id, p.value.name])).toEqual([
      ['not-ready', 'not-ready'],
      ['failover.io.not-ready', 'failover.io.not-ready'],
    ]);
    // Ours keeps the windows (defaults filled in as our apply fills them).
    expect(listed[1].value.spec).toMatchObject({
      taintsToAdd: [{ key: NOT_READY, effect: 'PreferNoExecute', addOnMatchSeconds: 300, removeOnMismatchSeconds: 180 }],
    });
    expect(listed[0].value.spec).toMatchObject({ taints: [{ key: NOT_READY, effect: 'NoExecute' }] });
    expect((await store.get('failover.io.not-ready'))?.value.spec).toEqual(listed[1].value.spec);
    expect((await store.get('not-ready'))?.value.spec).toEqual(listed[0].value.spec);
    expect(await store.get('failover.io.absent')).toBeUndefined();
  });

  it("leaves out a policy of our kind in Karmada's shape, saying where that shape belongs", async () => {
    const api = new FakeKubeApi();
    api.put(FAILOVER.clusterTaintPolicies, { ...karmadaShapePolicy('wrong-kind'), apiVersion: 'failover.io/v1alpha1' });
    const log = recordingLogger();
    expect(await karmadaTaintPolicyStore(api, log).list()).toEqual([]);
    expect(log.lines).toEqual([
      expect.objectContaining({ level: 'warn', fields: expect.objectContaining({ kind: 'ClusterTaintPolicy.failover.io', name: 'wrong-kind' }) }),
    ]);
    expect(String(log.lines[0].fields?.errors)).toMatch(/holds the windowed shape.*policy\.karmada\.io ClusterTaintPolicy/);
  });

  it('leaves out a Karmada policy named like one of ours (failover.io.<name>): an id names one policy', async () => {
    const api = new FakeKubeApi();
    api.put(KARMADA.clusterTaintPolicies, karmadaShapePolicy('failover.io.not-ready'));
    api.put(FAILOVER.clusterTaintPolicies, windowedPolicy('not-ready'));
    const log = recordingLogger();
    const store = karmadaTaintPolicyStore(api, log);
    expect((await store.list()).map((p) => [p.id, 'taintsToAdd' in p.value.spec])).toEqual([['failover.io.not-ready', true]]);
    expect(String(log.lines[0].fields?.errors)).toContain('metadata.name: names beginning "failover.io." are the app\'s');
    const { plane } = karmadaPlane(api);
    expect((await listPolicyStatusTargets(plane)).map((t) => [t.id, t.place.kind])).toEqual([['failover.io.not-ready', 'own']]);
  });

  it("reads Karmada's alone when our CRD is not installed (404)", async () => {
    const api = new FakeKubeApi([KARMADA.clusterTaintPolicies]);
    api.put(KARMADA.clusterTaintPolicies, karmadaShapePolicy('not-ready'));
    expect((await karmadaTaintPolicyStore(api, recordingLogger()).list()).map((p) => p.id)).toEqual(['not-ready']);
  });
});

// ---------------------------------------------------------------------------------------------
// PropagationPolicies: Karmada's webhook rules, and the cluster-failover annotations

describe('the propagation policy store in Karmada mode', () => {
  const selectors = [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }];
  const application = { decisionConditions: { tolerationSeconds: 300 }, purgeMode: 'Gracefully', gracePeriodSeconds: 600 };

  it("refuses what Karmada's webhook refuses, with its reasons: application failover without propagateDeps, a selector in another namespace", async () => {
    const api = new FakeKubeApi();
    api.put(KARMADA.propagationPolicies, {
      metadata: { name: 'no-deps', namespace: 'shop' },
      spec: { resourceSelectors: selectors, failover: { application } },
    });
    api.put(KARMADA.propagationPolicies, {
      metadata: { name: 'with-deps', namespace: 'shop' },
      spec: { resourceSelectors: selectors, propagateDeps: true, failover: { application } },
    });
    api.put(KARMADA.clusterPropagationPolicies, { metadata: { name: 'cluster-no-deps' }, spec: { resourceSelectors: selectors, failover: { application } } });
    api.put(KARMADA.propagationPolicies, {
      metadata: { name: 'elsewhere', namespace: 'shop' },
      spec: { resourceSelectors: [{ ...selectors[0], namespace: 'other' }] },
    });
    const log = recordingLogger();
    const store = karmadaPropagationPolicyStore(api, log);
    expect((await store.list()).map((p) => p.id)).toEqual(['pp:shop:with-deps']);
    expect(log.lines.map((l) => [l.fields?.kind, l.fields?.name, l.fields?.errors])).toEqual([
      ['PropagationPolicy', 'shop/no-deps', 'spec.propagateDeps: application failover is set, propagateDeps must be true'],
      [
        'PropagationPolicy',
        'shop/elsewhere',
        'spec.resourceSelectors.0.namespace: namespace of resource selector must be the same as the namespace of the policy',
      ],
      ['ClusterPropagationPolicy', 'cluster-no-deps', 'spec.propagateDeps: application failover is set, propagateDeps must be true'],
    ]);
    // Said once, not at every listing.
    await store.list();
    expect(log.lines).toHaveLength(3);
  });

  it('takes tolerationSeconds and gracePeriodSeconds from the annotations into failover.cluster (they win over a spec a lenient server kept)', async () => {
    const api = new FakeKubeApi();
    api.put(KARMADA.propagationPolicies, {
      metadata: {
        name: 'web',
        namespace: 'shop',
        annotations: { [CLUSTER_TOLERATION_SECONDS_ANNOTATION]: '42', [CLUSTER_GRACE_PERIOD_SECONDS_ANNOTATION]: '120' },
      },
      spec: { resourceSelectors: selectors, failover: { cluster: { purgeMode: 'Gracefully', tolerationSeconds: 7 } } },
    });
    // Karmada's own shape: purgeMode (Karmada's default, Gracefully) and nothing else; our defaults fill the rest.
    api.put(KARMADA.clusterPropagationPolicies, {
      metadata: { name: 'plain' },
      spec: { resourceSelectors: selectors, failover: { cluster: { purgeMode: 'Gracefully' } } },
    });
    const store = karmadaPropagationPolicyStore(api, recordingLogger());
    expect((await store.get('pp:shop:web'))?.value.spec.failover?.cluster).toEqual({ purgeMode: 'Gracefully', tolerationSeconds: 42, gracePeriodSeconds: 120 });
    expect((await store.get('cpp:plain'))?.value.spec.failover?.cluster).toEqual({ purgeMode: 'Gracefully', tolerationSeconds: 300 });
    // The annotations stay the policy's own (GET shows them).
    expect((await store.get('pp:shop:web'))?.value.annotations).toMatchObject({ [CLUSTER_TOLERATION_SECONDS_ANNOTATION]: '42' });
  });

  it('refuses annotations as the spec fields are refused, naming the annotation', async () => {
    const cases: Array<[Record<string, string>, Record<string, unknown> | undefined, string]> = [
      [{ [CLUSTER_TOLERATION_SECONDS_ANNOTATION]: 'soon' }, { purgeMode: 'Gracefully' }, 'must be a whole number of seconds such as "300", got "soon"'],
      [{ [CLUSTER_TOLERATION_SECONDS_ANNOTATION]: '-1' }, { purgeMode: 'Gracefully' }, 'must be a whole number of seconds such as "300", got "-1"'],
      [{ [CLUSTER_GRACE_PERIOD_SECONDS_ANNOTATION]: '0' }, { purgeMode: 'Gracefully' }, 'must be at least 1, got "0"'],
      [{ [CLUSTER_GRACE_PERIOD_SECONDS_ANNOTATION]: '3000000000' }, { purgeMode: 'Gracefully' }, 'must fit in 32 bits (at most 2147483647), got "3000000000"'],
      [
        { [CLUSTER_GRACE_PERIOD_SECONDS_ANNOTATION]: '60' },
        { purgeMode: 'Directly' },
        'only applies with purgeMode Gracefully (Graciously); purgeMode is Directly',
      ],
      [{ [CLUSTER_TOLERATION_SECONDS_ANNOTATION]: '60' }, undefined, 'applies to spec.failover.cluster, which is not set'],
      [{ [CLUSTER_PURGE_MODE_ANNOTATION]: 'Never' }, { purgeMode: 'Gracefully' }, 'cluster failover has no purge mode "Never"'],
      [
        { [CLUSTER_PURGE_MODE_ANNOTATION]: 'Directly' },
        { purgeMode: 'Gracefully' },
        'Karmada\'s schema holds this purge mode: set spec.failover.cluster.purgeMode to "Directly" instead',
      ],
    ];
    for (const [annotations, cluster, message] of cases) {
      const api = new FakeKubeApi();
      api.put(KARMADA.propagationPolicies, {
        metadata: { name: 'web', namespace: 'shop', annotations },
        spec: { resourceSelectors: selectors, ...(cluster ? { failover: { cluster } } : {}) },
      });
      const log = recordingLogger();
      expect(await karmadaPropagationPolicyStore(api, log).get('pp:shop:web')).toBeUndefined();
      const annotation = Object.keys(annotations)[0];
      expect(String(log.lines[0]?.fields?.errors)).toContain(`metadata.annotations["${annotation}"]: ${message}`);
    }
  });

  it('merges only what it may (pure): nothing without failover.cluster, the grace period only with Gracefully', () => {
    expect(withClusterFailoverAnnotations(undefined, { tolerationSeconds: 5 })).toBeUndefined();
    const application: { cluster?: ClusterFailover; application?: unknown } = { application: {} };
    expect(withClusterFailoverAnnotations(application, { tolerationSeconds: 5 })).toBe(application);
    expect(
      withClusterFailoverAnnotations({ cluster: { purgeMode: 'Directly', tolerationSeconds: 300 } }, { tolerationSeconds: 5, gracePeriodSeconds: 9 }),
    ).toEqual({
      cluster: { purgeMode: 'Directly', tolerationSeconds: 5 },
    });
    expect(clusterFailoverAnnotationProblems({ unrelated: 'x' }, undefined)).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Policy status: ours on their status subresource, Karmada's on a TaintPolicyStatus

const conditionsOf = (object: any): Condition[] => object?.status?.conditions ?? [];

describe('policy status in Karmada mode', () => {
  it("writes ours to their status subresource and Karmada's to a TaintPolicyStatus it creates, owned by the policy; never a status patch on Karmada's kind", async () => {
    const api = new FakeKubeApi();
    api.put(FAILOVER.clusterTaintPolicies, windowedPolicy('windowed'));
    api.put(KARMADA.clusterTaintPolicies, karmadaShapePolicy('karmada-shape'));
    const { plane } = karmadaPlane(api);
    const first = await refreshPolicyStatuses(plane);
    expect(first).toMatchObject({ policies: 2, published: 2 });

    const own = api.stored(FAILOVER.clusterTaintPolicies, 'windowed');
    expect(
      conditionsOf(own)
        .map((c) => [c.type, c.status, c.reason])
        .sort(),
    ).toEqual([
      ['BlastRadiusExceeded', 'False', 'WithinShare'],
      ['EvictionInProgress', 'False', 'NoTaintsHeld'],
    ]);
    expect(own.metadata.generation).toBe(1);
    const companion = api.stored(FAILOVER.taintPolicyStatuses, 'karmada-shape');
    expect(companion.metadata.ownerReferences).toEqual([
      { apiVersion: 'policy.karmada.io/v1alpha1', kind: 'ClusterTaintPolicy', name: 'karmada-shape', uid: 'uid-karmada-shape' },
    ]);
    expect(companion.spec).toEqual({ policyRef: { apiVersion: 'policy.karmada.io/v1alpha1', kind: 'ClusterTaintPolicy', name: 'karmada-shape' } });
    expect(conditionsOf(companion).find((c) => c.type === 'EvictionInProgress')).toMatchObject({ status: 'False', reason: 'NoTaintsHeld' });
    expect(api.writes().map((c) => [c.verb, `${c.resource}.${c.group}`, c.name, c.subresource])).toEqual([
      ['create', 'taintpolicystatuses.failover.io', 'karmada-shape', undefined],
      ['patch', 'taintpolicystatuses.failover.io', 'karmada-shape', 'status'],
      ['patch', 'clustertaintpolicies.failover.io', 'windowed', 'status'],
    ]);
    // The conditions went to the policy's own id: the API serves them too.
    expect((await plane.policyStates.get('failover.io.windowed'))?.value.conditions).toHaveLength(2);

    // Nothing changed: nothing written.
    const before = api.writes().length;
    expect(await refreshPolicyStatuses(plane)).toMatchObject({ published: 0 });
    expect(api.writes()).toHaveLength(before);
  });

  it('patches an existing TaintPolicyStatus guarded by its resourceVersion; a lost race waits for the next round', async () => {
    const api = new FakeKubeApi();
    api.put(KARMADA.clusterTaintPolicies, karmadaShapePolicy('p'));
    api.put(FAILOVER.taintPolicyStatuses, { metadata: { name: 'p' }, spec: { policyRef: { name: 'p' } } });
    const { plane } = karmadaPlane(api);
    const targets = await listPolicyStatusTargets(plane);
    expect(targets.map((t) => [t.id, t.place.kind])).toEqual([['p', 'companion']]);
    const conditions: Condition[] = [{ type: 'EvictionInProgress', status: 'True', reason: 'EvictionsPending', lastTransitionTime: T0 }];
    // Someone else wrote it since it was listed: 409, not written, not an error.
    api.put(FAILOVER.taintPolicyStatuses, { metadata: { name: 'p' }, spec: { policyRef: { name: 'p' } } });
    expect(await publishPolicyStatuses(plane, targets, new Map([['p', conditions]]))).toBe(0);
    expect(await publishPolicyStatuses(plane, await listPolicyStatusTargets(plane), new Map([['p', conditions]]))).toBe(1);
    expect(conditionsOf(api.stored(FAILOVER.taintPolicyStatuses, 'p'))).toEqual(conditions);
    expect(api.writes().filter((c) => c.verb === 'create')).toEqual([]);
  });

  it("without the TaintPolicyStatus CRD, publishes nothing for Karmada's policies and says so once; ours are still published", async () => {
    const api = new FakeKubeApi([...Object.values(KARMADA), FAILOVER.clusterTaintPolicies]);
    api.put(KARMADA.clusterTaintPolicies, karmadaShapePolicy('p'));
    api.put(FAILOVER.clusterTaintPolicies, windowedPolicy('w'));
    const { plane, log } = karmadaPlane(api);
    expect(await refreshPolicyStatuses(plane)).toMatchObject({ policies: 2, published: 1 });
    expect(await refreshPolicyStatuses(plane)).toMatchObject({ policies: 2, published: 0 });
    expect(api.writes().map((c) => [c.verb, c.resource, c.name])).toEqual([['patch', 'clustertaintpolicies', 'w']]);
    expect(log.lines.filter((l) => l.level === 'warn').map((l) => l.message)).toEqual([expect.stringContaining('TaintPolicyStatus CRD is not installed')]);
  });
});

// ---------------------------------------------------------------------------------------------
// The sync: our kind (optional), and the annotations into the placement rows the taint manager reads

const bindingObject = (name: string, annotations: Record<string, string>): KubeObject => ({
  apiVersion: 'work.karmada.io/v1alpha2',
  kind: 'ResourceBinding',
  metadata: { name, namespace: 'shop', annotations },
  spec: {
    resource: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name },
    replicas: 1,
    clusters: [{ name: 'member1', replicas: 1 }],
    // What Karmada's detector copies from the policy: its spec.failover, not its annotations.
    failover: { cluster: { purgeMode: 'Gracefully' } },
  },
  status: { schedulerObservedGeneration: 1 },
});
const ppAnnotations = { 'propagationpolicy.karmada.io/namespace': 'shop', 'propagationpolicy.karmada.io/name': 'web' };
const clusterObject = (name: string): KubeObject => ({ apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name }, spec: {} });

describe('the Karmada sync', () => {
  it('indexes a binding with the cluster-failover settings of the policy it names, and re-indexes when the annotations change', async () => {
    const api = new FakeKubeApi();
    api.put(KARMADA.clusters, clusterObject('member1'));
    const policy = (annotations: Record<string, string>): KubeObject => ({
      apiVersion: 'policy.karmada.io/v1alpha1',
      kind: 'PropagationPolicy',
      metadata: { name: 'web', namespace: 'shop', annotations },
      spec: { resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'governed' }], failover: { cluster: { purgeMode: 'Gracefully' } } },
    });
    api.put(KARMADA.propagationPolicies, policy({ [CLUSTER_TOLERATION_SECONDS_ANNOTATION]: '42', [CLUSTER_GRACE_PERIOD_SECONDS_ANNOTATION]: '120' }));
    api.put(KARMADA.resourceBindings, bindingObject('governed', ppAnnotations));
    api.put(KARMADA.resourceBindings, bindingObject('other', {}));
    const { plane, ledger } = karmadaPlane(api);
    const row = async (name: string) => (await ledger.listPlacements('member1')).find((p) => p.name === name)?.failoverCluster;

    const report = await syncKarmada(plane, 0);
    expect(report.degraded).toBeUndefined();
    expect(await row('governed')).toEqual({ purgeMode: 'Gracefully', tolerationSeconds: 42, gracePeriodSeconds: 120 });
    // Karmada's shape, Karmada's semantics: no grace period (our default toleration applies to PreferNoExecute only).
    expect(await row('other')).toEqual({ purgeMode: 'Gracefully', tolerationSeconds: 300 });

    // An annotation edit changes no binding (Karmada does not copy annotations): the policy's watch re-indexes.
    api.put(KARMADA.propagationPolicies, policy({ [CLUSTER_TOLERATION_SECONDS_ANNOTATION]: '5' }));
    const watched = await syncKarmada(plane, 2);
    expect(watched.kinds.propagationpolicies).toMatchObject({ events: 1, relisted: false });
    expect(await row('governed')).toEqual({ purgeMode: 'Gracefully', tolerationSeconds: 5 });
    expect(await row('other')).toEqual({ purgeMode: 'Gracefully', tolerationSeconds: 300 });
  }, 15_000);

  it('re-indexes on a relist what changed while nobody watched, writing only rows that differ', async () => {
    const api = new FakeKubeApi();
    api.put(KARMADA.clusters, clusterObject('member1'));
    const spec = { resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'governed' }], failover: { cluster: { purgeMode: 'Gracefully' } } };
    api.put(KARMADA.propagationPolicies, {
      metadata: { name: 'web', namespace: 'shop', annotations: { [CLUSTER_GRACE_PERIOD_SECONDS_ANNOTATION]: '90' } },
      spec,
    });
    api.put(KARMADA.resourceBindings, bindingObject('governed', ppAnnotations));
    const { plane, ledger } = karmadaPlane(api);
    await syncKarmada(plane, 0);
    expect((await ledger.listPlacements('member1'))[0].failoverCluster).toMatchObject({ gracePeriodSeconds: 90 });
    // The annotation is removed while no sync runs; the policies' cursor is gone (as after a 410): a relist.
    api.put(KARMADA.propagationPolicies, { metadata: { name: 'web', namespace: 'shop' }, spec });
    await plane.karmada!.cursors.delete('propagationpolicies');
    const upserts: number[] = [];
    const upsert = ledger.upsertPlacements.bind(ledger);
    ledger.upsertPlacements = (rows) => (upserts.push(rows.length), upsert(rows));
    const report = await syncKarmada(plane, 0);
    expect(report.kinds.propagationpolicies).toMatchObject({ relisted: true });
    expect((await ledger.listPlacements('member1'))[0].failoverCluster).toEqual({ purgeMode: 'Gracefully', tolerationSeconds: 300 });
    expect(upserts).toEqual([1]);
  });

  it('syncs our ClusterTaintPolicies, and goes on without them (not degraded) when their CRD is not installed', async () => {
    const served = new FakeKubeApi();
    served.put(KARMADA.clusters, clusterObject('member1'));
    served.put(FAILOVER.clusterTaintPolicies, windowedPolicy('w'));
    const withOurs = karmadaPlane(served);
    const report = await syncKarmada(withOurs.plane, 0);
    expect(report.kinds['clustertaintpolicies.failover.io']).toMatchObject({ relisted: true });
    expect(report.degraded).toBeUndefined();

    const bare = new FakeKubeApi(Object.values(KARMADA));
    bare.put(KARMADA.clusters, clusterObject('member1'));
    const without = karmadaPlane(bare);
    for (let round = 0; round < 2; round++) {
      const answer = await syncKarmada(without.plane, 0);
      expect(answer.degraded).toBeUndefined();
      expect(answer.kinds['clustertaintpolicies.failover.io']).toEqual({ events: 0, relisted: false, resourceVersion: '', notServed: true });
      expect(answer.kinds.clustertaintpolicies).toMatchObject({ resourceVersion: expect.any(String) });
    }
    // Said once.
    expect(without.log.lines.filter((l) => l.message.includes('does not serve our kind'))).toHaveLength(1);
  });
});
