/**
 * `ccm cluster prepare --ssh` over a real sshd on loopback (Debian's openssh-server) against fake
 * node roots: nothing but sh and coreutils on the "node" side.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNodes } from '../controlplane/fixtures.js';
import { type Sshd, startSshd } from '../controlplane/sshd.js';
import { ccm } from '../helpers/cli.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { writeInventory } from '../helpers/inventory.js';
import { tempDir } from '../helpers/tmp.js';

const fixture = fileURLToPath(new URL('../fixtures/cluster/kubeadm-v1.36.3', import.meta.url));
let sshd: Sshd;
// The --ssh-from-nodes tests read the Nodes of its API server.
const world = useCloudWorld('cloudlycke');

/** How the CLI reaches the test sshd: its port and client key, no host key checks. */
const sshFlags = () => [
  '--ssh-port',
  String(sshd.port),
  '--ssh-identity',
  join(sshd.dir, 'client_ed25519'),
  '--ssh-option',
  'StrictHostKeyChecking=no',
  '--ssh-option',
  'UserKnownHostsFile=/dev/null',
];

/** `ccm cluster prepare` with `args`, over the test sshd. */
const prepare = (...args: string[]) => ccm(['cluster', 'prepare', ...args, ...sshFlags()]);

/** A node's root: a copy of the kubeadm fixture in a fresh folder, and its kubelet flags file. */
function nodeRoot(prefix = 'ccm-node-') {
  const root = tempDir(prefix);
  cpSync(fixture, root, { recursive: true });
  return { root, kubeletEnv: join(root, 'var/lib/kubelet/kubeadm-flags.env') };
}

beforeAll(async () => {
  sshd = await startSshd(['127.0.0.1', '127.0.0.2']);
});
afterAll(async () => {
  await sshd?.stop();
});

