/**
 * godo, DigitalOcean's official Go SDK, against ccm's DigitalOcean simulator (test/sdk/digitalocean):
 * a paged listing, a droplet, godo's own 404 error, and a load balancer created, waited for, updated
 * (through the API's refusal while it applies the creation) and deleted. The simulator checks godo's
 * requests against DigitalOcean's OpenAPI document as it checks ccm's.
 */
import { expect, it } from 'vitest';
import { DigitalOceanSimulator } from '../clouds/digitalocean/server.js';
import { runSdkProgram } from '../helpers/go-sdk.js';
import { conformsToDigitalOceanOpenApi } from '../helpers/openapi.js';
import { expectChecks, useSdkProgram } from '../sdk/harness.js';

const world = useSdkProgram(
  'digitalocean',
  () => DigitalOceanSimulator.start(),
  (sim) => sim.stop(),
);

it('godo lists, reads, misses and manages a load balancer as against the real API', async () => {
  const { sim, program } = world;
  const droplets = sim.addDroplets(
    ...Array.from({ length: 5 }, (_, i) => ({ name: `sdk-${i}`, privateIP: `10.110.0.${i + 2}` })),
  );
  const run = await runSdkProgram(program, [], {
    SIM_URL: sim.url,
    SIM_TOKEN: sim.token,
    SIM_DROPLETS: String(droplets.length),
    SIM_DROPLET_ID: String(droplets[0]?.id),
  });
  expectChecks(run, [
    'ok list droplets, two a page',
    'ok get droplet',
    "ok get a missing droplet: godo's 404 ErrorResponse",
    'ok load balancer: create, wait, update, delete',
  ]);
  // Three pages of two: godo pages by number through links.pages.
  expect(sim.requestsTo('GET', '/v2/droplets').map((r) => r.url)).toEqual([
    '/v2/droplets?page=1&per_page=2',
    '/v2/droplets?page=2&per_page=2',
    '/v2/droplets?page=3&per_page=2',
  ]);
  expect(sim.takeViolations()).toEqual([]);
});

conformsToDigitalOceanOpenApi();
