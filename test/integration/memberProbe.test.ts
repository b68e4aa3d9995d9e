import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientNodeProber, membersFromKubeconfig } from '../../shared/kube/clientNode';
import { makeCa, MemberCa, MemberEndpointServer, startMemberEndpoint } from '../helpers/memberEndpoints';

/** The probe adapter against real TLS endpoints with their own CA and a bearer token (client-node's Health check). */
let ca: MemberCa;
let otherCa: MemberCa;
let member: MemberEndpointServer;
const prober = new ClientNodeProber();

beforeAll(async () => {
  ca = makeCa();
  otherCa = makeCa();
  member = await startMemberEndpoint(ca, 'member1');
}, 30_000);
afterAll(async () => {
  await member?.close();
  ca?.cleanup();
  otherCa?.cleanup();
});

const endpoint = () => ({ cluster: 'member1', server: member.url, token: member.token, caBundle: ca.caCert });

describe('member probes through client-node', () => {
  it('ok when /readyz answers 200 over TLS with the cluster CA and token', async () => {
    member.health = 'ok';
    expect(await prober.probe(endpoint(), 2000)).toEqual({ outcome: 'ok' });
  });

  it('notOk when the endpoint answers but not ok', async () => {
    member.health = 'notOk';
    expect((await prober.probe(endpoint(), 2000)).outcome).toBe('notOk');
  });

  it('notOk when the token is refused (the cluster answered)', async () => {
    member.health = 'ok';
    expect((await prober.probe({ ...endpoint(), token: 'wrong-token' }, 2000)).outcome).toBe('notOk');
  });

  it('reuses its connection from probe to probe, and still sees a member that went away', async () => {
    member.health = 'ok';
    await prober.probe(endpoint(), 2000);
    const before = member.connections;
    for (let i = 0; i < 10; i++) expect(await prober.probe(endpoint(), 2000)).toEqual({ outcome: 'ok' });
    expect(member.connections).toBe(before);
    // The kept connection is dropped by the member: the next probe finds it unreachable, not ok.
    member.health = 'down';
    expect((await prober.probe(endpoint(), 2000)).outcome).toBe('unreachable');
    member.health = 'ok';
    expect(await prober.probe(endpoint(), 2000)).toEqual({ outcome: 'ok' });
  });

  it('unreachable when connections are dropped', async () => {
    member.health = 'down';
    const result = await prober.probe(endpoint(), 2000);
    expect(result.outcome).toBe('unreachable');
  });

  it('unreachable when the certificate is not signed by the cluster CA (real TLS verification)', async () => {
    member.health = 'ok';
    const result = await prober.probe({ ...endpoint(), caBundle: otherCa.caCert }, 2000);
    expect(result.outcome).toBe('unreachable');
  });

  it('unreachable when nothing listens', async () => {
    const result = await prober.probe({ ...endpoint(), server: 'https://127.0.0.1:1' }, 2000);
    expect(result.outcome).toBe('unreachable');
  });

  it('reads standalone member endpoints from a kubeconfig, one context per cluster', async () => {
    const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c1
  cluster:
    server: ${member.url}
    certificate-authority-data: ${Buffer.from(ca.caCert).toString('base64')}
users:
- name: u1
  user:
    token: ${member.token}
contexts:
- name: member1
  context: { cluster: c1, user: u1 }
current-context: member1
`;
    const [found] = await membersFromKubeconfig(kubeconfig);
    expect(found).toMatchObject({ cluster: 'member1', server: member.url, token: member.token, caBundle: ca.caCert });
    member.health = 'ok';
    expect(await prober.probe(found, 2000)).toEqual({ outcome: 'ok' });
  });
});
