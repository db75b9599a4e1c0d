/**
 * Benchmark: `ccm nodes init --provider openstack` over N tainted Nodes and N Nova servers of the
 * OpenStack simulator, against the real kube-apiserver, as the built CLI runs it. It prints the
 * requests the pass sent to the cloud (Keystone tokens, Nova pages) and the CLI's peak RSS.
 *
 *   npm run build && bash .ci/node tsx test/bench/openstack-nodes-init.bench.ts          # 5,000
 *   npm run build && bash .ci/node tsx test/bench/openstack-nodes-init.bench.ts 1000 5000
 */
import { benchmarkNodesInit } from './cloud-nodes-init.js';

let seen = 0;
await benchmarkNodesInit('openstack', {
  what: 'Servers = Nodes',
  columns: ['cloud requests'],
  beforePass({ sim }) {
    seen = sim.requests.length;
  },
  cells({ sim }) {
    const requests = sim.requests.slice(seen);
    const tokens = requests.filter((r) => r.path.includes('/auth/tokens')).length;
    const pages = requests.filter((r) => r.path.includes('/servers/detail')).length;
    return [`${tokens} token + ${pages} pages = ${requests.length}`];
  },
});
