/**
 * Nothing the terminal has to wrap: in a 120×40 terminal (the size of the new-operator trial), every
 * line a command prints fits, so a summary, a note or a reason is broken at a word by ccm, never at a
 * column by the terminal. tmux tells the two apart: `capture-pane -J` joins the lines the terminal
 * wrapped and leaves the lines ccm ended alone.
 *
 * Real CLI, real kube-apiserver, the DigitalOcean simulator as the cloud, with Nodes whose reasons
 * are long: one without a droplet, one whose droplet is gone, one whose kubelet --node-ip is wrong.
 */
import { beforeAll, expect, it } from 'vitest';
import { createNodes } from '../controlplane/fixtures.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { Terminal } from '../helpers/terminal.js';

const WIDTH = 120;
const world = useCloudWorld('digitalocean', { keep: true });

beforeAll(async () => {
  const droplets = world.sim.addDroplets(
    ...Array.from({ length: 6 }, (_, i) => ({
      name: `worker-with-a-long-name-${i + 1}.example.internal`,
      region: 'fra1',
      privateIP: `10.114.0.${i + 2}`,
    })),
    { name: 'ip-mismatch', region: 'fra1', privateIP: '10.114.0.20' },
  );
  await createNodes(world.api, [
    ...droplets.slice(0, 6).map((d) => ({ name: d.name as string })),
    { name: 'a-node-no-droplet-carries-with-a-long-name.example.internal' },
    { name: 'ip-mismatch', providedNodeIP: '10.9.9.9' },
    { name: 'gone-1', providerID: 'digitalocean://987654', tainted: false },
  ]);
});

/** The command in a 120×40 terminal to its end: its exit status, the lines it printed, the lines tmux wrapped. */
async function onScreen(args: string[]) {
  const terminal = await Terminal.open(world.args(args), { width: WIDTH, height: 40, env: world.env() });
  try {
    const code = await terminal.exit();
    const shown = (await terminal.screen()).split('\n');
    const joined = (await terminal.screen({ joined: true })).split('\n');
    return { code, joined, wrapped: joined.filter((line) => line.length > WIDTH), shown };
  } finally {
    await terminal.close();
  }
}

it.each([
  [['nodes', 'list']],
  [['nodes', 'list', '-o', 'wide', '--show-orphans']],
  [['nodes', 'init', '--dry-run']],
  [['nodes', 'init', '--dry-run', '-o', 'wide']],
  [['doctor']],
  [['migrate']],
])('ccm %j: every line fits 120 columns', async (args) => {
  const run = await onScreen(args);
  expect(run.joined.length, run.joined.join('\n')).toBeGreaterThan(1);
  expect(run.wrapped, run.joined.join('\n')).toEqual([]);
  expect(run.shown.length).toBe(run.joined.length);
});

it('-o wide on a terminal too narrow for every column: the row keeps its name and status, the rest is under it, nothing cut', async () => {
  const run = await onScreen(['nodes', 'list', '-o', 'wide']);
  const at = run.joined.findIndex((l) => l.startsWith('gone-1 '));
  expect(run.joined[at]).toMatch(/^gone-1 +<none> +ok$/);
  expect(run.joined[at + 1]).toBe(
    '    provider id: digitalocean://987654, state: -, type: -, zone: -, initialised: yes, tainted for: -',
  );
  expect(run.wrapped).toEqual([]);
});
