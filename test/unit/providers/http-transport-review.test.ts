import { execFileSync } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { HttpClient } from '../../../src/providers/http.js';
import { HeaderMap, nodeTransport } from '../../../src/providers/http-transport.js';
import { TritonClient } from '../../../src/providers/triton/client.js';
import { selfSigned } from '../helpers/self-signed.js';

/** The outside review of the node:http(s) cloud transport, kept: each test asserts what fetch (or Go's SDKs) did. */

let dir: string;
const pem = (name: string) => readFileSync(join(dir, name), 'utf8');

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ccm-rv-transport-'));
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  selfSigned(dir, 'ca', 'ca');
  for (const [name, san] of [
    ['good', 'IP:127.0.0.1,IP:::1'],
    ['wrongname', 'DNS:other.example'],
    ['client', 'DNS:client'],
  ] as const) {
    run([
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      `/CN=${name}`,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
    ]);
    writeFileSync(join(dir, `${name}.ext`), `subjectAltName=${san}\n`);
    run([
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '1',
      '-extfile',
      `${name}.ext`,
    ]);
  }
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function listen(server: Server, host = '127.0.0.1'): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return (server.address() as AddressInfo).port;
}
async function close(server: Server) {
  server.closeAllConnections?.();
  await new Promise((resolve) => server.close(resolve));
}

describe('answers', () => {
  it('a gzip-encoded JSON answer is read as JSON, as fetch decoded it', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(gzipSync('{"droplets":[]}'));
    });
    const port = await listen(server);
    try {
      const viaFetch = new HttpClient({
        baseUrl: `http://127.0.0.1:${port}`,
        retries: 0,
        fetch: globalThis.fetch,
      });
      expect((await viaFetch.get('/v2/droplets')).body).toEqual({ droplets: [] });
      const viaNode = new HttpClient({ baseUrl: `http://127.0.0.1:${port}`, retries: 0 });
      expect((await viaNode.get('/v2/droplets')).body).toEqual({ droplets: [] });
    } finally {
      await close(server);
    }
  });

  it('an answer longer than its Content-Length does not poison the pooled connection for the next request', async () => {
    let n = 0;
    const server = createServer((_req, res) => {
      n++;
      const socket = res.socket as Socket;
      if (n === 1) {
        // Declares 2 bytes, sends 2 + a forged second answer.
        socket.write(
          'HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\n{}' +
            'HTTP/1.1 200 OK\r\ncontent-length: 16\r\n\r\n{"forged":true}\n',
        );
        return;
      }
      res.end('{"real":true}');
    });
    const port = await listen(server);
    try {
      const client = new HttpClient({ baseUrl: `http://127.0.0.1:${port}`, retries: 0 });
      expect((await client.get('/a')).body).toEqual({});
      await new Promise((r) => setTimeout(r, 50));
      expect((await client.get('/b')).body).toEqual({ real: true });
    } finally {
      await close(server);
    }
  });
});

describe('resources over thousands of requests', () => {
  it('no listener, socket or handle accumulates; a long-lived caller signal keeps no listener per request', async () => {
    let i = 0;
    const server = createServer((req, res) => {
      i++;
      if (req.url === '/stall') return; // never answers: the attempt times out
      if (i % 7 === 0) {
        res.writeHead(200, { 'content-length': '100' });
        res.write('{"a":', () => res.socket?.destroy()); // cut short
        return;
      }
      res.end('{"ok":true}');
    });
    const port = await listen(server);
    const caller = new AbortController();
    const client = new HttpClient({
      baseUrl: `http://127.0.0.1:${port}`,
      retries: 0,
      timeoutMs: 50,
    });
    const handlesBefore = process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;
    try {
      for (let round = 0; round < 30; round++) {
        await Promise.allSettled(
          Array.from({ length: 100 }, (_, k) =>
            client.get(k % 10 === 0 ? '/stall' : '/x', { signal: caller.signal }),
          ),
        );
      }
      await new Promise((r) => setTimeout(r, 200));
      expect(getEventListeners(caller.signal, 'abort').length).toBeLessThan(5);
      const handles = process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;
      // Pooled keep-alive sockets may stay (<= 100 concurrent), but not one per request.
      expect(handles - handlesBefore).toBeLessThanOrEqual(100);
    } finally {
      await close(server);
    }
  }, 60_000);
});

