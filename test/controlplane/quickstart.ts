/**
 * `npm run quickstart`: a local control plane with three tainted Nodes that match the sample
 * Cloudlycke inventory, for trying ccm with no cloud and no cluster. With `--cloud digitalocean`, the
 * DigitalOcean simulator of test/clouds runs too, with a droplet for each Node (and worker-3's), so
 * that `secret create`, `doctor` and a LoadBalancer Service can be tried against it.
 */
import { parseArgs } from 'node:util';
import { continued } from '../../src/secrets/report.js';
import { DigitalOceanSimulator } from '../clouds/digitalocean/server.js';
import { createNodes, fixtureApi } from './fixtures.js';
import { startControlPlane } from './harness.js';
import { QUICKSTART_NODES, QUICKSTART_PRIVATE_IPS } from './quickstart-nodes.js';

const { values } = parseArgs({ options: { cloud: { type: 'string', default: 'cloudlycke' } } });
if (values.cloud !== 'cloudlycke' && values.cloud !== 'digitalocean') {
  process.stderr.write(
    `quickstart: --cloud ${values.cloud} is not offered; use cloudlycke or digitalocean\n`,
  );
  process.exit(2);
}

const INVENTORY = 'templates/cloudlycke/inventory.example.yaml';
const cp = await startControlPlane();
await createNodes(fixtureApi(cp.kubeconfigPath), QUICKSTART_NODES);
const sim = values.cloud === 'digitalocean' ? await DigitalOceanSimulator.start() : undefined;
sim?.addDroplets(
  ...Object.entries(QUICKSTART_PRIVATE_IPS).map(([name, privateIP]) => ({ name, region: 'fra1', privateIP })),
);

/**
 * A command as the operator copies it: lines continued with a backslash, broken before a flag or a
 * pipe, so that a terminal of 80 columns never breaks a token, a URL or a path at its edge.
 */
const command = (line: string) =>
  continued(line)
    .map((part, i) => `${i === 0 ? '  ' : '      '}${part}`)
    .join('\n');

/** Prose broken at spaces into lines of at most 80 columns. */
function prose(text: string): string {
  const lines: string[] = [];
  for (const word of text.split(' ')) {
    const last = lines.length - 1;
    if (last >= 0 && `${lines[last]} ${word}`.length <= 80) lines[last] = `${lines[last]} ${word}`;
    else lines.push(word);
  }
  return lines.join('\n');
}

const cloudlycke = [
  command(`ccm nodes init --provider cloudlycke --cloud-config ${INVENTORY} --dry-run -o wide`),
  command(`ccm nodes init --provider cloudlycke --cloud-config ${INVENTORY}`),
  command(`ccm nodes init --provider cloudlycke --cloud-config ${INVENTORY} -o json`),
  command(`ccm nodes list --provider cloudlycke --cloud-config ${INVENTORY}`),
  '',
  'The controller, in the foreground (Ctrl-C stops it and releases everything):',
  '',
  command(
    `ccm run --provider cloudlycke --cloud-config ${INVENTORY} --leader-elect=false --plain-http --secure-port 10258`,
  ),
  '',
  'and, in one more terminal, a new tainted Node for it to initialise:',
  '',
  command('npm run quickstart:add -- node worker-3'),
].join('\n');

const digitalocean = [
  command(
    `printf '%s' '${sim?.token}' | ccm secret create --provider digitalocean --cloud-api-url ${sim?.url} --from-stdin`,
  ),
  command(`ccm doctor --provider digitalocean --cloud-api-url ${sim?.url}`),
  command(
    `ccm run --provider digitalocean --cloud-api-url ${sim?.url} --leader-elect=false --plain-http --secure-port 10258`,
  ),
  '',
  'and, in one more terminal, a tainted Node and a LoadBalancer Service for it:',
  '',
  command('npm run quickstart:add -- node worker-3'),
  command('npm run quickstart:add -- service web'),
].join('\n');

process.stdout.write(`
${prose(`A kube-apiserver ${cp.server} is running with 3 Nodes tainted node.cloudprovider.kubernetes.io/uninitialized.`)}${
  sim
    ? `\n${prose(`The DigitalOcean simulator answers at ${sim.url}, with a droplet for each Node and the token ${sim.token}.`)}`
    : ''
}
In another terminal:

${command(`export KUBECONFIG=${cp.kubeconfigPath}`)}
${command('export PATH="$PWD/bin:$PATH"')}

${sim ? digitalocean : cloudlycke}

${prose(`Press Ctrl-C to stop the control plane${sim ? ' and the simulator' : ''} (everything it started is removed).`)}
`);
const stop = async () => {
  await Promise.all([cp.stop(), sim?.stop()]);
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
setInterval(() => {}, 1 << 30);
