/**
 * `npm run quickstart:add -- node <name>` / `-- service <name>`: what a kubelet or `kubectl apply`
 * would add to the quick start's cluster (KUBECONFIG), for `ccm run` to act on. A Service is
 * waited for until it has an external address, at most a minute.
 */
import { createNodes, fixtureApi } from './fixtures.js';

const [what, name] = process.argv.slice(2);
const kubeconfig = process.env.KUBECONFIG;
if (!kubeconfig || !name || (what !== 'node' && what !== 'service')) {
  process.stderr.write(
    'usage: KUBECONFIG=<the quick start kubeconfig> npm run quickstart:add -- node|service <name>\n',
  );
  process.exit(2);
}
const api = fixtureApi(kubeconfig);
if (what === 'node') {
  await createNodes(api, [{ name }]);
  process.stdout.write(`Node ${name} added, tainted node.cloudprovider.kubernetes.io/uninitialized\n`);
} else {
  await api.createNamespacedService({
    namespace: 'default',
    body: {
      metadata: { name },
      spec: { type: 'LoadBalancer', selector: { app: name }, ports: [{ port: 80, targetPort: 8080 }] },
    },
  });
  process.stdout.write(`Service default/${name} (type LoadBalancer) added; waiting for its address\n`);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const svc = await api.readNamespacedService({ name, namespace: 'default' });
    const ingress = svc.status?.loadBalancer?.ingress?.[0];
    if (ingress) {
      process.stdout.write(`Service default/${name}: external address ${ingress.ip ?? ingress.hostname}\n`);
      break;
    }
    if (Date.now() > deadline) {
      process.stderr.write(`Service default/${name} has no address after a minute: is ccm run running?\n`);
      process.exit(1);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}
