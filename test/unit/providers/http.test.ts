import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  InvalidConfigError,
  NotFoundError,
  type ProviderError,
  RetryableError,
  UnauthorizedError,
  UnreachableError,
} from '../../../src/providers/errors.js';
import {
  type HttpCallInfo,
  HttpClient,
  type HttpClientOptions,
  httpStatus,
  MAX_RESPONSE_BYTES,
  redact,
} from '../../../src/providers/http.js';
import { rejection } from '../../helpers/rejection.js';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

type Handler = (req: Seen, res: ServerResponse, n: number) => void;

let server: Server;
let baseUrl: string;
let handler: Handler;
let seen: Seen[];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => {
      const request = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
      seen.push(request);
      handler(request, res, seen.length);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  seen = [];
  handler = (_req, res) => json(res, 200, {});
});

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** A client that records sleeps instead of waiting, and every onRequest report. */
function client(options: Partial<HttpClientOptions> = {}) {
  const sleeps: number[] = [];
  const calls: HttpCallInfo[] = [];
  const http = new HttpClient({
    baseUrl,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    onRequest: (info) => calls.push(info),
    ...options,
  });
  return { http, sleeps, calls };
}

const failure = (promise: Promise<unknown>) =>
  rejection<ProviderError>(promise, 'expected the request to fail');

describe('HttpClient: success', () => {
  it('sends JSON headers and parses a JSON response', async () => {
    handler = (_req, res) => json(res, 200, { droplets: [{ id: 1 }] }, { 'x-request-id': 'r1' });
    const { http, calls } = client({ userAgent: 'ccm/test' });
    const res = await http.get<{ droplets: { id: number }[] }>('/v2/droplets');
    expect(res.status).toBe(200);
    expect(res.body.droplets[0]?.id).toBe(1);
    expect(res.headers.get('x-request-id')).toBe('r1');
    expect(seen[0]?.headers.accept).toBe('application/json');
    expect(seen[0]?.headers['user-agent']).toBe('ccm/test');
    expect(calls).toEqual([
      { method: 'GET', path: '/v2/droplets', status: 200, attempt: 1, durationMs: expect.any(Number) },
    ]);
  });

  it('keeps the path of the base URL', async () => {
    await client({ baseUrl: `${baseUrl}/compute/v2.1/` }).http.get('servers/detail');
    expect(seen[0]?.url).toBe('/compute/v2.1/servers/detail');
  });

  it('JSON-encodes object bodies and sends strings and form parameters as they are', async () => {
    handler = (_req, res) => json(res, 201, { ok: true });
    const { http } = client();
    const created = await http.post('/v2/load_balancers', { name: 'lb', droplet_ids: [1, 2] });
    expect(created).toMatchObject({ status: 201, body: { ok: true } });
    expect(seen[0]?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(seen[0]?.body ?? '')).toEqual({ name: 'lb', droplet_ids: [1, 2] });

    await http.post('/token/', 'grant_type=client_credentials', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(seen[1]?.body).toBe('grant_type=client_credentials');
    expect(seen[1]?.headers['content-type']).toBe('application/x-www-form-urlencoded');

    await http.post('/token/', new URLSearchParams({ grant_type: 'client_credentials' }));
    expect(seen[2]?.headers['content-type']).toBe('application/x-www-form-urlencoded');

    await http.patch('/x', { a: 1 }, { headers: { 'content-type': 'application/merge-patch+json' } });
    expect(seen[3]).toMatchObject({ method: 'PATCH', body: '{"a":1}' });
    expect(seen[3]?.headers['content-type']).toBe('application/merge-patch+json');
  });

  it('returns undefined for 204 and for an empty 200', async () => {
    handler = (req, res) => {
      res.writeHead(req.method === 'DELETE' ? 204 : 200);
      res.end();
    };
    const { http } = client();
    expect(await http.delete('/v2/droplets/1')).toMatchObject({ status: 204, body: undefined });
    expect((await http.put('/v2/x', { a: 1 })).body).toBeUndefined();
  });

  it('encodes the query, keeps the query of the path, repeats arrays and skips empty values', async () => {
    const { http } = client();
    await http.get('/v2/droplets?tag_name=k8s', {
      query: { page: 2, name: 'a b&c=d/é', per_page: undefined, x: null, id: ['1', 2], flag: false },
    });
    const url = new URL(seen[0]?.url ?? '', baseUrl);
    expect(url.pathname).toBe('/v2/droplets');
    expect([...url.searchParams]).toEqual([
      ['tag_name', 'k8s'],
      ['page', '2'],
      ['name', 'a b&c=d/é'],
      ['id', '1'],
      ['id', '2'],
      ['flag', 'false'],
    ]);
  });

  it('follows absolute pagination links', async () => {
    const { http } = client();
    await http.get(`${baseUrl}/v2/droplets?page=3&per_page=200`);
    expect(seen[0]?.url).toBe('/v2/droplets?page=3&per_page=200');
  });

  it.each([
    ['another host', (b: string) => b.replace('127.0.0.1', 'localhost')],
    ['another scheme', (b: string) => b.replace('http:', 'https:')],
    ['another port', (b: string) => b.replace(/:(\d+)$/, (_m, p) => `:${Number(p) + 1}`)],
  ])('never follows a pagination link to %s (it would carry the credentials)', async (_what, change) => {
    const { http } = client({ authorize: ({ headers }) => headers.set('authorization', 'Bearer tok-1') });
    const err = await failure(http.get(`${change(baseUrl)}/v2/droplets?page=2`));
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(err.message).toMatch(/not the configured API .*; not followed/);
    expect(seen).toHaveLength(0);
  });

  it('refuses a success body that is not JSON (wrong API URL)', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>login</html>');
    };
    const err = await failure(client().http.get('/v2/droplets'));
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(err.message).toBe('GET /v2/droplets: 200 returned text/html that is not JSON; check the API URL');
  });
});

