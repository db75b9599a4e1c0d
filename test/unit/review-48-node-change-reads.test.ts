/**
 * Review 48: "Services whose Nodes changed read their load balancers from ONE shared listing instead
 * of one read each". Only while the account holds fewer than 200 load balancers (one page):
 * src/providers/digitalocean/load-balancers.ts `fromListing` takes the listing only when one is
 * already queued or under way, or the last one fit in a page; Services whose Nodes changed never
 * start one, so when all of them change at once (a Node joins: every Service is queued 'nodes') each
 * reads its load balancer by id: N reads instead of ⌈total/200⌉ pages. With 300 Services (300 load
 * balancers, two pages) a Node joining costs 300 reads + 300 changes, twice the floor.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { LOAD_BALANCER_ID } from '../../src/providers/digitalocean/annotations.js';
import type { LoadBalancerRequest, LoadBalancers } from '../../src/providers/types.js';
import { requestService } from '../helpers/lb-request.js';
import { quickProvider, useDigitalOceanSim } from './providers/digitalocean/helpers.js';

const CLUSTER = '6f1c2b9e-3d4a-4c5b-9e8f-0a1b2c3d4e5f';
const SERVICES = 12;

const sim = useDigitalOceanSim();
let lbs: LoadBalancers;
let droplets: Record<string, unknown>[];

beforeEach(() => {
  droplets = sim.addDroplets(
    { name: 'w1', privateIP: '10.110.0.2' },
    { name: 'w2', privateIP: '10.110.0.3' },
    { name: 'w3', privateIP: '10.110.0.4' },
  );
  const provider = quickProvider(sim);
  if (!provider.loadBalancers) throw new Error('no load balancers');
  lbs = provider.loadBalancers;
});

const nodes = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    name: `w${i + 1}`,
    providerID: `digitalocean://${droplets[i]?.id as number}`,
    addresses: [],
  }));

function request(
  i: number,
  nodeCount: number,
  annotations: Record<string, string> = {},
): LoadBalancerRequest {
  const uid = `0b5f5a57-1b3c-4d2e-9f60-7c8d9e0f1a${String(i).padStart(2, '0')}`;
  const name = `a0b5f5a571b3c4d2e9f607c8d9e0f1${String(i).padStart(2, '0')}`;
  return {
    name,
    clusterID: CLUSTER,
    ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 }],
    nodes: nodes(nodeCount),
    service: requestService({ namespace: 'default', name: `s${i}`, uid, annotations }),
  };
}

describe('review 48: Services whose Nodes changed, in an account of more than one page', () => {
  it('read their load balancers from one shared listing, not one read each', async () => {
    const ids: string[] = [];
    for (let i = 0; i < SERVICES; i++) {
      await lbs.ensure(request(i, 2)).catch(() => undefined);
      const status = await lbs.ensure(request(i, 2));
      ids.push(status.annotations?.[LOAD_BALANCER_ID] as string);
    }
    // Other clusters' load balancers in the same account: the listing is two pages now.
    for (let i = 0; i < 200; i++) sim.addLoadBalancer({ name: `other-${i}`, tags: ['k8s:another-cluster'] });
    // One Service's Nodes changed alone (it learns the account is more than a page).
    await lbs.updateNodes(request(0, 2, { [LOAD_BALANCER_ID]: ids[0] as string }));
    await new Promise((r) => setTimeout(r, 400)); // each load balancer's busy time after its create
    sim.requests.length = 0;

    // A Node joins: every Service's Nodes changed at once.
    await Promise.all(ids.map((id, i) => lbs.updateNodes(request(i, 3, { [LOAD_BALANCER_ID]: id }))));
    const byId = sim.requestsTo('GET', /^\/v2\/load_balancers\/[^/]+$/).length;
    const pages = sim.requestsTo('GET', '/v2/load_balancers').length;
    console.log(`${SERVICES} Services whose Nodes changed: ${byId} reads by id, ${pages} listing pages`);
    // One listing (two pages) for all of them, as with fewer than 200 load balancers; only the first
    // of the burst, which cannot know that others follow, reads its own by id.
    expect(byId).toBeLessThanOrEqual(1);
    expect(pages).toBeLessThanOrEqual(2);
  });
});
