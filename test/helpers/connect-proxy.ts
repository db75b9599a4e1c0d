/**
 * A small forward proxy on loopback, as a corporate one answers: CONNECT opens a tunnel (what ccm
 * sends for https), with Basic credentials required when `credentials` is set (407 otherwise), or a
 * status of the test's choosing (`refuse`). It records each CONNECT request line and its headers as
 * they came, and each connection made to it, so that a test can show what went through it and what
 * did not.
 *
 * It never leaves this machine: it resolves the `names` it is given to 127.0.0.1 (targets named with
 * a host that is not loopback, because Go's rule never proxies loopback), takes 127.0.0.0/8 addresses
 * as they are, and answers 502 for any other host without looking it up.
 */
import { createServer, type IncomingMessage } from 'node:http';
import { connect, isIP, type Socket } from 'node:net';

export interface ConnectRecord {
  /** `CONNECT host:port HTTP/1.1`. */
  line: string;
  /** Every header as sent, in order: [name, value]. */
  headers: [string, string][];
  /** What the proxy answered. */
  status: number;
}

export interface ConnectProxy {
  port: number;
  /** `http://127.0.0.1:<port>`, or with `user:password@` when given. */
  url(userinfo?: string): string;
  connects: ConnectRecord[];
  /** Requests that were not CONNECT (absolute-form http through the proxy): their request lines. */
  others: string[];
  /** TCP connections made to the proxy. */
  connections(): number;
  /** Answer every CONNECT with this status from now on (undefined: tunnel as usual). */
  refuse(status: number | undefined): void;
  reset(): void;
  close(): Promise<void>;
}

export async function startConnectProxy(
  options: { names?: string[]; credentials?: string } = {},
): Promise<ConnectProxy> {
  const names = new Set((options.names ?? []).map((n) => n.toLowerCase()));
  const connects: ConnectRecord[] = [];
  const others: string[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  let refusal: number | undefined;
  const expected = options.credentials
    ? `Basic ${Buffer.from(options.credentials).toString('base64')}`
    : undefined;

  const server = createServer((req, res) => {
    others.push(`${req.method} ${req.url} HTTP/${req.httpVersion}`);
    res.writeHead(502, { connection: 'close' }).end();
  });
  server.on('connection', (socket: Socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    client.on('error', () => {});
    const headers: [string, string][] = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2)
      headers.push([req.rawHeaders[i] as string, req.rawHeaders[i + 1] as string]);
    const record: ConnectRecord = { line: `CONNECT ${req.url} HTTP/${req.httpVersion}`, headers, status: 0 };
    connects.push(record);
    const answer = (status: number, reason: string, extra = '') => {
      record.status = status;
      client.end(`HTTP/1.1 ${status} ${reason}\r\n${extra}Content-Length: 0\r\nConnection: close\r\n\r\n`);
    };
    if (expected && req.headers['proxy-authorization'] !== expected) {
      answer(407, 'Proxy Authentication Required', 'Proxy-Authenticate: Basic realm="ccm-test"\r\n');
      return;
    }
    if (refusal) {
      answer(refusal, refusal === 403 ? 'Forbidden' : 'Bad Gateway');
      return;
    }
    const url = new URL(`http://${req.url}`);
    const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    const loopback = isIP(host) === 4 && host.startsWith('127.');
    if (!names.has(host) && !loopback) {
      answer(502, 'Bad Gateway');
      return;
    }
    const upstream = connect(Number(url.port), loopback ? host : '127.0.0.1', () => {
      record.status = 200;
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => {
      if (record.status === 0) answer(502, 'Bad Gateway');
      else client.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    url: (userinfo) => `http://${userinfo ? `${userinfo}@` : ''}127.0.0.1:${port}`,
    connects,
    others,
    connections: () => connections,
    refuse(status) {
      refusal = status;
    },
    reset() {
      connects.length = 0;
      others.length = 0;
      connections = 0;
      refusal = undefined;
      for (const socket of sockets) socket.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
