/**
 * HTTP Signature auth against the simulator, which verifies every signature with the npm
 * `http-signature` package against the registered public keys.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import sshpk from 'sshpk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { InvalidConfigError, UnauthorizedError } from '../../../../src/providers/errors.js';
import { TritonClient } from '../../../../src/providers/triton/client.js';
import { triton } from '../../../../src/providers/triton/index.js';
import { createSigner } from '../../../../src/providers/triton/signer.js';
import type { Provider, ProviderValues } from '../../../../src/providers/types.js';
import { KeyFolder, type TestKey } from '../../../clouds/triton/keys.js';
import { TritonSim } from '../../../clouds/triton/server.js';
import { rejection as error } from '../../../helpers/rejection.js';

let keys: KeyFolder;
let sim: TritonSim;
let rsaPem: TestKey;
let rsaOpenssh: TestKey;
let ecdsa: TestKey;
let encrypted: TestKey;
let encryptedPem: TestKey;
let ed25519: TestKey;
let stranger: TestKey;
let subUserKey: TestKey;

beforeAll(async () => {
  keys = new KeyFolder();
  rsaPem = keys.make({ type: 'rsa', bits: 2048, pem: true });
  rsaOpenssh = keys.make({ type: 'rsa', bits: 2048 });
  ecdsa = keys.make({ type: 'ecdsa', bits: 256 });
  encrypted = keys.make({ type: 'rsa', bits: 2048, passphrase: 'correct horse battery' });
  encryptedPem = keys.make({ type: 'ecdsa', bits: 256, pem: true, passphrase: 'pem secret phrase' });
  ed25519 = keys.make({ type: 'ed25519' });
  stranger = keys.make({ type: 'rsa', bits: 2048 });
  subUserKey = keys.make({ type: 'ecdsa', bits: 256 });
  sim = await new TritonSim({ login: 'demo' }).start();
  for (const k of [rsaPem, rsaOpenssh, ecdsa, encrypted, encryptedPem, ed25519]) sim.addKey(k.publicKey);
  sim.addKey(subUserKey.publicKey, 'ops');
  sim.grant('ops', ['getaccount']);
  sim.addKey(subUserKey.publicKey, 'norole');
  sim.addMachine({ name: 'm1', ips: ['10.0.0.1'] });
});
afterAll(async () => {
  await sim?.stop();
  keys?.remove();
});
beforeEach(() => {
  sim.requests.length = 0;
  sim.faults.length = 0;
});

function provider(values: ProviderValues): Provider {
  return triton.create({ url: sim.url, account: 'demo', datacenter: 'us-test-1', ...values }, {});
}

/** Why `p` fails to verify its credentials. */
const verifyFailure = (p: Provider) => error(p.verifyCredentials?.() as Promise<string>);

/** A GET of `path` signed by hand, as a CloudAPI client signs: rsa-sha256 over the date header, by `key`. */
async function signedFetch(path: string, keyId: string, key: sshpk.PrivateKey): Promise<Response> {
  const date = new Date().toUTCString();
  const signer = key.createSign('sha256');
  signer.update(`date: ${date}`);
  return fetch(`${sim.url}${path}`, {
    headers: {
      'accept-version': '~8',
      date,
      authorization: `Signature keyId="${keyId}",algorithm="rsa-sha256",headers="date",signature="${signer.sign().toString()}"`,
    },
  });
}

