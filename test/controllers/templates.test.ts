import { describe, expect, it, vi } from 'vitest';
import { executeEviction } from '../../shared/controllers/evictionWorker';
import { runPacer } from '../../shared/controllers/pacer';
import { deletePropagationPolicy } from '../../shared/controllers/propagationPolicies';
import { scheduleBinding } from '../../shared/controllers/scheduler';
import { manageCluster } from '../../shared/controllers/taintManager';
import { deleteTemplate, listTemplates } from '../../shared/controllers/templates';
import { cluster } from '../helpers/fleet';
import { applyTo } from '../helpers/memoryLoop';
import { MemoryPlane, memoryPlane, takeEvictions } from '../helpers/memoryPlane';

const deployment = (name: string, replicas: number, labels: Record<string, string> = {}, namespace?: string) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, labels, ...(namespace ? { namespace } : {}) },
  spec: {
    replicas,
    selector: { matchLabels: { app: name } },
    template: { metadata: { labels: { app: name } }, spec: { containers: [{ image: 'nginx', name: 'nginx' }] } },
  },
});
const policy = (name: string, selectors: unknown[], extra: Record<string, unknown> = {}, kind = 'PropagationPolicy') => ({
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind,
  metadata: { name, ...(kind === 'PropagationPolicy' ? { namespace: 'default' } : {}) },
  spec: { resourceSelectors: selectors, placement: { clusterAffinity: { clusterNames: ['m1', 'm2', 'm3'] } }, ...extra },
});
const apply = (m: MemoryPlane, objects: unknown[]) => applyTo(m, objects);
const stored = async (m: MemoryPlane, key: string) => (await m.bindings.get(key))?.value;

