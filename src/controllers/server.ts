import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Registry } from 'prom-client';
import { nodeHttp, nodeHttps } from '../node-modules.js';
import { isLoopbackAddress } from '../plain-http.js';
import type { Authorize } from './delegated-auth.js';

export interface Check {
  name: string;
  /** undefined: passing; otherwise why not. `detail` is shown either way. */
  run(): { ok: boolean; detail?: string };
}

export interface ServeOptions {
  bindAddress: string;
  port: number;
  /** Plain HTTP (local runs); otherwise HTTPS with `tls` or a self-signed certificate. */
  plain: boolean;
  tls?: { cert: string; key: string };
  healthz: Check[];
  readyz: Check[];
  registry: Registry;
  /** Who may read which path (delegated-auth.ts); without it every path is open (plain HTTP on loopback). */
  authorize?: Authorize;
}

export interface Serving {
  url: string;
  close(): Promise<void>;
}

function report(checks: Check[], res: ServerResponse, verbose: boolean): void {
  const results = checks.map((c) => ({ name: c.name, ...c.run() }));
  const ok = results.every((r) => r.ok);
  const lines = results.map(
    (r) => `[${r.ok ? '+' : '-'}]${r.name} ${r.ok ? 'ok' : 'failed'}${r.detail ? `: ${r.detail}` : ''}`,
  );
  res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(verbose || !ok ? `${lines.join('\n')}\n${ok ? 'ok' : 'not ok'}\n` : 'ok');
}

/** /healthz, /readyz (?verbose lists each check, as the Kubernetes components do) and /metrics. */
export async function serve(options: ServeOptions): Promise<Serving> {
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const verbose = url.searchParams.has('verbose');
    if (req.method !== 'GET') {
      res.writeHead(405).end();
      return;
    }
    if (!options.authorize) return route(url, verbose, res);
    options.authorize(url.pathname, req.headers.authorization).then(
      (decision) => {
        if (decision.allowed) return route(url, verbose, res);
        res.writeHead(decision.status, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(`${decision.reason}\n`);
      },
      (err: Error) => {
        // The API server could not say: nobody is let in (the always-allowed paths never get here).
        res.writeHead(401, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(`the token could not be checked: ${err.message}\n`);
      },
    );
  };
  const route = (url: URL, verbose: boolean, res: ServerResponse) => {
    if (url.pathname === '/healthz' || url.pathname === '/livez')
      return report(options.healthz, res, verbose);
    if (url.pathname === '/readyz') return report(options.readyz, res, verbose);
    if (url.pathname === '/metrics') {
      options.registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'content-type': options.registry.contentType });
          res.end(text);
        },
        (err: Error) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(`${err.message}\n`);
        },
      );
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
  };
  let server: Server;
  if (options.plain) {
    server = nodeHttp().createServer(handler);
  } else {
    const tls = options.tls ?? (await selfSigned());
    server = nodeHttps().createServer({ cert: tls.cert, key: tls.key }, handler);
  }
  server.keepAliveTimeout = 5000;
  // Every TCP connection, TLS handshake done or not: closeAllConnections() knows only those that
  // completed it, and one that never does would keep close() (and the process) waiting.
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.bindAddress, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port, address } = server.address() as AddressInfo;
  // Plain http is for this machine alone: `localhost` is trusted by name, so what it resolved to is
  // checked too (a hosts file that maps it elsewhere serves /metrics to the network otherwise).
  if (options.plain && !isLoopbackAddress(address)) {
    server.close();
    throw new Error(`plain http would listen on ${address}, which is not a loopback address`);
  }
  const host = address.includes(':') ? `[${address}]` : address;
  return {
    url: `${options.plain ? 'http' : 'https'}://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        for (const socket of sockets) socket.destroy();
      }),
  };
}

/** A certificate for this process only, like the Kubernetes components make without --tls-cert-file. */
async function selfSigned(): Promise<{ cert: string; key: string }> {
  const { generate } = await import('selfsigned');
  const pems = await generate([{ name: 'commonName', value: 'ccm' }], {
    keySize: 2048,
    algorithm: 'sha256',
  });
  return { cert: pems.cert, key: pems.private };
}
