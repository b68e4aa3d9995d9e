import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, Server } from 'node:https';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Member clusters' API endpoints for probe tests: real TLS servers with a CA of their own (made by
 * openssl, which every machine here has) that answer /readyz only to their bearer token. A test switches
 * each one between answering ok, answering not ok (500), and not answering at all (connections dropped).
 */

export type MemberHealth = 'ok' | 'notOk' | 'down';

export interface MemberEndpointServer {
  cluster: string;
  url: string;
  token: string;
  /** PEM of the CA that signed the server's certificate. */
  caBundle: string;
  health: MemberHealth;
  /** /readyz requests answered or dropped, for counting probes. */
  probes: number;
  /** TCP connections accepted so far. */
  connections: number;
  close(): Promise<void>;
}

export interface MemberCa {
  caCert: string;
  caKey: string;
  dir: string;
  cleanup(): void;
}

export function makeCa(): MemberCa {
  const dir = mkdtempSync(join(tmpdir(), 'member-ca-'));
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=member-test-ca');
  return {
    caCert: readFileSync(join(dir, 'ca.crt'), 'utf8'),
    caKey: readFileSync(join(dir, 'ca.key'), 'utf8'),
    dir,
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A server certificate for 127.0.0.1 signed by `ca`. */
function serverCertificate(ca: MemberCa, name: string): { cert: string; key: string } {
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: ca.dir, stdio: 'pipe' });
  run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
  execFileSync('sh', ['-c', `printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > ${name}.ext`], { cwd: ca.dir });
  run(
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    `${name}.crt`,
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
  );
  return { cert: readFileSync(join(ca.dir, `${name}.crt`), 'utf8'), key: readFileSync(join(ca.dir, `${name}.key`), 'utf8') };
}

export async function startMemberEndpoint(ca: MemberCa, cluster: string, token = `token-${cluster}-0123456789`): Promise<MemberEndpointServer> {
  const { cert, key } = serverCertificate(ca, cluster);
  const sockets = new Set<Socket>();
  const endpoint: MemberEndpointServer = {
    cluster,
    url: '',
    token,
    caBundle: ca.caCert,
    health: 'ok',
    probes: 0,
    connections: 0,
    close: () => close(server, sockets),
  };
  const server: Server = createServer({ cert, key }, (req, res) => {
    if (req.url === '/readyz' || req.url === '/healthz') endpoint.probes++;
    if (endpoint.health === 'down') {
      req.socket.destroy();
      return;
    }
    if (req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"kind":"Status","code":401,"reason":"Unauthorized"}');
      return;
    }
    if (req.url === '/readyz' || req.url === '/healthz') {
      if (endpoint.health === 'ok') res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      else res.writeHead(500, { 'content-type': 'text/plain' }).end('[-]etcd failed: reason withheld\nreadyz check failed');
      return;
    }
    res.writeHead(404).end();
  });
  server.on('connection', (socket: Socket) => {
    endpoint.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  endpoint.url = `https://127.0.0.1:${address.port}`;
  return endpoint;
}

function close(server: Server, sockets: Set<Socket>): Promise<void> {
  for (const socket of sockets) socket.destroy();
  return new Promise((resolve) => server.close(() => resolve()));
}