describe('resource templates and the detector', () => {
  it('derives the binding Karmada would create: <name>-<kind>, resource with uid and resourceVersion, replicas, placement and failover from the policy; labels the template', async () => {
    const m = memoryPlane();
    const results = await apply(m, [
      cluster('m1'),
      cluster('m2'),
      deployment('nginx', 3, { app: 'nginx' }),
      policy('nginx-propagation', [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'nginx' }], { failover: { cluster: { purgeMode: 'Directly' } } }),
    ]);
    expect(results.map((r) => `${r.kind}/${r.name}:${r.action}`)).toEqual([
      'Cluster/m1:created',
      'Cluster/m2:created',
      'Deployment/default/nginx:created',
      'PropagationPolicy/default/nginx-propagation:created',
    ]);
    const binding = (await stored(m, 'rb:default:nginx-deployment'))!;
    const [template] = await listTemplates(m.plane);
    expect(binding.spec.resource).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      namespace: 'default',
      name: 'nginx',
      uid: template.metadata.uid,
      resourceVersion: '1',
    });
    expect(binding.spec.replicas).toBe(3);
    expect(binding.spec.placement?.clusterAffinity?.clusterNames).toEqual(['m1', 'm2', 'm3']);
    expect(binding.spec.failover?.cluster?.purgeMode).toBe('Directly');
    expect(binding.inheritedFrom).toMatchObject({ kind: 'PropagationPolicy', namespace: 'default', name: 'nginx-propagation' });
    expect(template.metadata.labels).toEqual({
      app: 'nginx',
      'propagationpolicy.karmada.io/name': 'nginx-propagation',
      'propagationpolicy.karmada.io/namespace': 'default',
    });
    // Placed by the scheduler (queued), as every binding applied without clusters.
    expect(await scheduleBinding(m.plane, 'rb:default:nginx-deployment')).toBe('scheduled');
    expect((await stored(m, 'rb:default:nginx-deployment'))!.spec.clusters?.map((c) => c.name)).toEqual(['m1', 'm2']);
  });

  const ranking: Array<{ name: string; policies: unknown[]; claimedBy: string }> = [
    {
      name: 'explicit priority first',
      policies: [
        policy('by-name', [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }]),
        policy('by-kind', [{ apiVersion: 'apps/v1', kind: 'Deployment' }], { priority: 5 }),
      ],
      claimedBy: 'by-kind',
    },
    {
      name: 'then name match over label match over kind match',
      policies: [
        policy('a-kind', [{ apiVersion: 'apps/v1', kind: 'Deployment' }]),
        policy('b-label', [{ apiVersion: 'apps/v1', kind: 'Deployment', labelSelector: { matchLabels: { tier: 'web' } } }]),
        policy('c-name', [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }]),
      ],
      claimedBy: 'c-name',
    },
    {
      name: 'label match over kind match',
      policies: [
        policy('a-kind', [{ apiVersion: 'apps/v1', kind: 'Deployment' }]),
        policy('b-label', [{ apiVersion: 'apps/v1', kind: 'Deployment', labelSelector: { matchLabels: { tier: 'web' } } }]),
      ],
      claimedBy: 'b-label',
    },
    {
      name: 'ties by name',
      policies: [policy('zeta', [{ apiVersion: 'apps/v1', kind: 'Deployment' }]), policy('alpha', [{ apiVersion: 'apps/v1', kind: 'Deployment' }])],
      claimedBy: 'alpha',
    },
    {
      name: 'a PropagationPolicy of the namespace before a ClusterPropagationPolicy, whatever its priority',
      policies: [
        policy('cluster-wide', [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }], { priority: 100 }, 'ClusterPropagationPolicy'),
        policy('local', [{ apiVersion: 'apps/v1', kind: 'Deployment' }]),
      ],
      claimedBy: 'local',
    },
    {
      name: 'a ClusterPropagationPolicy when no PropagationPolicy matches',
      policies: [policy('cluster-wide', [{ apiVersion: 'apps/v1', kind: 'Deployment' }], {}, 'ClusterPropagationPolicy')],
      claimedBy: 'cluster-wide',
    },
  ];
  it.each(ranking)('claims by Karmada priority: $name', async ({ policies, claimedBy }) => {
    const m = memoryPlane();
    await apply(m, [deployment('web', 1, { tier: 'web' }), ...policies]);
    const binding = (await stored(m, 'rb:default:web-deployment'))!;
    expect(binding.inheritedFrom?.name).toBe(claimedBy);
    const [template] = await listTemplates(m.plane);
    expect(Object.values(template.metadata.labels ?? {})).toContain(claimedBy);
  });

  it('derives again on a template change (replicas) and a policy change (a better policy arrives); a deleted policy unclaims', async () => {
    const m = memoryPlane();
    await apply(m, [cluster('m1'), deployment('web', 1), policy('kind-wide', [{ apiVersion: 'apps/v1', kind: 'Deployment' }])]);
    await scheduleBinding(m.plane, 'rb:default:web-deployment');
    await apply(m, [deployment('web', 4)]);
    let binding = (await stored(m, 'rb:default:web-deployment'))!;
    expect(binding.spec.replicas).toBe(4);
    expect(binding.spec.resource.resourceVersion).toBe('2');
    expect(binding.spec.clusters?.map((c) => c.name)).toEqual(['m1']); // the placement result is the control plane's: kept
    await apply(m, [
      policy('named', [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }], { placement: { clusterAffinity: { clusterNames: ['m2'] } } }),
    ]);
    binding = (await stored(m, 'rb:default:web-deployment'))!;
    expect(binding.inheritedFrom?.name).toBe('named');
    expect(binding.spec.placement?.clusterAffinity?.clusterNames).toEqual(['m2']);
    // A new template's claim is named by its Created event; a Claimed event says that the claim changed.
    const claims = (await m.events.all())
      .filter((e) => e.kind === 'Deployment' && ['Created', 'Claimed'].includes(e.reason))
      .map((e) => `${e.reason}: ${e.message}`);
    expect(claims).toEqual([
      'Created: Deployment created, claimed by PropagationPolicy default/kind-wide',
      'Claimed: claimed by PropagationPolicy default/named (was PropagationPolicy default/kind-wide)',
    ]);
    // Both policies deleted: unclaimed, the binding keeps its placement.
    await deletePropagationPolicy(m.plane, { kind: 'PropagationPolicy', namespace: 'default', name: 'named' });
    expect((await stored(m, 'rb:default:web-deployment'))!.inheritedFrom?.name).toBe('kind-wide');
    await deletePropagationPolicy(m.plane, { kind: 'PropagationPolicy', namespace: 'default', name: 'kind-wide' });
    const [template] = await listTemplates(m.plane);
    expect(template.metadata.labels ?? {}).toEqual({});
    expect((await stored(m, 'rb:default:web-deployment'))!.spec.clusters?.map((c) => c.name)).toEqual(['m1']);
    expect((await m.events.all()).filter((e) => e.reason === 'Unclaimed')).toHaveLength(1);
  });

  it('deleting the template deletes its binding; its waiting evictions end abandoned with the reason; a hand-written binding of another name keeps working', async () => {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '10' });
    await apply(m, [cluster('m1', true), cluster('m2'), deployment('web', 2), policy('p', [{ apiVersion: 'apps/v1', kind: 'Deployment' }])]);
    await apply(m, [
      {
        apiVersion: 'work.karmada.io/v1alpha2',
        kind: 'ResourceBinding',
        metadata: { name: 'hand', namespace: 'default' },
        spec: { resource: { apiVersion: 'v1', kind: 'ConfigMap', name: 'x' }, clusters: [{ name: 'm1' }] },
      },
    ]);
    // Placed on the faulty m1 by hand, so the taint manager plans its eviction.
    const web = (await stored(m, 'rb:default:web-deployment'))!;
    await m.bindings.replace(
      'rb:default:web-deployment',
      { ...web, spec: { ...web.spec, clusters: [{ name: 'm1', replicas: 2 }] } },
      (await m.bindings.get('rb:default:web-deployment'))!.etag,
    );
    await m.ledger.upsertPlacements([
      {
        cluster: 'm1',
        kind: 'ResourceBinding',
        namespace: 'default',
        name: 'web-deployment',
        resourceKind: 'apps/v1/Deployment',
        replicas: 2,
        tolerations: [],
        rev: 99,
      },
    ]);
    await manageCluster(m.plane, 'm1');
    expect(await deleteTemplate(m.plane, { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' })).toBe(true);
    expect(await stored(m, 'rb:default:web-deployment')).toBeUndefined();
    const row = await m.ledger.getEviction('m1', 'rb:default:web-deployment');
    expect(row?.record).toMatchObject({ state: 'abandoned', message: 'its resource template Deployment default/web was deleted' });
    expect(await stored(m, 'rb:default:hand')).toBeDefined();
    await runPacer(m.plane);
    for (const { message } of takeEvictions(m)) {
      m.clock.set(message.slot);
      expect(await executeEviction(m.plane, message)).toBe('evicted');
    }
  });

  it('a claim that moves from a PropagationPolicy to a ClusterPropagationPolicy takes the binding along (no stale claim label)', async () => {
    const m = memoryPlane();
    await apply(m, [deployment('web', 1), policy('local', [{ apiVersion: 'apps/v1', kind: 'Deployment' }])]);
    expect((await stored(m, 'rb:default:web-deployment'))!.inheritedFrom?.name).toBe('local');
    await apply(m, [
      policy('wide', [{ apiVersion: 'apps/v1', kind: 'Deployment' }], { placement: { clusterAffinity: { clusterNames: ['m9'] } } }, 'ClusterPropagationPolicy'),
      policy('local', [{ apiVersion: 'apps/v1', kind: 'StatefulSet' }]),
    ]);
    const binding = (await stored(m, 'rb:default:web-deployment'))!;
    expect(binding.inheritedFrom).toMatchObject({ kind: 'ClusterPropagationPolicy', name: 'wide' });
    expect(binding.spec.placement?.clusterAffinity?.clusterNames).toEqual(['m9']);
    expect(Object.keys(binding.labels)).toEqual(['clusterpropagationpolicy.karmada.io/name']);
  });

  it('stores a Secret as given but never shows its data: not in GET, not in events', async () => {
    const m = memoryPlane();
    await apply(m, [
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db' }, data: { password: 'c2VjcmV0LXZhbHVl' }, stringData: { token: 'plain-secret' } },
    ]);
    const stringified = JSON.stringify([await listTemplates(m.plane), await m.events.all()]);
    expect(stringified).not.toContain('c2VjcmV0LXZhbHVl');
    expect(stringified).not.toContain('plain-secret');
    expect((await m.templates.list())[0].value.manifest.data).toEqual({ password: 'c2VjcmV0LXZhbHVl' });
    expect((await listTemplates(m.plane))[0].data).toEqual({ password: '(redacted)' });
  });

  it('a policy change derives what its versions can select: its namespace read by key, no other template or binding read or written', async () => {
    const m = memoryPlane();
    const inNamespace = (namespace: string, placement: string[]) => ({
      ...policy('web', [{ apiVersion: 'apps/v1', kind: 'Deployment' }], { placement: { clusterAffinity: { clusterNames: placement } } }),
      metadata: { name: 'web', namespace },
    });
    await apply(m, [
      cluster('m1'),
      cluster('m2'),
      deployment('web', 1, {}, 'team-a'),
      deployment('api', 1, {}, 'team-a'),
      deployment('web', 1, {}, 'team-b'),
      inNamespace('team-a', ['m1']),
      inNamespace('team-b', ['m1']),
    ]);
    const teamB = (await m.bindings.get('rb:team-b:web-deployment'))!;
    const listed = [vi.spyOn(m.templates, 'list'), vi.spyOn(m.bindings, 'list')];
    const events = (await m.events.all()).length;
    await apply(m, [inNamespace('team-a', ['m2'])]);
    expect(listed.map((spy) => spy.mock.calls.length)).toEqual([0, 0]);
    for (const name of ['web', 'api']) expect((await stored(m, `rb:team-a:${name}-deployment`))!.spec.placement?.clusterAffinity?.clusterNames).toEqual(['m2']);
    expect((await m.bindings.get('rb:team-b:web-deployment'))!.etag).toBe(teamB.etag);
    const said = (await m.events.all()).slice(events).find((e) => e.reason === 'Configured' && e.name === 'team-a/web');
    expect(said?.message).toMatch(/; it claims 2 resource template\(s\)$/);
    // Both namespaces' policies in one request: one derivation over both, each binding written once.
    const replaced = vi.spyOn(m.bindings, 'replace');
    const writtenTogether = vi.spyOn(m.bindings, 'writeMany');
    await apply(m, [inNamespace('team-a', ['m1']), inNamespace('team-b', ['m2'])]);
    const written = [...replaced.mock.calls.map(([id]) => id), ...writtenTogether.mock.calls.flatMap(([entries]) => entries.map((e) => e.id))];
    expect(written.sort()).toEqual(['rb:team-a:api-deployment', 'rb:team-a:web-deployment', 'rb:team-b:web-deployment']);
    expect((await stored(m, 'rb:team-b:web-deployment'))!.spec.placement?.clusterAffinity?.clusterNames).toEqual(['m2']);
  });

  it("a request's policies are derived once together wherever the request puts them, and every object's result keeps its place", async () => {
    const m = memoryPlane();
    const inNamespace = (namespace: string) => ({ ...policy('web', [{ apiVersion: 'apps/v1', kind: 'Deployment' }]), metadata: { name: 'web', namespace } });
    await apply(m, [cluster('m1')]);
    const prefixReads = vi.spyOn(m.templates, 'listPrefix');
    const results = await apply(m, [inNamespace('a'), deployment('web', 1, {}, 'a'), inNamespace('b'), deployment('web', 1, {}, 'b')]);
    expect(results.map((r) => `${r.kind}:${r.action}`)).toEqual([
      'PropagationPolicy:created',
      'Deployment:created',
      'PropagationPolicy:created',
      'Deployment:created',
    ]);
    // One derivation over both policies' namespaces (one prefix read each), not one per policy.
    expect(prefixReads.mock.calls.map(([prefix]) => prefix).sort()).toEqual(['apps|v1|Deployment|a|', 'apps|v1|Deployment|b|']);
    for (const namespace of ['a', 'b']) expect((await stored(m, `rb:${namespace}:web-deployment`))!.inheritedFrom).toMatchObject({ namespace, name: 'web' });
  });

  it('a ClusterPropagationPolicy narrowed to another namespace releases what it no longer selects and claims the rest', async () => {
    const m = memoryPlane();
    const wide = (namespace: string) =>
      policy(
        'wide',
        [{ apiVersion: 'apps/v1', kind: 'Deployment', namespace }],
        { placement: { clusterAffinity: { clusterNames: ['m1'] } } },
        'ClusterPropagationPolicy',
      );
    await apply(m, [cluster('m1'), deployment('web', 1, {}, 'x'), deployment('web', 1, {}, 'y'), wide('x')]);
    expect((await stored(m, 'rb:x:web-deployment'))!.inheritedFrom?.name).toBe('wide');
    expect(await stored(m, 'rb:y:web-deployment')).toBeUndefined();
    await apply(m, [wide('y')]);
    expect((await stored(m, 'rb:y:web-deployment'))!.inheritedFrom?.name).toBe('wide');
    const released = (await m.templates.list()).find((t) => t.value.namespace === 'x')!;
    expect(Object.keys(released.value.labels)).not.toContain('clusterpropagationpolicy.karmada.io/name');
  });

  it('a template no policy matches is stored, unclaimed, with no binding', async () => {
    const m = memoryPlane();
    await apply(m, [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: 'team-a' }, data: { a: '1' } }]);
    expect((await listTemplates(m.plane)).map((t) => t.metadata.namespace)).toEqual(['team-a']);
    expect(await m.bindings.list()).toEqual([]);
  });
});
