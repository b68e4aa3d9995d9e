import { type AddressInfo, createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP proxy in front of one HTTP server (Azurite in the tests) that can cut responses short,
 * deterministically: "the next K responses, reset after N bytes". It works on responses rather than on
 * connections because the Azure SDK clients keep connections alive in a process-wide pool, so a test
 * cannot know which connection its next request will use.
 *
 * A response starts with the first upstream byte after the client has sent (part of) a request on that
 * connection: the SDKs speak HTTP/1.1 without pipelining or `Expect: 100-continue`, so requests and
 * responses alternate on a connection.
 */
export interface Cut {
  /** Forward the status line, the headers and this many bytes of the body, then reset. */
  bodyBytes?: number;
  /** Forward this many bytes of the raw response (status line included), then reset. */
  bytes?: number;
}

export interface FaultProxy {
  /** `127.0.0.1:<port>` of the proxy. */
  readonly host: string;
  readonly port: number;
  /** Cut the next `count` responses (on any connection) as `at` says, by a TCP reset (RST) to the client. */
  cutResponses(count: number, at: Cut): void;
  /** Cuts armed and not yet used. */
  readonly pending: number;
  /** Responses cut so far, and responses that started (cut or not) since the proxy started. */
  readonly stats: { cut: number; responses: number };
  close(): Promise<void>;
}

const HEADER_END = Buffer.from('\r\n\r\n');

export async function startFaultProxy(target: { host: string; port: number }): Promise<FaultProxy> {
  let armed: { remaining: number; at: Cut } = { remaining: 0, at: {} };
  const stats = { cut: 0, responses: 0 };
  const sockets = new Set<Socket>();

  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: target.host, port: target.port });
    sockets.add(client).add(upstream);
    client.once('close', () => sockets.delete(client));
    upstream.once('close', () => sockets.delete(upstream));
    // Either side going away takes the other with it; errors are the point of this proxy, not failures.
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('end', () => upstream.end());
    upstream.on('end', () => client.end());

    let awaitingResponse = false;
    /** The response being cut: how many more bytes to forward (once known), and the header bytes seen. */
    let cutting: { at: Cut; remaining: number | undefined; head: Buffer } | undefined;

    client.on('data', (chunk: Buffer) => {
      awaitingResponse = true;
      upstream.write(chunk);
    });

    upstream.on('data', (chunk: Buffer) => {
      if (awaitingResponse) {
        awaitingResponse = false;
        stats.responses++;
        if (armed.remaining > 0) {
          armed.remaining--;
          stats.cut++;
          cutting = { at: armed.at, remaining: armed.at.bytes, head: Buffer.alloc(0) };
        }
      }
      if (!cutting) {
        client.write(chunk);
        return;
      }
      if (cutting.remaining === undefined) {
        // Cutting inside the body: find where the headers end, then count body bytes from there.
        const seen = Buffer.concat([cutting.head, chunk]);
        const end = seen.indexOf(HEADER_END);
        if (end < 0) {
          cutting.head = seen;
          client.write(chunk);
          return;
        }
        const bodyStartInChunk = end + HEADER_END.length - cutting.head.length;
        cutting.remaining = bodyStartInChunk + (cutting.at.bodyBytes ?? 0);
      }
      const forward = chunk.subarray(0, cutting.remaining);
      cutting.remaining -= forward.length;
      client.write(forward);
      if (cutting.remaining > 0) return;
      reset(client, upstream);
      cutting = undefined;
    });
  });

  /**
   * Reset the client connection once the forwarded bytes are in its socket buffer. The short pause lets
   * the client parse what it was sent (the status line and headers) before the RST arrives, so the failure
   * is the one seen in production: a response that started and then broke off mid-body.
   */
  const reset = (client: Socket, upstream: Socket) => {
    upstream.pause();
    client.pause();
    client.write(Buffer.alloc(0), () => {
      setTimeout(() => {
        client.resetAndDestroy();
        upstream.destroy();
      }, 20);
    });
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    host: `127.0.0.1:${port}`,
    port,
    cutResponses(count, at) {
      if ((at.bytes === undefined) === (at.bodyBytes === undefined)) throw new Error('cutResponses: give exactly one of bytes, bodyBytes');
      armed = { remaining: count, at };
    },
    get pending() {
      return armed.remaining;
    },
    get stats() {
      return { ...stats };
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
