/**
 * triton-go's own test payloads (github.com/joyent/triton-go/v2, pinned, read from the Go module
 * cache) served to ccm's Triton client: what Triton's SDK team recorded of CloudAPI, not what we
 * wrote. The fixture server verifies ccm's signatures with http-signature, as CloudAPI does.
 * - compute/instances_test.go: a machine (getMachineSuccess), a listing of one
 *   (listMachinesSuccess), a machine with trailing commas (getMachineBadDecode), machine tags
 *   (listMachineTagSuccess);
 * - account/account_test.go: the account (getAccountSuccess), without `triton_cns_enabled`;
 * - compute/datacenters_test.go: ListDatacenters (listDataCentersSuccess).
 */
import type { IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import sshpk from 'sshpk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidConfigError, isProviderError, NotFoundError } from '../../src/providers/errors.js';
import { TritonClient } from '../../src/providers/triton/client.js';
import { triton } from '../../src/providers/triton/index.js';
import { createSigner } from '../../src/providers/triton/signer.js';
import { KeyFolder, type TestKey } from '../clouds/triton/keys.js';
import { type GoSource, goSource } from '../helpers/go-fixtures.js';
import { type FixtureServer, serveFixtures } from '../sdk/fixture-server.js';
import { internalIPs } from '../unit/helpers/addresses.js';

interface HttpSignature {
  parseRequest(req: IncomingMessage): unknown;
  verifySignature(parsed: unknown, key: sshpk.Key): boolean;
}
const httpSignature = createRequire(import.meta.url)('http-signature') as HttpSignature;

const TRITON_GO = ['github.com/joyent/triton-go/v2', 'v2.0.0-pre3'] as const;
const MACHINE = 'b6979942-7d5d-4fe6-a2ec-b812e950625a';

let instances: GoSource;
let accounts: GoSource;
let datacenters: GoSource;
let keys: KeyFolder;
let key: TestKey;
let fixtures: FixtureServer;
/** The fixture GetMachine serves: the good one, or the one with trailing commas. */
let machineFixture = 'getMachineSuccess';

/** The one raw string (the payload) a triton-go test responder function returns. */
function payload(source: GoSource, responder: string): string {
  const [body] = source.inFunction(responder);
  if (body === undefined) throw new Error(`${responder}: no payload`);
  return body;
}

beforeAll(async () => {
  [instances, accounts, datacenters] = await Promise.all([
    goSource(...TRITON_GO, 'compute/instances_test.go'),
    goSource(...TRITON_GO, 'account/account_test.go'),
    goSource(...TRITON_GO, 'compute/datacenters_test.go'),
  ]);
  keys = new KeyFolder();
  key = keys.make({ type: 'ecdsa', bits: 256 });
  const publicKey = sshpk.parseKey(key.publicKey, 'ssh');
  fixtures = await serveFixtures((req, res) => {
    let verified = false;
    try {
      verified = httpSignature.verifySignature(httpSignature.parseRequest(req), publicKey);
    } catch {
      verified = false;
    }
    if (!verified) {
      res.writeHead(401, { 'content-type': 'application/json' });
      return void res.end(
        '{"code":"InvalidCredentials","message":"Invalid authorization credentials supplied"}',
      );
    }
    const path = new URL(req.url ?? '/', 'http://fixture').pathname;
    const body: Record<string, () => string> = {
      '/barbar': () => payload(accounts, 'getAccountSuccess'),
      '/barbar/datacenters': () => payload(datacenters, 'listDataCentersSuccess'),
      '/barbar/machines': () => payload(instances, 'listMachinesSuccess'),
      [`/barbar/machines/${MACHINE}`]: () => payload(instances, machineFixture),
      [`/barbar/machines/${MACHINE}/tags`]: () => payload(instances, 'listMachineTagSuccess'),
    };
    const send = body[path];
    if (!send) {
      res.writeHead(404, { 'content-type': 'application/json' });
      return void res.end('{"code":"ResourceNotFound","message":"not a fixture"}');
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(send());
  });
}, 600_000);

afterAll(async () => {
  await fixtures?.close();
  keys?.remove();
});

function provider(datacenter?: string) {
  return triton.create(
    {
      url: fixtures.url,
      account: 'barbar',
      keyMaterial: key.privateKey,
      ...(datacenter ? { datacenter } : {}),
    },
    {},
  );
}

describe("triton-go's payloads, read by ccm", () => {
  it('the account: login and id, and the credentials that reached it', async () => {
    expect(await provider().verifyCredentials?.()).toBe(
      `Triton account barbar (b89d9dd3-62ce-4f6f-eb0d-f78e57d515d9) at ${fixtures.url}`,
    );
  });

  it('a machine: id, name, package, running, its private addresses with the primary first', async () => {
    machineFixture = 'getMachineSuccess';
    expect(await provider('us-east-1').instances.get(`triton://${MACHINE}`)).toEqual({
      providerID: `triton://${MACHINE}`,
      name: 'test',
      state: 'running',
      type: 'sdc_128',
      region: 'us-east-1',
      zone: '',
      addresses: internalIPs('10.88.88.26', '192.168.128.5'),
      labels: {},
    });
  });

  it('a listing of one: one page, shorter than the limit, so the last', async () => {
    fixtures.seen.length = 0;
    const listed = await provider('us-east-1').instances.list();
    expect(listed.map((i) => [i.providerID, i.name])).toEqual([[`triton://${MACHINE}`, 'test']]);
    expect(fixtures.seen).toEqual(['GET /barbar/machines?offset=0&limit=1000']);
  });

  it('a machine that is not JSON (trailing commas): an error naming the call, never "gone"', async () => {
    machineFixture = 'getMachineBadDecode';
    try {
      const err = await provider('us-east-1')
        .instances.get(`triton://${MACHINE}`)
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(isProviderError(err)).toBe(true);
      expect(err).not.toBeInstanceOf(NotFoundError);
      expect((err as Error).message).toMatch(new RegExp(`^GET /barbar/machines/${MACHINE}: 200 returned`));
    } finally {
      machineFixture = 'getMachineSuccess';
    }
  });

  it('ListDatacenters: names and URLs; none is this URL, so ccm asks for TRITON_DATACENTER', async () => {
    await expect(provider().instances.list()).rejects.toThrow(
      new InvalidConfigError(
        `none of the data centres CloudAPI lists (us-east-1, us-west-1, us-sw-1, eu-ams-1, us-east-2, us-east-3) has the URL ${fixtures.url}; set TRITON_DATACENTER`,
      ),
    );
  });

  it('machine tags as ListMachineTags answers them', async () => {
    const client = new TritonClient({
      url: fixtures.url,
      account: 'barbar',
      signer: createSigner({ account: 'barbar', keyMaterial: key.privateKey }),
      secrets: [],
    });
    expect(await client.listMachineTags(MACHINE)).toEqual({ foo: 'bar', group: 'test' });
  });
});
