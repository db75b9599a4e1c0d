/**
 * The CMON simulator (test/clouds/triton/cmon.ts) is as strict as triton-cmon: plain HTTPS requests
 * with and without client certificates made as `triton profile cmon-certgen` makes them
 * (test/clouds/triton/cmon-cert.ts). What each answer follows is cited in cmon.ts.
 */
import { describe, expect, it } from 'vitest';
import { createSigner } from '../../src/providers/triton/signer.js';
import { cmonCertificate } from '../clouds/triton/cmon-cert.js';
import { cmonGet, useCmon } from '../helpers/use-cmon.js';

const world = useCmon();
const DAY = 86_400_000;

/** The demo account's certificate, as cmon-certgen makes it. */
const demoCert = () => cmonCertificate({ account: 'demo', signer: world.keys.demo.privateKey });

function machines() {
  const { demo, other } = world;
  demo.machines.clear();
  other.machines.clear();
  return {
    web: demo.addMachine({
      name: 'web-1',
      ips: ['10.0.0.2'],
      tags: { 'triton.cmon.groups': 'k8s-a,workers' },
    }),
    cp: demo.addMachine({
      name: 'cp-1',
      ips: ['10.0.0.3'],
      tags: { 'triton.cmon.groups': 'k8s-a,control-plane' },
    }),
    untagged: demo.addMachine({ name: 'db-1', ips: ['10.0.0.4'] }),
    stopped: demo.addMachine({ name: 'web-2', state: 'stopped', tags: { 'triton.cmon.groups': 'k8s-a' } }),
    nat: demo.addMachine({ name: 'nat-1', tags: { smartdc_role: 'nat', 'triton.cmon.groups': 'k8s-a' } }),
    theirs: other.addMachine({ name: 'their-web', tags: { 'triton.cmon.groups': 'k8s-a' } }),
  };
}

const ids = (body: string) =>
  (JSON.parse(body) as { containers: { vm_alias: string }[] }).containers.map((c) => c.vm_alias).sort();

describe('authentication', () => {
  it('is 401 without a client certificate, on discovery and on metrics alike', async () => {
    const { web } = machines();
    const discover = await cmonGet(world.cmon, '/v1/discover');
    expect(discover.status).toBe(401);
    expect(JSON.parse(discover.body)).toEqual({ code: 'Unauthorized', message: '' });
    const metrics = await cmonGet(world.cmon, '/metrics', { host: world.cmon.instanceHost(web.id) });
    expect(metrics.status).toBe(401);
    expect(world.cmon.requests.at(-1)?.reason).toBe('no client certificate');
  });

  it("accepts cmon-certgen's certificate, signed by the account's key", async () => {
    machines();
    const answer = await cmonGet(world.cmon, '/v1/discover', { cert: demoCert() });
    expect(answer.status).toBe(200);
    expect(world.cmon.requests.at(-1)?.account).toBe('demo');
  });

  it('refuses an expired certificate, and one not yet valid', async () => {
    machines();
    const expired = cmonCertificate({
      account: 'demo',
      signer: world.keys.demo.privateKey,
      validFrom: new Date(Date.now() - 10 * DAY),
      validUntil: new Date(Date.now() - DAY),
    });
    expect((await cmonGet(world.cmon, '/v1/discover', { cert: expired })).status).toBe(401);
    expect(world.cmon.requests.at(-1)?.reason).toBe('client certificate expired');
    const early = cmonCertificate({
      account: 'demo',
      signer: world.keys.demo.privateKey,
      validFrom: new Date(Date.now() + DAY),
      validUntil: new Date(Date.now() + 10 * DAY),
    });
    expect((await cmonGet(world.cmon, '/v1/discover', { cert: early })).status).toBe(401);
  });

  it('refuses a certificate signed by a key the account does not have, or only naming one it has', async () => {
    machines();
    const foreign = cmonCertificate({ account: 'demo', signer: world.keys.foreign.privateKey });
    expect((await cmonGet(world.cmon, '/v1/discover', { cert: foreign })).status).toBe(401);
    expect(world.cmon.requests.at(-1)?.reason).toMatch(/^key .* not present on account$/);

    // Issued in the name of demo's key (its fingerprint in the issuer's CN), signed by another.
    const real = cmonCertificate({ account: 'demo', signer: world.keys.demo.privateKey });
    const forged = cmonCertificate({ account: 'demo', signer: world.keys.foreign.privateKey });
    const sshpk = (await import('sshpk')).default;
    const cert = sshpk.parseCertificate(forged.cert, 'pem');
    cert.issuer = sshpk.parseCertificate(real.cert, 'pem').issuer;
    cert.signWith(sshpk.parsePrivateKey(world.keys.foreign.privateKey, 'auto'));
    const answer = await cmonGet(world.cmon, '/v1/discover', {
      cert: { ...forged, cert: cert.toString('pem') },
    });
    expect(answer.status).toBe(401);
    expect(world.cmon.requests.at(-1)?.reason).toMatch(/^certificate not signed by key/);
  });

  it("refuses a certificate for another account's login, or an unknown one", async () => {
    machines();
    const asOther = cmonCertificate({ account: 'other', signer: world.keys.demo.privateKey });
    expect((await cmonGet(world.cmon, '/v1/discover', { cert: asOther })).status).toBe(401);
    const nobody = cmonCertificate({ account: 'nobody', signer: world.keys.demo.privateKey });
    expect((await cmonGet(world.cmon, '/v1/discover', { cert: nobody })).status).toBe(401);
    expect(world.cmon.requests.at(-1)?.reason).toBe('no account nobody');
  });

  it('still takes an "old-style" certificate (self-signed by the SSH key, no joyentCmon purpose), expired or not', async () => {
    machines();
    const old = cmonCertificate({
      account: 'demo',
      signer: world.keys.demo.privateKey,
      selfSigned: true,
      purposes: ['clientAuth'],
      validFrom: new Date(Date.now() - 10 * DAY),
      validUntil: new Date(Date.now() - DAY),
    });
    expect((await cmonGet(world.cmon, '/v1/discover', { cert: old })).status).toBe(200);
  });

  it('answers /_ping without a certificate, and an unknown path or method before authenticating', async () => {
    expect(await cmonGet(world.cmon, '/_ping')).toMatchObject({ status: 200, body: 'OK' });
    expect((await cmonGet(world.cmon, '/v1/nothing')).status).toBe(404);
    expect((await cmonGet(world.cmon, '/v1/discover', { method: 'POST' })).status).toBe(405);
  });
});

