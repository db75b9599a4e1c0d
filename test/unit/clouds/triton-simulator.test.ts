/**
 * The CloudAPI simulator against what sdc-cloudapi, sdc-vmapi and node-triton-tags do (each
 * behaviour's source is cited in test/clouds/triton/server.ts): the listing's state filter, tag
 * validation by triton-tags with VMAPI's error shape, the tag endpoints' lack of a state check,
 * `primaryIp` only with NICs, sub-users refused by role, and the throttle every CloudAPI ships.
 */
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSigner, type RequestSigner } from '../../../src/providers/triton/signer.js';
import { TritonSim } from '../../clouds/triton/server.js';
import { useTritonSim } from '../../helpers/use-simulator.js';

const tsim = useTritonSim({ login: 'demo' });
const { sim } = tsim;
let account: RequestSigner;
let user: RequestSigner;

beforeAll(() => {
  const userKey = tsim.keys.make({ type: 'ecdsa', bits: 256 });
  sim.addKey(userKey.publicKey, 'ccm');
  account = createSigner({ account: 'demo', keyMaterial: tsim.key.privateKey });
  user = createSigner({ account: 'demo', user: 'ccm', keyMaterial: userKey.privateKey });
});
beforeEach(() => {
  sim.machines.clear();
});

async function request(method: string, path: string, body?: unknown, signer = account, url = sim.url) {
  const date = new Date().toUTCString();
  const { algorithm, signature } = await signer.sign(`date: ${date}`);
  const res = await fetch(`${url}${path}`, {
    method,
    headers: {
      date,
      'accept-version': '~8',
      'content-type': 'application/json',
      authorization: `Signature keyId="${signer.keyId}",algorithm="${algorithm}",headers="date",signature="${signature}"`,
    },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

async function call(method: string, path: string, body?: unknown, signer = account) {
  const { status, body: answer } = await request(method, path, body, signer);
  return { status, body: answer };
}

describe('ListServices', () => {
  it('names only CloudAPI in a data centre without CMON (test/clouds/triton/cmon.ts adds it)', async () => {
    expect(await call('GET', '/demo/services')).toEqual({ status: 200, body: { cloudapi: sim.url } });
  });
});

describe('ListMachines and machine states', () => {
  it('a failed machine is listed only with tombstone, like a destroyed one; GetMachine answers it', async () => {
    const ok = sim.addMachine({ name: 'ok', ips: ['10.0.0.1'] });
    const failed = sim.addMachine({ name: 'failed', state: 'failed' });
    const gone = sim.addMachine({ name: 'gone', state: 'deleted' });
    const ids = (r: { body: { id: string }[] }) => r.body.map((m) => m.id).sort();
    expect(ids(await call('GET', '/demo/machines'))).toEqual([ok.id]);
    expect(ids(await call('GET', '/demo/machines?tombstone=true'))).toEqual(
      [ok.id, failed.id, gone.id].sort(),
    );
    expect(await call('GET', `/demo/machines/${failed.id}`)).toMatchObject({
      status: 200,
      body: { id: failed.id, state: 'failed' },
    });
  });

  it('primaryIp only for a machine with NICs', async () => {
    const bare = sim.addMachine({ name: 'bare' });
    const nic = sim.addMachine({ name: 'nic', ips: ['10.0.0.7'] });
    expect((await call('GET', `/demo/machines/${bare.id}`)).body).not.toHaveProperty('primaryIp');
    expect((await call('GET', `/demo/machines/${nic.id}`)).body.primaryIp).toBe('10.0.0.7');
  });

  it('the tags of a destroyed machine are answered like any other (no state check upstream)', async () => {
    const gone = sim.addMachine({ name: 'gone', state: 'deleted', tags: { a: 'b' } });
    expect(await call('GET', `/demo/machines/${gone.id}/tags`)).toEqual({ status: 200, body: { a: 'b' } });
    expect((await call('GET', `/demo/machines/${gone.id}`)).status).toBe(410);
  });
});

describe('tag validation (triton-tags 1.4.0, as VMAPI runs it)', () => {
  const accepted: Record<string, unknown>[] = [
    { 'triton.cns.services': 'Web:80' },
    { 'triton.cns.services': 'db.internal:5432' },
    { 'triton.cns.services': '_http._tcp:80' },
    { 'triton.cns.services': 'web:80:priority=10:weight=5,api:8080' },
    { 'triton.cns.services': 'a11111111aaaa4bbb8ccc000000000001:30080' },
    { 'triton.cmon.groups': 'k8s,workers' },
    { 'triton.network.public': 'external' },
    { 'triton.cns.disable': true },
    { 'ccm.cns.11111111-aaaa-4bbb-8ccc-000000000001': '{"cluster":"c","entries":["web:80"]}' },
  ];
  for (const tags of accepted) {
    it(`accepts ${JSON.stringify(tags)}`, async () => {
      const m = sim.addMachine({ name: 'w1' });
      expect(await call('POST', `/demo/machines/${m.id}/tags`, tags)).toEqual({ status: 200, body: tags });
    });
  }

  const refused: [Record<string, unknown> | string, { field: string; message: string }][] = [
    [
      { 'triton.cns.services': 'web:80:foo=bar' },
      {
        field: 'tags',
        message: 'invalid "triton.cns.services" tag: service property "foo" is not a valid property name',
      },
    ],
    [
      { 'triton.cns.services': 'web:70000' },
      {
        field: 'tags',
        message:
          'invalid "triton.cns.services" tag: service port number for web must be within the range 1 - 65535',
      },
    ],
    [{ 'triton.foo': 'x' }, { field: 'tags', message: 'Unrecognized special triton tag "triton.foo"' }],
    [
      { 'triton.cns.disable': 'true' },
      { field: 'tags', message: 'Triton tag "triton.cns.disable" value must be a boolean: "true" (string)' },
    ],
    [{ sdc_docker: true }, { field: 'tags', message: 'Special tag "sdc_docker" not supported' }],
    [{ a: { b: 1 } }, { field: 'tags.a', message: 'Forbidden Data Type' }],
    [{}, { field: 'tags', message: 'Invalid parameter' }],
  ];
  for (const [tags, detail] of refused) {
    it(`refuses ${JSON.stringify(tags)}: 409 ValidationFailed with the reason in errors[]`, async () => {
      const m = sim.addMachine({ name: 'w1', tags: { keep: 'me' } });
      expect(await call('POST', `/demo/machines/${m.id}/tags`, tags)).toEqual({
        status: 409,
        body: {
          code: 'ValidationFailed',
          message: 'error adding tags: Invalid tag parameters',
          errors: [{ code: 'Invalid', ...detail }],
        },
      });
      expect(sim.machine(m.id).tags).toEqual({ keep: 'me' });
    });
  }

  it('an invalid services tag with a parse error carries the parser’s message', async () => {
    const m = sim.addMachine({ name: 'w1' });
    const r = await call('PUT', `/demo/machines/${m.id}/tags`, { 'triton.cns.services': 'web:80,' });
    expect(r.status).toBe(409);
    expect(r.body.message).toBe('error replacing tags: Invalid tag parameters');
    expect(r.body.errors[0].message).toMatch(/^invalid "triton.cns.services" tag: Expected /);
  });
});

describe('sub-users and roles (sdc-cloudapi lib/auth.js authorize)', () => {
  it('a sub-user without a role allowing the action gets 403 NotAuthorized naming it; the account never', async () => {
    const m = sim.addMachine({ name: 'w1' });
    const refused = (path: string, action: string) => ({
      status: 403,
      body: { code: 'NotAuthorized', message: `You do not have permission to access ${path} (${action})` },
    });
    expect(await call('GET', '/demo', undefined, user)).toEqual(refused('/demo', 'getaccount'));
    expect(await call('GET', '/demo/machines', undefined, user)).toEqual(
      refused('/demo/machines', 'listmachines'),
    );
    expect(await call('POST', `/demo/machines/${m.id}/tags`, { a: 'b' }, user)).toEqual(
      refused(`/demo/machines/${m.id}/tags`, 'addmachinetags'),
    );
    expect(sim.machine(m.id).tags).toEqual({});
    // loadMachine runs before authorize: an unknown machine is 404 first
    const unknown = '00000000-0000-4000-8000-000000000000';
    expect((await call('GET', `/demo/machines/${unknown}`, undefined, user)).status).toBe(404);

    sim.grant('ccm', ['getaccount', 'listmachines']);
    expect((await call('GET', '/demo', undefined, user)).status).toBe(200);
    expect((await call('GET', '/demo/machines', undefined, user)).status).toBe(200);
    expect(await call('GET', `/demo/machines/${m.id}`, undefined, user)).toEqual(
      refused(`/demo/machines/${m.id}`, 'getmachine'),
    );
    sim.grant('ccm', '*');
    expect((await call('GET', `/demo/machines/${m.id}`, undefined, user)).status).toBe(200);
    expect((await call('GET', `/demo/machines/${m.id}`)).status).toBe(200);
  });
});

describe("CloudAPI's throttle (sapi_manifests/cloudapi/template userThrottles, restify 4.3.3)", () => {
  let throttled: TritonSim;
  let clock = 0;
  beforeEach(async () => {
    clock = 1_000_000;
    throttled = await new TritonSim({ login: 'demo', now: () => clock }).start();
    throttled.addKey(tsim.key.publicKey);
  });
  afterEach(async () => {
    await throttled.stop();
  });
  const at = (method: string, path: string, signer = account) =>
    request(method, path, undefined, signer, throttled.url);
  const statuses = async (n: number, path: string, signer = account) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await at('GET', path, signer)).status);
    return out;
  };

  it("lets 30 through at once per account, then 10 a second, refusing with restify's 429 and nothing saying when", async () => {
    expect(await statuses(30, '/demo/machines')).toEqual(Array(30).fill(200));
    const refused = await at('GET', '/demo/machines');
    expect(refused).toMatchObject({
      status: 429,
      body: { code: 'TooManyRequestsError', message: 'You have exceeded your request rate of 10 r/s.' },
    });
    expect(refused.headers.get('retry-after')).toBeNull();
    expect([...refused.headers.keys()].filter((h) => /ratelimit/i.test(h))).toEqual([]);
    // A tenth of a second is one token; the refusal took none.
    clock += 100;
    expect(await statuses(2, '/demo/machines')).toEqual([200, 429]);
    // A long pause fills the bucket to its burst, no more.
    clock += 60_000;
    expect(await statuses(31, '/demo/machines')).toEqual([...Array(30).fill(200), 429]);
  });

  it('keeps a bucket per endpoint group: machines and their tags share one, the account and datacenters have their own', async () => {
    const m = throttled.addMachine({ name: 'a' });
    expect(await statuses(30, `/demo/machines/${m.id}`)).toEqual(Array(30).fill(200));
    expect((await at('GET', `/demo/machines/${m.id}/tags`)).status).toBe(429);
    expect((await at('GET', '/demo/machines')).status).toBe(429);
    expect((await at('GET', '/demo')).status).toBe(200);
    expect((await at('GET', '/demo/datacenters')).status).toBe(200);
    expect((await at('GET', '/demo/services')).status).toBe(200);
  });

  it("counts a sub-user's requests in its account's bucket; requests refused before the route (401, 403, 404) take no token", async () => {
    const userKey = tsim.keys.make({ type: 'ecdsa', bits: 256 });
    throttled.addKey(userKey.publicKey, 'ccm');
    const sub = createSigner({ account: 'demo', user: 'ccm', keyMaterial: userKey.privateKey });
    // Refused before the throttle: an unknown machine, a sub-user without a role, a key CloudAPI does not know.
    const stranger = createSigner({
      account: 'demo',
      keyMaterial: tsim.keys.make({ type: 'ecdsa', bits: 256 }).privateKey,
    });
    for (let i = 0; i < 40; i++) {
      expect((await at('GET', '/demo/machines/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    }
    expect(await statuses(5, '/demo/machines', sub)).toEqual(Array(5).fill(403));
    expect(await statuses(5, '/demo/machines', stranger)).toEqual(Array(5).fill(401));
    throttled.grant('ccm', '*');
    expect(await statuses(15, '/demo/machines', sub)).toEqual(Array(15).fill(200));
    expect(await statuses(16, '/demo/machines')).toEqual([...Array(15).fill(200), 429]);
    expect((await at('GET', '/demo/machines', sub)).status).toBe(429);
  });

  it('throttles nothing for an account on the whitelist (throttle: false), and takes other limits', async () => {
    throttled.throttleLimits = false;
    expect(await statuses(40, '/demo/machines')).toEqual(Array(40).fill(200));
    throttled.throttleLimits = { rate: 2, burst: 3 };
    throttled.clearThrottle();
    const last = [...(await statuses(3, '/demo/machines')), (await at('GET', '/demo/machines')).body];
    expect(last).toEqual([
      200,
      200,
      200,
      { code: 'TooManyRequestsError', message: 'You have exceeded your request rate of 2 r/s.' },
    ]);
  });
});
