/**
 * `ccm manifests --controllers route`: the RBAC it prints is what the route controller alone needs.
 * The built `ccm run` of the DaemonSet, started with a TokenRequest token of the manifests'
 * ServiceAccount against the OpenStack simulator, creates a route, sets NetworkUnavailable, records
 * a FailedToCreateRoute event and answers a metrics scraper with zero 403s; with any one rule removed,
 * the same run meets a 403 (as test/integration/manifests.test.ts proves for every controller).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { renderManifests } from '../../src/cli/manifests.js';
import { loadProvider } from '../../src/providers/registry.js';
import type { SimPort, SimRouter } from '../clouds/openstack/neutron-routes.js';
import { nodeObject } from '../controlplane/fixtures.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { until } from '../helpers/run.js';
import { type ManifestDoc, ServiceAccountRun } from '../helpers/service-account-run.js';

const NS = 'kube-system';
const LEASE = 'ccm-route-rbac';

// One cluster and one router for both tests: the scenario resets the Nodes and the routes itself.
const world = useCloudWorld('openstack', { keep: true });
let router: SimRouter;
let port: SimPort;
let run: ServiceAccountRun;
let docs: ManifestDoc[] = [];

beforeAll(async () => {
  run = new ServiceAccountRun(world.cp, NS);
  router = world.sim.routing.addRouter({ subnets: ['10.0.0.0/24'], ips: ['10.0.0.1'] });
  port = world.sim.routing.addPort({ ip: '10.0.0.11' });
  // The server of that port, named as its Node: ccm routes only to the server of the Node's name.
  world.sim.addServer({ id: port.device_id, name: 'w11' });

  docs = renderManifests(await loadProvider('openstack'), {
    image: 'registry.example.com/ccm:test',
    namespace: NS,
    controllers: 'route',
    clusterCIDR: '10.244.0.0/16',
    cronjob: false,
    leaseName: LEASE,
  }) as unknown as ManifestDoc[];
  const conf = `[Global]\nauth-url=${world.sim.authUrl}\nusername=admin\npassword=passw0rd\nregion=RegionOne\n[Route]\nrouter-id=${router.id}\n`;
  await run.install(docs, world.dir, ['--route-reconciliation-period=300ms']);
  await run.core.createNamespacedSecret({
    namespace: NS,
    body: { metadata: { name: 'cloud-config' }, stringData: { 'cloud.conf': conf } },
  });
  expect(run.args).toContain('--cluster-cidr=10.244.0.0/16');
});
afterAll(async () => {
  await run?.stop();
});
afterEach(async (ctx) => {
  run.printIfFailed(ctx);
  await run.stop();
});

/** w11 (its port exists: a route) and w12 (no port: a FailedToCreateRoute event), then ccm run. */
async function scenario() {
  await run.core.deleteCollectionNode({});
  router.routes = [];
  for (const n of [11, 12]) {
    const node = nodeObject({
      name: `w${n}`,
      tainted: false,
      addresses: [{ type: 'InternalIP', address: `10.0.0.${n}` }],
      podCIDR: `10.244.${n}.0/24`,
      // w11 on the server of its port; w12's server has no port.
      providerID: `openstack:///${n === 11 ? port.device_id : 'a1b2c3d4-0000-4000-8000-000000000012'}`,
    });
    await run.core.createNode({ body: node });
  }
  await run.leases.deleteNamespacedLease({ name: LEASE, namespace: NS }).catch(() => undefined);
  return run.start();
}

describe('ccm run --controllers route with the RBAC of its manifests', () => {
  it('creates the route, sets the condition, records the failure event, is scraped: zero 403s', async () => {
    const seen = await scenario();
    await until(
      'w11 RouteCreated',
      async () =>
        (await run.core.readNode({ name: 'w11' })).status?.conditions?.some(
          (c) => c.reason === 'RouteCreated',
        ),
      30_000,
    );
    await until(
      'a FailedToCreateRoute event and a TokenReview',
      async () => {
        const requests = await seen();
        return (
          requests.some((e) => e.verb === 'create' && e.objectRef?.resource === 'events') &&
          requests.some((e) => e.objectRef?.resource === 'tokenreviews')
        );
      },
      30_000,
    );
    expect(router.routes).toEqual([{ destination: '10.244.11.0/24', nexthop: '10.0.0.11' }]);
    const requests = await seen();
    run.expectAllowed(requests, [
      'patch nodes/status',
      'get namespaces',
      'create events',
      'create tokenreviews',
      'create subjectaccessreviews',
      'get secrets',
    ]);
  }, 90_000);

  it('needs every rule: with any one removed, the same run meets a 403', async () => {
    const checked = await run.expectEveryRuleNeeded(docs, scenario);
    // nodes, nodes/status, namespaces, events, tokenreviews, subjectaccessreviews, the Lease, the Secret
    expect(checked).toBeGreaterThanOrEqual(8);
  }, 600_000);
});
