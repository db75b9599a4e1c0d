/**
 * The DigitalOcean simulator holds itself and its clients to the official OpenAPI document: these
 * show that a request or a response off the document is caught, so "zero violations" in the other
 * test files means something.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { specViolations } from '../../clouds/digitalocean/openapi.js';
import { DigitalOceanSimulator, OPERATIONS } from '../../clouds/digitalocean/server.js';
import { conformsToDigitalOceanOpenApi, withDigitalOceanOpenApi } from '../../helpers/openapi.js';

let sim: DigitalOceanSimulator;
beforeAll(async () => {
  sim = await DigitalOceanSimulator.start({ burstLimitPerMinute: 3 });
});
afterAll(async () => {
  await sim?.stop();
});
beforeEach(() => {
  sim.reset();
  sim.takeViolations();
});
afterEach(() => {
  vi.useRealTimers();
});

async function call(method: string, path: string, body?: unknown, token = sim.token) {
  const res = await fetch(`${sim.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

describe('DigitalOcean simulator', () => {
  it('answers with the rate-limit headers and DigitalOcean error bodies', async () => {
    const res = await call('GET', '/v2/droplets/77', undefined, 'wrong');
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ id: 'unauthorized', message: 'Unable to authenticate you.' });
    // A refused token is no token the limits count for: its answer shows a whole hour left.
    expect(res.headers.get('ratelimit-limit')).toBe('5000');
    expect(res.headers.get('ratelimit-remaining')).toBe('5000');
    expect(Number(res.headers.get('ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000);
    expect(sim.takeViolations()).toEqual([]);
  });

  it('counts every answered request in ratelimit-remaining, for an hour from the oldest', async () => {
    const first = await call('GET', '/v2/account');
    const second = await call('GET', '/v2/droplets/77'); // a 404 counts too
    expect(second.status).toBe(404);
    expect(first.headers.get('ratelimit-remaining')).toBe('4999');
    expect(second.headers.get('ratelimit-remaining')).toBe('4998');
    const firstAt = sim.requests[0]?.at ?? 0;
    expect(second.headers.get('ratelimit-reset')).toBe(String(Math.ceil((firstAt + 3_600_000) / 1000)));
  });

  it('enforces the burst limit with the real 429: body, ratelimit-remaining 0, retry-after', async () => {
    for (let i = 0; i < 3; i++) expect((await call('GET', '/v2/account')).status).toBe(200);
    const limited = await call('GET', '/v2/account');
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ id: 'too_many_requests', message: 'API Rate limit exceeded.' });
    expect(limited.headers.get('ratelimit-limit')).toBe('5000');
    expect(limited.headers.get('ratelimit-remaining')).toBe('0');
    expect(Number(limited.headers.get('ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(59);
    expect(Number(limited.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(sim.takeViolations()).toEqual([]);
  });

  it('counts per token: a second token of the same account has its own minute', async () => {
    sim.acceptToken('dop_v1_second');
    for (let i = 0; i < 3; i++) expect((await call('GET', '/v2/account')).status).toBe(200);
    expect((await call('GET', '/v2/account')).status).toBe(429);
    const other = await call('GET', '/v2/account', undefined, 'dop_v1_second');
    expect(other.status).toBe(200);
    expect(other.headers.get('ratelimit-remaining')).toBe('4999');
  });

  it('slides the minute: a request is served again once the oldest leaves it, and a refused one is not counted', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.UTC(2026, 0, 1, 12, 0, 0));
    expect((await call('GET', '/v2/account')).status).toBe(200);
    vi.setSystemTime(Date.UTC(2026, 0, 1, 12, 0, 30));
    expect((await call('GET', '/v2/account')).status).toBe(200);
    expect((await call('GET', '/v2/account')).status).toBe(200);
    const refused = await call('GET', '/v2/account');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('30');
    expect((await call('GET', '/v2/account')).status).toBe(429);
    // 12:01:01: the request of 12:00:00 has left the minute, the refused ones never were in it.
    vi.setSystemTime(Date.UTC(2026, 0, 1, 12, 1, 1));
    expect((await call('GET', '/v2/account')).status).toBe(200);
    expect((await call('GET', '/v2/account')).status).toBe(429);
  });

  it('enforces the hourly limit with 429 and no retry-after, until the oldest request expires', async () => {
    const hourly = await DigitalOceanSimulator.start({ burstLimitPerMinute: 100, limitPerHour: 3 });
    try {
      vi.useFakeTimers({ toFake: ['Date'] });
      const t0 = Date.UTC(2026, 0, 1, 12, 0, 0);
      const get = async () => {
        const res = await fetch(`${hourly.url}/v2/account`, {
          headers: { authorization: `Bearer ${hourly.token}` },
        });
        return { status: res.status, headers: res.headers, body: await res.json() };
      };
      for (let i = 0; i < 3; i++) {
        vi.setSystemTime(t0 + i * 600_000); // 12:00, 12:10, 12:20: never a burst
        const ok = await get();
        expect(ok.status).toBe(200);
        expect(ok.headers.get('ratelimit-limit')).toBe('3');
        expect(ok.headers.get('ratelimit-remaining')).toBe(String(2 - i));
      }
      vi.setSystemTime(t0 + 1_800_000);
      const refused = await get();
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({ id: 'too_many_requests' });
      expect(refused.headers.get('ratelimit-remaining')).toBe('0');
      expect(refused.headers.get('ratelimit-reset')).toBe(String((t0 + 3_600_000) / 1000));
      expect(refused.headers.get('retry-after')).toBeNull();
      vi.setSystemTime(t0 + 3_600_001);
      const again = await get();
      expect(again.status).toBe(200);
      expect(again.headers.get('ratelimit-reset')).toBe(String((t0 + 600_000 + 3_600_000) / 1000));
      expect(hourly.takeViolations()).toEqual([]);
    } finally {
      await hourly.stop();
    }
  });

  withDigitalOceanOpenApi(
    'records a request off the document (per_page over 200) and refuses it',
    async () => {
      const res = await call('GET', '/v2/droplets?per_page=500');
      expect(res.status).toBe(422);
      expect(specViolations.splice(0)).toEqual(['droplets_list request: /query/per_page must be <= 200']);
    },
  );

  it('records a call to an operation it does not answer, and answers 404', async () => {
    expect((await call('GET', '/v2/nodes')).status).toBe(404);
    expect(sim.takeViolations()).toEqual(['GET /v2/nodes is no operation the simulator answers']);
    specViolations.splice(0); // the document's view of the same call: the next test
  });

  withDigitalOceanOpenApi('records a call to a path the API does not have', async () => {
    expect((await call('GET', '/v2/nodes')).status).toBe(404);
    sim.takeViolations();
    expect(specViolations.splice(0)).toEqual(['GET /v2/nodes is no operation of the DigitalOcean API']);
  });

  withDigitalOceanOpenApi('names each operation it answers as the document does', (spec) => {
    for (const { method, path, operationId } of OPERATIONS) {
      const example = path.source
        .replace(/^\^|\$$/g, '')
        .replaceAll('\\/', '/')
        .replaceAll('([^/]+)', '1');
      const { operation } = spec.checkRequest({ method, path: example, query: {}, headers: {} });
      expect(`${method} ${example} ${operation?.operationId}`).toBe(`${method} ${example} ${operationId}`);
    }
  });

  withDigitalOceanOpenApi('records its own response when a droplet is off the document', async () => {
    const [droplet] = sim.addDroplets({ name: 'x' });
    if (droplet) droplet.status = 'running';
    await call('GET', `/v2/droplets/${droplet?.id}`);
    expect(specViolations.splice(0)).toEqual([
      'droplets_get response 200: /droplet/status must be equal to one of the allowed values',
    ]);
  });

  it('refuses a load balancer body with a field the API does not document', async () => {
    const [droplet] = sim.addDroplets({ name: 'x' });
    const res = await call('POST', '/v2/load_balancers', {
      name: 'lb',
      region: 'nyc3',
      droplet_ids: [droplet?.id],
      forwarding_rules: [
        { entry_protocol: 'tcp', entry_port: 80, target_protocol: 'tcp', target_port: 30080 },
      ],
      colour: 'blue',
    });
    expect(res.status).toBe(422);
    expect(sim.takeViolations()).toEqual([
      'load balancer request with fields the API does not document: colour',
    ]);
  });

  withDigitalOceanOpenApi(
    'checks response bodies and headers: an empty account and a rate-limit header that is no integer',
    (spec) => {
      const { operation } = spec.checkRequest({ method: 'GET', path: '/v2/account', query: {}, headers: {} });
      if (!operation) throw new Error('no operation');
      const errors = spec.checkResponse(operation, 200, { 'ratelimit-limit': 'many' }, { account: {} });
      expect(
        errors.some((e) => e.startsWith('account_get response 200: /account must have required property')),
      ).toBe(true);
      expect(errors.some((e) => e.startsWith('account_get response 200 headers:'))).toBe(true);
      // An error status falls to the declared default: DigitalOcean's error body and the headers.
      expect(spec.checkResponse(operation, 503, {}, undefined)).toEqual([
        'account_get response 503: body missing',
        expect.stringMatching(
          /^account_get response 503 headers: .*must have required property 'ratelimit-limit'/,
        ),
      ]);
    },
  );
});

conformsToDigitalOceanOpenApi();
