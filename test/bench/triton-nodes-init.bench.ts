/**
 * Benchmark: `ccm nodes init --provider triton` over N tainted Nodes and N machines of the CloudAPI
 * simulator (every request's signature verified), as the built CLI runs it. Not a test: it prints
 * a table for the README.
 *
 *   npm run build && bash .ci/node tsx test/bench/triton-nodes-init.bench.ts [sizes…]   # default 5000
 *
 * Cloud requests are counted by the simulator (ListMachines pages, ListDatacenters); Kubernetes
 * writes by the API server's audit log; max RSS is the CLI's own peak.
 */
import { benchmarkNodesInit } from './cloud-nodes-init.js';

await benchmarkNodesInit('triton', {
  what: 'Nodes = machines',
  world: { key: { type: 'rsa', bits: 2048 } },
  columns: ['CloudAPI requests'],
  beforePass({ sim }) {
    sim.requests.length = 0;
  },
  cells({ sim }) {
    const byPath = new Map<string, number>();
    for (const r of sim.requests) byPath.set(r.path, (byPath.get(r.path) ?? 0) + 1);
    return [
      [...byPath]
        .map(([path, count]) => `${count} × ${path.replace(`/${sim.account.login}`, '/:login')}`)
        .join(', '),
    ];
  },
});