describe('/v1/discover', () => {
  it("lists the account's running instances in CMON's own shape (the cache's objects)", async () => {
    const { web } = machines();
    const answer = await cmonGet(world.cmon, '/v1/discover', { cert: demoCert() });
    expect(answer.contentType).toBe('application/json');
    expect(ids(answer.body)).toEqual(['cp-1', 'db-1', 'web-1']);
    const first = (JSON.parse(answer.body) as { containers: Record<string, unknown>[] }).containers[0];
    expect(first).toEqual({
      groups: ['k8s-a', 'workers'],
      has_core_tag: false,
      server_uuid: web.compute_node,
      source: 'Bootstrapper',
      vm_alias: 'web-1',
      vm_brand: 'bhyve',
      vm_image_uuid: web.image,
      vm_owner_uuid: world.demo.account.id,
      vm_uuid: web.id,
      vm_state: 'running',
      cached_date: expect.any(Number),
    });
  });

  it('keeps the instances with any of the groups asked for', async () => {
    machines();
    const get = async (groups: string) =>
      ids((await cmonGet(world.cmon, `/v1/discover?groups=${groups}`, { cert: demoCert() })).body);
    expect(await get('k8s-a')).toEqual(['cp-1', 'web-1']);
    expect(await get('control-plane,nothing')).toEqual(['cp-1']);
    expect(await get('nothing')).toEqual([]);
  });

  it('refuses groups that are no valid triton.cmon.groups value with 400', async () => {
    for (const query of ['groups=', 'groups=a%20b', 'groups=a,a', 'groups=a&groups=b']) {
      const answer = await cmonGet(world.cmon, `/v1/discover?${query}`, { cert: demoCert() });
      expect(answer.status, query).toBe(400);
      expect(JSON.parse(answer.body).message, query).toMatch(/^invalid "groups":/);
    }
  });

  it('follows the tags and states CloudAPI holds', async () => {
    const { untagged, web } = machines();
    untagged.tags['triton.cmon.groups'] = 'k8s-a';
    web.state = 'stopped';
    const answer = await cmonGet(world.cmon, '/v1/discover?groups=k8s-a', { cert: demoCert() });
    expect(ids(answer.body)).toEqual(['cp-1', 'db-1']);
  });

  it('is an empty list for an account without instances', async () => {
    machines();
    world.demo.machines.clear();
    const answer = await cmonGet(world.cmon, '/v1/discover', { cert: demoCert() });
    expect(JSON.parse(answer.body)).toEqual({ containers: [] });
  });
});