describe('preparing several nodes over ssh', () => {
  it('prepares the good node, reports the failing ones, and exits 1', async () => {
    const { root: good, kubeletEnv } = nodeRoot('ccm-node-good-');
    const empty = tempDir('ccm-node-empty-');
    const before = readFileSync(kubeletEnv, 'utf8');

    const run = await prepare(
      '--ssh',
      'root@127.0.0.1',
      '--ssh',
      'root@127.0.0.2',
      '--ssh',
      'root@127.0.0.3', // nothing listens there
      '--ssh-option',
      'LogLevel=ERROR',
      '--remote-root',
      `root@127.0.0.1=${good}`,
      '--remote-root',
      `root@127.0.0.2=${empty}`,
      '--provider',
      'cloudlycke',
      // The machine behind Node cp-1 has its own id: the provider ID is the instance's (issue 6, item 4).
      '--cloud-config',
      writeInventory([{ id: 'vm-cp-1', name: 'cp-1' }]),
      '--yes',
      '--no-restart',
      '-o',
      'table',
    );
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toBe('');
    const table = run.stdout.split('\n').filter((l) => /^root@127\.0\.0\.\d /.test(l));
    expect(table).toHaveLength(3);
    expect(table[0]).toMatch(/^root@127\.0\.0\.1\s+kubeadm\s+prepared\s+2\s/);
    expect(table[1]).toMatch(/^root@127\.0\.0\.2\s+-\s+failed\s+0\s.*(kubeadm|hard way|layout)/i);
    expect(table[2]).toMatch(/^root@127\.0\.0\.3\s+-\s+failed\s+0\s.*ssh root@127\.0\.0\.3/);

    const after = readFileSync(kubeletEnv, 'utf8');
    expect(after).toBe(
      before.replace(/"$/m, ' --cloud-provider=external --provider-id=cloudlycke://vm-cp-1"'),
    );
    const manifest = readFileSync(
      join(good, 'etc/kubernetes/manifests/kube-controller-manager.yaml'),
      'utf8',
    );
    expect(manifest).toContain('    - --cloud-provider=external\n');

    // and back, byte for byte, over ssh
    const rollback = await prepare(
      '--rollback',
      '--ssh',
      'root@127.0.0.1',
      '--remote-root',
      good,
      '--no-restart',
      '--yes',
    );
    expect(rollback.exitCode).toBe(0);
    expect(readFileSync(kubeletEnv, 'utf8')).toBe(before);
    // Two passes over ssh to three hosts: on a machine at load 13 that took more than the default minute.
  }, 180_000);

  it('refuses a node whose instance the cloud listing cannot name, writing nothing (issue 6, item 4)', async () => {
    const { root, kubeletEnv } = nodeRoot();
    const before = readFileSync(kubeletEnv, 'utf8');
    const run = await prepare(
      '--ssh',
      'root@127.0.0.1',
      '--remote-root',
      root,
      '--provider',
      'cloudlycke',
      '--cloud-config',
      writeInventory([{ id: 'k8s-node-1', addresses: [{ type: 'InternalIP', address: '10.0.0.99' }] }]),
      '--yes',
      '--no-restart',
    );
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toMatch(
      /cannot tell which cloudlycke instance this host is \(no instance is named "cp-1"; no instance has --node-ip 10\.0\.0\.10 among 1 listed\); pass --provider-id/,
    );
    expect(readFileSync(kubeletEnv, 'utf8')).toBe(before);
  });

  it('--ssh-from-nodes reaches every Node by its InternalIP', async () => {
    await createNodes(world.api, [
      { name: 'cp-1', tainted: false, addresses: [{ type: 'InternalIP', address: '127.0.0.1' }] },
      { name: 'worker-1', tainted: false, addresses: [{ type: 'InternalIP', address: '127.0.0.2' }] },
    ]);
    const { root } = nodeRoot();
    const run = await prepare(
      '--kubeconfig',
      world.kubeconfig,
      '--ssh-from-nodes',
      '--remote-root',
      root,
      '--dry-run',
    );
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain(
      "hosts from the Nodes' InternalIP (--ssh-from-nodes): cp-1 root@127.0.0.1, worker-1 root@127.0.0.2",
    );
    expect(run.stdout).toContain('root@127.0.0.1: kubeadm');
    expect(run.stdout).toContain('root@127.0.0.2: kubeadm');
    expect(run.stdout).toContain('Dry run: nothing written.');
  });

  it('--ssh-from-nodes connects to nothing when a Node reports an InternalIP that is no IP address', async () => {
    const marker = join(tempDir('ccm-node-marker-'), 'ran');
    await createNodes(world.api, [
      { name: 'cp-1', tainted: false, addresses: [{ type: 'InternalIP', address: '127.0.0.1' }] },
      {
        name: 'worker-1',
        tainted: false,
        addresses: [{ type: 'InternalIP', address: `-oProxyCommand=touch ${marker}` }],
      },
    ]);
    const run = await prepare('--kubeconfig', world.kubeconfig, '--ssh-from-nodes', '--dry-run');
    expect(run.exitCode).toBe(2);
    expect(run.stderr.trim()).toBe(
      `ccm: Node worker-1 reports InternalIP "-oProxyCommand=touch ${marker}", which is no IP address; fix its status or name the hosts with --ssh`,
    );
    expect(existsSync(marker)).toBe(false);
  });

  it('reads the running kubelet over ssh: a dry run plans the restart of one that lacks the flags its files have', async () => {
    const { root, kubeletEnv } = nodeRoot('ccm-node-running-');
    const flags = ' --cloud-provider=external --provider-id=cloudlycke://cp-1"';
    writeFileSync(kubeletEnv, readFileSync(kubeletEnv, 'utf8').replace(/"$/m, flags));
    // The node's /proc: the kubelet started before its flags were written, and a shell that mentions it.
    const proc = (pid: number, comm: string, argv: string[]) => {
      mkdirSync(join(root, 'proc', String(pid)), { recursive: true });
      writeFileSync(join(root, 'proc', String(pid), 'comm'), `${comm}\n`);
      writeFileSync(join(root, 'proc', String(pid), 'cmdline'), `${argv.join('\0')}\0`);
    };
    proc(4242, 'kubelet', ['/usr/bin/kubelet', '--config=/var/lib/kubelet/config.yaml']);
    proc(4243, 'sh', ['sh', '-c', 'kubelet']);
    const run = await prepare(
      '--ssh',
      'root@127.0.0.1',
      '--remote-root',
      root,
      '--provider-id',
      'cloudlycke://cp-1',
      '--dry-run',
    );
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain(
      'restart kubelet: its running process (pid 4242) lacks --cloud-provider=external, --provider-id=cloudlycke://cp-1, which its files have',
    );
  });

  it("prints a node's files without the terminal escapes they hold", async () => {
    const { root, kubeletEnv } = nodeRoot('ccm-node-escapes-');
    // A title change and a screen clear in a comment beside the line prepare changes.
    writeFileSync(kubeletEnv, `# \x1b]0;owned\x07\x1b[2Jhello\n${readFileSync(kubeletEnv, 'utf8')}`);
    const run = await prepare(
      '--ssh',
      'root@127.0.0.1',
      '--remote-root',
      root,
      '--provider-id',
      'cloudlycke://cp-1',
      '--dry-run',
    );
    expect(run.stdout).toContain(' # hello\n');
    expect([...run.stdout].filter((c) => c === '\x1b' || c === '\x07')).toEqual([]);
  });
});