describe('requests signed with the account key are accepted by the verifying simulator', () => {
  it.each([
    ['RSA, PEM', () => rsaPem, 'RSA-SHA256'],
    ['RSA, OpenSSH format', () => rsaOpenssh, 'RSA-SHA256'],
    ['ECDSA P-256', () => ecdsa, 'ECDSA-SHA256'],
    // CloudAPI verifies ed25519-sha512 since TRITON-2417 (December 2023).
    ['Ed25519', () => ed25519, 'ED25519-SHA512'],
  ])('%s', async (_name, key, algorithm) => {
    const p = provider({ keyMaterial: key().privateKey });
    expect(await p.verifyCredentials?.()).toBe(`Triton account demo (${sim.account.id}) at ${sim.url}`);
    expect(sim.requests).toEqual([
      expect.objectContaining({
        path: '/demo',
        status: 200,
        algorithm,
        keyId: `/demo/keys/${key().fingerprint}`,
      }),
    ]);
    const auth = String(sim.requests[0]?.headers.authorization);
    expect(auth).toMatch(
      /^Signature keyId="\/demo\/keys\/[0-9a-f:]{47}",algorithm="[a-z0-9-]+",headers="date",signature="[A-Za-z0-9+/=]+"$/,
    );
  });

  it('an encrypted OpenSSH key with its passphrase', async () => {
    const p = provider({ keyMaterial: encrypted.privateKey, keyPassphrase: encrypted.passphrase });
    await p.verifyCredentials?.();
    expect(sim.requests[0]).toMatchObject({ status: 200, keyId: `/demo/keys/${encrypted.fingerprint}` });
  });

  it('an encrypted PEM key with its passphrase, read from its file', async () => {
    const p = provider({ keyMaterial: encryptedPem.path, keyPassphrase: encryptedPem.passphrase });
    await p.verifyCredentials?.();
    expect(sim.requests[0]).toMatchObject({ status: 200, algorithm: 'ECDSA-SHA256' });
  });

  it('a sub-user key signs as /<account>/users/<user>/keys/<fp>', async () => {
    const p = provider({ keyMaterial: subUserKey.privateKey, user: 'ops' });
    expect(await p.verifyCredentials?.()).toContain('user ops');
    expect(sim.requests[0]).toMatchObject({
      status: 200,
      keyId: `/demo/users/ops/keys/${subUserKey.fingerprint}`,
    });
  });

  it("a sub-user whose roles do not allow an action: CloudAPI's 403, named as a permission to grant", async () => {
    const norole = provider({ keyMaterial: subUserKey.privateKey, user: 'norole' });
    const err = await verifyFailure(norole);
    expect(err).toBeInstanceOf(UnauthorizedError);
    expect(err.message).toBe(
      `CloudAPI refused action "getaccount" to user norole of account demo (403 NotAuthorized: You do not have permission to access /demo (getaccount)): the credentials are valid, but no policy of the user's default roles allows it; give user norole a default role whose policy says "CAN getaccount" (ccm needs getaccount, listmachines, getmachine, listdatacenters unless TRITON_DATACENTER is set, and for CNS load balancing and CMON groups listmachinetags, addmachinetags, deletemachinetag)`,
    );
    // 'ops' may read its account, not list machines
    const ops = provider({ keyMaterial: subUserKey.privateKey, user: 'ops' });
    const listing = await error(ops.instances.list());
    expect(listing.message).toMatch(
      /^CloudAPI refused action "listmachines" to user ops of account demo \(403 NotAuthorized: You do not have permission to access \/demo\/machines \(listmachines\)\)/,
    );
    expect(sim.requests.map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual([
      'GET /demo 403',
      'GET /demo/machines 403',
    ]);
  });

  it('TRITON_KEY_ID in MD5 or SHA256 form is checked against the key', async () => {
    const sha256 = sshpk.parseKey(rsaPem.publicKey, 'ssh').fingerprint('sha256').toString();
    await provider({ keyMaterial: rsaPem.privateKey, keyId: sha256 }).verifyCredentials?.();
    await provider({
      keyMaterial: rsaPem.privateKey,
      keyId: `MD5:${rsaPem.fingerprint}`,
    }).verifyCredentials?.();
    expect(() => provider({ keyMaterial: rsaPem.privateKey, keyId: ecdsa.fingerprint })).toThrow(
      `the key id ${ecdsa.fingerprint} is not the fingerprint of the given private key (${rsaPem.fingerprint}); fix TRITON_KEY_ID or leave it unset`,
    );
  });

  it('asks for CloudAPI major version 8 (Accept-Version ~8), the one triton-go asks for', async () => {
    await provider({ keyMaterial: ecdsa.privateKey }).verifyCredentials?.();
    expect(sim.requests[0]?.headers['accept-version']).toBe('~8');
  });

  it("the simulator negotiates versions as CloudAPI's restify does", async () => {
    const versionOf = async (headers: Record<string, string>) => {
      const res = await fetch(`${sim.url}/demo`, { headers });
      return [res.status, res.headers.get('api-version'), ((await res.json()) as { code: string }).code];
    };
    // Unauthenticated: 401 after the version is chosen, which the answer names.
    expect(await versionOf({ 'accept-version': '~8' })).toEqual([401, '8.0.0', 'InvalidCredentials']);
    expect(await versionOf({ 'accept-version': '8' })).toEqual([401, '8.0.0', 'InvalidCredentials']);
    expect(await versionOf({ 'accept-version': '~9||~8' })).toEqual([401, '9.0.0', 'InvalidCredentials']);
    expect(await versionOf({})).toEqual([401, '9.0.0', 'InvalidCredentials']);
    const res = await fetch(`${sim.url}/demo`, { headers: { 'accept-version': '~10' } });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      code: 'InvalidVersion',
      message: '~10 is not supported by GET /demo',
    });
  });

  it('every retry is signed again (authorize runs per attempt)', async () => {
    sim.fault({ path: /^\/demo$/, status: 503, body: { code: 'InternalError', message: 'busy' }, times: 1 });
    const p = triton.create(
      { url: sim.url, account: 'demo', datacenter: 'us-test-1', keyMaterial: ecdsa.privateKey },
      {},
    );
    await p.verifyCredentials?.();
    expect(sim.requests.map((r) => r.status)).toEqual([503, 200]);
    // ECDSA signatures are randomised: two attempts never carry the same header.
    expect(sim.requests[0]?.headers.authorization).not.toBe(sim.requests[1]?.headers.authorization);
  });
});

