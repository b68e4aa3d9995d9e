import { describe, expect, it } from 'vitest';
import { decodeApplyDocuments } from '../../shared/api/decode';
import { PlaneCaches } from '../../shared/cache';
import { applyObjects } from '../../shared/controllers/apply';
import { applyBinding, BindingInput, deleteBinding } from '../../shared/controllers/bindings';
import { drainCluster } from '../../shared/controllers/drain';
import { deletePropagationPolicy, repairInterruptedWrites } from '../../shared/controllers/propagationPolicies';
import { INTENT_GRACE_MS, listClusterPlacements, writeBinding } from '../../shared/controllers/state/bindingWrites';
import { manageCluster } from '../../shared/controllers/taintManager';
import { whatIfFailure } from '../../shared/controllers/whatIf';
import { bindingKey } from '../../shared/failover/bindingModel';
import { MemoryStorageError } from '../../shared/store/memory';
import { write } from '../../shared/store/optimistic';
import type { BindingRecord } from '../../shared/store/records';
import { binding, cluster } from '../helpers/fleet';
import { applyTo } from '../helpers/memoryLoop';
import { MemoryPlane, memoryPlane } from '../helpers/memoryPlane';

/**
 * Writes that span tables are all-or-nothing also when the host dies: a binding and its placement rows (the
 * index the taint manager, a drain and what-if read), a propagation policy and the bindings derived from it.
 * Each test kills the writer (a fault that never returns to it) or refuses a write at the exact step, then
 * asserts what readers see at once and what the repair timer leaves after the grace.
 */

