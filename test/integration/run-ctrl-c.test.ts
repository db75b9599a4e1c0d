/**
 * Ctrl-C on `ccm run` in a real terminal, under the machine's own Node (20 on these machines, so
 * bin/run.js re-runs itself under Node 24 and the terminal's SIGINT reaches both processes): a clean
 * stop, exit 0, and the leader Lease released so that the next start does not wait it out.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoordinationV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { writeInventory } from '../helpers/inventory.js';
import { until } from '../helpers/run.js';
import { Terminal } from '../helpers/terminal.js';
import { tempDir } from '../helpers/tmp.js';

let cp: ControlPlane;
let leases: CoordinationV1Api;
let inventory: string;

/** The first `node` on PATH that is not the Node 24 the tests run under (.ci/node puts it first). */
function machineNode(): string {
  const dirs = (process.env.PATH ?? '').split(delimiter).filter((d) => !d.includes('ccm-tools'));
  for (const dir of dirs) if (existsSync(join(dir, 'node'))) return join(dir, 'node');
  return process.execPath;
}

beforeAll(async () => {
  cp = await startControlPlane();
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  kc.setCurrentContext('fixtures');
  leases = kc.makeApiClient(CoordinationV1Api);
  inventory = writeInventory([{ id: 'w1' }], { type: 't', region: 'r', zone: 'z' });
});
afterAll(async () => {
  await cp?.stop();
  if (inventory) rmSync(dirname(inventory), { recursive: true, force: true });
});

it("Ctrl-C under the machine's Node: exit 0, the Lease released", async () => {
  const node = machineNode();
  const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  const lease = 'ccm-ctrl-c';
  const holder = async () =>
    (await leases.readNamespacedLease({ name: lease, namespace: 'kube-system' })).spec?.holderIdentity;
  const terminal = await Terminal.open(
    [
      'run',
      '--kubeconfig',
      cp.kubeconfigPath,
      '--provider',
      'cloudlycke',
      '--cloud-config',
      inventory,
      '--leader-elect-resource-name',
      lease,
      '--plain-http',
      '--secure-port',
      '0',
    ],
    { width: 200, height: 50, node },
  );
  try {
    await until(`ccm under Node ${version} holds the Lease`, holder, 180_000);
    await terminal.type('C-c');
    const code = await terminal.exit();
    expect(`${version}: exit ${code}`).toBe(`${version}: exit 0`);
    expect(await holder()).toBeFalsy();
    expect(await terminal.screen({ joined: true })).toContain('SIGINT received');
  } finally {
    await terminal.close();
  }
}, 300_000);

it('Ctrl-C at a prompt ends the same way through the Node 20 wrapper as under Node 24 itself', async () => {
  const fixture = fileURLToPath(new URL('../fixtures/cluster/kubeadm-v1.36.3', import.meta.url));
  const outcome = async (node: string) => {
    const root = tempDir('ccm-ctrl-c-root-');
    cpSync(fixture, root, { recursive: true });
    const terminal = await Terminal.open(['cluster', 'prepare', '--root', root, '--no-restart'], {
      width: 160,
      height: 60,
      node,
    });
    try {
      await terminal.waitFor('Apply these changes?');
      await terminal.type('C-c');
      const code = await terminal.exit();
      const screen = await terminal.screen({ joined: true });
      return { code, last: screen.split('\n').at(-1) };
    } finally {
      await terminal.close();
    }
  };
  const direct = await outcome(process.execPath);
  expect(await outcome(machineNode())).toEqual(direct);
}, 300_000);

/** A loopback listener that accepts connections and never answers; `port` and what it holds. */
async function silentListener() {
  const connected: Socket[] = [];
  const silent = createServer((socket) => connected.push(socket.on('error', () => {})));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  return {
    port: (silent.address() as AddressInfo).port,
    connected,
    close: () => {
      for (const socket of connected) socket.destroy();
      silent.close();
    },
  };
}

/**
 * Ctrl-C while `nodes init` waits (review 44, item 13): it ended by the signal, the waiting line left
 * on screen with ^C after it. Now: the line erased, one line saying nothing was written, 130 (what a
 * shell reports for Ctrl-C), directly and through the Node 20 wrapper.
 */