describe('refused keys: one clear line, no secret', () => {
  // CloudAPI answers all three with the one 401 "Invalid authorization credentials supplied"
  // (sdc-cloudapi lib/auth.js INVALID_CREDS): ccm cannot tell them apart, and says what to check.
  it('a key that is not registered for the account', async () => {
    const err = await verifyFailure(provider({ keyMaterial: stranger.privateKey }));
    expect(err).toBeInstanceOf(UnauthorizedError);
    expect(err.message).toBe(
      `CloudAPI refused key ${stranger.fingerprint} for account demo (401 InvalidCredentials): it knows no such account, or the key is not registered for it; check TRITON_URL, TRITON_ACCOUNT and the key (triton key list)`,
    );
    expect(sim.requests[0]).toMatchObject({ status: 401 });
  });

  it('an account CloudAPI does not know', async () => {
    const err = await verifyFailure(
      triton.create({ url: sim.url, account: 'nobody', datacenter: 'x', keyMaterial: rsaPem.privateKey }, {}),
    );
    expect(err).toBeInstanceOf(UnauthorizedError);
    expect(err.message).toBe(
      `CloudAPI refused key ${rsaPem.fingerprint} for account nobody (401 InvalidCredentials): it knows no such account, or the key is not registered for it; check TRITON_URL, TRITON_ACCOUNT and the key (triton key list)`,
    );
  });

  it('an account key used as a sub-user key, and a sub-user CloudAPI does not know', async () => {
    for (const user of ['ops', 'alice']) {
      const err = await verifyFailure(provider({ keyMaterial: rsaPem.privateKey, user }));
      expect(err.message).toBe(
        `CloudAPI refused key ${rsaPem.fingerprint} for account demo (user ${user}) (401 InvalidCredentials): it knows no such account or user, or the key is not registered for it; check TRITON_URL, TRITON_ACCOUNT, TRITON_USER and the key (triton key list)`,
      );
    }
  });

  it('the simulator answers an unknown account, sub-user or key and a bad signature as CloudAPI does, with one 401', async () => {
    const key = sshpk.parsePrivateKey(rsaPem.privateKey, 'auto');
    const send = async (keyId: string, by = key) => {
      const res = await signedFetch('/my', keyId, by);
      return { status: res.status, body: await res.json() };
    };
    const refused = {
      status: 401,
      body: { code: 'InvalidCredentials', message: 'Invalid authorization credentials supplied' },
    };
    expect(await send(`/nobody/keys/${rsaPem.fingerprint}`)).toEqual(refused);
    expect(await send(`/demo/users/alice/keys/${rsaPem.fingerprint}`)).toEqual(refused);
    expect(await send(`/demo/keys/${stranger.fingerprint}`)).toEqual(refused);
    expect(
      await send(`/demo/keys/${rsaPem.fingerprint}`, sshpk.parsePrivateKey(stranger.privateKey, 'auto')),
    ).toEqual(refused);
    expect(await send(`/demo/keys/${rsaPem.fingerprint}`)).toMatchObject({ status: 200 });
    expect(await send(`/demo/${rsaPem.fingerprint}`)).toEqual({
      status: 401,
      body: {
        code: 'InvalidCredentials',
        message: `Invalid KeyId /demo/${rsaPem.fingerprint} in authorization header`,
      },
    });
  });

  it('an encrypted key without its passphrase, or with a wrong one', () => {
    expect(() => provider({ keyMaterial: encrypted.privateKey })).toThrow(InvalidConfigError);
    expect(() => provider({ keyMaterial: encrypted.privateKey })).toThrow(/is encrypted; set its passphrase/);
    for (const bad of ['wrong horse', 'x']) {
      let caught: Error | undefined;
      try {
        provider({ keyMaterial: encrypted.privateKey, keyPassphrase: bad });
      } catch (err) {
        caught = err as Error;
      }
      expect(caught).toBeInstanceOf(InvalidConfigError);
      expect(caught?.message).not.toContain(bad);
      expect(caught?.message).not.toContain('PRIVATE KEY');
    }
  });

  it('Ed25519 at a CloudAPI older than TRITON-2417: its own answer, shown as it is', async () => {
    const old = await new TritonSim({ login: 'demo', ed25519: false }).start();
    try {
      old.addKey(ed25519.publicKey);
      const err = await verifyFailure(
        triton.create(
          { url: old.url, account: 'demo', datacenter: 'x', keyMaterial: ed25519.privateKey },
          {},
        ),
      );
      expect(err).toBeInstanceOf(UnauthorizedError);
      expect(err.message).toBe(
        `CloudAPI refused the signed request of key ${ed25519.fingerprint} (400 InvalidHeader: Authorization header invalid: ed25519-sha512 is not a supported algorithm)`,
      );
    } finally {
      await old.stop();
    }
  });

  it('garbage key material is refused without being quoted', () => {
    const garbage =
      '-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-key-secretvalue\n-----END OPENSSH PRIVATE KEY-----\n';
    let caught: Error | undefined;
    try {
      provider({ keyMaterial: garbage });
    } catch (err) {
      caught = err as Error;
    }
    expect(caught).toBeInstanceOf(InvalidConfigError);
    expect(caught?.message).not.toContain('secretvalue');
  });

  it('neither key nor agent', () => {
    expect(() => provider({})).toThrow(/no private key and no ssh-agent/);
  });

  it("a stale or missing Date: 400 InvalidHeader, as CloudAPI's authorizationParser answers", async () => {
    const key = sshpk.parsePrivateKey(rsaPem.privateKey, 'auto');
    const send = async (date?: string) => {
      const headers: Record<string, string> = { 'accept-version': '~8' };
      const signer = key.createSign('sha256');
      signer.update(`date: ${date}`);
      if (date) headers.date = date;
      headers.authorization = `Signature keyId="/demo/keys/${rsaPem.fingerprint}",algorithm="rsa-sha256",headers="date",signature="${signer.sign().toString()}"`;
      const res = await fetch(`${sim.url}/demo`, { headers });
      return { status: res.status, body: (await res.json()) as { code: string; message: string } };
    };
    expect((await send(new Date().toUTCString())).status).toBe(200);
    expect((await send(new Date(Date.now() - 280_000).toUTCString())).status).toBe(200);
    const stale = await send(new Date(Date.now() - 320_000).toUTCString());
    expect(stale).toMatchObject({ status: 400, body: { code: 'InvalidHeader' } });
    expect(stale.body.message).toMatch(
      /^Authorization header invalid: clock skew of 32\d(\.\d+)?s was greater than 300s$/,
    );
    expect((await send(new Date(Date.now() + 400_000).toUTCString())).status).toBe(400);
    expect(await send()).toEqual({
      status: 400,
      body: { code: 'InvalidHeader', message: 'Authorization header invalid: date was not in the request' },
    });
  });

  it("ccm's clock off by more than 300 s: CloudAPI's answer, the skew measured against its Date, then no request until the clock is right", async () => {
    for (const [offset, way] of [
      [-400_000, 'behind'],
      [+900_000, 'ahead of'],
    ] as const) {
      let off: number = offset;
      const client = new TritonClient({
        url: sim.url,
        account: 'demo',
        signer: createSigner({ account: 'demo', keyMaterial: rsaPem.privateKey }),
        secrets: [],
        clock: () => Date.now() + off,
      });
      const s = Math.abs(offset) / 1000;
      const skew = `this machine's clock is (${s - 1}|${s}|${s + 1}) s ${way} CloudAPI's`;
      const err = await error(client.getAccount());
      expect(err).toBeInstanceOf(UnauthorizedError);
      expect(err.message).toMatch(
        new RegExp(
          `^CloudAPI refused the signed request of key ${rsaPem.fingerprint} \\(400 InvalidHeader: Authorization header invalid: clock skew of \\d+(\\.\\d+)?s was greater than 300s\\); ${skew} \\(the Date of its answer\\), more than the 300 s it allows: set the clock \\(NTP\\)$`,
        ),
      );
      // Checked before sending from now on: a request CloudAPI would refuse is not sent.
      const sent = sim.requests.length;
      const again = await error(client.getAccount());
      expect(again).toBeInstanceOf(UnauthorizedError);
      expect(again.message).toMatch(
        new RegExp(
          `^CloudAPI would refuse the request's Date, so ccm did not send it; ${skew} \\(the Date of its last answer\\), more than the 300 s it allows: set the clock \\(NTP\\)$`,
        ),
      );
      expect(sim.requests.length).toBe(sent);
      // The clock set right: requests go out again.
      off = 0;
      expect((await client.getAccount()).login).toBe('demo');
    }
  });

  it('a signature by another key under a registered key id is refused', async () => {
    const key = sshpk.parsePrivateKey(stranger.privateKey, 'auto');
    const res = await signedFetch('/demo', `/demo/keys/${rsaPem.fingerprint}`, key);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { message: string }).message).toBe(
      'Invalid authorization credentials supplied',
    );
  });
});

