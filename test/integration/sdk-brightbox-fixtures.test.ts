/**
 * gobrightbox's own test payloads (github.com/brightbox/gobrightbox/v2, pinned, its testdata/*.json
 * read from the Go module cache) served to ccm's Brightbox client: what Brightbox's SDK team recorded
 * of the API, not what we wrote.
 * - servers.json and server.json: a server listing and lookup (zone handle gb1, a cloud IP mapped),
 *   and that server in each status of the `serverstatus` enum (servers.go's go:generate line);
 * - api_error_forbidden.json: a request error, as a refused lookup;
 * - load_balancers.json: a balancer still creating, without a cloud IP;
 * - cloud_ips.json, firewall_policies.json, server_groups.json: an account's listings, with its
 *   default group and policy, which ccm must never take for a Service's;
 * - cloud_ip.json: the body DELETE answers.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrightboxClient } from '../../src/providers/brightbox/client.js';
import { createBrightbox } from '../../src/providers/brightbox/index.js';
import { ownedName } from '../../src/providers/brightbox/load-balancers.js';
import { NotFoundError, UnauthorizedError } from '../../src/providers/errors.js';
import type { LoadBalancerRequest } from '../../src/providers/types.js';
import { goModuleDir } from '../helpers/go-sdk.js';
import { requestService } from '../helpers/lb-request.js';
import { type FixtureServer, serveFixtures } from '../sdk/fixture-server.js';
import { externalDNS, externalIPs, hostname } from '../unit/helpers/addresses.js';

const GOBRIGHTBOX = ['github.com/brightbox/gobrightbox/v2', 'v2.2.2'] as const;
const CLIENT = { id: 'cli-fixtr', secret: 'fixture-secret' };

const REQ: LoadBalancerRequest = {
  name: 'a6f1c1e7c2b3d4e5f60718293a4b5c6d',
  clusterID: '5d3f0a2e-4b1c-4e8a-9f6d-2c7b8a9e0f11',
  ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 }],
  nodes: [{ name: 'srv-lv426', providerID: 'brightbox://srv-lv426', addresses: [] }],
  service: requestService({ namespace: 'shop', name: 'web', uid: '6f1c1e7c-2b3d-4e5f-6071-8293a4b5c6d7' }),
};

let testdata: (name: string) => unknown;
let serverStatuses: string[];
/** The status the served server fixtures carry, when a test sets one. */
let status: string | undefined;
let fixtures: FixtureServer;