describe('/metrics, routed by Host', () => {
  it("serves the account's running instance in the Prometheus text format", async () => {
    const { web } = machines();
    const answer = await cmonGet(world.cmon, '/metrics', {
      host: world.cmon.instanceHost(web.id),
      cert: demoCert(),
    });
    expect(answer.status).toBe(200);
    expect(answer.contentType).toBe('text/plain');
    expect(answer.body).toContain('# TYPE mem_limit gauge\nmem_limit 4294967296\n');
    expect(answer.body).toContain('net_agg_bytes_in{interface="vnic0"} ');
    for (const line of answer.body.trimEnd().split('\n')) {
      expect(line).toMatch(/^(# (HELP|TYPE) [a-z_]+ .+|[a-z_]+(\{[a-z_]+="[^"]*"\})? -?[0-9.e+]+)$/);
    }
  });

  it("is 404 for another account's instance and for an unknown one, as CMON hides which is which", async () => {
    const { theirs } = machines();
    const cert = demoCert();
    expect(
      (await cmonGet(world.cmon, '/metrics', { host: world.cmon.instanceHost(theirs.id), cert })).status,
    ).toBe(404);
    expect(world.cmon.requests.at(-1)?.reason).toBe("another account's instance");
    const unknown = world.cmon.instanceHost('00000000-0000-4000-8000-000000000000');
    expect((await cmonGet(world.cmon, '/metrics', { host: unknown, cert })).status).toBe(404);
    expect(world.cmon.requests.at(-1)?.reason).toBe('instance not in cache');
  });

  it('is 404 for a Host that is neither cmon.* nor <uuid>.*, before any certificate is asked for', async () => {
    machines();
    const answer = await cmonGet(world.cmon, '/metrics', { host: `web-1.${world.cmon.host}` });
    expect(answer.status).toBe(404);
    expect((await cmonGet(world.cmon, '/metrics', { cert: demoCert() })).status).toBe(404);
  });

  it('leaves stopped instances and NAT zones out, and injects a fault after authenticating', async () => {
    const { stopped, nat, web } = machines();
    const cert = demoCert();
    for (const m of [stopped, nat]) {
      expect(
        (await cmonGet(world.cmon, '/metrics', { host: world.cmon.instanceHost(m.id), cert })).status,
      ).toBe(404);
    }
    world.cmon.fault({ path: '/metrics', status: 500, times: 1, body: '{"code":"InternalError"}' });
    const host = world.cmon.instanceHost(web.id);
    expect((await cmonGet(world.cmon, '/metrics', { host })).status).toBe(401);
    expect((await cmonGet(world.cmon, '/metrics', { host, cert })).status).toBe(500);
    expect((await cmonGet(world.cmon, '/metrics', { host, cert })).status).toBe(200);
  });
});

/** A CloudAPI call signed with demo's key, as ccm's Triton client signs one. */
async function cloudapi(method: string, path: string, body?: unknown) {
  const signer = createSigner({ account: 'demo', keyMaterial: world.keys.demo.privateKey });
  const date = new Date().toUTCString();
  const { algorithm, signature } = await signer.sign(`date: ${date}`);
  const res = await fetch(`${world.demo.url}${path}`, {
    method,
    headers: {
      date,
      'accept-version': '~8',
      'content-type': 'application/json',
      authorization: `Signature keyId="${signer.keyId}",algorithm="${algorithm}",headers="date",signature="${signature}"`,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('CMON and CloudAPI share the account', () => {
  it('discovers a group as soon as CloudAPI has written the tag (triton-tags validated there)', async () => {
    const { untagged } = machines();
    const path = `/demo/machines/${untagged.id}/tags`;
    expect((await cloudapi('POST', path, { 'triton.cmon.groups': 'k8s a' })).status).toBe(409);
    expect((await cloudapi('POST', path, { 'triton.cmon.groups': 'k8s-b' })).status).toBe(200);
    const answer = await cmonGet(world.cmon, '/v1/discover?groups=k8s-b', { cert: demoCert() });
    expect(ids(answer.body)).toEqual(['db-1']);
  });

  it('is named by ListServices while it runs', async () => {
    expect(await cloudapi('GET', '/demo/services')).toEqual({
      status: 200,
      body: { cloudapi: world.demo.url, cmon: `https://cmon.us-test-1.triton.test:${world.cmon.port}` },
    });
    expect(world.other.services).toEqual({ cmon: world.cmon.url });
  });
});
