/**
 * `npm run quickstart`: a local control plane with three tainted Nodes that match the sample
 * Cloudlycke inventory, for trying `ccm nodes init` with no cloud and no cluster.
 */
import { createNodes, fixtureApi } from './fixtures.js';
import { startControlPlane } from './harness.js';
import { QUICKSTART_NODES } from './quickstart-nodes.js';

const cp = await startControlPlane();
await createNodes(fixtureApi(cp.kubeconfigPath), QUICKSTART_NODES);
process.stdout.write(`
A kube-apiserver ${cp.server} is running with 3 Nodes tainted node.cloudprovider.kubernetes.io/uninitialized.
In another terminal:

  export KUBECONFIG=${cp.kubeconfigPath}
  ./bin/run.js nodes init --provider cloudlycke --cloud-config templates/cloudlycke/inventory.example.yaml --dry-run -o wide
  ./bin/run.js nodes init --provider cloudlycke --cloud-config templates/cloudlycke/inventory.example.yaml
  ./bin/run.js nodes list --provider cloudlycke --cloud-config templates/cloudlycke/inventory.example.yaml

Press Ctrl-C to stop the control plane (everything it started is removed).
`);
const stop = async () => {
  await cp.stop();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
setInterval(() => {}, 1 << 30);
