/**
 * The DigitalOcean simulator holds itself and its clients to the official OpenAPI document: these
 * show that a request or a response off the document is caught, so "zero violations" in the other
 * test files means something.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
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
    expect(res.headers.get('ratelimit-limit')).toBe('5000');
    expect(res.headers.get('ratelimit-remaining')).toBe('4999');
    expect(Number(res.headers.get('ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000);
    expect(sim.takeViolations()).toEqual([]);
  });

  it('enforces the burst limit with 429 and retry-after', async () => {
    for (let i = 0; i < 3; i++) expect((await call('GET', '/v2/account')).status).toBe(200);
    const limited = await call('GET', '/v2/account');
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(59);
    expect(sim.takeViolations()).toEqual([]);
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
