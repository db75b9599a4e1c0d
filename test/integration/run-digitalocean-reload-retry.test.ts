/**
 * New credentials are what a Service failing with 401 waits for: when they are reloaded, every
 * Service waiting out its backoff (5 s doubling to 300 s) is tried once at once, its backoff started
 * over. The chaos run (docs/chaos.md) saw a Service not tried again for over 80 s after the
 * credentials Secret was put back and the cloud healed. Real kube-apiserver, DigitalOcean simulator,
 * `ccm run` in process (the Secret is re-read every 300 ms).
 */
import { describe, expect, it } from 'vitest';
import { createNodes } from '../controlplane/fixtures.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { type InProcess, until, untilInitialised } from '../helpers/run.js';
import { lbService, MERGE_PATCH, untilIngress } from '../helpers/services.js';

const NS = 'default';
const REVOKED = 'dop_v1_revoked000000000000000000';
const ALSO_REVOKED = 'dop_v1_revoked111111111111111111';

const world = useCloudWorld('digitalocean', {
  services: true,
  afterEachTest: (w) => {
    expect(w.sim.takeViolations()).toEqual([]);
  },
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function setToken(token: string) {
  await world.api.patchNamespacedSecret(
    { name: 'digitalocean', namespace: 'kube-system', body: { stringData: { 'access-token': token } } },
    MERGE_PATCH,
  );
}

/** Reload lines so far ("… changed; using them from now on"). */
const reloads = (ccm: InProcess) =>
  ccm.logs.filter((l) => l.includes('changed; using them from now on')).length;

async function untilReloaded(ccm: InProcess, seen: number) {
  await until('the reload', async () => reloads(ccm) > seen, 10_000);
}

/** The Service's sync attempts refused with 401: each begins by listing the load balancers. */
const refused = () =>
  world.sim
    .requestsTo('GET', '/v2/load_balancers')
    .filter((r) => r.status === 401)
    .map((r) => r.at);

async function startWithOneNode(): Promise<InProcess> {
  world.sim.addDroplets({ name: 'w1', region: 'fra1', privateIP: '10.114.0.61' });
  const ccm = await world.run();
  await createNodes(world.api, [{ name: 'w1' }]);
  await untilInitialised(world.api, 'w1');
  return ccm;
}

describe('a Service failing on revoked credentials', () => {
  it('is tried again as soon as the Secret holds a good token again, not at the end of its backoff', async () => {
    const ccm = await startWithOneNode();
    try {
      let seen = reloads(ccm);
      await setToken(REVOKED);
      await untilReloaded(ccm, seen);
      await world.api.createNamespacedService({ namespace: NS, body: lbService('web') });
      // Refused at once, after 5 s and after 10 s more: the next try would be 20 s later.
      await until('three refused syncs', async () => refused().length >= 3, 30_000);

      seen = reloads(ccm);
      const restored = Date.now();
      await setToken(world.sim.token);
      await untilReloaded(ccm, seen);
      await until(
        'the load balancer created with the good token',
        async () => world.sim.requestsTo('POST', '/v2/load_balancers').some((r) => r.status === 202),
        8_000,
      );
      console.log(`created ${Date.now() - restored} ms after the good token was put back`);
      await untilIngress(world.api, NS, 'web', 30_000);
      expect(ccm.logs.some((l) => l.includes('retrying 1 Service(s) waiting out their backoff now'))).toBe(
        true,
      );
    } finally {
      await setToken(world.sim.token);
    }
  }, 90_000);

  it('a reload that fixes nothing costs one prompt retry, then the normal backoff: no hot loop', async () => {
    const ccm = await startWithOneNode();
    try {
      let seen = reloads(ccm);
      await setToken(REVOKED);
      await untilReloaded(ccm, seen);
      await world.api.createNamespacedService({ namespace: NS, body: lbService('web') });
      // Refused at once and after 5 s: the next try would be 10 s later.
      await until('two refused syncs', async () => refused().length >= 2, 20_000);
      const before = refused().length;

      seen = reloads(ccm);
      await setToken(ALSO_REVOKED);
      await untilReloaded(ccm, seen);
      await until('one prompt retry', async () => refused().length > before, 3_000);
      const prompt = refused().length;
      expect(prompt).toBe(before + 1);
      // Refused again: its backoff started over at 5 s, so nothing for 4 s.
      await sleep(4_000);
      expect(refused().length).toBe(prompt);
    } finally {
      await setToken(world.sim.token);
    }
  }, 60_000);
});
