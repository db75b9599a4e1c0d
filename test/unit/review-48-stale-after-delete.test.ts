/**
 * Review 48: a Service must never act on a load balancer listing older than its own last write
 * (src/providers/digitalocean/load-balancers.ts `writtenAt`). `delete` ends with
 * `writtenAt.delete(req.name)`: the DELETE it just made is forgotten, so the next `ensure` of the same
 * Service (same UID, so same load balancer name: type LoadBalancer → ClusterIP → LoadBalancer, or a
 * delete retried after the finalizer patch failed) joins any listing under way, also one the cloud
 * answered before the DELETE landed, and takes the load balancer it just deleted as its own.
 *
 * The listing's answer reaches ccm late (network latency on the way back): the cloud composed it
 * before the DELETE, ccm reads it after. Nothing else is unusual.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { LOAD_BALANCER_ID } from '../../src/providers/digitalocean/annotations.js';
import { createDigitalOcean } from '../../src/providers/digitalocean/index.js';
import type { LoadBalancerRequest, LoadBalancers } from '../../src/providers/types.js';
import { requestService } from '../helpers/lb-request.js';
import { heldListings, untilSeen, useDigitalOceanSim } from './providers/digitalocean/helpers.js';

const CLUSTER = '6f1c2b9e-3d4a-4c5b-9e8f-0a1b2c3d4e5f';
const UID_A = '0b5f5a57-1b3c-4d2e-9f60-7c8d9e0f1a2b';
const NAME_A = 'a0b5f5a571b3c4d2e9f607c8d9e0f1a2';
const UID_B = '1b5f5a57-1b3c-4d2e-9f60-7c8d9e0f1a2b';
const NAME_B = 'a1b5f5a571b3c4d2e9f607c8d9e0f1a2';

const sim = useDigitalOceanSim();
let lbs: LoadBalancers;
let droplets: Record<string, unknown>[];
/** The listing's answers, held on their way back while a test says so. */
let held = heldListings();

beforeEach(() => {
  held = heldListings();
  droplets = sim.addDroplets(
    { name: 'w1', privateIP: '10.110.0.2' },
    { name: 'w2', privateIP: '10.110.0.3' },
  );
  const http = { backoff: { baseMs: 5 }, fetch: held.fetch };
  // No listing reused and none spaced: B's sync makes the listing that races A's DELETE.
  const provider = createDigitalOcean(
    {
      token: sim.token,
      baseUrl: sim.url,
      // The client's test seam takes a fetch (HttpClientOptions.fetch); `http` passes it on.
      http,
    },
    {},
    { recentListingMs: 0, listingGapMs: 0 },
  );
  if (!provider.loadBalancers) throw new Error('no load balancers');
  lbs = provider.loadBalancers;
});

function request(name: string, uid: string, annotations: Record<string, string> = {}): LoadBalancerRequest {
  return {
    name,
    clusterID: CLUSTER,
    ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 }],
    nodes: [0, 1].map((i) => ({
      name: `w${i + 1}`,
      providerID: `digitalocean://${droplets[i]?.id as number}`,
      addresses: [],
    })),
    service: requestService({ namespace: 'default', name: name === NAME_A ? 'a' : 'b', uid, annotations }),
  };
}

describe('review 48: a Service after its own delete', () => {
  it('never takes the load balancer it just deleted from a listing the cloud made before the DELETE', async () => {
    // Service A gets its load balancer (created, then active on the next read).
    await lbs.ensure(request(NAME_A, UID_A)).catch(() => undefined);
    const first = await lbs.ensure(request(NAME_A, UID_A));
    const lbId = first.annotations?.[LOAD_BALANCER_ID] as string;
    expect(sim.loadBalancers.has(lbId)).toBe(true);

    // A's type changes to ClusterIP: its load balancer is deleted. The DELETE is slow to land.
    sim.fault({ method: 'DELETE', path: /^\/v2\/load_balancers\/[^/]+$/, delayMs: 300 });
    const deleting = lbs.delete(request(NAME_A, UID_A, { [LOAD_BALANCER_ID]: lbId }));
    await untilSeen('the DELETE to arrive', () => sim.requestsTo('DELETE', /load_balancers/).length === 1);

    // Meanwhile Service B (never written anything) starts a listing: the cloud answers it at once
    // (A's load balancer still there), the answer is on its way back to ccm.
    held.hold();
    const listingsBefore = sim.requestsTo('GET', '/v2/load_balancers').length;
    const b = lbs.get(request(NAME_B, UID_B));
    await untilSeen(
      'B’s listing to arrive',
      () => sim.requestsTo('GET', '/v2/load_balancers').length > listingsBefore,
    );

    await deleting;
    expect(sim.loadBalancers.has(lbId)).toBe(false);

    // A is a LoadBalancer Service again (same UID): ensure after its own DELETE was answered.
    const again = lbs.ensure(request(NAME_A, UID_A)).then(
      (status) => ({ status }),
      (error: Error) => ({ error }),
    );
    await new Promise((r) => setTimeout(r, 50));
    held.release();
    await b;
    const outcome = await again;

    // What must happen: the deleted load balancer is gone, so A gets a new one (a create, then
    // "still being set up"). What happens: A is given the deleted load balancer's id and address.
    const named = 'status' in outcome ? outcome.status.annotations?.[LOAD_BALANCER_ID] : undefined;
    expect(named, 'ensure answered with the load balancer it had just deleted').not.toBe(lbId);
    expect(sim.requestsTo('POST', '/v2/load_balancers')).toHaveLength(2);
  });
});