const CLUSTERS = ['m1', 'm2', 'm3'];
const kill = () => new Error('host killed');
const refused = () => new MemoryStorageError(503, 'ServerBusy', 'the server is busy');
const key = (name: string) => `rb:default:${name}`;
const apply = (m: MemoryPlane, objects: unknown[]) => applyObjects(m.plane, decodeApplyDocuments(objects));
/** One binding applied alone (the path of a binding that lost a batch's race, and of derived bindings). */
const applyOne = (m: MemoryPlane, object: unknown) => applyBinding(m.plane, decodeApplyDocuments([object])[0].object as BindingInput);
const onM1 = (names: string[]) => names.map((n) => binding(n, ['m1'], { placement: { clusterAffinity: { clusterNames: ['m1', 'm2'] } } }));
const names = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}-${i}`);

/** Placement rows whose binding is not stored, or is not placed on the row's cluster: what a phantom is. */
async function phantoms(m: MemoryPlane): Promise<string[]> {
  const out: string[] = [];
  for (const name of CLUSTERS) {
    for (const row of await m.ledger.listPlacements(name)) {
      const stored = await m.bindings.get(bindingKey(row));
      if (!stored?.value.spec.clusters?.some((c) => c.name === name)) out.push(`${name}/${row.name}`);
    }
  }
  return out.sort();
}

/** Past the grace, as the repair timer runs it. */
async function repairAfterGrace(m: MemoryPlane) {
  m.clock.advance(INTENT_GRACE_MS + 1000);
  return repairInterruptedWrites(m.plane);
}

async function fleet(bindings: unknown[] = onM1(names('real', 10))) {
  const m = memoryPlane({ RESOURCE_EVICTION_RATE: '0.5' });
  await applyTo(m, [...CLUSTERS.map((n) => cluster(n)), ...bindings]);
  return m;
}

const notReady = {
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind: 'ClusterTaintPolicy',
  metadata: { name: 'not-ready' },
  spec: {
    matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False'] }],
    taintsToAdd: [{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', addOnMatchSeconds: 1 }],
  },
};

describe('a bulk apply killed between the placement rows and the bindings', () => {
  it.each([
    ['the host dies after the rows, before the bindings (creating)', 'writeMany', kill, 'before'],
    ['the bindings write is refused (creating)', 'writeMany', refused, 'before'],
  ] as const)('%s: no phantom is drained or shown, and the repair removes every orphan', async (_name, method, fault, when) => {
    const m = await fleet();
    m.bindings.failNext(method, fault(), { when });
    await expect(apply(m, onM1(names('ghost', 50)))).rejects.toThrow();
    // What the kill leaves: rows of 50 bindings that were never written.
    expect(await phantoms(m)).toHaveLength(50);

    // Readers of the index ask the bindings about rows an open intent names: none of the 50 is listed or drained.
    expect((await listClusterPlacements(m.plane, 'm1')).placements.map((p) => p.name).sort()).toEqual(names('real', 10).sort());
    expect(await drainCluster(m.plane, 'm1')).toMatchObject({ planned: 10, alreadyDecided: 0 });
    expect(
      (await m.ledger.scanEvictions({ cluster: 'm1' }))
        .map((r) => r.record.name)
        .filter((n) => n.startsWith('ghost'))
        .sort(),
    ).toEqual([]);

    expect(await repairAfterGrace(m)).toEqual({ settled: 50, waiting: 0 });
    expect(await phantoms(m)).toEqual([]);
    expect(await m.ledger.listIntents()).toEqual([]);
    // Idle again: the next pass reads the journal and finds nothing.
    expect(await repairAfterGrace(m)).toEqual({});
  });

  it('a bulk update killed after the rows: rows of the new clusters go, the stored placement keeps its rows', async () => {
    const m = await fleet();
    m.bindings.failNext('writeMany', kill());
    // Every stored binding moves to m2: applied from a read (they are stored), rows of m2 written first.
    await expect(
      apply(
        m,
        names('real', 10).map((n) => binding(n, ['m2'])),
      ),
    ).rejects.toThrow('host killed');
    expect(await phantoms(m)).toHaveLength(10);
    expect((await listClusterPlacements(m.plane, 'm2')).placements).toEqual([]);
    expect((await listClusterPlacements(m.plane, 'm1')).placements).toHaveLength(10);
    expect(await repairAfterGrace(m)).toEqual({ settled: 10, waiting: 0 });
    expect(await phantoms(m)).toEqual([]);
    expect(await m.ledger.listPlacements('m1')).toHaveLength(10);
  });

  it('after the repair, what-if, the taint manager and a drain plan only stored bindings (no rate slot for a phantom)', async () => {
    const m = await fleet([notReady, ...onM1(names('real', 10))]);
    m.bindings.failNext('writeMany', kill());
    await expect(apply(m, onM1(names('ghost', 90)))).rejects.toThrow('host killed');
    await repairAfterGrace(m);

    const answer = await whatIfFailure(m.plane, { failClusters: ['m1'] });
    const listed = [...answer.evictions, ...answer.blocked, ...answer.tolerated, ...answer.alreadyDecided].map((e) => e.binding.name);
    expect(listed.sort()).toEqual(names('real', 10).sort());
    await apply(m, [cluster('m1', true)]);
    expect(await manageCluster(m.plane, 'm1')).toMatchObject({ planned: 10 });
    expect(await m.ledger.scanEvictions({ cluster: 'm1' })).toHaveLength(10);
  });
});

describe('a single binding write interrupted at each step', () => {
  it('created: the host dies after the rows, before the binding; a refused create too', async () => {
    for (const fault of [kill, refused]) {
      const m = await fleet();
      m.bindings.failNext('create', fault());
      await expect(applyOne(m, binding('ghost', ['m1', 'm3']))).rejects.toThrow();
      expect(await phantoms(m)).toEqual(['m1/ghost', 'm3/ghost']);
      expect((await listClusterPlacements(m.plane, 'm3')).placements).toEqual([]);
      expect(await repairAfterGrace(m)).toEqual({ settled: 1, waiting: 0 });
      expect(await phantoms(m)).toEqual([]);
    }
  });

  it('deleted: the host dies after the binding is deleted, before its rows go', async () => {
    const m = await fleet();
    m.ledger.failNext('removePlacement', kill());
    await expect(deleteBinding(m.plane, { kind: 'ResourceBinding', namespace: 'default', name: 'real-0' })).rejects.toThrow('host killed');
    expect(await phantoms(m)).toEqual(['m1/real-0']);
    expect(await drainCluster(m.plane, 'm1')).toMatchObject({ planned: 9 });
    await repairAfterGrace(m);
    expect(await phantoms(m)).toEqual([]);
  });

  it('an attempt that lost a race leaves no row for the version that never landed', async () => {
    const m = await fleet();
    // The write places the binding on the cluster its label names; another writer relabels it between the
    // first attempt's rows and its write, so the write lands from a second attempt, elsewhere.
    const placeByLabel = (current: BindingRecord | undefined) => {
      const next = structuredClone(current!);
      const target = next.labels.zone ?? 'm2';
      next.spec.clusters = [{ name: target, replicas: 2 }];
      return write(next, null);
    };
    m.bindings.beforeWrite = async (method) => {
      if (method !== 'replace') return;
      m.bindings.beforeWrite = undefined;
      const theirs = (await m.bindings.get(key('real-0')))!;
      await m.bindings.replace(key('real-0'), { ...theirs.value, labels: { zone: 'm3' } }, theirs.etag);
    };
    await writeBinding(m.plane, key('real-0'), placeByLabel);
    expect((await m.bindings.get(key('real-0')))!.value.spec.clusters).toEqual([{ name: 'm3', replicas: 2 }]);
    expect(await phantoms(m)).toEqual([]);
    expect(await m.ledger.listIntents()).toEqual([]);
  });

  it('a writer that outlives the grace finds its intent taken and writes again: the repair never leaves a placement unindexed', async () => {
    const m = await fleet();
    // The repair runs while the writer stalls between its rows and its create (past the grace).
    m.bindings.beforeWrite = async (method) => {
      if (method !== 'create') return;
      m.bindings.beforeWrite = undefined;
      expect(await repairAfterGrace(m)).toEqual({ settled: 1, waiting: 0 });
      expect(await m.ledger.listPlacements('m3')).toEqual([]);
    };
    expect(await applyOne(m, binding('slow', ['m3']))).toBe('created');
    expect((await m.ledger.listPlacements('m3')).map((p) => p.name)).toEqual(['slow']);
    expect(await phantoms(m)).toEqual([]);
    expect(await m.ledger.listIntents()).toEqual([]);
  });
});

const deployment = (name: string) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, labels: { app: name } },
  spec: {
    replicas: 2,
    selector: { matchLabels: { app: name } },
    template: { metadata: { labels: { app: name } }, spec: { containers: [{ image: 'nginx', name: 'nginx' }] } },
  },
});
const propagation = (name: string, clusterNames: string[]) => ({
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind: 'PropagationPolicy',
  metadata: { name, namespace: 'default' },
  spec: { resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }], placement: { clusterAffinity: { clusterNames } } },
});
const derived = async (m: MemoryPlane) => (await m.bindings.get(key('web-deployment')))?.value;

describe('a propagation-policy change interrupted before its bindings are derived', () => {
  it('created: the host dies after the policy is stored, before the detector runs; the repair derives the binding', async () => {
    const m = await fleet([deployment('web')]);
    expect(await derived(m)).toBeUndefined();
    // The detector's first step after the policy's write: listing the templates.
    m.templates.failNext('list', kill());
    await expect(apply(m, [propagation('web', ['m1', 'm2'])])).rejects.toThrow('host killed');
    expect(await m.propagationPolicies.get('pp:default:web')).toBeDefined();
    expect(await derived(m)).toBeUndefined();

    const outcome = await repairAfterGrace(m);
    expect(outcome).toMatchObject({ derivations: 1 });
    expect((await derived(m))?.spec.placement?.clusterAffinity?.clusterNames).toEqual(['m1', 'm2']);
    expect((await m.templates.list())[0].value.claimedBy).toMatchObject({ name: 'web' });
    expect(await repairAfterGrace(m)).toEqual({});
  });

  it('changed: the binding write the derivation makes is refused; the repair derives it again', async () => {
    const m = await fleet([deployment('web'), propagation('web', ['m1', 'm2'])]);
    // A policy's bindings are derived together: their write is one writeMany.
    m.bindings.failNext('writeMany', refused());
    await expect(apply(m, [propagation('web', ['m2', 'm3'])])).rejects.toThrow();
    expect((await derived(m))?.spec.placement?.clusterAffinity?.clusterNames).toEqual(['m1', 'm2']);
    await repairAfterGrace(m);
    expect((await derived(m))?.spec.placement?.clusterAffinity?.clusterNames).toEqual(['m2', 'm3']);
  });

  it('deleted: the host dies after the policy is deleted; the repair lets its bindings go', async () => {
    const m = await fleet([deployment('web'), propagation('web', ['m1', 'm2'])]);
    expect((await derived(m))?.inheritedFrom).toMatchObject({ name: 'web' });
    m.templates.failNext('list', kill());
    await expect(deletePropagationPolicy(m.plane, { kind: 'PropagationPolicy', namespace: 'default', name: 'web' })).rejects.toThrow('host killed');
    expect((await derived(m))?.inheritedFrom).toMatchObject({ name: 'web' });
    await repairAfterGrace(m);
    expect((await derived(m))?.inheritedFrom).toBeUndefined();
    expect((await m.templates.list())[0].value.claimedBy).toBeUndefined();
  });
});

describe('a template apply interrupted before its binding is derived', () => {
  it('the host dies after the template is stored, before its binding is written; the repair derives it', async () => {
    const m = await fleet([propagation('web', ['m1', 'm2'])]);
    // A request's templates derive their bindings together: their write is one writeMany.
    m.bindings.failNext('writeMany', kill());
    await expect(apply(m, [deployment('web')])).rejects.toThrow('host killed');
    expect(await m.templates.list()).toHaveLength(1);
    expect(await derived(m)).toBeUndefined();
    await repairAfterGrace(m);
    expect((await derived(m))?.spec.placement?.clusterAffinity?.clusterNames).toEqual(['m1', 'm2']);
  });
});

describe('what the journal costs', () => {
  it('writes that leave the index as it is and an unchanged policy write no intent; an idle repair reads the journal once and nothing else', async () => {
    const m = await fleet([deployment('web'), propagation('web', ['m1', 'm2']), ...onM1(names('real', 2))]);
    const before = m.ledger.table.dump().length;
    m.ledger.beforeWrite = (method) => {
      throw new Error(`unexpected ledger write ${method}`);
    };
    expect(await applyOne(m, onM1(['real-0'])[0])).toBe('unchanged');
    await writeBinding(m.plane, key('real-1'), (current) => write({ ...current!, labels: { team: 'a' } }, null));
    expect(await apply(m, [propagation('web', ['m1', 'm2'])])).toMatchObject([{ action: 'unchanged' }]);
    m.ledger.beforeWrite = undefined;
    expect(m.ledger.table.dump()).toHaveLength(before);
    const calls: string[] = [];
    const record = <T extends object>(target: T, name: string) =>
      new Proxy(target, {
        get: (obj, prop, receiver) => {
          const value = Reflect.get(obj, prop, receiver) as unknown;
          return typeof value === 'function'
            ? (...args: unknown[]) => (calls.push(`${name}.${String(prop)}`), (value as (...a: unknown[]) => unknown).apply(obj, args))
            : value;
        },
      });
    const plane = {
      ...m.plane,
      caches: new PlaneCaches(),
      ledger: record(m.ledger, 'ledger'),
      bindings: record(m.bindings, 'bindings'),
      templates: record(m.templates, 'templates'),
    };
    plane.propagationPolicies = record(m.propagationPolicies, 'propagationPolicies');
    m.clock.advance(INTENT_GRACE_MS + 1000);
    expect(await repairInterruptedWrites(plane)).toEqual({});
    expect(calls).toEqual(['ledger.listIntents']);
  });
});