describe('TLS', () => {
  const serve = async (name: string, host = '127.0.0.1', extra: object = {}) => {
    const server = createHttpsServer(
      { key: pem(`${name}.key`), cert: pem(`${name}.pem`), ...extra },
      (req, res) =>
        res.end(
          JSON.stringify({
            client: (req.socket as import('node:tls').TLSSocket).getPeerCertificate?.()?.subject?.CN ?? null,
          }),
        ),
    ) as unknown as Server;
    return { server, port: await listen(server, host) };
  };
  const get = (transport: ReturnType<typeof nodeTransport>, url: string) =>
    transport(
      new URL(url),
      { method: 'GET', headers: new HeaderMap(), signal: AbortSignal.timeout(5000) },
      1e6,
    );

  it('trusts ca, refuses the system CAs for it, refuses a wrong name, honours tls-insecure, sends a client certificate, IPv6 literal', async () => {
    const good = await serve('good');
    const wrong = await serve('wrongname');
    const mtls = await serve('good', '127.0.0.1', {
      requestCert: true,
      rejectUnauthorized: true,
      ca: pem('ca.pem'),
    });
    const v6 = await serve('good', '::1');
    try {
      await expect(
        get(nodeTransport({ ca: pem('ca.pem') }), `https://127.0.0.1:${good.port}/`),
      ).resolves.toMatchObject({ status: 200 });
      const unknown = await get(nodeTransport(), `https://127.0.0.1:${good.port}/`).catch((e) => e);
      expect((unknown.cause as NodeJS.ErrnoException).code).toMatch(/UNABLE_TO_VERIFY|SELF_SIGNED/);
      const name = await get(nodeTransport({ ca: pem('ca.pem') }), `https://127.0.0.1:${wrong.port}/`).catch(
        (e) => e,
      );
      expect((name.cause as NodeJS.ErrnoException).code).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
      await expect(
        get(nodeTransport({ rejectUnauthorized: false }), `https://127.0.0.1:${wrong.port}/`),
      ).resolves.toMatchObject({ status: 200 });
      const noCert = await get(nodeTransport({ ca: pem('ca.pem') }), `https://127.0.0.1:${mtls.port}/`).catch(
        (e) => e,
      );
      expect(noCert).toBeInstanceOf(TypeError);
      const withCert = await get(
        nodeTransport({ ca: pem('ca.pem'), cert: pem('client.pem'), key: pem('client.key') }),
        `https://127.0.0.1:${mtls.port}/`,
      );
      expect(JSON.parse(withCert.text)).toEqual({ client: 'client' });
      await expect(
        get(nodeTransport({ ca: pem('ca.pem') }), `https://[::1]:${v6.port}/`),
      ).resolves.toMatchObject({ status: 200 });
    } finally {
      for (const s of [good, wrong, mtls, v6]) await close(s.server);
    }
  }, 30_000);
});

describe('Triton', () => {
  it('CloudAPI requests go through the node:https transport, not the global fetch (undici)', async () => {
    const server = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end('{"login":"demo","id":"00000000-0000-0000-0000-000000000000"}');
    });
    const port = await listen(server);
    const spy = vi.spyOn(globalThis, 'fetch');
    try {
      const client = new TritonClient({
        url: `http://127.0.0.1:${port}`,
        account: 'demo',
        signer: {
          keyId: '/demo/keys/x',
          sign: async () => ({ algorithm: 'rsa-sha256', signature: 'c2ln' }),
        } as never,
        secrets: [],
      });
      await client.getAccount();
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
      await close(server);
    }
  });
});

