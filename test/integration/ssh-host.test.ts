/**
 * sshHost against a real OpenSSH server on loopback (test/controlplane/sshd.ts), with two fake node
 * roots on the same machine standing for two nodes.
 */
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createBackup, latestBackup, restoreBackup } from '../../src/cluster/backup.js';
import { SshError, sshHost } from '../../src/cluster/host.js';
import type { Host } from '../../src/cluster/types.js';
import { freePort, type Sshd, startSshd } from '../controlplane/sshd.js';
import { tempDir } from '../helpers/tmp.js';

let sshd: Sshd;
beforeAll(async () => {
  sshd = await startSshd();
});
afterAll(async () => {
  await sshd?.stop();
});

/** Two nodes, each a fresh root folder on this machine reached through the sshd. */
let rootA: string;
let rootB: string;
let nodeA: Host;
let nodeB: Host;
beforeEach(() => {
  rootA = tempDir('ccm-node-a-');
  rootB = tempDir('ccm-node-b-');
  nodeA = sshHost(sshd.target, { root: rootA, sshArgs: sshd.sshArgs });
  nodeB = sshHost(sshd.target, { root: rootB, sshArgs: sshd.sshArgs });
});

const BINARY = Buffer.from([...Array.from({ length: 256 }, (_, i) => 255 - i), 13, 10, 13, 10, 10, 0, 10]);
const CRLF = Buffer.from(
  'apiVersion: v1\r\nkind: Pod\r\nspec:\r\n  containers:\r\n  - command:\r\n    - x\r\n',
);
const ODD_DIR = `/etc/it's a "dir" $HOME`;
const ODD_FILE = `${ODD_DIR}/we ird \`id\` ; rm -rf x ' \\ \n.conf`;

function put(root: string, path: string, data: Buffer | string, mode = 0o644) {
  mkdirSync(join(root, path, '..'), { recursive: true });
  writeFileSync(join(root, path), data);
  chmodSync(join(root, path), mode);
}

