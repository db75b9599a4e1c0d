/**
 * What `ccm migrate` shows on a terminal before it asks "…? (y/N)": the load balancers it hands over
 * or gives back, by the names a tenant chose (service.beta.kubernetes.io/do-loadbalancer-name). A
 * name with escape sequences must not set the terminal's title, clear the screen or forge a line
 * above the question. Read in a real terminal (tmux), byte by byte as the CLI wrote them.
 *
 * Real CLI, real kube-apiserver, the DigitalOcean simulator as the cloud.
 */
import { AppsV1Api } from '@kubernetes/client-node';
import { beforeAll, expect, it } from 'vitest';
import { createNodes, fixtureClient } from '../controlplane/fixtures.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import {
  officialDigitalOceanDeployment,
  officialDigitalOceanLoadBalancer,
  recordServedByOfficial,
} from '../helpers/official-controllers.js';
import { lbService } from '../helpers/services.js';
import { hostileBytes, Terminal } from '../helpers/terminal.js';

/** The reviewer's name: the title set, the screen cleared, the cursor one line up, a line of its own. */
const HOSTILE = '\u001b]0;PWNED\u0007\u001b[2J\u001b[1A\u009b2J\u2028FORGED-LS\nFORGED-LB';
const NAME_ANN = 'service.beta.kubernetes.io/do-loadbalancer-name';
const LB_ID = 'kubernetes.digitalocean.com/load-balancer-id';

const world = useCloudWorld('digitalocean', { keep: true });

beforeAll(async () => {
  const { api, sim } = world;
  const apps = fixtureClient(world.cp.kubeconfigPath, AppsV1Api);
  await apps.createNamespacedDeployment({
    namespace: 'kube-system',
    body: officialDigitalOceanDeployment(0),
  });
  const [worker] = sim.addDroplets({ name: 'worker-1', region: 'fra1', privateIP: '10.114.0.2' });
  await createNodes(api, [{ name: 'worker-1', providerID: `digitalocean://${worker?.id}`, tainted: false }]);
  const created = await api.createNamespacedService({
    namespace: 'default',
    body: lbService('evil', 'default', { [NAME_ANN]: `lb${HOSTILE}` }),
  });
  const nodePort = created.spec?.ports?.[0]?.nodePort as number;
  const lb = sim.addLoadBalancer(officialDigitalOceanLoadBalancer(`lb${HOSTILE}`, [worker?.id], nodePort));
  await recordServedByOfficial(api, 'evil', {
    annotations: { [LB_ID]: lb.id as string },
    ingress: { ip: lb.ip as string },
  });
});

/** `ccm migrate …` in a terminal up to its question, answered No; the raw bytes and the screen. */
async function untilAsked(args: string[], question: string) {
  const terminal = await Terminal.open(world.args(['migrate', ...args]), {
    width: 160,
    height: 40,
    env: world.env(),
    raw: true,
  });
  try {
    await terminal.waitFor(question);
    const seen = {
      raw: terminal.raw(),
      title: await terminal.title(),
      screen: await terminal.screen({ joined: true }),
    };
    await terminal.type('n', 'Enter');
    expect(await terminal.exit()).toBe(0);
    return seen;
  } finally {
    await terminal.close();
  }
}

it('ccm migrate on a terminal: the hand-over list shows the tenant-named load balancer without its escapes', async () => {
  const { raw, title, screen } = await untilAsked([], 'Hand these load balancers to ccm?');
  expect(hostileBytes(raw, title)).toEqual([]);
  expect(screen).toMatch(/default\/evil → lb/);
  expect(screen).not.toMatch(/^FORGED/m);
});

it('ccm migrate --rollback on a terminal: the give-back list shows the tenant-named load balancer without its escapes', async () => {
  const applied = await world.ccm(['migrate', '--yes']);
  expect(applied.exitCode, applied.stderr).toBe(0);
  const { raw, title, screen } = await untilAsked(
    ['--rollback'],
    'Give these back to the official controller?',
  );
  expect(hostileBytes(raw, title)).toEqual([]);
  expect(screen).toMatch(/default\/evil ← lb/);
  expect(screen).not.toMatch(/^FORGED/m);
});
