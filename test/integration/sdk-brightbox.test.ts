/**
 * gobrightbox, Brightbox's official Go SDK, against ccm's Brightbox simulator (test/sdk/brightbox):
 * the server listing (Brightbox's has no pages), a server, gobrightbox's own 404 APIError, and the
 * server group, firewall policy and rule, cloud IP and load balancer operations ccm uses, plus the
 * actions the SDK's services offer. The SDK refuses unknown fields here, as in its own tests.
 */
import { expect, it } from 'vitest';
import { SIM_CLIENT, startBrightboxSimulator } from '../clouds/brightbox/simulator.js';
import { runSdkProgram } from '../helpers/go-sdk.js';
import { expectChecks, useSdkProgram } from '../sdk/harness.js';

const world = useSdkProgram('brightbox', startBrightboxSimulator, (sim) => sim.close());

it('gobrightbox lists, reads, misses and manages a load balancer and its companions as against the real API', async () => {
  const { sim, program } = world;
  const servers = Array.from({ length: 3 }, (_, i) => sim.addServer({ name: `sdk-${i}` }));
  const [first, second] = servers;
  const run = await runSdkProgram(program, [], {
    SIM_URL: sim.url,
    SIM_CLIENT: SIM_CLIENT.id,
    SIM_SECRET: SIM_CLIENT.secret,
    SIM_SERVERS: String(servers.length),
    SIM_SERVER_ID: first?.id ?? '',
    SIM_SERVER_ID2: second?.id ?? '',
  });
  expectChecks(run, [
    'ok list servers',
    'ok get server',
    "ok get a missing server: gobrightbox's 404 APIError",
    'ok server group: create, add and remove servers',
    'ok firewall policy and rule: create, update, remove, apply_to, delete',
    'ok load balancer: create, wait, update, nodes, listeners, lock, delete',
  ]);
  // The SDK asked for the infrastructure scope, and left nothing behind (a deleted balancer stays
  // listed with status deleted, as the real listing keeps it).
  expect(sim.tokenScopes).toEqual(['infrastructure']);
  expect([
    [...sim.loadBalancers.values()].filter((lb) => lb.status !== 'deleted').length,
    sim.cloudIPs.size,
    sim.serverGroups.size,
    sim.firewallPolicies.size,
  ]).toEqual([0, 0, 0, 0]);
});