describe('sshHost over a real sshd', () => {
  it('reads and writes bytes exactly (binary, CRLF, trailing newlines, empty, large)', async () => {
    put(rootA, '/etc/kubernetes/manifests/kube-apiserver.yaml', CRLF, 0o600);
    expect((await nodeA.read('/etc/kubernetes/manifests/kube-apiserver.yaml'))?.equals(CRLF)).toBe(true);

    const large = Buffer.alloc(3 * 1024 * 1024 + 7, BINARY);
    for (const data of [BINARY, CRLF, Buffer.alloc(0), Buffer.from('\n\n\n'), large]) {
      await nodeA.writeAtomic('/var/lib/kubelet/kubeadm-flags.env', data);
      expect(readFileSync(join(rootA, 'var/lib/kubelet/kubeadm-flags.env')).equals(data)).toBe(true);
      expect((await nodeA.read('/var/lib/kubelet/kubeadm-flags.env'))?.equals(data)).toBe(true);
    }
    expect(readdirSync(join(rootA, 'var/lib/kubelet'))).toEqual(['kubeadm-flags.env']);
  });

  it('says undefined for a missing file and [] for a missing folder', async () => {
    expect(await nodeA.read('/etc/kubernetes/missing.yaml')).toBeUndefined();
    expect(await nodeA.read('/no/such/folder/file')).toBeUndefined();
    expect(await nodeA.list('/etc/kubernetes/manifests')).toEqual([]);
    mkdirSync(join(rootA, 'etc'));
    await expect(nodeA.read('/etc')).rejects.toThrow(/read \/etc: .*Is a directory/);
  });

  it('handles paths with spaces, quotes and shell characters', async () => {
    await nodeA.writeAtomic(ODD_FILE, BINARY, 0o600);
    expect(readFileSync(join(rootA, ODD_FILE)).equals(BINARY)).toBe(true);
    expect((await nodeA.read(ODD_FILE))?.equals(BINARY)).toBe(true);
    expect(await nodeA.list(ODD_DIR)).toEqual([ODD_FILE.slice(ODD_DIR.length + 1)]);
    await nodeA.remove(ODD_FILE);
    expect(await nodeA.read(ODD_FILE)).toBeUndefined();
    expect(await nodeA.list(ODD_DIR)).toEqual([]);
  });

  it('writeAtomic keeps the mode of an existing file and uses the given mode for a new one', async () => {
    put(rootA, '/etc/systemd/system/kubelet.service', 'old', 0o640);
    await nodeA.writeAtomic('/etc/systemd/system/kubelet.service', CRLF, 0o600);
    expect(statSync(join(rootA, 'etc/systemd/system/kubelet.service')).mode & 0o7777).toBe(0o640);
    await nodeA.writeAtomic('/etc/default/kubelet', CRLF, 0o600);
    expect(statSync(join(rootA, 'etc/default/kubelet')).mode & 0o7777).toBe(0o600);
    await nodeA.writeAtomic('/etc/default/other', CRLF);
    expect(statSync(join(rootA, 'etc/default/other')).mode & 0o7777).toBe(0o644);
  });

  it('fails a write on a folder cleanly, leaving no temp file', async () => {
    mkdirSync(join(rootA, 'etc/x.yaml'), { recursive: true });
    await expect(nodeA.writeAtomic('/etc/x.yaml', BINARY)).rejects.toThrow(/not a regular file/);
    expect(readdirSync(join(rootA, 'etc'))).toEqual(['x.yaml']);
  });

  it('a stream cut short (connection dropped mid-write) never replaces the target', async () => {
    put(rootA, '/etc/kubernetes/manifests/kube-apiserver.yaml', CRLF, 0o600);
    // An ssh whose stdin ends after 1000 bytes, as when the operator's side dies mid-transfer.
    const bin = tempDir('ccm-cut-ssh-');
    writeFileSync(join(bin, 'ssh'), '#!/bin/sh\nhead -c 1000 | ssh "$@"\n', { mode: 0o755 });
    try {
      const cut = sshHost(sshd.target, { root: rootA, sshArgs: sshd.sshArgs, ssh: join(bin, 'ssh') });
      await expect(
        cut.writeAtomic('/etc/kubernetes/manifests/kube-apiserver.yaml', Buffer.alloc(64 * 1024, 7)),
      ).rejects.toThrow(/received 1000 of 65536 bytes/);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
    expect(readFileSync(join(rootA, 'etc/kubernetes/manifests/kube-apiserver.yaml')).equals(CRLF)).toBe(true);
    expect(readdirSync(join(rootA, 'etc/kubernetes/manifests'))).toEqual(['kube-apiserver.yaml']);
  });

  it('lists every name, dot-files included', async () => {
    for (const n of ['kube-apiserver.yaml', '.hidden', 'a b', "it's"]) put(rootA, `/etc/m/${n}`, '');
    expect(await nodeA.list('/etc/m')).toEqual(['.hidden', 'a b', "it's", 'kube-apiserver.yaml']);
  });

  it('runs commands with exact argv, and returns non-zero exits (even 255) instead of throwing', async () => {
    const r = await nodeA.run(['printf', '%s|', "it's", 'a b', '$HOME', '`id`', '']);
    expect(r).toEqual({ exitCode: 0, stdout: "it's|a b|$HOME|`id`||", stderr: '' });
    expect(await nodeA.run(['sh', '-c', 'echo out; echo err >&2; exit 7'])).toEqual({
      exitCode: 7,
      stdout: 'out\n',
      stderr: 'err\n',
    });
    expect((await nodeA.run(['sh', '-c', 'exit 255'])).exitCode).toBe(255);
    expect((await nodeA.run(['ccm-no-such-program'])).exitCode).toBe(127);
  });

  it('gives a one-line error naming the host when ssh cannot connect', async () => {
    const closed = await freePort();
    const down = sshHost(sshd.target, {
      root: rootA,
      sshArgs: ['-p', String(closed), ...sshd.sshArgs.slice(2)],
    });
    for (const call of [
      () => down.read('/etc/x'),
      () => down.writeAtomic('/etc/x', CRLF),
      () => down.list('/etc'),
      () => down.run(['true']),
    ]) {
      const err = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(SshError);
      const message = (err as Error).message;
      expect(message).toMatch(new RegExp(`^ssh ${sshd.target.replaceAll('.', '\\.')}: .*Connection refused`));
      expect(message).not.toContain('\n');
    }
    expect(readdirSync(rootA)).toEqual([]);
  });

  it('a failing node does not affect another used in parallel', async () => {
    const closed = await freePort();
    const down = sshHost('root@127.0.0.1', {
      root: rootB,
      sshArgs: ['-p', String(closed), ...sshd.sshArgs.slice(2)],
    });
    const results = await Promise.allSettled([
      down.writeAtomic('/var/lib/kubelet/kubeadm-flags.env', BINARY),
      nodeA.writeAtomic('/var/lib/kubelet/kubeadm-flags.env', BINARY),
      nodeB.writeAtomic('/var/lib/kubelet/kubeadm-flags.env', CRLF),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    expect(readFileSync(join(rootA, 'var/lib/kubelet/kubeadm-flags.env')).equals(BINARY)).toBe(true);
    expect(readFileSync(join(rootB, 'var/lib/kubelet/kubeadm-flags.env')).equals(CRLF)).toBe(true);
  });

  it('backs up and restores byte for byte over ssh', async () => {
    const manifest = '/etc/kubernetes/manifests/kube-controller-manager.yaml';
    put(rootB, manifest, CRLF, 0o600);
    const set = await createBackup(nodeB, [manifest, '/etc/default/kubelet'], { note: 'x\r\n' });
    await nodeB.writeAtomic(manifest, Buffer.from('edited'));
    await nodeB.writeAtomic(
      '/etc/default/kubelet',
      Buffer.from('KUBELET_EXTRA_ARGS=--cloud-provider=external\n'),
    );
    const latest = await latestBackup(nodeB);
    expect(latest?.id).toBe(set.id);
    expect(latest?.extra).toEqual({ note: 'x\r\n' });
    expect((await restoreBackup(nodeB, set)).sort()).toEqual(['/etc/default/kubelet', manifest]);
    expect(readFileSync(join(rootB, manifest)).equals(CRLF)).toBe(true);
    expect(statSync(join(rootB, manifest)).mode & 0o777).toBe(0o600);
    expect(await nodeB.read('/etc/default/kubelet')).toBeUndefined();
    expect(await nodeB.list('/etc/kubernetes/manifests')).toEqual(['kube-controller-manager.yaml']);
    // Node A was never touched.
    expect(readdirSync(rootA)).toEqual([]);
  });
});
