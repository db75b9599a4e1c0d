/**
 * A LoadBalancer Service whose load-balancer-id annotation is malformed (an outside review's
 * reproduction: "../droplets/100001"). The sync refuses it; deleting the Service must still delete
 * ccm's load balancer (found by ccm's own name and tag), remove the finalizer, and say why once.
 * Real kube-apiserver, the DigitalOcean simulator, `ccm run` in process.
 */
import { describe, expect, it } from 'vitest';
import { createNodes } from '../controlplane/fixtures.js';
import { DIGITALOCEAN_WORKER_1 } from '../helpers/cloud-nodes.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { type InProcess, untilInitialised } from '../helpers/run.js';
import {
  lbService,
  MERGE_PATCH,
  serviceControllerEvents,
  untilIngress,
  untilServiceGone,
} from '../helpers/services.js';

const LB_ID_ANNOTATION = 'kubernetes.digitalocean.com/load-balancer-id';
const NS = 'default';
const world = useCloudWorld('digitalocean', {
  services: true,
  afterEachTest: (w) => {
    expect(w.sim.takeViolations()).toEqual([]);
  },
});
let _ccm: InProcess | undefined;

describe('a Service with a malformed load-balancer-id annotation', () => {
  it('is refused while it lives, and deleted with its load balancer (by name and tag), the finalizer removed and why said once', async () => {
    world.sim.addDroplets(DIGITALOCEAN_WORKER_1);
    _ccm = await world.run({});
    await createNodes(world.api, [{ name: 'worker-1' }]);
    await untilInitialised(world.api, 'worker-1');
    await world.api.createNamespacedService({ namespace: NS, body: lbService('web') });
    await untilIngress(world.api, NS, 'web', 30_000);
    expect(world.sim.loadBalancers.size).toBe(1);
    const [lb] = [...world.sim.loadBalancers.values()];

    const bad = '../droplets/100001';
    await world.api.patchNamespacedService(
      { name: 'web', namespace: NS, body: { metadata: { annotations: { [LB_ID_ANNOTATION]: bad } } } },
      MERGE_PATCH,
    );
    await new Promise((r) => setTimeout(r, 2000)); // the watch shows it

    await world.api.deleteNamespacedService({ name: 'web', namespace: NS });
    await untilServiceGone(world.api, NS, 'web', 20_000);
    expect(world.sim.loadBalancers.size).toBe(0);
    expect(world.sim.requestsTo('DELETE', `/v2/load_balancers/${lb?.id}`)).toHaveLength(1);
    const all = await serviceControllerEvents(world.api, NS, 'web');
    const said = all.filter(
      (e) =>
        e.type === 'Warning' && (e.message ?? '').includes('names no load balancer ccm could have created'),
    );
    expect(said.map((e) => e.message)).toEqual([
      expect.stringContaining(`Service annotation ${LB_ID_ANNOTATION}="${bad}" is not valid`),
    ]);
    expect(said[0]?.count ?? 1).toBe(1);
  }, 60_000);
});
