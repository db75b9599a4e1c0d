/**
 * Benchmark: `ccm nodes init --provider brightbox` over N tainted Nodes against the real
 * kube-apiserver, with the Brightbox API simulator holding N servers. Prints a table for the README.
 *
 *   bash .ci/node tsx test/bench/brightbox-nodes-init.bench.ts          # 5,000 Nodes
 *   bash .ci/node tsx test/bench/brightbox-nodes-init.bench.ts 1000     # other sizes
 * Cloud requests are counted by the simulator (token + listing); memory is the CLI's own peak RSS.
 */
import { SIM_CLIENT } from '../clouds/brightbox/simulator.js';
import { benchmarkNodesInit } from './cloud-nodes-init.js';

let listingBytes = 0;
let seen = 0;
await benchmarkNodesInit('brightbox', {
  what: 'Servers / Nodes',
  columns: ['cloud requests', 'listing size'],
  async prepare({ sim }) {
    const token = await fetch(`${sim.url}/token/`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${SIM_CLIENT.id}:${SIM_CLIENT.secret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials',
    }).then((r) => r.json() as Promise<{ access_token: string }>);
    const listing = await fetch(`${sim.url}/1.0/servers`, {
      headers: { authorization: `Bearer ${token.access_token}` },
    }).then((r) => r.text());
    listingBytes = Buffer.byteLength(listing);
  },
  beforePass({ sim }) {
    seen = sim.requests.length;
  },
  cells: ({ sim }) => [
    sim.requests
      .slice(seen)
      .map((r) => `${r.method} ${r.path}`)
      .join(', '),
    `${(listingBytes / 1e6).toFixed(1)} MB`,
  ],
});
