/**
 * A replica started while the credentials Secret holds a revoked token (review 45b, finding 4): it
 * stays up, not ready with the reason in /readyz, the refusal logged once, and recovers by itself
 * when the Secret gets a good token, as a running replica does. Before, it exited 2 at start: a Pod
 * started during a credentials incident crash-looped, and a rollout never completed. Credentials
 * that nothing re-reads (DO_ACCESS_TOKEN) still end the start (run-digitalocean.test.ts). Real
 * kube-apiserver, the DigitalOcean simulator, `ccm run` in process.
 */
import { describe, expect, it } from 'vitest';
import { createNodes } from '../controlplane/fixtures.js';
import { digitalOceanSecret, useCloudWorld } from '../helpers/cloud-world.js';
import { type InProcess, until, untilInitialised } from '../helpers/run.js';
import { lbService, MERGE_PATCH, untilIngress } from '../helpers/services.js';

const world = useCloudWorld('digitalocean', {
  services: true,
  afterEachTest: (w) => {
    expect(w.sim.takeViolations()).toEqual([]);
  },
});
let ccm: InProcess | undefined;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('ccm run with a revoked token in the watched credentials Secret at start', () => {
  it('stays up, not ready with the reason; a good token in the Secret: ready, Nodes and load balancers reconciled', async () => {
    world.sim.addDroplets({ name: 'worker-1', privateIP: '10.114.0.21' });
    await world.api.createNamespacedSecret({
      namespace: 'kube-system',
      body: digitalOceanSecret('dop_v1_revoked000000000000000000', 'digitalocean-bad'),
    });
    await createNodes(world.api, [{ name: 'worker-1' }]);
    await world.api.createNamespacedService({ namespace: 'default', body: lbService('web') });
    try {
      ccm = await world.run({ credentialsSecret: 'kube-system/digitalocean-bad' });
      const readyz = async () => {
        const res = await fetch(`${ccm?.url}/readyz?verbose`);
        return { status: res.status, body: await res.text() };
      };
      await sleep(2000);
      const down = await readyz();
      expect(down.status).toBe(503);
      const cloudLine = down.body.split('\n').filter((l) => /\bcloud\b/.test(l));
      expect(cloudLine).toHaveLength(1);
      expect(cloudLine[0]).toMatch(
        /refuses the credentials from Secret kube-system\/digitalocean-bad: .*token is invalid or revoked/,
      );
      expect(down.body).not.toContain('dop_v1_revoked');
      const refusals = ccm.logs.filter((l) => l.includes('refuses the credentials from Secret'));
      expect(refusals).toHaveLength(1);
      expect(JSON.parse(refusals[0] ?? '{}').msg).toMatch(/starting anyway, not ready/);
      expect(world.sim.loadBalancers.size).toBe(0);

      // The incident ends: the Secret gets a good token. No restart.
      await world.api.patchNamespacedSecret(
        {
          name: 'digitalocean-bad',
          namespace: 'kube-system',
          body: { stringData: { 'access-token': world.sim.token } },
        },
        MERGE_PATCH,
      );
      await until('ready', async () => (await readyz()).status === 200, 30_000);
      expect(ccm.logs.some((l) => l.includes('the cloud accepts the credentials now'))).toBe(true);
      await untilInitialised(world.api, 'worker-1');
      const svc = await untilIngress(world.api, 'default', 'web', 45_000);
      const [lb] = [...world.sim.loadBalancers.values()];
      expect(world.sim.loadBalancers.size).toBe(1);
      expect(svc.status?.loadBalancer?.ingress).toEqual([expect.objectContaining({ ip: lb?.ip as string })]);
      expect(ccm.logs.filter((l) => l.includes('refuses the credentials from Secret'))).toHaveLength(1);
    } finally {
      await ccm?.stop();
      ccm = undefined;
    }
  }, 120_000);
});
