/**
 * A mixed `nodes init` pass, made by the real planners (no cluster, no cloud): one Node of each
 * result, named so that text order and natural order differ (node-10 after node-3).
 */
import {
  buildReport,
  type ClusterState,
  confirmDeletions,
  planPass,
} from '../../../src/controllers/nodes-pass.js';
import { NotFoundError } from '../../../src/providers/errors.js';
import { InstanceIndex } from '../../../src/providers/instance-index.js';
import {
  GRACE_MS,
  makeInstance,
  makeNode,
  makeProvider,
  NOW,
  providedIP,
  uninitializedTaint,
} from '../controllers/fixtures.js';

const synced = (name: string, extra: Record<string, string> = {}) => ({
  'node.kubernetes.io/instance-type': 'vbox.vm.1g.2cpu',
  'beta.kubernetes.io/instance-type': 'vbox.vm.1g.2cpu',
  'topology.kubernetes.io/zone': 'virtualbox-a',
  'failure-domain.beta.kubernetes.io/zone': 'virtualbox-a',
  'topology.kubernetes.io/region': 'virtualbox',
  'failure-domain.beta.kubernetes.io/region': 'virtualbox',
  'kubernetes.io/hostname': name,
  ...extra,
});

function instance(name: string, ip: string) {
  return makeInstance({
    providerID: `cloudlycke://${name}`,
    name,
    type: 'vbox.vm.1g.2cpu',
    region: 'virtualbox',
    zone: 'virtualbox-a',
    addresses: [{ type: 'InternalIP', address: ip }],
  });
}

export async function mixedPass(dryRun = false) {
  const instances = [
    instance('node-1', '10.0.0.1'),
    instance('node-2', '10.0.0.2'),
    instance('node-3', '10.0.0.3'),
    instance('node-4', '10.0.0.4'),
  ];
  const nodes = [
    // initialised: tainted, its instance is listed under its name
    makeNode({ name: 'node-1', taints: [uninitializedTaint], ready: true }),
    // updated: initialised, but its address moved
    makeNode({
      name: 'node-2',
      providerID: 'cloudlycke://node-2',
      labels: synced('node-2'),
      addresses: [{ type: 'InternalIP', address: '10.9.9.2' }],
      ready: true,
    }),
    // unchanged
    makeNode({
      name: 'node-3',
      providerID: 'cloudlycke://node-3',
      labels: synced('node-3'),
      addresses: [{ type: 'InternalIP', address: '10.0.0.3' }],
      ready: true,
    }),
    // failed: the kubelet's --node-ip is not one of the instance's addresses
    makeNode({
      name: 'node-4',
      taints: [uninitializedTaint],
      annotations: providedIP('192.168.77.4'),
      ready: true,
    }),
    // deleted: NotReady, not listed, and the cloud answers "not found" for its provider ID
    makeNode({
      name: 'node-10',
      providerID: 'cloudlycke://node-10',
      labels: synced('node-10'),
      ready: false,
    }),
    // unchanged, with a note: not listed, but inside its deletion grace period
    makeNode({
      name: 'node-11',
      providerID: 'cloudlycke://node-11',
      labels: synced('node-11'),
      ready: false,
      created: new Date(NOW.getTime() - 60_000),
    }),
    // failed: tainted, and no instance has its name
    makeNode({ name: 'node-20', taints: [uninitializedTaint], ready: true }),
    // skipped: bare metal
    makeNode({ name: 'metal-1', providerID: 'baremetal://rack-4/slot-2', ready: true }),
  ];
  const provider = makeProvider(instances, async (id) => {
    throw new NotFoundError(`instance ${id} not found`);
  });
  const index = new InstanceIndex(instances);
  const state: ClusterState = { nodes, index, listingKnowsCluster: true };
  const options = { dryRun, concurrency: 4, deletionGracePeriodMs: GRACE_MS, now: () => NOW };
  const plans = planPass(state, provider, options);
  await confirmDeletions(plans, provider, options.concurrency);
  return {
    report: buildReport(provider, plans, state, dryRun),
    kubeWrites: dryRun ? 0 : 9,
    cloudCalls: 2,
    durationMs: 1234,
    maxRssBytes: 150_000_000,
    credentials: 'flags and environment',
  };
}
