import { execFileSync } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HeaderMap, nodeTransport, ResponseTooLarge } from '../../../src/providers/http-transport.js';

/** node:http(s) as the cloud clients' transport, against a local server that misbehaves on request. */
let server: Server;
let base: string;
const connections: unknown[] = [];
const seen: IncomingMessage[] = [];

const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
  '/ok': (_req, res) => {
    res.setHeader('set-cookie', ['a=1', 'b=2']);
    res.setHeader('content-type', 'application/json');
    res.end('{"ok":true}');
  },
  '/echo': (req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => res.end(JSON.stringify({ method: req.method, body })));
  },
  '/redirect': (_req, res) => {
    res.writeHead(302, { location: 'http://elsewhere.invalid/' });
    res.end();
  },
  '/silent': () => {},
  '/bad-gzip': (_req, res) => {
    res.writeHead(200, { 'content-encoding': 'gzip' });
    res.end('not gzip at all');
  },
  '/gzip-bomb': (_req, res) => {
    res.writeHead(200, { 'content-encoding': 'gzip' });
    res.end(gzipSync('z'.repeat(100_000)));
  },
  '/slow': (_req, res) => {
    setTimeout(() => res.end('late'), 4_500);
  },
  '/declared-large': (_req, res) => {
    res.writeHead(200, { 'content-length': String(10_000) });
    res.write('x');
  },
  '/streamed-large': (_req, res) => {
    res.writeHead(200);
    const chunk = 'y'.repeat(1000);
    for (let i = 0; i < 20; i++) res.write(chunk);
    res.end();
  },
  '/cut-short': (_req, res) => {
    res.writeHead(200, { 'content-length': '100' });
    res.write('0123456789', () => res.socket?.destroy());
  },
};

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(req);
    const route = routes[req.url ?? ''];
    if (route) route(req, res);
    else res.writeHead(404).end();
  });
  server.on('connection', (socket) => connections.push(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const send = nodeTransport();
const get = (path: string, signal = AbortSignal.timeout(5000), maxBytes = 5000) =>
  send(
    new URL(path, base),
    { method: 'GET', headers: new HeaderMap({ Accept: 'application/json' }), signal },
    maxBytes,
  );

describe('nodeTransport', () => {
  it('sends the headers and body, and answers with status, headers (repeated ones joined) and text', async () => {
    const res = await get('/ok');
    expect(res.status).toBe(200);
    expect(res.statusText).toBe('OK');
    expect(res.text).toBe('{"ok":true}');
    expect(res.headers.get('Content-Type')).toBe('application/json');
    expect(res.headers.get('set-cookie')).toBe('a=1, b=2');
    expect(res.headers.get('x-none')).toBeNull();
    expect(seen.at(-1)?.headers.accept).toBe('application/json');

    const body = JSON.stringify({ name: 'été' });
    const posted = await send(
      new URL('/echo', base),
      { method: 'POST', headers: new HeaderMap(), body, signal: AbortSignal.timeout(5000) },
      5000,
    );
    expect(JSON.parse(posted.text)).toEqual({ method: 'POST', body });
    expect(seen.at(-1)?.headers['content-length']).toBe(String(Buffer.byteLength(body)));
  });

  it('keeps the connection alive between requests', async () => {
    const before = connections.length;
    await get('/ok');
    await get('/ok');
    await get('/ok');
    expect(connections.length - before).toBeLessThanOrEqual(1);
  });

  it('waits for an answer slower than the idle timeout of its pooled connections', async () => {
    const res = await get('/slow', AbortSignal.timeout(10_000));
    expect(res.text).toBe('late');
  });

  it('never follows a redirect: the 302 is the answer', async () => {
    const res = await get('/redirect');
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('http://elsewhere.invalid/');
  });

  it("rejects with the signal's reason when it times out, as fetch does", async () => {
    const err = await get('/silent', AbortSignal.timeout(100)).catch((e: unknown) => e);
    expect((err as Error).name).toBe('TimeoutError');
  });

  it('rejects an answer larger than the cap, declared or streamed', async () => {
    await expect(get('/declared-large')).rejects.toBeInstanceOf(ResponseTooLarge);
    await expect(get('/streamed-large')).rejects.toBeInstanceOf(ResponseTooLarge);
    await expect(get('/streamed-large', undefined, 50_000)).resolves.toMatchObject({ status: 200 });
    // Counted as unpacked: 100 KB of gzip-compressed answer is not 5 KB.
    await expect(get('/gzip-bomb')).rejects.toBeInstanceOf(ResponseTooLarge);
    expect(seen.at(-1)?.headers['accept-encoding']).toBe('gzip, deflate');
  });

  it('reports a refused connection, a corrupt compressed answer and a cut-short answer as a TypeError with the cause', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const refused = await send(
      new URL(`http://127.0.0.1:${port}/`),
      { method: 'GET', headers: new HeaderMap(), signal: AbortSignal.timeout(5000) },
      100,
    ).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TypeError);
    expect(((refused as Error).cause as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');

    const corrupt = await get('/bad-gzip').catch((e: unknown) => e);
    expect(corrupt).toBeInstanceOf(TypeError);
    expect(((corrupt as Error).cause as NodeJS.ErrnoException).code).toBe('Z_DATA_ERROR');

    const cut = await get('/cut-short').catch((e: unknown) => e);
    expect(cut).toBeInstanceOf(TypeError);
    expect((cut as Error).cause).toBeInstanceOf(Error);
  });

  it('refuses a header value with a line break before anything is sent', () => {
    expect(() => new HeaderMap({ authorization: 'Bearer x\r\nx-evil: 1' })).toThrow(TypeError);
  });
});

describe('the cloud clients load no fetch', () => {
  it('a request through HttpClient leaves Node’s bundled undici unloaded', () => {
    // A process of its own: vitest itself has loaded undici in this one.
    const script = `
      import { HttpClient } from './src/providers/http.ts';
      // Not an ES import of node:http: its WebSocket getter would load undici itself.
      const server = process.getBuiltinModule('node:http').createServer((_q, r) => r.end('{"a":1}')).listen(0, '127.0.0.1', async () => {
        const client = new HttpClient({ baseUrl: 'http://127.0.0.1:' + server.address().port });
        const res = await client.get('/x');
        server.close();
        console.log(JSON.stringify({ body: res.body, undici: process.moduleLoadList.filter((m) => /undici|fetch/i.test(m)) }));
        process.exit(0);
      });`;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(JSON.parse(out)).toEqual({ body: { a: 1 }, undici: [] });
  });
});
