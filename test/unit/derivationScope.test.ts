import { describe, expect, it } from 'vitest';
import type { ResourceSelector } from '../../shared/api/resources';
import { derivationScope, PropagationCandidate } from '../../shared/failover/propagation';
import { templateKey } from '../../shared/failover/templates';

const pp = (namespace: string, ...resourceSelectors: ResourceSelector[]): PropagationCandidate => ({
  kind: 'PropagationPolicy',
  namespace,
  name: 'p',
  spec: { resourceSelectors },
});
const cpp = (...resourceSelectors: ResourceSelector[]): PropagationCandidate => ({ kind: 'ClusterPropagationPolicy', name: 'c', spec: { resourceSelectors } });
const deployments = { apiVersion: 'apps/v1', kind: 'Deployment' };

/** What a propagation-policy change derives again: key prefixes of templates and bindings, undefined for all. */
describe('derivationScope', () => {
  const cases: Array<[string, PropagationCandidate[], string[] | undefined, string[] | undefined]> = [
    ['a PropagationPolicy: its namespace only', [pp('team-a', deployments)], ['apps|v1|Deployment|team-a|'], ['rb:team-a:']],
    ['a selector naming an object', [pp('team-a', { ...deployments, name: 'web' })], ['apps|v1|Deployment|team-a|web'], ['rb:team-a:']],
    ["a PropagationPolicy's selector of another namespace selects nothing", [pp('team-a', { ...deployments, namespace: 'team-b' })], [], []],
    [
      'before and after a change: both namespaces of a ClusterPropagationPolicy',
      [cpp({ ...deployments, namespace: 'x' }), cpp({ ...deployments, namespace: 'y' })],
      ['apps|v1|Deployment|x|', 'apps|v1|Deployment|y|'],
      ['rb:x:', 'rb:y:'],
    ],
    [
      'a ClusterPropagationPolicy selecting a kind anywhere: that kind, every binding',
      [cpp({ apiVersion: 'v1', kind: 'Namespace' })],
      ['v1|Namespace|'],
      undefined,
    ],
    [
      'a prefix another covers is dropped',
      [pp('a', deployments), pp('a', { ...deployments, name: 'web' }), cpp(deployments)],
      ['apps|v1|Deployment|'],
      undefined,
    ],
  ];
  it.each(cases)('%s', (_name, versions, templates, bindings) => {
    expect(derivationScope(versions)).toEqual({ templates, bindings });
  });

  it('its template prefixes are prefixes of the keys of the templates the selector matches', () => {
    const [prefix] = derivationScope([pp('team-a', { ...deployments, name: 'web' })]).templates!;
    expect(templateKey({ ...deployments, namespace: 'team-a', name: 'web' }).startsWith(prefix)).toBe(true);
    expect(templateKey({ ...deployments, namespace: 'team-b', name: 'web' }).startsWith(prefix)).toBe(false);
  });
});
