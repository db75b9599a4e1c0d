/**
 * Review 48: the record of each Service's last write (src/providers/digitalocean/load-balancers.ts
 * `writtenAt`) and the shared listing live in the provider object; a credentials or cloud-config
 * reload builds a new provider (src/cli/run/provider.ts build) while the old one's writes may still be
 * on their way (src/controllers/cloud-budget.ts budgetedProvider picks `holder.current` per call). The
 * new provider knows no write of any Service, so the next sync of a Service joins any listing under
 * way, also one the cloud composed before the old provider's last write landed, and acts on it:
 * here a droplet removed by the old provider is never added back.
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
let droplets: Record<string, unknown>[];
/** The listing's answers, held on their way back while a test says so. */
let held = heldListings();

/** What `ccm run` keeps across reloads: each test's run starts with none. */
let runMemory = new Map<string, number>();

/** A provider whose listing answers are held on their way back while the test says so. */
function provider(): LoadBalancers {
  const http = { backoff: { baseMs: 5 }, fetch: held.fetch };
  // As `ccm run` builds each: the run's memory of writes shared (ProviderDeps.memory); no listing
  // reused or spaced, so that the new provider makes the listing that races the old one's write.
  const p = createDigitalOcean(
    {
      token: sim.token,
      baseUrl: sim.url,
      // The client's test seam takes a fetch (HttpClientOptions.fetch); `http` passes it on.
      http,
    },
    {},
    { recentListingMs: 0, listingGapMs: 0, writes: runMemory },
  );
  if (!p.loadBalancers) throw new Error('no load balancers');
  return p.loadBalancers;
}

beforeEach(() => {
  runMemory = new Map();
  held = heldListings();
  droplets = sim.addDroplets(
    { name: 'w1', privateIP: '10.110.0.2' },
    { name: 'w2', privateIP: '10.110.0.3' },
    { name: 'w3', privateIP: '10.110.0.4' },
  );
});

const id = (i: number) => droplets[i]?.id as number;

function request(name: string, uid: string, nodes: number[], annotations: Record<string, string> = {}) {
  const req: LoadBalancerRequest = {
    name,
    clusterID: CLUSTER,
    ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 }],
    nodes: nodes.map((i) => ({ name: `w${i + 1}`, providerID: `digitalocean://${id(i)}`, addresses: [] })),
    service: requestService({ namespace: 'default', name: name === NAME_A ? 'a' : 'b', uid, annotations }),
  };
  return req;
}

describe('review 48: a reload between a write and the next sync', () => {
  it('the new provider never acts on a listing the cloud made before the old provider’s last write', async () => {
    const old = provider();
    await old.ensure(request(NAME_A, UID_A, [0, 1, 2])).catch(() => undefined);
    const status = await old.ensure(request(NAME_A, UID_A, [0, 1, 2]));
    const lbId = status.annotations?.[LOAD_BALANCER_ID] as string;
    const ann = { [LOAD_BALANCER_ID]: lbId };
    await new Promise((r) => setTimeout(r, 300)); // the load balancer's busy time after its create

    // Node w3 leaves: the old provider removes its droplet; the DELETE is slow to land.
    sim.fault({ method: 'DELETE', path: /droplets$/, delayMs: 300 });
    const removing = old.updateNodes(request(NAME_A, UID_A, [0, 1], ann));
    await untilSeen('the DELETE to arrive', () => sim.requestsTo('DELETE', /droplets$/).length === 1);

    // The Secret changed: a new provider. Service B's sync lists at once (A still has w3's droplet
    // there), the answer on its way back.
    const reloaded = provider();
    held.hold();
    const before = sim.requestsTo('GET', '/v2/load_balancers').length;
    const b = reloaded.get(request(NAME_B, UID_B, [0, 1, 2]));
    await untilSeen(
      'B’s listing to arrive',
      () => sim.requestsTo('GET', '/v2/load_balancers').length > before,
    );
    await removing;
    expect(sim.loadBalancers.get(lbId)?.droplet_ids).toEqual([id(0), id(1)]);

    // w3 is back (Ready again): A's Nodes changed again, synced by the new provider.
    const adding = reloaded.updateNodes(request(NAME_A, UID_A, [0, 1, 2], ann));
    await new Promise((r) => setTimeout(r, 50));
    held.release();
    await b;
    await adding;
    expect(sim.loadBalancers.get(lbId)?.droplet_ids, 'w3 is a backend again').toEqual([id(0), id(1), id(2)]);
  });
});
