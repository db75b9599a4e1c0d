/**
 * triton-go, Triton's official Go SDK, against ccm's CloudAPI simulator (test/sdk/triton): the
 * account, the data centres, an offset-paged machine listing and its HEAD count, a machine, the
 * SDK's own ResourceNotFound for a missing one, and the CNS tag operations ccm's load balancing
 * makes. The simulator verifies triton-go's signatures as it verifies ccm's.
 */
import { beforeAll, expect, it } from 'vitest';
import { buildSdkProgram, runSdkProgram } from '../helpers/go-sdk.js';
import { useTritonSim } from '../helpers/use-simulator.js';
import { expectChecks } from '../sdk/harness.js';

// triton-go's PrivateKeySigner reads a PKCS#1 PEM RSA key only.
const tsim = useTritonSim({ login: 'demo' }, { type: 'rsa', bits: 2048, pem: true });
const { sim } = tsim;
let program: string;

beforeAll(async () => {
  program = await buildSdkProgram('triton');
}, 900_000);

it('triton-go lists, counts, reads, misses and tags machines as against the real CloudAPI', async () => {
  const machines = Array.from({ length: 5 }, (_, i) =>
    sim.addMachine({ name: `sdk-${i}`, ips: [`10.1.0.${i + 2}`] }),
  );
  const run = await runSdkProgram(program, [], {
    SIM_URL: sim.url,
    SIM_ACCOUNT: 'demo',
    SIM_KEY_ID: tsim.key.fingerprint,
    SIM_KEY_FILE: tsim.key.path,
    SIM_MACHINES: String(machines.length),
    SIM_MACHINE_ID: String(machines[0]?.id),
  });
  expectChecks(run, [
    'ok get account',
    'ok list datacenters',
    'ok list machines, two a page',
    "ok count machines: the page's length",
    'ok get machine',
    "ok get a missing machine: triton-go's ResourceNotFound",
    'ok CNS tags: add, list, read back as CNS services, delete',
  ]);
  expect(
    sim.requests.filter((r) => r.method === 'GET' && r.path === '/demo/machines').map((r) => r.query),
  ).toEqual(['?limit=2&offset=0', '?limit=2&offset=2', '?limit=2&offset=4']);
  // Every request signed by triton-go and verified: rsa-sha1, Accept-Version 8.
  expect(new Set(sim.requests.map((r) => `${r.algorithm} ${r.headers['accept-version']}`))).toEqual(
    new Set(['RSA-SHA1 8']),
  );
  expect(sim.requests.filter((r) => r.status >= 400).map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual(
    ['GET /demo/machines/00000000-0000-4000-8000-000000000000 404'],
  );
});
