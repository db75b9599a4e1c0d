/**
 * The Services informer's relist (after a watch answered 410) gets a 200 JSON answer that is not a
 * list (here the fault proxy's own Status body with code 200, as a misbehaving proxy or aggregation
 * layer might answer). Read as an empty last page, it made the relist "succeed" with no Services: the
 * handlers were told every Service was deleted, and the service controller deleted the cloud load
 * balancer of a live Service. The relist must fail instead and change nothing (client-go rest.Result
 * treats a decoded Status that is not Success as an error).
 */
import { expect, it } from 'vitest';
import { createNodes } from '../controlplane/fixtures.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { faultProxy } from '../helpers/kube-fault-proxy.js';
import { type InProcess, until, untilInitialised } from '../helpers/run.js';
import { lbService, untilIngress } from '../helpers/services.js';

const world = useCloudWorld('digitalocean', { services: true });
let ccm: InProcess | undefined;
const NS = 'default';

it("a relist answered 200 with a JSON body that is not a list does not delete a live Service's load balancer", async () => {
  world.sim.addDroplets({ name: 'w1', size: 's-2vcpu-4gb', region: 'fra1', privateIP: '10.114.0.2' });
  let armed = false;
  let badListsSent = 0;
  const proxy = await faultProxy(world.cp, (req) => {
    if (!armed || req.method !== 'GET') return undefined;
    const [path, q = ''] = (req.url ?? '').split('?');
    if (path !== '/api/v1/services') return undefined;
    if (q.includes('watch=')) {
      return 410; // the watch's resourceVersion is gone: relist
    }
    badListsSent++;
    return 200; // {"kind":"Status",...,"code":200,"message":"injected"}: not a list
  });
  try {
    ccm = await world.run({ kubeconfig: proxy.kubeconfigPath });
    await createNodes(world.api, [{ name: 'w1' }]);
    await untilInitialised(world.api, 'w1');
    await world.api.createNamespacedService({ namespace: NS, body: lbService('web') });
    await untilIngress(world.api, NS, 'web', 30_000);
    expect(world.sim.loadBalancers.size).toBe(1);
    const [before] = [...world.sim.loadBalancers.values()];

    armed = true;
    // The open watch must end for a new one to be asked for: the API server restarts (same etcd data).
    await world.cp.pause();
    await world.cp.resume();
    await until('a bad relist answered', async () => badListsSent >= 1, 45_000);
    armed = false;
    await new Promise((r) => setTimeout(r, 5000));
    const [after] = [...world.sim.loadBalancers.values()];
    // The Service still exists ...
    expect((await world.api.readNamespacedService({ name: 'web', namespace: NS })).metadata?.name).toBe(
      'web',
    );
    // ... and so must its load balancer: the same one (same id and IP), never deleted.
    expect(world.sim.requestsTo('DELETE', `/v2/load_balancers/${before?.id}`)).toHaveLength(0);
    expect(after?.id).toBe(before?.id);
    expect(after?.ip).toBe(before?.ip);
  } finally {
    await ccm?.stop();
    ccm = undefined;
    await proxy.close();
  }
}, 120_000);