beforeAll(async () => {
  const dir = join(await goModuleDir(...GOBRIGHTBOX), 'testdata');
  testdata = (name) => JSON.parse(readFileSync(join(dir, `${name}.json`), 'utf8'));
  const servers = readFileSync(join(dir, '..', 'servers.go'), 'utf8');
  serverStatuses = /generate_enum serverstatus ([a-z ]+)/.exec(servers)?.[1]?.trim().split(' ') ?? [];
  const withStatus = <T>(server: T): T => (status ? { ...server, status } : server);
  const routes: Record<string, () => [number, unknown]> = {
    'POST /token/': () => [200, { access_token: 'fixture-token', token_type: 'Bearer', expires_in: 7200 }],
    'GET /1.0/servers': () => [200, (testdata('servers') as object[]).map(withStatus)],
    'GET /1.0/servers/srv-lv426': () => [200, withStatus(testdata('server'))],
    'GET /1.0/servers/srv-limit': () => [403, testdata('api_error_forbidden')],
    // The fixture balancer, named as ccm names this Service's: the one thing changed in a payload.
    'GET /1.0/load_balancers': () => [
      200,
      (testdata('load_balancers') as { name: string }[]).map((lb) => ({ ...lb, name: ownedName(REQ) })),
    ],
    'GET /1.0/cloud_ips': () => [200, testdata('cloud_ips')],
    'GET /1.0/firewall_policies': () => [200, testdata('firewall_policies')],
    'GET /1.0/server_groups': () => [200, testdata('server_groups')],
    'DELETE /1.0/cloud_ips/cip-k4a25': () => [202, testdata('cloud_ip')],
  };
  fixtures = await serveFixtures((req, res) => {
    const key = `${req.method} ${new URL(req.url ?? '/', 'http://fixture').pathname}`;
    const route = routes[key];
    const [status, body] = route
      ? route()
      : [404, { error_name: 'not_found', errors: [`Simulated: no fixture for ${key}`] }];
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
}, 600_000);

afterAll(async () => {
  await fixtures?.close();
});

const options = () => ({
  apiUrl: fixtures.url,
  clientId: CLIENT.id,
  clientSecret: CLIENT.secret,
  http: { retries: 0, sleep: async () => {} },
});

const LV426 = {
  providerID: 'brightbox://srv-lv426',
  name: '',
  state: 'running',
  type: 'small',
  zone: 'gb1',
  region: 'gb1',
  addresses: [
    hostname('srv-lv426'),
    externalDNS('srv-lv426.gb1.brightbox.com'),
    ...externalIPs('81.15.16.17', '109.107.50.0'),
    externalDNS('cip-k4a25.gb1.brightbox.com'),
  ],
  labels: {},
};

describe("gobrightbox's payloads, read by ccm", () => {
  it('a server listing and lookup: type and zone handles, interface and cloud IP addresses, running', async () => {
    const { instances } = createBrightbox(options());
    expect(await instances.list()).toEqual([LV426]);
    expect(await instances.get('brightbox://srv-lv426')).toEqual(LV426);
  });

  it("the server in each status of gobrightbox's enum, read as the official controller reads it", async () => {
    const { instances } = createBrightbox(options());
    // brightbox-cloud-controller-manager instances.go l.133-144: shut down only when inactive or
    // unavailable; deleted and failed do not exist: left out of a listing, and a lookup that answers
    // one is "not found" (NotFoundError), as its instances_test.go l.238-243 expects of srv-goner.
    const want: Record<string, [listed: string, lookedUp: string]> = {
      creating: ['running', 'running'],
      active: ['running', 'running'],
      inactive: ['stopped', 'stopped'],
      deleting: ['running', 'running'],
      deleted: ['(absent)', 'NotFoundError'],
      failed: ['(absent)', 'NotFoundError'],
      unavailable: ['stopped', 'stopped'],
    };
    expect(serverStatuses.sort()).toEqual(Object.keys(want).sort());
    try {
      for (const s of serverStatuses) {
        status = s;
        const [listed] = await instances.list();
        const lookedUp = await instances.get('brightbox://srv-lv426').then(
          (i) => i.state,
          (e: unknown) => (e instanceof NotFoundError ? 'NotFoundError' : String(e)),
        );
        expect([listed?.state ?? '(absent)', lookedUp], s).toEqual(want[s]);
      }
    } finally {
      status = undefined;
    }
  });

  it('a request error (403 Forbidden with error_name and errors) is a refusal, never "gone"', async () => {
    const { instances } = createBrightbox(options());
    const err = await instances.get('brightbox://srv-limit').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnauthorizedError);
  });

  it('a balancer still creating without a cloud IP exists with no address yet', async () => {
    const { loadBalancers } = createBrightbox(options());
    expect(await loadBalancers?.get(REQ)).toEqual({ ingress: [] });
  });

  it("an account's cloud IPs, default group and default policy are nothing of a Service's", async () => {
    const { loadBalancers } = createBrightbox(options());
    const other = { ...REQ, service: { ...REQ.service, name: 'api' } };
    fixtures.seen.length = 0;
    expect(await loadBalancers?.get(other)).toBeUndefined();
    expect(fixtures.seen.filter((call) => call !== 'POST /token/')).toEqual([
      'GET /1.0/load_balancers',
      'GET /1.0/cloud_ips',
      'GET /1.0/firewall_policies',
      'GET /1.0/server_groups',
    ]);
  });

  it('the client reads the resource a DELETE answers', async () => {
    const client = new BrightboxClient(options());
    expect(await client.delete('cloud_ips/cip-k4a25')).toMatchObject({ id: 'cip-k4a25', status: 'mapped' });
  });
});
