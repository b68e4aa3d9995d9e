import { describe, expect, it } from 'vitest';
import { decodeApplyDocuments } from '../../shared/api/decode';
import { ApiError } from '../../shared/api/errors';
import { applyObjects } from '../../shared/controllers/apply';
import { MemoryPlane, memoryPlane } from '../helpers/memoryPlane';

/**
 * Bad resource templates and policies around them: each answered 400 with the field and the reason, and
 * nothing already stored changes (every store compared before and after).
 */

const deployment = (metadata: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata,
  spec: { replicas: 1 },
  ...extra,
});
const secret = (data: unknown) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db' }, data });

async function snapshot(m: MemoryPlane): Promise<string> {
  const stores = [m.clusters, m.policies, m.bindings, m.propagationPolicies, m.templates];
  return JSON.stringify([...(await Promise.all(stores.map((s) => s.list()))), await m.events.all(), await m.ledger.scanEvictions({})]);
}

const cases: Array<{ name: string; objects: unknown[]; path: string; message: string }> = [
  { name: 'a template without a name', objects: [deployment({})], path: 'metadata.name', message: 'required field is missing' },
  {
    name: 'a template name that is not a DNS subdomain',
    objects: [deployment({ name: 'Web_App' })],
    path: 'metadata.name',
    message: 'must be a DNS subdomain',
  },
  { name: 'a template without metadata', objects: [{ apiVersion: 'apps/v1', kind: 'Deployment' }], path: 'metadata', message: 'required field is missing' },
  {
    name: 'a template without apiVersion',
    objects: [{ kind: 'Deployment', metadata: { name: 'web' } }],
    path: 'apiVersion',
    message: 'required field is missing',
  },
  {
    name: 'an apiVersion that is not one',
    objects: [{ apiVersion: 'apps/v1/extra', kind: 'Deployment', metadata: { name: 'web' } }],
    path: 'apiVersion',
    message: 'must be an API version',
  },
  {
    name: 'a kind that is not CamelCase',
    objects: [{ apiVersion: 'apps/v1', kind: 'deployment', metadata: { name: 'web' } }],
    path: 'kind',
    message: 'must be a kind such as "Deployment"',
  },
  {
    name: 'a namespace that is not a DNS label',
    objects: [deployment({ name: 'web', namespace: 'Team.A' })],
    path: 'metadata.namespace',
    message: 'must be a DNS label',
  },
  {
    name: 'a label name over 63 characters',
    objects: [deployment({ name: 'web', labels: { ['x'.repeat(64)]: 'v' } })],
    path: `metadata.labels.${'x'.repeat(64)}`,
    message: 'its name part',
  },
  {
    name: 'a label value over 63 characters',
    objects: [deployment({ name: 'web', labels: { app: 'v'.repeat(64) } })],
    path: 'metadata.labels.app',
    message: 'must be at most 63 characters',
  },
  { name: 'a Secret with data that is not base64', objects: [secret({ password: 'not base64!' })], path: 'data.password', message: 'must be base64' },
  { name: 'a Secret whose data is not a map', objects: [secret(['a'])], path: 'data', message: 'must be a map' },
  { name: 'a Secret with a key Kubernetes refuses', objects: [secret({ 'pass word': 'c2VjcmV0' })], path: 'data.pass word', message: 'key must consist of' },
  {
    name: 'the same template twice in one request',
    objects: [deployment({ name: 'web' }), deployment({ name: 'web' })],
    path: 'metadata.name',
    message: 'appears twice in this request',
  },
  {
    name: 'a typo in one of our own kinds is not taken for a template',
    objects: [{ apiVersion: 'policy.karmada.io/v1alpha1', kind: 'PropagationPolicys', metadata: { name: 'p' }, spec: {} }],
    path: 'kind',
    message: 'did you mean "PropagationPolicy"?',
  },
  {
    name: 'a good template beside a bad policy: nothing of the request is stored',
    objects: [
      deployment({ name: 'web' }),
      { apiVersion: 'policy.karmada.io/v1alpha1', kind: 'PropagationPolicy', metadata: { name: 'p' }, spec: { resourceSelectors: [] } },
    ],
    path: 'spec.resourceSelectors',
    message: 'must list at least one resource selector',
  },
];

describe('bad resource templates', () => {
  it.each(cases)('$name: 400 at $path, nothing stored', async ({ objects, path, message }) => {
    const m = memoryPlane();
    await applyObjects(m.plane, decodeApplyDocuments([deployment({ name: 'existing' })]));
    const before = await snapshot(m);
    let error: unknown;
    try {
      await applyObjects(m.plane, decodeApplyDocuments(objects));
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ApiError);
    const api = error as ApiError;
    expect(api.status).toBe(400);
    expect(api.errors.some((e) => e.path === path && e.message.includes(message))).toBe(true);
    expect(await snapshot(m)).toBe(before);
  });

  it('a policy whose selectors match nothing is accepted, with an event saying so', async () => {
    const m = memoryPlane();
    const [result] = await applyObjects(
      m.plane,
      decodeApplyDocuments([
        {
          apiVersion: 'policy.karmada.io/v1alpha1',
          kind: 'PropagationPolicy',
          metadata: { name: 'later' },
          spec: { resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'not-yet' }] },
        },
      ]),
    );
    expect(result.action).toBe('created');
    const [event] = (await m.events.all()).filter((e) => e.kind === 'PropagationPolicy');
    expect(event.message).toContain('its resourceSelectors match no resource template or binding yet');
  });

  it('two policies of equal priority: both accepted; the template goes to the one first by name, and the event says which', async () => {
    const m = memoryPlane();
    const policy = (name: string) => ({
      apiVersion: 'policy.karmada.io/v1alpha1',
      kind: 'PropagationPolicy',
      metadata: { name },
      spec: { priority: 1, resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment' }] },
    });
    await applyObjects(m.plane, decodeApplyDocuments([policy('zeta'), policy('alpha'), deployment({ name: 'web' })]));
    const templateEvents = (await m.events.all()).filter((e) => e.kind === 'Deployment').map((e) => `${e.reason}: ${e.message}`);
    expect(templateEvents).toEqual(['Created: Deployment created, claimed by PropagationPolicy default/alpha']);
  });
});