async function ctrlCWhileWaiting(args: string[], waitingFor: string, env: Record<string, string> = {}) {
  const outcome = async (node: string) => {
    const terminal = await Terminal.open(args, { width: 160, height: 40, node, env });
    try {
      await terminal.waitFor(waitingFor);
      await terminal.type('C-c');
      const code = await terminal.exit();
      const screen = await terminal.screen({ joined: true });
      return { code, screen };
    } finally {
      await terminal.close();
    }
  };
  for (const node of [process.execPath, machineNode()]) {
    const { code, screen } = await outcome(node);
    expect({ node, code, lines: screen.split('\n') }).toEqual({
      node,
      code: 130,
      lines: ['ccm: cancelled (Ctrl-C); nothing was written'],
    });
  }
}

it('Ctrl-C while nodes init waits on an API server that never answers: the line erased, cancelled, 130, through the wrapper too', async () => {
  const silent = await silentKubeconfig();
  try {
    await ctrlCWhileWaiting(
      [
        'nodes',
        'init',
        '--provider',
        'cloudlycke',
        '--cloud-config',
        inventory,
        '--kubeconfig',
        silent.kubeconfig,
      ],
      'waiting for the Kubernetes API server at',
    );
  } finally {
    silent.close();
  }
}, 300_000);

/** Ctrl-C while `ccm <command>` waits on a DigitalOcean API that accepts and never answers. */
async function ctrlCWhileCloudWaits(command: string[]) {
  const cloud = await silentListener();
  try {
    await ctrlCWhileWaiting(
      [
        ...command,
        '--provider',
        'digitalocean',
        '--cloud-api-url',
        `http://127.0.0.1:${cloud.port}`,
        '--kubeconfig',
        cp.kubeconfigPath,
      ],
      'waiting for the cloud at',
      { DO_ACCESS_TOKEN: 'dop_v1_never_answered' },
    );
  } finally {
    cloud.close();
  }
}

it('Ctrl-C while nodes init waits on a cloud that never answers: the line erased, cancelled, 130, through the wrapper too', async () => {
  await ctrlCWhileCloudWaits(['nodes', 'init']);
}, 300_000);

it("Ctrl-C while ccm run's start waits on a cloud that never answers, under the machine's Node: said, exit 0 (review 44, finding 2)", async () => {
  const cloud = await silentListener();
  const node = machineNode();
  const terminal = await Terminal.open(
    [
      'run',
      '--kubeconfig',
      cp.kubeconfigPath,
      '--provider',
      'digitalocean',
      '--cloud-api-url',
      `http://127.0.0.1:${cloud.port}`,
      '--leader-elect=false',
      '--plain-http',
      '--secure-port',
      '0',
    ],
    { width: 200, height: 50, node, env: { DO_ACCESS_TOKEN: 'dop_v1_never_answered' } },
  );
  try {
    await terminal.waitFor('waiting for the cloud at');
    await terminal.type('C-c');
    expect(await terminal.exit(20_000)).toBe(0);
    const screen = await terminal.screen({ joined: true });
    expect(screen).toContain('SIGINT received: shutting down');
    expect(screen).not.toContain('starting: provider');
  } finally {
    await terminal.close();
    cloud.close();
  }
}, 300_000);

/** A kubeconfig whose server accepts connections and never answers, and that listener. */
async function silentKubeconfig() {
  const silent = await silentListener();
  const kubeconfig = join(tempDir('ccm-ctrl-c-kube-'), 'kubeconfig');
  writeFileSync(
    kubeconfig,
    readFileSync(cp.kubeconfigPath, 'utf8').replace(cp.server, `https://127.0.0.1:${silent.port}`),
  );
  return { kubeconfig, close: () => silent.close() };
}

it('Ctrl-C while nodes list waits on a cloud that never answers: the line erased, cancelled, 130, through the wrapper too', async () => {
  await ctrlCWhileCloudWaits(['nodes', 'list']);
}, 300_000);

it('Ctrl-C while doctor waits on an API server that never answers: the line erased, cancelled, 130, through the wrapper too', async () => {
  const silent = await silentKubeconfig();
  try {
    await ctrlCWhileWaiting(
      ['doctor', '--provider', 'cloudlycke', '--cloud-config', inventory, '--kubeconfig', silent.kubeconfig],
      'waiting for the Kubernetes API server at',
    );
  } finally {
    silent.close();
  }
}, 300_000);

it("Ctrl-C while migrate's plan waits on an API server that never answers: the line erased, cancelled, 130, through the wrapper too", async () => {
  const silent = await silentKubeconfig();
  try {
    await ctrlCWhileWaiting(
      ['migrate', '--provider', 'digitalocean', '--dry-run', '--kubeconfig', silent.kubeconfig],
      'waiting for the Kubernetes API server at',
      { DO_ACCESS_TOKEN: 'dop_v1_never_answered' },
    );
  } finally {
    silent.close();
  }
}, 300_000);
