import { describe, expect, it } from 'vitest';
import { KARMADA, KubeApi, KubeApiError, KubeObject, KubeResource, resourceName } from '../../shared/kube/api';
import { FAILOVER_BUDGETS, KarmadaBudgetStore } from '../../shared/store/karmada/budgetStore';
import { KubeMirroredEventLog } from '../../shared/store/karmada/kubeEvents';
import { karmadaTaintPolicyStore } from '../../shared/store/karmada/policyStores';
import { MemoryEventLog } from '../../shared/store/memory';
import type { EventRecord } from '../../shared/store/ports';
import type { Logger } from '../../shared/telemetry/log';

/**
 * A state that does not change is warned about once, then when it changes or ends: the Karmada stores
 * list their objects every second or so, and an object that does not validate, or an Event the API
 * server will not take, would otherwise be a warning each time.
 */

function recording(): Logger & { lines: Array<{ level: string; msg: string; fields?: Record<string, unknown> }> } {
  const lines: Array<{ level: string; msg: string; fields?: Record<string, unknown> }> = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => lines.push({ level, msg, fields });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** Serves each resource's objects as they are set; `create` fails with `createFailure` when one is set. */
class ListingApi implements KubeApi {
  readonly objects = new Map<KubeResource, KubeObject[]>();
  createFailure: KubeApiError | undefined;

  get(resource: KubeResource, name: string): Promise<KubeObject | undefined> {
    return Promise.resolve(this.objects.get(resource)?.find((o) => o.metadata.name === name));
  }
  list(resource: KubeResource) {
    return Promise.resolve({ items: structuredClone(this.objects.get(resource) ?? []), resourceVersion: '1' });
  }
  watch(): Promise<void> {
    return Promise.resolve();
  }
  patch(): Promise<KubeObject> {
    return Promise.reject(new Error('not in this fake'));
  }
  create(_resource: KubeResource, _namespace: string | undefined, body: KubeObject): Promise<KubeObject> {
    return this.createFailure ? Promise.reject(this.createFailure) : Promise.resolve(body);
  }
}

const policy = (effect: string, key = 'cluster.karmada.io/not-ready'): KubeObject => ({
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind: 'ClusterTaintPolicy',
  metadata: { name: 'not-ready', uid: 'uid-ctp', resourceVersion: '1' },
  spec: { targetCluster: { clusterNames: ['member1'] }, taintsToAdd: [{ key, effect }] },
});

const budget = (maxInFlight: unknown): KubeObject => ({
  apiVersion: 'failover.io/v1alpha1',
  kind: 'FailoverBudget',
  metadata: { name: 'shop', namespace: 'default', resourceVersion: '1' },
  spec: { selector: { matchLabels: { app: 'shop' } }, maxInFlight },
});

const event = (id: string): EventRecord => ({
  id,
  time: '2026-11-22T10:00:00.123Z',
  kind: 'Cluster',
  name: 'member1',
  type: 'Warning',
  reason: 'TaintAdded',
  message: 'added taint',
});

describe('warnings for a state that does not change', () => {
  it('a ClusterTaintPolicy that does not validate: one warning however often it is read, another when its errors change, a note when it validates', async () => {
    const api = new ListingApi();
    const log = recording();
    const store = karmadaTaintPolicyStore(api, log);
    api.objects.set(KARMADA.clusterTaintPolicies, [policy('Sometimes')]);
    for (let i = 0; i < 5; i++) expect(await store.list()).toEqual([]);
    expect(await store.get('not-ready')).toBeUndefined();
    expect(log.lines.map((l) => l.level)).toEqual(['warn']);
    api.objects.set(KARMADA.clusterTaintPolicies, [policy('NoExecute', '')]);
    await store.list();
    await store.list();
    api.objects.set(KARMADA.clusterTaintPolicies, [policy('NoExecute')]);
    expect((await store.list()).map((p) => p.id)).toEqual(['not-ready']);
    await store.list();
    expect(log.lines.map((l) => `${l.level} ${l.msg}`)).toEqual([
      'warn Karmada object left out: it does not validate',
      'warn Karmada object left out: it does not validate',
      'info Karmada object validates again',
    ]);
    expect(String(log.lines[0].fields?.errors)).toContain('effect');
    expect(String(log.lines[1].fields?.errors)).toContain('key');
  });

  it('a FailoverBudget that does not validate: one warning however often it is listed', async () => {
    const api = new ListingApi();
    const log = recording();
    const store = new KarmadaBudgetStore(api, log);
    api.objects.set(FAILOVER_BUDGETS, [budget('many')]);
    for (let i = 0; i < 5; i++) expect(await store.list()).toEqual([]);
    expect(log.lines.map((l) => l.level)).toEqual(['warn']);
    api.objects.set(FAILOVER_BUDGETS, [budget(2)]);
    expect(await store.list()).toHaveLength(1);
    expect(log.lines.map((l) => l.level)).toEqual(['warn', 'info']);
  });

  it('Kubernetes Events the API server will not take (404): one warning for all of them, a note when they are taken again', async () => {
    const api = new ListingApi();
    api.objects.set(KARMADA.clusters, [{ metadata: { name: 'member1', uid: 'uid-member1' } }]);
    api.createFailure = new KubeApiError(
      'create',
      resourceName(KARMADA.events, undefined, 'default'),
      404,
      'NotFound',
      'the server could not find the requested resource',
    );
    const log = recording();
    const events = new KubeMirroredEventLog(new MemoryEventLog(), api, log, 'host-1');
    for (let i = 0; i < 5; i++) await events.append([event(`step-${i}`)]);
    expect(log.lines.map((l) => l.level)).toEqual(['warn']);
    api.createFailure = undefined;
    await events.append([event('step-5')]);
    await events.append([event('step-6')]);
    expect(log.lines.map((l) => `${l.level} ${l.msg}`)).toEqual([
      'warn Kubernetes Event not posted (kept in the event history; said again when the failure changes)',
      'info Kubernetes Events posted again',
    ]);
  });
});