describe('HttpClient: answers without end', () => {
  /** Streams 1 MiB chunks of a JSON-looking body until the client hangs up; resolves with the bytes sent. */
  function endless(status: number, headers: Record<string, string> = {}): Promise<number> {
    return new Promise((resolve) => {
      handler = (_req, res) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        const chunk = Buffer.alloc(1024 * 1024, 0x20);
        let sent = 0;
        const pump = () => {
          while (!res.destroyed) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
        };
        res.on('close', () => resolve(sent));
        res.write('{"droplets": [');
        pump();
      };
    });
  }

  it.each([200, 500])(
    'stops reading a %i body past 64 MiB: one InvalidConfigError, no retry',
    async (status) => {
      const sent = endless(status);
      const { http, sleeps } = client();
      const err = await failure(http.get('/v2/droplets'));
      expect(err).toBeInstanceOf(InvalidConfigError);
      expect(err.message).toBe(
        'GET /v2/droplets: the answer is larger than 64 MiB, ccm stopped reading it; check the API URL',
      );
      expect(sleeps).toEqual([]);
      expect(seen).toHaveLength(1);
      // The connection was closed: the server did not go on sending (much) more than the cap.
      expect(await sent).toBeLessThan(MAX_RESPONSE_BYTES + 64 * 1024 * 1024);
    },
  );

  it('refuses a body that declares a length above the cap before reading it', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(2 ** 40) });
      res.write('{');
    };
    const err = await failure(client().http.get('/v2/droplets'));
    expect(err.message).toMatch(/larger than 64 MiB/);
  });
});