describe('signing through an ssh-agent (SSH_AUTH_SOCK)', () => {
  let agentPid: number | undefined;
  let socket: string;

  beforeAll(async () => {
    socket = join(keys.dir, 'agent.sock');
    const agent = spawn('ssh-agent', ['-D', '-a', socket], { stdio: 'ignore' });
    agentPid = agent.pid;
    for (let i = 0; i < 50; i++) {
      try {
        execFileSync('ssh-add', ['-l'], { env: { SSH_AUTH_SOCK: socket }, stdio: 'ignore' });
        break;
      } catch (err) {
        // exit 1: running, no keys yet; 2: not reachable yet
        if ((err as { status?: number }).status === 1) break;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    execFileSync('ssh-add', [rsaOpenssh.path, ecdsa.path, ed25519.path], {
      env: { SSH_AUTH_SOCK: socket },
      stdio: 'ignore',
    });
  });
  afterAll(() => {
    if (agentPid) process.kill(agentPid);
  });

  it.each([
    ['RSA (rsa-sha2-256)', () => rsaOpenssh, 'RSA-SHA256'],
    ['ECDSA', () => ecdsa, 'ECDSA-SHA256'],
    ['Ed25519', () => ed25519, 'ED25519-SHA512'],
  ])('%s key held by the agent', async (_name, key, algorithm) => {
    const p = provider({ sshAuthSock: socket, keyId: key().fingerprint });
    await p.verifyCredentials?.();
    expect(sim.requests[0]).toMatchObject({
      status: 200,
      algorithm,
      keyId: `/demo/keys/${key().fingerprint}`,
    });
  });

  it('a key the agent does not hold', async () => {
    const err = await verifyFailure(provider({ sshAuthSock: socket, keyId: stranger.fingerprint }));
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(err.message).toBe(
      `the ssh-agent holds no key with fingerprint ${stranger.fingerprint}; ssh-add it or set TRITON_KEY_MATERIAL`,
    );
    expect(sim.requests).toEqual([]);
  });

  it('an agent without a key id', () => {
    expect(() => provider({ sshAuthSock: socket })).toThrow(/needs the key fingerprint: set TRITON_KEY_ID/);
  });

  it('a socket nobody listens on (a stale SSH_AUTH_SOCK): one configuration error, no crash, no hang', async () => {
    const started = Date.now();
    const err = await verifyFailure(
      provider({ sshAuthSock: join(keys.dir, 'gone.sock'), keyId: ecdsa.fingerprint }),
    );
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(err.message).toMatch(
      /^the ssh-agent at \S+gone\.sock did not answer \(.*ENOENT.*\); start it or set TRITON_KEY_MATERIAL$/,
    );
    // Not a speed test: a hang (no timeout anywhere on this path) would end the test at 60 s instead.
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(sim.requests).toEqual([]);
  });

  it('an agent that goes away between requests: the next request says so, and one after its return signs', async () => {
    const own = join(keys.dir, 'own-agent.sock');
    const start = async () => {
      const agent = spawn('ssh-agent', ['-D', '-a', own], { stdio: 'ignore' });
      for (let i = 0; i < 50 && !existsSync(own); i++) await new Promise((r) => setTimeout(r, 100));
      // The socket can exist a moment before the agent answers on it (seen on a loaded machine).
      for (let attempt = 1; ; attempt++) {
        try {
          execFileSync('ssh-add', [ecdsa.path], { env: { SSH_AUTH_SOCK: own }, stdio: 'ignore' });
          return agent;
        } catch (err) {
          if (attempt >= 20) throw err;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    };
    let agent = await start();
    const p = provider({ sshAuthSock: own, keyId: ecdsa.fingerprint });
    await p.verifyCredentials?.();
    agent.kill();
    await new Promise((r) => agent.once('exit', r));
    rmSync(own, { force: true });
    const err = await verifyFailure(p);
    expect(err).toBeInstanceOf(InvalidConfigError);
    agent = await start();
    try {
      await p.verifyCredentials?.();
      expect(sim.requests.at(-1)).toMatchObject({ status: 200, algorithm: 'ECDSA-SHA256' });
    } finally {
      agent.kill();
    }
  });
});
