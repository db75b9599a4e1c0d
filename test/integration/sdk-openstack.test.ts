/**
 * gophercloud, OpenStack's Go SDK (the official controller's), against ccm's OpenStack simulator
 * (test/sdk/openstack): both Keystone flows, through Keystone's version document for an auth URL
 * without a version; Neutron's and Octavia's version documents; a server listing paged by
 * servers_links; a server and its flavor by the id Nova 2.1 shows; gophercloud's own 404; and a load
 * balancer created, waited for, updated (itself and its listener) and deleted on Octavia's /v2.0.
 */
import { expect, it } from 'vitest';
import { SUBNET_ID } from '../clouds/openstack/octavia.js';
import {
  APP_CREDENTIAL,
  OpenStackSimulator,
  PASSWORD,
  PROJECT,
  REGION,
  USER,
} from '../clouds/openstack/simulator.js';
import { runSdkProgram } from '../helpers/go-sdk.js';
import { useSdkProgram } from '../sdk/harness.js';

const world = useSdkProgram(
  'openstack',
  async () => {
    const sim = await new OpenStackSimulator().start();
    sim.octavia.settleAfterReads = 2;
    return sim;
  },
  (sim) => sim.stop(),
);

it('gophercloud authenticates, discovers, lists, reads, misses and manages a load balancer', async () => {
  const { sim, program } = world;
  const servers = Array.from({ length: 5 }, (_, i) =>
    sim.addServer({
      name: `sdk-${i}`,
      flavor: 'm1.medium',
      addresses: { private: [{ addr: `10.0.0.${i + 2}` }] },
    }),
  );
  const run = await runSdkProgram(program, [], {
    SIM_URL: sim.url,
    SIM_REGION: REGION,
    SIM_USER: USER.name,
    SIM_PASSWORD: PASSWORD,
    SIM_DOMAIN_ID: USER.domain.id,
    SIM_PROJECT_ID: PROJECT.id,
    SIM_APP_CRED_ID: APP_CREDENTIAL.id,
    SIM_APP_CRED_NAME: APP_CREDENTIAL.name,
    SIM_APP_CRED_SECRET: APP_CREDENTIAL.secret,
    SIM_SERVERS: String(servers.length),
    SIM_SERVER_ID: String(servers[0]?.id),
    SIM_FLAVOR: 'm1.medium',
    SIM_SUBNET_ID: SUBNET_ID,
  });
  expect({ stdout: run.stdout.split('\n').filter(Boolean), stderr: run.stderr }).toEqual({
    stdout: [
      'ok keystone: password, auth URL without a version (version discovery)',
      'ok keystone: application credential by id',
      'ok keystone: application credential by name, its user by name and domain',
      'ok versions: Neutron and Octavia',
      'ok list servers, two a page',
      'ok get server, and its flavor by the id Nova 2.1 shows',
      "ok get a missing server: gophercloud's 404",
      'ok load balancer: create, wait, update, update its listener, delete',
    ],
    stderr: '',
  });
  expect(run.exitCode).toBe(0);
  // Keystone's version document, asked without a token, then the token from the v3 it names.
  expect(sim.requests.slice(0, 2).map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual([
    'GET /identity/ 300',
    'POST /identity/v3/auth/tokens 201',
  ]);
  // Three pages of two, through the next links Nova hands out.
  expect(sim.requestsTo(/servers\/detail/).map((r) => r.path.replace(/marker=[^&]+/, 'marker=M'))).toEqual([
    '/compute/v2.1/servers/detail?limit=2',
    '/compute/v2.1/servers/detail?limit=2&marker=M',
    '/compute/v2.1/servers/detail?limit=2&marker=M',
  ]);
  expect(sim.requestsTo(/\/flavors\//).map((r) => `${r.path} ${r.status}`)).toEqual([
    '/compute/v2.1/flavors/3 200',
  ]);
  // gophercloud always asks Octavia on /v2.0; PUTs are 200, the member-less ones.
  const octavia = sim.requests.filter((r) => r.path.startsWith('/load-balancer/'));
  const elsewhere = octavia.filter((r) => !r.path.startsWith('/load-balancer/v2.0/lbaas/'));
  expect([...new Set(elsewhere.map((r) => `${r.path} ${r.status}`))]).toEqual(['/load-balancer/ 200']);
  expect(octavia.filter((r) => r.method === 'PUT').map((r) => r.status)).toEqual([200, 200]);
  expect(sim.octavia.loadBalancers.size).toBe(0);
});