describe('HttpClient: error mapping', () => {
  const ownNotFound = (body: unknown) => (body as { id?: string } | undefined)?.id === 'not_found';

  it("maps the API's own 404 to NotFoundError with the cloud message, without retrying", async () => {
    handler = (_req, res) =>
      json(res, 404, { id: 'not_found', message: 'The resource you were accessing could not be found.' });
    const { http, sleeps } = client({ isNotFound: ownNotFound });
    const err = await failure(http.get('/v2/droplets/1'));
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err.message).toBe(
      'GET /v2/droplets/1: 404 Not Found (The resource you were accessing could not be found.)',
    );
    expect(httpStatus(err)).toBe(404);
    expect(seen).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it.each([
    ['a proxy page', 'text/html', '<html>404 page not found</html>'],
    ['another JSON body', 'application/json', '{"message":"no route"}'],
  ])(
    'a 404 that is not the API\'s own (%s) is never NotFound: a wrong base path is not "gone"',
    async (_w, type, body) => {
      handler = (_req, res) => {
        res.writeHead(404, { 'content-type': type });
        res.end(body);
      };
      const err = await failure(client({ isNotFound: ownNotFound }).http.get('/v2/droplets/1'));
      expect(err).toBeInstanceOf(InvalidConfigError);
      expect(err.message).toMatch(/not the cloud API's own, check the API URL/);
      const without = await failure(client().http.get('/v2/droplets/1'));
      expect(without).not.toBeInstanceOf(NotFoundError);
    },
  );

  it("describeError turns the API's own error body into a typed error, redacted, keeping its status", async () => {
    handler = (_req, res) => json(res, 410, { code: 'ResourceNotFound', message: 'gone' });
    const describeError = (status: number, body: unknown) =>
      status === 410 && (body as { code?: string }).code === 'ResourceNotFound'
        ? new NotFoundError('machine destroyed (token s3cr3t-value)')
        : undefined;
    const err = await failure(client({ describeError, secrets: () => ['s3cr3t-value'] }).http.get('/m/1'));
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err.message).toBe('machine destroyed (token [REDACTED])');
    expect(httpStatus(err)).toBe(410);
    // undefined keeps the default mapping
    handler = (_req, res) => json(res, 409, { code: 'InvalidArgument', message: 'bad' });
    expect(await failure(client({ describeError }).http.get('/m/1'))).toBeInstanceOf(InvalidConfigError);
  });

  it.each([401, 403])('maps %i to UnauthorizedError that says to check the credentials', async (status) => {
    handler = (_req, res) => json(res, status, { id: 'unauthorized', message: 'Unable to authenticate you' });
    const err = await failure(client().http.get('/v2/droplets'));
    expect(err).toBeInstanceOf(UnauthorizedError);
    expect(err.message).toMatch(
      new RegExp(`^GET /v2/droplets: ${status} \\w+.*\\(Unable to authenticate you\\)`),
    );
    expect(err.message).toMatch(/refused the credentials; check/);
    expect(seen).toHaveLength(1);
  });

  it.each([
    [{ message: 'name is invalid' }, 'name is invalid'],
    [{ error: 'invalid_client', error_description: 'client secret is wrong' }, 'client secret is wrong'],
    [{ error_name: 'validation', errors: ['port must be 1-65535'] }, 'port must be 1-65535'],
    [{ errors: [{ detail: 'flavor not found' }] }, 'flavor not found'],
    [
      { badRequest: { code: 400, message: 'Invalid input for field/attribute name.' } },
      'Invalid input for field/attribute name.',
    ],
    [
      { error: { code: 400, message: 'Expecting to find domain in user.', title: 'Bad Request' } },
      'Expecting to find domain in user.',
    ],
    [
      { faultcode: 'Client', faultstring: 'Invalid input for field/attribute vip_subnet_id.' },
      'Invalid input for field/attribute vip_subnet_id.',
    ],
  ])('maps 422 to InvalidConfigError with the cloud message of %j', async (body, message) => {
    handler = (_req, res) => json(res, 422, body);
    const err = await failure(client().http.post('/v2/load_balancers', {}));
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(err.message).toBe(`POST /v2/load_balancers: 422 Unprocessable Entity (${message})`);
    expect(httpStatus(err)).toBe(422);
  });

  it('keeps a plain-text cloud message on one line, and ignores HTML bodies', async () => {
    handler = (req, res) => {
      const html = req.url === '/html';
      res.writeHead(400, { 'content-type': html ? 'text/html' : 'text/plain' });
      res.end(html ? '<html><body>Bad\nRequest</body></html>' : 'bad\n  request\n');
    };
    const { http } = client();
    expect((await failure(http.get('/text'))).message).toBe('GET /text: 400 Bad Request (bad request)');
    expect((await failure(http.get('/html'))).message).toBe('GET /html: 400 Bad Request');
  });

  it('does not follow redirects', async () => {
    handler = (_req, res) => {
      res.writeHead(301, { location: 'https://api.example.com/v2/droplets' });
      res.end();
    };
    const err = await failure(client().http.get('/v2/droplets'));
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(err.message).toBe(
      'GET /v2/droplets: 301 Moved Permanently to https://api.example.com/v2/droplets; set the API URL to the address it redirects to',
    );
    expect(seen).toHaveLength(1);
  });
});

describe('HttpClient: retries', () => {
  it('retries a GET on 503 with exponential backoff and jitter, then succeeds', async () => {
    handler = (_req, res, n) => (n < 3 ? json(res, 503, { message: 'busy' }) : json(res, 200, { ok: 1 }));
    const { http, sleeps, calls } = client({ backoff: { baseMs: 100, maxMs: 150 } });
    expect((await http.get('/v2/droplets')).body).toEqual({ ok: 1 });
    expect(seen).toHaveLength(3);
    expect(sleeps).toHaveLength(2);
    expect(sleeps[0]).toBeGreaterThanOrEqual(50);
    expect(sleeps[0]).toBeLessThanOrEqual(100);
    // Doubled to 200, capped by maxMs.
    expect(sleeps[1]).toBeGreaterThanOrEqual(75);
    expect(sleeps[1]).toBeLessThanOrEqual(150);
    expect(calls.map((c) => [c.attempt, c.status])).toEqual([
      [1, 503],
      [2, 503],
      [3, 200],
    ]);
  });

  it('does not retry a POST on 500, but throws RetryableError at once', async () => {
    handler = (_req, res) => json(res, 500, { message: 'internal' });
    const { http, sleeps } = client();
    const err = await failure(http.post('/v2/load_balancers', { name: 'lb' }));
    expect(err).toBeInstanceOf(RetryableError);
    expect(err.message).toBe('POST /v2/load_balancers: 500 Internal Server Error (internal)');
    expect(seen).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('retries a POST on 429', async () => {
    handler = (_req, res, n) =>
      n === 1 ? json(res, 429, { message: 'slow down' }) : json(res, 201, { id: 7 });
    const { http, sleeps } = client();
    expect((await http.post('/v2/load_balancers', { name: 'lb' })).body).toEqual({ id: 7 });
    expect(seen.map((s) => s.body)).toEqual(['{"name":"lb"}', '{"name":"lb"}']);
    expect(sleeps).toHaveLength(1);
  });

  it('retries a POST on 420 when it is configured (Triton throttling)', async () => {
    handler = (_req, res, n) => (n === 1 ? json(res, 420, { code: 'RequestThrottled' }) : json(res, 200, {}));
    const { http } = client({ retryStatuses: [420, 429, 500, 502, 503, 504] });
    await http.post('/my/machines', {});
    expect(seen).toHaveLength(2);
  });

  it('honours Retry-After in seconds', async () => {
    handler = (_req, res, n) => (n === 1 ? json(res, 429, {}, { 'retry-after': '3' }) : json(res, 200, {}));
    const { http, sleeps } = client();
    await http.get('/v2/droplets');
    expect(sleeps).toEqual([3000]);
  });

  it('honours Retry-After as an HTTP-date', async () => {
    const now = Date.parse('2025-03-01T12:00:00Z');
    const later = new Date(now + 5000).toUTCString();
    handler = (_req, res, n) => (n === 1 ? json(res, 503, {}, { 'retry-after': later }) : json(res, 200, {}));
    const { http, sleeps } = client({ now: () => now });
    await http.get('/v2/droplets');
    expect(sleeps).toEqual([5000]);
  });

  it('waits for ratelimit-reset on a 429 without Retry-After (DigitalOcean)', async () => {
    const now = Date.parse('2025-03-01T12:00:00Z');
    handler = (_req, res, n) =>
      n === 1
        ? json(
            res,
            429,
            { id: 'too_many_requests', message: 'API Rate limit exceeded.' },
            {
              'ratelimit-limit': '5000',
              'ratelimit-remaining': '0',
              'ratelimit-reset': String(now / 1000 + 7),
            },
          )
        : json(res, 200, {});
    const held: number[] = [];
    const { http, sleeps } = client({ now: () => now, onRateLimited: (ms) => held.push(ms) });
    await http.get('/v2/droplets');
    expect(sleeps).toEqual([7000]);
    // The shared budget is told, so that the other requests wait too (CloudBudget.rateLimited).
    expect(held).toEqual([7000]);
  });

  it("waits for X-Retry-After on a 429 without Retry-After (OpenStack's rate limit middleware), on no other status", async () => {
    const limited = { 'x-ratelimit-remaining': '0', 'x-ratelimit-retry-after': '4', 'x-retry-after': '4' };
    handler = (_req, res, n) =>
      n === 1
        ? json(
            res,
            429,
            { error: { message: 'Too Many Requests', status: '429 Too Many Requests' } },
            limited,
          )
        : n === 2
          ? json(res, 503, {}, { 'x-retry-after': '9' })
          : json(res, 200, {});
    const held: number[] = [];
    const { http, sleeps } = client({
      onRateLimited: (ms) => held.push(ms),
      backoff: { baseMs: 1, maxMs: 1 },
    });
    await http.get('/v2.1/servers/detail');
    expect(sleeps[0]).toBe(4000);
    expect(sleeps[1]).toBeLessThan(9000);
    expect(held).toEqual([4000]);
  });

  it('throws RetryableError with retryAfterMs at once when the cloud asks to wait too long', async () => {
    handler = (_req, res) =>
      json(res, 429, { message: 'API Rate limit exceeded.' }, { 'retry-after': '120' });
    const { http, sleeps } = client();
    const err = await failure(http.get('/v2/droplets'));
    expect(err).toBeInstanceOf(RetryableError);
    expect((err as RetryableError).retryAfterMs).toBe(120_000);
    expect(err.message).toBe(
      'GET /v2/droplets: 429 Too Many Requests (API Rate limit exceeded.), the cloud asks to retry in 120 s',
    );
    expect(seen).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('throws RetryableError when the retries are exhausted', async () => {
    handler = (_req, res) => json(res, 503, { message: 'down for maintenance' }, { 'retry-after': '2' });
    const { http, sleeps } = client({ retries: 2 });
    const err = await failure(http.get('/v2/droplets', { query: { page: 2 } }));
    expect(err).toBeInstanceOf(RetryableError);
    expect(err.message).toBe(
      'GET /v2/droplets?page=2: 503 Service Unavailable (down for maintenance), gave up after 3 attempts',
    );
    expect((err as RetryableError).retryAfterMs).toBe(2000);
    expect(seen).toHaveLength(3);
    expect(sleeps).toEqual([2000, 2000]);
  });

  it('retries a timed-out GET and then throws RetryableError', async () => {
    handler = () => {}; // never answers
    const { http, sleeps, calls } = client({ timeoutMs: 50, retries: 1 });
    const err = await failure(http.get('/v2/droplets'));
    expect(err).toBeInstanceOf(RetryableError);
    expect(err).toBeInstanceOf(UnreachableError);
    expect(err.message).toBe(
      "GET /v2/droplets: timed out after 50 ms, gave up after 2 attempts: the cloud could not be reached; check the API URL, and this machine's DNS, network and proxy",
    );
    expect(seen).toHaveLength(2);
    expect(sleeps).toHaveLength(1);
    expect(calls.map((c) => c.status)).toEqual(['error', 'error']);
  });

  it('does not retry a timed-out POST', async () => {
    handler = () => {};
    const err = await failure(client({ timeoutMs: 50 }).http.post('/v2/load_balancers', {}));
    expect(err).toBeInstanceOf(RetryableError);
    expect(seen).toHaveLength(1);
  });

  it('retries a GET when the connection is refused and throws RetryableError', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const { http, sleeps } = client({ baseUrl: `http://127.0.0.1:${port}`, retries: 1 });
    const err = await failure(http.get('/v2/droplets'));
    expect(err).toBeInstanceOf(RetryableError);
    expect(err.message).toMatch(
      /^GET \/v2\/droplets: request failed \(connect ECONNREFUSED .*\), gave up after 2/,
    );
    expect(sleeps).toHaveLength(1);
  });

  it('calls authorize before every attempt', async () => {
    handler = (_req, res, n) => (n < 3 ? json(res, 502, {}) : json(res, 200, {}));
    const seenByAuthorize: string[] = [];
    let n = 0;
    const { http } = client({
      authorize: ({ method, url, headers, body }) => {
        n += 1;
        seenByAuthorize.push(`${method} ${url.pathname} ${body}`);
        headers.set('date', new Date(Date.UTC(2025, 0, 1, 0, 0, n)).toUTCString());
        headers.set('authorization', `Signature attempt=${n}`);
      },
    });
    await http.put('/my/machines/1/tags', { a: 'b' });
    expect(seenByAuthorize).toEqual(Array(3).fill('PUT /my/machines/1/tags {"a":"b"}'));
    expect(seen.map((s) => s.headers.authorization)).toEqual([
      'Signature attempt=1',
      'Signature attempt=2',
      'Signature attempt=3',
    ]);
    expect(seen[2]?.headers.date).toBe('Wed, 01 Jan 2025 00:00:03 GMT');
  });
});

describe('HttpClient: the leader gate', () => {
  it('sends no write once mayWrite says no, asked after authorize and again before each retry; reads pass', async () => {
    handler = (_req, res, n) => (n === 1 ? json(res, 503, {}) : json(res, 200, {}));
    let leading = true;
    let authorized = 0;
    const { http } = client({
      mayWrite: () => leading,
      // the retry's token fetched or signature made while the Lease ran out
      authorize: () => {
        if (++authorized === 2) leading = false;
      },
    });
    const err = await failure(http.put('/v2/load_balancers/1', { name: 'a' }));
    expect(err).toBeInstanceOf(RetryableError);
    expect(err.message).toBe('PUT /v2/load_balancers/1 refused: this replica is not the leader');
    // the first attempt went out while leading (and got 503); the retry did not
    expect(seen.map((s) => s.method)).toEqual(['PUT']);
    await failure(http.post('/v2/load_balancers', {}));
    await failure(http.delete('/v2/load_balancers/1'));
    expect(seen).toHaveLength(1);
    await http.get('/v2/droplets');
    expect(seen.map((s) => s.method)).toEqual(['PUT', 'GET']);
  });
});

describe('HttpClient: cancellation', () => {
  it('stops when the caller aborts, without retrying', async () => {
    handler = () => {};
    const controller = new AbortController();
    const { http } = client();
    setTimeout(() => controller.abort(), 30);
    const err = await failure(http.get('/v2/droplets', { signal: controller.signal }));
    expect(err).toBe(controller.signal.reason);
    expect((err as Error).name).toBe('AbortError');
    expect(seen).toHaveLength(1);
  });

  it('stops during the wait between attempts', async () => {
    handler = (_req, res) => json(res, 503, {}, { 'retry-after': '30' });
    const controller = new AbortController();
    // Aborts once the first answer is in: from there to the 30 s wait the client runs without a pause,
    // so the abort lands in the wait however slow the machine is.
    const http = new HttpClient({ baseUrl, onRequest: () => setTimeout(() => controller.abort(), 0) });
    const started = Date.now();
    const err = await failure(http.get('/v2/droplets', { signal: controller.signal }));
    expect(err).toBe(controller.signal.reason);
    expect(Date.now() - started).toBeLessThan(29_000);
    expect(seen).toHaveLength(1);
  });

  it('does not send when the signal is already aborted', async () => {
    const err = await failure(client().http.get('/v2/droplets', { signal: AbortSignal.abort() }));
    expect((err as Error).name).toBe('AbortError');
    expect(seen).toHaveLength(0);
  });
});

describe('HttpClient: secrets', () => {
  const token = 'dop_v1_s3cr3t+t0ken/value';

  it('never puts a secret into a thrown message or an onRequest report', async () => {
    handler = (req, res) =>
      json(res, 400, {
        message: `token ${token} is not valid for ${req.url}; you sent ${req.headers.authorization} and ${req.body}`,
      });
    const { http, calls } = client({
      secrets: () => [token],
      authorize: ({ headers }) => headers.set('authorization', `Bearer ${token}`),
    });
    const messages: string[] = [];
    // One at a time: requests started at once could fail before anything awaits them.
    for (const request of [
      () => http.get(`/v2/${encodeURIComponent(token)}`),
      () => http.get('/v2/droplets', { query: { token } }),
      () => http.get(`/v2/droplets?page=1&access_token=${encodeURIComponent(token)}`),
      () => http.post('/token/', { client_secret: token }),
    ]) {
      messages.push((await failure(request())).message);
    }
    const texts = [...messages, ...calls.map((c) => JSON.stringify(c))];
    for (const text of texts) {
      expect(text).not.toContain(token);
      expect(text).not.toContain(encodeURIComponent(token));
      expect(text).not.toContain('s3cr3t');
    }
    expect(messages[1]).toMatch(
      /^GET \/v2\/droplets\?token=\[REDACTED\]: 400 Bad Request \(token \[REDACTED\] is/,
    );
    // A token in a path carries its slash encoded: refused before sending, and redacted in the refusal.
    expect(messages[0]).toMatch(/^refusing to request "\/v2\/\[REDACTED\]"/);
    expect(calls[0]?.path).toBe('/v2/droplets?token=[REDACTED]');
  });

  it('redacts auth headers and token fields it was not told about', async () => {
    const keystone = 'gAAAAABk-keystone-token';
    handler = (req, res) =>
      json(
        res,
        400,
        { message: `got X-Auth-Token: ${req.headers['x-auth-token']}` },
        { 'x-subject-token': keystone },
      );
    const { http } = client({ authorize: ({ headers }) => headers.set('x-auth-token', keystone) });
    const err = await failure(http.get('/servers/detail', { query: { password: 'hunter22' } }));
    expect(err.message).toBe(
      'GET /servers/detail?password=[REDACTED]: 400 Bad Request (got X-Auth-Token: [REDACTED])',
    );
  });

  it('keeps a bad header value set by authorize out of the message', async () => {
    const bad = 'tok\u0000en-with-nul';
    const { http } = client({
      secrets: () => [bad],
      authorize: ({ headers }) => headers.set('authorization', `Bearer ${bad}`),
    });
    const err = await failure(http.get('/v2/droplets'));
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(err.message).not.toContain('en-with-nul');
    expect(seen).toHaveLength(0);
  });

  it('redact() covers raw, URL-encoded and JSON-escaped secrets and well-known fields', () => {
    const secret = 'p@ss w"rd/1';
    expect(redact(`a ${secret} b ${encodeURIComponent(secret)} c ${JSON.stringify(secret)}`, [secret])).toBe(
      'a [REDACTED] b [REDACTED] c "[REDACTED]"',
    );
    expect(redact('grant_type=password&username=u&password=x1&client_secret=y2', [])).toBe(
      'grant_type=password&username=u&password=[REDACTED]&client_secret=[REDACTED]',
    );
    expect(
      redact(
        '{"user":{"name":"u","password":"x\\"1"},"application_credential":{"secret":"y2"},"token_type":"bearer"}',
      ),
    ).toBe(
      '{"user":{"name":"u","password":"[REDACTED]"},"application_credential":{"secret":"[REDACTED]"},"token_type":"bearer"}',
    );
    expect(redact('Authorization: Bearer abc')).toBe('Authorization: [REDACTED]');
    expect(redact('Proxy-Authorization: Basic dTpw')).toBe('Proxy-Authorization: [REDACTED]');
    // A URL's user name and password (a proxy's), whatever the scheme; the rest of the URL stays.
    expect(redact('via http://user:p%40ss@proxy.corp:3128/ and HTTPS://u@p.example')).toBe(
      'via http://[REDACTED]@proxy.corp:3128/ and HTTPS://[REDACTED]@p.example',
    );
    expect(redact('https://api.example/v2?x=a@b')).toBe('https://api.example/v2?x=a@b');
    expect(redact('nothing secret here', ['', 'zzz'])).toBe('nothing secret here');
  });
});

describe('HttpClient: ids from Nodes and Services in the path', () => {
  it('refuses dot segments, encoded or not, and ids that carry a slash, a backslash, a control character or a fragment, sending nothing', async () => {
    handler = (_req, res) => json(res, 200, {});
    const { http } = client();
    for (const path of [
      '/v2/load_balancers/../droplets',
      '/v2/load_balancers/..%2Fdroplets',
      '/v2/load_balancers/%2e%2e',
      '/my/machines/%2E/tags',
      '/my/machines/.',
      '/v2/droplets/1%5C..%5Caccount',
      '/v2/droplets/1%0d%0aX-Injected:%201',
      '/v2/droplets/1#fragment',
      '/v2/droplets/%zz',
    ]) {
      const err = await failure(http.get(path));
      expect(err, path).toBeInstanceOf(InvalidConfigError);
      expect(err.message, path).toMatch(
        /^refusing to request ".*": ".*" is no id the cloud issues; check the Node's providerID and the Service's annotations$/,
      );
    }
    expect(seen).toEqual([]);
    // What clouds do issue still goes through, query and all.
    await http.get('/v2/load_balancers/4de7ac8b-495b-4884-9a69-1050c6793cd6', { query: { page: 2 } });
    await http.get('/my/machines/b6979942-7d5d-4fe6-a2ec-b812e950625a/tags?x=..');
    expect(seen.map((s) => s.url)).toEqual([
      '/v2/load_balancers/4de7ac8b-495b-4884-9a69-1050c6793cd6?page=2',
      '/my/machines/b6979942-7d5d-4fe6-a2ec-b812e950625a/tags?x=..',
    ]);
  });
});

describe('HttpClient: header values', () => {
  it('refuses a value with a line break in one line naming the header, not its value, sending nothing', async () => {
    handler = (_req, res) => json(res, 200, {});
    const { http } = client();
    const err = await failure(
      http.get('/v2/account', { headers: { 'if-match': 'revision_number=1\r\nx-evil: 1' } }),
    );
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(err.message).toBe('GET /v2/account: invalid value for header if-match');
    expect(seen).toEqual([]);
  });
});

describe('HttpClient: plain http', () => {
  it('is refused to another machine, taken to loopback', () => {
    for (const url of ['http://api.digitalocean.com', 'http://10.0.0.5:8774/v2.1', 'http://[fd00::1]:5000']) {
      expect(() => new HttpClient({ baseUrl: url }), url).toThrow(
        /^http:\/\/\S+ is plain http to another machine: the credentials would cross the network unencrypted; use its https URL$/,
      );
    }
    for (const url of [
      'https://api.digitalocean.com',
      'http://127.0.0.1:1',
      'http://localhost:2',
      'http://[::1]:3',
    ]) {
      expect(() => new HttpClient({ baseUrl: url }), url).not.toThrow();
    }
  });
});

describe('HttpClient: a cloud that cannot be reached', () => {
  const failingFetch = (code: string, message: string) => {
    let calls = 0;
    const fetch = (async () => {
      calls += 1;
      throw new TypeError('fetch failed', { cause: Object.assign(new Error(message), { code }) });
    }) as unknown as typeof globalThis.fetch;
    return { fetch, calls: () => calls };
  };

  it.each([
    ['a name that does not resolve', 'ENOTFOUND', 'getaddrinfo ENOTFOUND api.example.invalid'],
    ['a certificate that is refused', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'self-signed certificate'],
  ])('%s: UnreachableError at once, asked once', async (_name, code, message) => {
    const failing = failingFetch(code, message);
    const http = new HttpClient({ baseUrl, fetch: failing.fetch, sleep: async () => {} });
    const err = await failure(http.get('/v2/account'));
    expect(err).toBeInstanceOf(UnreachableError);
    expect(err.message).toBe(
      `GET /v2/account: request failed (${message}): the cloud could not be reached; check the API URL, and this machine's DNS, network and proxy`,
    );
    expect(failing.calls()).toBe(1);
  });

  it('a refused connection: asked again, then UnreachableError, which the controllers retry', async () => {
    const failing = failingFetch('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:1');
    const http = new HttpClient({ baseUrl, fetch: failing.fetch, sleep: async () => {}, retries: 2 });
    const err = await failure(http.get('/v2/account'));
    expect(err).toBeInstanceOf(UnreachableError);
    expect(err).toBeInstanceOf(RetryableError);
    expect(failing.calls()).toBe(3);
  });
});
