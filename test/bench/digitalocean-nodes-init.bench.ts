/**
 * Benchmark: `ccm nodes init --provider digitalocean` over N tainted Nodes (registered by kubelets
 * with --cloud-provider=external and no provider ID, so matched by droplet name) against the real
 * kube-apiserver and the DigitalOcean simulator. Not a test: it prints a table for the README.
 *
 *   bash .ci/node tsx test/bench/digitalocean-nodes-init.bench.ts          # 5,000 droplets
 *   bash .ci/node tsx test/bench/digitalocean-nodes-init.bench.ts 1000     # other sizes
 * It fails when a pass sends anything but the droplet listing (N / 200 pages), or when a request or
 * answer is off DigitalOcean's OpenAPI document (when it is found: test/clouds/digitalocean/openapi.ts).
 */
import { specViolations } from '../clouds/digitalocean/openapi.js';
import { benchmarkNodesInit } from './cloud-nodes-init.js';

await benchmarkNodesInit('digitalocean', {
  what: 'Droplets = Nodes',
  columns: ['of which the simulator', 'DigitalOcean requests (listing + other)'],
  beforePass({ sim }) {
    sim.requests.length = 0;
  },
  cells({ sim }, { nodes }) {
    const listing = sim.requestsTo('GET', '/v2/droplets').length;
    const other = sim.requests.length - listing;
    const simulatorMs = sim.requests.reduce((sum, r) => sum + ((r.answeredAt ?? r.at) - r.at), 0);
    const violations = [...sim.takeViolations(), ...specViolations.splice(0)];
    if (violations.length > 0) throw new Error(`violations:\n${violations.join('\n')}`);
    if (listing !== Math.ceil(nodes / 200) || other !== 0) {
      throw new Error(
        `expected ${Math.ceil(nodes / 200)} listing requests and nothing else, got ${listing} + ${other}`,
      );
    }
    return [`${(simulatorMs / 1000).toFixed(1)} s`, `${listing} + ${other}`];
  },
});
