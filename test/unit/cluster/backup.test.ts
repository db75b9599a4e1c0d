/** Backup sets on a temp root: exact copies, manifest last, byte-for-byte restore. */
import { chmodSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  BACKUP_DIR,
  createBackup,
  latestBackup,
  listBackups,
  restoreBackup,
  sha256,
} from '../../../src/cluster/backup.js';
import { localHost } from '../../../src/cluster/host.js';
import { tempDir } from '../../helpers/tmp.js';

let root: string;
beforeEach(() => {
  root = tempDir('ccm-backup-');
});

const MANIFEST = '/etc/kubernetes/manifests/kube-controller-manager.yaml';
const FLAGS = '/var/lib/kubelet/kubeadm-flags.env';
const EXTRA = '/etc/default/kubelet';

const BINARY = Buffer.from([0, 255, 1, 254, 13, 10, 0x80, 0xc3, 0x28, 13, 10, 0]);
const CRLF = Buffer.from(
  'apiVersion: v1\r\nkind: Pod\r\nspec:\r\n  containers:\r\n  - command:\r\n    - x\r\n',
);

function put(path: string, data: Buffer | string, mode = 0o600) {
  mkdirSync(join(root, path, '..'), { recursive: true });
  writeFileSync(join(root, path), data);
  chmodSync(join(root, path), mode);
}

describe('backups', () => {
  it('keeps backups outside the manifests folder', () => {
    expect(BACKUP_DIR.startsWith('/etc/kubernetes/manifests')).toBe(false);
  });

  it('restores byte for byte, and removes files that did not exist', async () => {
    const host = localHost(root);
    put(MANIFEST, CRLF);
    put(FLAGS, BINARY, 0o644);
    const set = await createBackup(host, [MANIFEST, FLAGS, EXTRA], {
      clusterConfiguration: 'a: 1\r\nb: "ü"\n',
    });

    expect(set.files).toEqual([
      expect.objectContaining({ path: MANIFEST, existed: true, sha256: sha256(CRLF), size: CRLF.length }),
      expect.objectContaining({ path: FLAGS, existed: true, sha256: sha256(BINARY) }),
      { path: EXTRA, existed: false },
    ]);
    // The copies are exact and not under the manifests folder.
    for (const f of set.files.filter((e) => e.existed)) {
      const copy = join(root, set.dir, f.copy ?? '');
      expect(copy).toBe(join(root, BACKUP_DIR, set.id, 'files', f.path)); // the path mirrored under BACKUP_DIR
      expect(sha256(readFileSync(copy))).toBe(f.sha256);
      expect(statSync(copy).mode & 0o777).toBe(0o600);
    }

    // prepare edits everything, and adds a file.
    await host.writeAtomic(MANIFEST, Buffer.from('edited\n'));
    await host.writeAtomic(FLAGS, Buffer.from('KUBELET_KUBEADM_ARGS="--cloud-provider=external"\n'));
    await host.writeAtomic(EXTRA, Buffer.from('KUBELET_EXTRA_ARGS=--cloud-provider=external\n'));

    const latest = await latestBackup(host);
    expect(latest).toEqual(set);
    expect(latest?.extra.clusterConfiguration).toBe('a: 1\r\nb: "ü"\n');
    const changed = await restoreBackup(host, latest ?? set);
    expect(changed.sort()).toEqual([EXTRA, FLAGS, MANIFEST].sort());

    expect(readFileSync(join(root, MANIFEST)).equals(CRLF)).toBe(true);
    expect(readFileSync(join(root, FLAGS)).equals(BINARY)).toBe(true);
    expect(statSync(join(root, FLAGS)).mode & 0o777).toBe(0o644);
    expect(await host.read(EXTRA)).toBeUndefined();
    expect(await host.list('/etc/kubernetes/manifests')).toEqual(['kube-controller-manager.yaml']);

    // A second rollback has nothing left to do.
    expect(await restoreBackup(host, set)).toEqual([]);
  });

  it('recreates a file deleted since the backup', async () => {
    const host = localHost(root);
    put(FLAGS, BINARY);
    const set = await createBackup(host, [FLAGS]);
    rmSync(join(root, FLAGS));
    expect(await restoreBackup(host, set)).toEqual([FLAGS]);
    expect(readFileSync(join(root, FLAGS)).equals(BINARY)).toBe(true);
  });

  it('ignores incomplete sets and picks the newest complete one', async () => {
    const host = localHost(root);
    put(FLAGS, 'one');
    const first = await createBackup(host, [FLAGS], {}, new Date('2025-01-01T00:00:00Z'));
    put(FLAGS, 'two');
    const second = await createBackup(host, [FLAGS], {}, new Date('2025-01-02T00:00:00Z'));
    // A later set interrupted before its manifest was written.
    put(`${BACKUP_DIR}/2025-01-03T00-00-00.000Z-abcdef/files${FLAGS}`, 'half');
    expect((await latestBackup(host))?.id).toBe(second.id);
    expect((await listBackups(host)).map((s) => s.id)).toEqual([second.id, first.id]);
    expect(first.id < second.id).toBe(true);
  });

  it('refuses to restore from a damaged copy and writes nothing', async () => {
    const host = localHost(root);
    put(MANIFEST, CRLF);
    put(FLAGS, BINARY);
    const set = await createBackup(host, [MANIFEST, FLAGS]);
    await host.writeAtomic(MANIFEST, Buffer.from('edited'));
    await host.writeAtomic(FLAGS, Buffer.from('edited'));
    const flagsCopy = set.files[1]?.copy ?? '';
    writeFileSync(join(root, set.dir, flagsCopy), 'tampered');
    await expect(restoreBackup(host, set)).rejects.toThrow(/damaged/);
    expect(readFileSync(join(root, MANIFEST), 'utf8')).toBe('edited');
  });

  it('returns undefined when there is no backup', async () => {
    expect(await latestBackup(localHost(root))).toBeUndefined();
  });
});
