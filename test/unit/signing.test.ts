import { describe, expect, it } from 'vitest';
import { bearerMatches, clusterKey, secretsEqual, signReport, verifyReport } from '../../shared/auth/signing';

const ROOT = 'root-signing-key-0123456789';
const keyOf = (cluster: string) => clusterKey(ROOT, cluster);
const now = new Date('2026-06-01T12:00:00Z');
const ts = String(now.getTime() / 1000);
const body = new TextEncoder().encode('{"conditions":[{"type":"Ready","status":"True"}]}');
const signed = (cluster: string, timestamp = ts, bytes = body) => signReport(keyOf(cluster), timestamp, bytes);

describe('cluster keys', () => {
  it('derive one key per cluster from the root secret, and differ between clusters', () => {
    expect(keyOf('member1')).toMatch(/^[0-9a-f]{64}$/);
    expect(keyOf('member1')).toBe(clusterKey(ROOT, 'member1'));
    expect(keyOf('member1')).not.toBe(keyOf('member2'));
  });
});

describe('verifyReport', () => {
  const cases: Array<{ name: string; request: Parameters<typeof verifyReport>[0]; status?: number }> = [
    { name: 'a valid signature', request: { target: 'member1', timestamp: ts, signature: signed('member1'), body } },
    { name: 'no headers', request: { target: 'member1', timestamp: null, signature: null, body }, status: 401 },
    { name: 'a timestamp that is not unix seconds', request: { target: 'member1', timestamp: '2026-06-01', signature: signed('member1'), body }, status: 401 },
    {
      name: 'a timestamp 301 s old',
      request: { target: 'member1', timestamp: String(Number(ts) - 301), signature: signed('member1', String(Number(ts) - 301)), body },
      status: 401,
    },
    {
      name: 'a timestamp 301 s ahead',
      request: { target: 'member1', timestamp: String(Number(ts) + 301), signature: signed('member1', String(Number(ts) + 301)), body },
      status: 401,
    },
    {
      name: 'a timestamp 299 s old',
      request: { target: 'member1', timestamp: String(Number(ts) - 299), signature: signed('member1', String(Number(ts) - 299)), body },
    },
    {
      name: 'a body changed after signing',
      request: {
        target: 'member1',
        timestamp: ts,
        signature: signed('member1'),
        body: new TextEncoder().encode('{"conditions":[{"type":"Ready","status":"False"}]}'),
      },
      status: 401,
    },
    {
      name: 'a signature over another timestamp',
      request: { target: 'member1', timestamp: ts, signature: signed('member1', String(Number(ts) - 1)), body },
      status: 401,
    },
    { name: "another cluster's signature, unannounced", request: { target: 'member1', timestamp: ts, signature: signed('member2'), body }, status: 401 },
    {
      name: "another cluster's valid signature, announced",
      request: { target: 'member1', claimedIdentity: 'member2', timestamp: ts, signature: signed('member2'), body },
      status: 403,
    },
    { name: 'a malformed signature', request: { target: 'member1', timestamp: ts, signature: 'md5=abc', body }, status: 401 },
  ];
  it.each(cases)('$name', ({ request, status }) => {
    const verdict = verifyReport(request, keyOf, now);
    if (status === undefined) expect(verdict.ok).toBe(true);
    else expect(verdict).toMatchObject({ ok: false, status });
  });

  it('never puts a key or the expected signature in its messages', () => {
    const verdict = verifyReport({ target: 'member1', timestamp: ts, signature: signed('member2'), body }, keyOf, now);
    expect(JSON.stringify(verdict)).not.toContain(keyOf('member1'));
    expect(JSON.stringify(verdict)).not.toContain(signed('member1').slice(7));
  });
});

describe('tokens', () => {
  it.each([
    ['Bearer the-admin-token-123456', true],
    ['bearer the-admin-token-123456', true],
    ['Bearer the-admin-token-1234567', false],
    ['the-admin-token-123456', false],
    ['', false],
  ])('%j', (header, ok) => {
    expect(bearerMatches(header, 'the-admin-token-123456')).toBe(ok);
  });
  it('compares secrets of different lengths without throwing', () => {
    expect(secretsEqual('a', 'a much longer secret')).toBe(false);
  });
});
