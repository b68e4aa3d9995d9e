import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, HostProcess, startHostProcess } from '../helpers/hostProcess';

/**
 * What the API fuzzer (scripts/fuzz.sh) found, each kept as a regression: bad input gets a 4xx that names
 * the field and says what is wrong with it, never a 5xx nor a misleading reason.
 */
const ADMIN = 'fuzz-findings-admin-token-0123456789';

let host: HostProcess;

beforeAll(async () => {
  host = await startHostProcess({ AUTH_MODE: 'required', ADMIN_TOKEN: ADMIN });
});

afterAll(async () => {
  await host?.stop();
});

describe('query parameters that are present but malformed', () => {
  it.each([
    ['events?limit=abc', 'query.limit', /expected number/],
    ['events?limit=0.5', 'query.limit', /expected int/],
    ['fleet/history?minutes=1e309', 'query.minutes', /expected number/],
    ['fleet/history?minutes=2.5', 'query.minutes', /expected int/],
  ])('GET /api/%s is 400 naming %s as malformed, not missing', async (path, field, reason) => {
    const res = await api(host.url, 'GET', path);
    expect(res.status).toBe(400);
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors[0].path).toBe(field);
    expect(res.body.errors[0].message).toMatch(reason);
    expect(res.body.errors[0].message).not.toMatch(/missing/);
  });

  it('still names an unknown query parameter', async () => {
    const res = await api(host.url, 'GET', 'evictions?clutser=a');
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: 'query.clutser', message: 'unknown field' }]);
  });
});

describe('an apply object without a usable kind', () => {
  const apply = async (body: unknown) => {
    const res = await fetch(`${host.url}/api/apply`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as { errors: Array<{ path: string; message: string; document?: number }> } };
  };

  it.each([
    [{}, /^required field is missing \(supported: Cluster, /],
    [{ kind: null, metadata: { name: 'x' } }, /^required field is missing \(supported: /],
    [{ kind: 5, metadata: { name: 'x' } }, /^expected a string, got number \(supported: /],
    [{ kind: ['Cluster'] }, /^expected a string, got array \(supported: /],
    [{ kind: 'Clustr', apiVersion: 'cluster.karmada.io/v1alpha1' }, /^unsupported kind "Clustr"; did you mean "Cluster"\?/],
  ])('%j is 400 naming kind and why', async (object, reason) => {
    const res = await apply(object);
    expect(res.status).toBe(400);
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors[0]).toMatchObject({ document: 0, path: 'kind' });
    expect(res.body.errors[0].message).toMatch(reason);
  });
});
