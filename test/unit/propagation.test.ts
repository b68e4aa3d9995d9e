import { describe, expect, it } from 'vitest';
import type { BindingSpec, PropagationSpec } from '../../shared/api/resources';
import { BindingSubject, inherit, PropagationCandidate, selectPolicy } from '../../shared/failover/propagation';

const deployment = (name: string, namespace = 'apps') => ({ apiVersion: 'apps/v1', kind: 'Deployment', name, namespace });
const spec = (selectors: PropagationSpec['resourceSelectors'], extra: Partial<PropagationSpec> = {}): PropagationSpec => ({
  resourceSelectors: selectors,
  ...extra,
});
const pp = (name: string, namespace: string, s: PropagationSpec): PropagationCandidate => ({ kind: 'PropagationPolicy', namespace, name, spec: s });
const cpp = (name: string, s: PropagationSpec): PropagationCandidate => ({ kind: 'ClusterPropagationPolicy', name, spec: s });

const policies: PropagationCandidate[] = [
  pp('nginx-only', 'apps', spec([{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'nginx' }])),
  pp('all-deployments', 'apps', spec([{ apiVersion: 'apps/v1', kind: 'Deployment' }], { priority: -1 })),
  pp('labelled', 'apps', spec([{ apiVersion: 'apps/v1', kind: 'Deployment', labelSelector: { matchLabels: { tier: 'gold' } } }], { priority: 5 })),
  pp('other-namespace', 'web', spec([{ apiVersion: 'apps/v1', kind: 'Deployment' }])),
  cpp('cluster-wide', spec([{ apiVersion: 'apps/v1', kind: 'Deployment' }])),
  cpp('statefulsets', spec([{ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'db' }])),
];

describe('which propagation policy governs a binding', () => {
  it.each<[string, BindingSubject, string | undefined]>([
    ['a name selector in the namespace', { namespace: 'apps', labels: {}, resource: deployment('nginx') }, 'nginx-only'],
    ['the higher priority wins', { namespace: 'apps', labels: { tier: 'gold' }, resource: deployment('nginx') }, 'labelled'],
    ['a kind-wide selector, lower priority', { namespace: 'apps', labels: {}, resource: deployment('api') }, 'all-deployments'],
    ['a namespace policy before a cluster one', { namespace: 'web', labels: {}, resource: deployment('api', 'web') }, 'other-namespace'],
    ['a cluster policy when the namespace has none', { namespace: 'ops', labels: {}, resource: deployment('api', 'ops') }, 'cluster-wide'],
    ['a ClusterResourceBinding only sees cluster policies', { labels: {}, resource: deployment('api') }, 'cluster-wide'],
    [
      'the namespace of a cluster selector',
      { labels: {}, resource: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'pg', namespace: 'db' } },
      'statefulsets',
    ],
    ['nothing for an unmatched kind', { namespace: 'apps', labels: {}, resource: { apiVersion: 'v1', kind: 'ConfigMap', name: 'x' } }, undefined],
    [
      'the labels name a policy',
      { namespace: 'apps', labels: { 'propagationpolicy.karmada.io/name': 'all-deployments' }, resource: deployment('nginx') },
      'all-deployments',
    ],
    [
      'a label naming a missing policy falls back to matching',
      { namespace: 'apps', labels: { 'propagationpolicy.karmada.io/name': 'gone' }, resource: deployment('nginx') },
      'nginx-only',
    ],
    [
      'the cluster label names a cluster policy',
      { namespace: 'apps', labels: { 'clusterpropagationpolicy.karmada.io/name': 'cluster-wide' }, resource: deployment('nginx') },
      'cluster-wide',
    ],
  ])('%s', (_name, subject, expected) => {
    expect(selectPolicy(subject, policies)?.name).toBe(expected);
  });
});

describe('what a binding inherits', () => {
  const failover = {
    application: { decisionConditions: { tolerationSeconds: 30 }, purgeMode: 'Gracefully' as const, gracePeriodSeconds: 600, blockPredecessorSeconds: 600 },
  };
  const placement = { clusterAffinity: { clusterNames: ['member1', 'member2'] } };
  const policy = pp('p', 'apps', spec([{ apiVersion: 'apps/v1', kind: 'Deployment' }], { placement, failover }));
  const own: BindingSpec = { resource: deployment('nginx') };
  it.each<[string, BindingSpec, PropagationCandidate | undefined, string[]]>([
    ['both from the policy', own, policy, ['placement', 'failover']],
    ['its own failover wins', { ...own, failover: { cluster: { purgeMode: 'Directly', tolerationSeconds: 0 } } }, policy, ['placement']],
    ['its own placement wins', { ...own, placement: {} }, policy, ['failover']],
    ['nothing without a policy', own, undefined, []],
  ])('%s', (_name, bindingSpec, candidate, fields) => {
    const result = inherit(bindingSpec, candidate);
    expect(result.fields).toEqual(fields);
    if (fields.includes('failover')) expect(result.spec.failover).toBe(failover);
  });
});