describe('proxies', () => {
  it("NODE_USE_ENV_PROXY=1 no longer decides: ccm's own rule (src/proxy.ts) sends loopback direct, where Node's rule and fetch proxy it", async () => {
    const { connect } = await import('node:net');
    const seen: string[] = [];
    const proxy = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      res.end('{"via":"proxy"}');
    });
    proxy.on('connect', (req, sock: Socket, head: Buffer) => {
      seen.push(`CONNECT ${req.url}`);
      const [host, port] = (req.url ?? '').split(':');
      const up = connect(Number(port), host, () => {
        sock.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        up.write(head);
        up.pipe(sock);
        sock.pipe(up);
      });
    });
    const target = createServer((_req, res) => res.end('{"via":"direct"}'));
    const proxyPort = await listen(proxy);
    const targetPort = await listen(target);
    const script = `
      import { HttpClient } from './src/providers/http.ts';
      const base = 'http://127.0.0.1:${targetPort}';
      const viaFetch = await (await fetch(base + '/fetch')).json();
      const viaCcm = (await new HttpClient({ baseUrl: base, retries: 0 }).get('/ccm')).body;
      console.log(JSON.stringify({ viaFetch, viaCcm }));
      process.exit(0);`;
    const { execFile } = await import('node:child_process');
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ['--import', 'tsx', '--input-type=module', '-e', script],
        {
          timeout: 20_000,
          env: {
            ...process.env,
            NODE_USE_ENV_PROXY: '1',
            HTTP_PROXY: `http://127.0.0.1:${proxyPort}`,
            NO_PROXY: '',
          },
        },
        (err, stdout) => (err ? reject(err) : resolve(stdout)),
      ),
    );
    try {
      const result = JSON.parse(out);
      // fetch (undici's EnvHttpProxyAgent) tunnels through the proxy even to loopback.
      expect(seen).toEqual([`CONNECT 127.0.0.1:${targetPort}`]);
      expect(result.viaFetch).toEqual({ via: 'direct' });
      // ccm's request did not reach the proxy: Go's rule never proxies loopback.
      expect(result.viaCcm).toEqual({ via: 'direct' });
    } finally {
      await close(proxy);
      await close(target);
    }
  }, 30_000);
});

describe('a pooled connection the server dropped', () => {
  it('GET is retried, POST fails (by design; Go net/http retries a POST only when nothing was written)', async () => {
    const sockets = new Map<Socket, number>();
    const server = createServer((req, res) => {
      const socket = req.socket;
      const n = (sockets.get(socket) ?? 0) + 1;
      sockets.set(socket, n);
      // The second request on a connection meets a server that had closed it (its idle timeout).
      if (n === 2) {
        socket.destroy();
        return;
      }
      res.end('{"ok":true}');
    });
    const port = await listen(server);
    const client = new HttpClient({
      baseUrl: `http://127.0.0.1:${port}`,
      retries: 2,
      backoff: { baseMs: 1 },
    });
    try {
      await client.get('/1');
      await expect(client.get('/2')).resolves.toMatchObject({ status: 200 });
      // /2's retry opened a fresh connection: this POST is its second request, and is lost.
      const err = await client.post('/3', { a: 1 }).catch((e: Error) => e);
      expect(String(err)).toMatch(/socket hang up|ECONNRESET/);
    } finally {
      await close(server);
    }
  });
});

describe('stalls and trickles', () => {
  it('an answer that stalls mid-body ends the attempt at the timeout; a chunked trickle inside it is read whole', async () => {
    const server = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      if (req.url === '/stall') {
        res.write('{"droplets":[');
        return;
      }
      const parts = ['{"drop', 'lets"', ':[1,', '2]}'];
      const next = () => {
        const part = parts.shift();
        if (part === undefined) res.end();
        else {
          res.write(part);
          setTimeout(next, 30);
        }
      };
      next();
    });
    const port = await listen(server);
    const client = new HttpClient({ baseUrl: `http://127.0.0.1:${port}`, retries: 0, timeoutMs: 300 });
    try {
      const started = Date.now();
      await expect(client.get('/stall')).rejects.toThrow(/timed out after 300 ms/);
      expect(Date.now() - started).toBeLessThan(2000);
      expect((await client.get('/trickle')).body).toEqual({ droplets: [1, 2] });
    } finally {
      await close(server);
    }
  });
});

describe('Triton, in a process of its own', () => {
  it('a CloudAPI request leaves Node’s bundled undici unloaded (as HttpClient alone does)', async () => {
    const { execFileSync } = await import('node:child_process');
    const script = `
      import { TritonClient } from './src/providers/triton/client.ts';
      const server = process.getBuiltinModule('node:http').createServer((_q, r) => r.end('{"login":"demo","id":"x"}')).listen(0, '127.0.0.1', async () => {
        const client = new TritonClient({ url: 'http://127.0.0.1:' + server.address().port, account: 'demo', secrets: [],
          signer: { keyId: '/demo/keys/x', sign: async () => ({ algorithm: 'rsa-sha256', signature: 'c2ln' }) } });
        await client.getAccount();
        server.close();
        console.log(JSON.stringify({ undici: process.moduleLoadList.filter((m) => /undici|fetch/i.test(m)) }));
        process.exit(0);
      });`;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(JSON.parse(out)).toEqual({ undici: [] });
  });
});
