import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { decodeApplyDocuments } from '../../shared/api/decode';
import { loadConfig } from '../../shared/config';
import { applyObjects } from '../../shared/controllers/apply';
import type { ControlPlane } from '../../shared/controllers/ports';
import { createControlPlane } from '../../shared/runtime';
import type { BindingRecord, TemplateRecord } from '../../shared/store/records';
import { TableDocumentStore } from '../../shared/store/tableStorage';
import { silentLogger } from '../../shared/telemetry/log';
import { startTestStorage, TestStorage } from '../helpers/azurite';
import { binding, cluster } from '../helpers/fleet';

/**
 * A request's resource templates applied together on Azurite (table transactions, no read for a new one)
 * give what applying them one at a time gives: the same templates, claims, bindings and events; a template
 * or binding already stored is applied over, from a read. A policy change derives them again together.
 */
let env: TestStorage;
let plane: ControlPlane;
beforeAll(async () => {
  env = await startTestStorage();
  plane = createControlPlane(env.storage, loadConfig({}), { log: silentLogger });
  await applyObjects(plane, decodeApplyDocuments([cluster('t1'), cluster('t2'), cluster('t3')]));
}, 30_000);
afterAll(async () => env?.close());

const COUNT = 120;
const deployment = (namespace: string, i: number, labels: Record<string, string> = {}) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: `app-${i}`, namespace, labels: { app: `app-${i}`, tier: i % 3 === 0 ? 'web' : 'batch', ...labels } },
  spec: {
    replicas: 1 + (i % 4),
    selector: { matchLabels: { app: `app-${i}` } },
    template: { metadata: { labels: { app: `app-${i}` } }, spec: { containers: [{ name: 'app', image: 'nginx' }] } },
  },
});
const policy = (namespace: string, name: string, clusters: string[], extra: Record<string, unknown> = {}) => ({
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind: 'PropagationPolicy',
  metadata: { name, namespace },
  spec: { resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment' }], placement: { clusterAffinity: { clusterNames: clusters } }, ...extra },
});
const apply = (objects: unknown[]) => applyObjects(plane, decodeApplyDocuments(objects));

/** Labels without the claiming policy's namespace (the namespaces compared differ). */
const withoutNamespace = (labels: Record<string, string>): Record<string, string | undefined> => ({
  ...labels,
  'propagationpolicy.karmada.io/namespace': undefined,
});

/** What must not depend on how a namespace's objects were applied (ids, times and the namespace itself left out). */
async function comparable(namespace: string) {
  const templates = (await plane.templates.list())
    .map((e) => e.value)
    .filter((t: TemplateRecord) => t.namespace === namespace)
    .map(({ uid: _u, createdAt: _c, namespace: _n, manifest, claimedBy, ...rest }) => ({
      ...rest,
      manifest: { ...manifest, metadata: { ...(manifest.metadata as object), namespace: undefined } },
      claimedBy: claimedBy && { ...claimedBy, namespace: undefined },
      labels: withoutNamespace(rest.labels),
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
  const bindings = (await plane.bindings.list())
    .map((e) => e.value)
    .filter((b: BindingRecord) => b.namespace === namespace)
    .map(({ uid: _u, createdAt: _c, namespace: _n, rev: _r, spec, inheritedFrom, labels, ...rest }) => ({
      ...rest,
      labels: withoutNamespace(labels),
      inheritedFrom: inheritedFrom && { ...inheritedFrom, namespace: undefined },
      spec: { ...spec, resource: { ...spec.resource, uid: undefined, namespace: undefined } },
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
  const events: string[] = [];
  for (const i of [0, 1, 57, COUNT - 1]) {
    for (const kind of ['Deployment', 'ResourceBinding']) {
      const name = kind === 'Deployment' ? `${namespace}/app-${i}` : `${namespace}/app-${i}-deployment`;
      events.push(...(await plane.events.list({ kind, name, limit: 20 })).map((e) => `${kind} app-${i} ${e.reason}: ${e.message.replaceAll(namespace, 'NS')}`));
    }
  }
  return { templates, bindings, events };
}

/** The bindings whose history is the same in both namespaces (app-7's template and app-9's binding were there before the request). */
const alike = (b: { name: string }) => b.name !== 'app-7-deployment' && b.name !== 'app-9-deployment';

describe('resource templates applied together', () => {
  it('gives what one at a time gives, in a few transactions per hundred and no read of a new template', async () => {
    await apply([policy('one-by-one', 'deployments', ['t1', 't2'])]);
    for (let i = 0; i < COUNT; i++) await apply([deployment('one-by-one', i)]);

    // Already stored before the request: a template (with other labels) and a hand-written binding under a derived binding's name.
    await apply([policy('together', 'deployments', ['t1', 't2']), deployment('together', 7, { extra: 'before' })]);
    await apply([{ ...binding('app-9-deployment', ['t3']), metadata: { name: 'app-9-deployment', namespace: 'together' } }]);
    const templatesStore = plane.templates as TableDocumentStore<TemplateRecord>;
    const templateReads = vi.spyOn(templatesStore, 'get');
    const templateBatches = vi.spyOn(templatesStore, 'writeMany');
    const results = await apply(Array.from({ length: COUNT }, (_, i) => deployment('together', i)));
    expect(results.filter((r) => r.action !== 'created').map((r) => `${r.name} ${r.action}`)).toEqual(['together/app-7 configured']);
    // One read: the template found stored, applied from it.
    expect(templateReads.mock.calls.map(([key]) => key)).toEqual([expect.stringContaining('app-7')]);
    expect(templateBatches).toHaveBeenCalledTimes(1);
    templateReads.mockRestore();
    templateBatches.mockRestore();

    const together = await comparable('together');
    const oneByOne = await comparable('one-by-one');
    // The hand-written binding was applied over (its clusters and history are the control plane's: kept).
    const app9 = together.bindings.find((b) => b.name === 'app-9-deployment')!;
    expect(app9.spec.clusters).toEqual([expect.objectContaining({ name: 't3' })]);
    expect(app9.generation).toBe(2);
    expect(together.bindings.filter(alike)).toEqual(oneByOne.bindings.filter(alike));
    // The template found stored was applied over: a new generation, and its binding follows it.
    expect(together.bindings.find((b) => b.name === 'app-7-deployment')).toMatchObject({ generation: 2, spec: { resource: { resourceVersion: '2' } } });
    expect(together.templates.filter((t) => t.name !== 'app-7')).toEqual(oneByOne.templates.filter((t) => t.name !== 'app-7'));
    expect(together.templates.find((t) => t.name === 'app-7')).toMatchObject({ generation: 2, labels: { app: 'app-7', tier: 'batch' } });
    expect(together.events).toEqual(oneByOne.events);
    expect(together.bindings).toHaveLength(COUNT);
    expect(together.bindings.every((b) => b.labels['propagationpolicy.karmada.io/name'] === 'deployments')).toBe(true);
  });

  it('a request of several batches: every template has its binding, derived from it', async () => {
    const large = 1_050;
    await apply([policy('large', 'deployments', ['t1'])]);
    const results = await apply(Array.from({ length: large }, (_, i) => deployment('large', i)));
    expect(results.every((r) => r.action === 'created')).toBe(true);
    const bindings = (await plane.bindings.list()).filter((b) => b.value.namespace === 'large');
    expect(bindings).toHaveLength(large);
    const templates = new Map((await plane.templates.list()).filter((t) => t.value.namespace === 'large').map((t) => [t.value.name, t.value]));
    for (const { value } of bindings) {
      const template = templates.get(value.spec.resource.name)!;
      expect(value.spec.resource.uid).toBe(template.uid);
      expect(value.labels['propagationpolicy.karmada.io/name']).toBe('deployments');
    }
    expect((await plane.events.list({ kind: 'ResourceBinding', name: `large/app-${large - 1}-deployment`, limit: 5 })).map((e) => e.reason)).toEqual([
      'Created',
    ]);
  });

  it('derives them again together when a policy changes or another one claims some of them', async () => {
    // The bindings are listed once (one namespace of many templates); one changed by another writer after
    // the listing is derived again alone, from a fresh read, and keeps that writer's change.
    const bindingsStore = plane.bindings as TableDocumentStore<BindingRecord>;
    const listPrefix = bindingsStore.listPrefix.bind(bindingsStore);
    let raced = false;
    const listing = vi.spyOn(bindingsStore, 'listPrefix').mockImplementation(async (prefix, where) => {
      const listed = await listPrefix(prefix, where);
      const theirs = raced ? undefined : listed.find((entry) => entry.id === 'rb:together:app-20-deployment');
      raced ||= theirs !== undefined;
      if (theirs) await bindingsStore.replace(theirs.id, { ...theirs.value, labels: { ...theirs.value.labels, theirs: 'yes' } }, theirs.etag);
      return listed;
    });
    const pointReads = vi.spyOn(bindingsStore, 'get');
    await apply([policy('together', 'deployments', ['t2', 't3'])]);
    // Listed, not read one by one: the binding that lost its race is read.
    // (app-9's binding, written by hand before its template came, is looked at again by the bindings' own re-derivation.)
    expect(pointReads.mock.calls.map(([key]) => key).filter((key) => key !== 'rb:together:app-9-deployment')).toEqual(['rb:together:app-20-deployment']);
    listing.mockRestore();
    pointReads.mockRestore();
    const app20 = (await bindingsStore.get('rb:together:app-20-deployment'))!.value;
    expect(app20.labels.theirs).toBe('yes');
    expect(app20.spec.placement?.clusterAffinity?.clusterNames).toEqual(['t2', 't3']);

    await apply([policy('one-by-one', 'deployments', ['t2', 't3'])]);
    const web = { labelSelector: { matchLabels: { tier: 'web' } } };
    const webPolicy = (namespace: string) =>
      policy(namespace, 'web', ['t1'], { resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment', ...web }], priority: 10 });
    await apply([webPolicy('together')]);
    await apply([webPolicy('one-by-one')]);
    const together = await comparable('together');
    const oneByOne = await comparable('one-by-one');
    const placementOf = (c: typeof together, name: string) => c.bindings.find((b) => b.name === name)!.spec.placement?.clusterAffinity?.clusterNames;
    expect(placementOf(together, 'app-1-deployment')).toEqual(['t2', 't3']);
    expect(placementOf(together, 'app-3-deployment')).toEqual(['t1']);
    expect(together.templates.find((t) => t.name === 'app-3')!.claimedBy).toMatchObject({ name: 'web' });
    expect(together.events.filter((e) => e.includes('Claimed'))).toContain(
      'Deployment app-57 Claimed: claimed by PropagationPolicy NS/web (was PropagationPolicy NS/deployments)',
    );
    // Both namespaces went through the same derivation: the same outcome.
    const withoutTheirs = (b: (typeof together.bindings)[number]) => ({ ...b, labels: { ...b.labels, theirs: undefined }, generation: 0 });
    expect(together.bindings.filter(alike).map(withoutTheirs)).toEqual(oneByOne.bindings.filter(alike).map(withoutTheirs));
    expect(together.events).toEqual(oneByOne.events);
  });
});
