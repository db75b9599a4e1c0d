/**
 * Backups for `ccm cluster prepare` and `--rollback`.
 *
 * A backup set is a folder BACKUP_DIR/<id>/ on the host itself (over ssh: on the node), holding an exact
 * copy of each file under files/<its absolute path>, and manifest.json, written last and atomically:
 * a set without a manifest was interrupted and is never used.
 * Since format v2 the manifest also records what prepare wrote over each file (sha256 of the new
 * bytes, the flag edits and their inverses, and the same for kubeadm-config), so a rollback can tell
 * a file still as ccm left it from one changed since, and revert only ccm's own edits in the latter.
 * BACKUP_DIR is outside
 * /etc/kubernetes/manifests on purpose — the kubelet runs every file in that folder, so a copy of
 * kube-apiserver.yaml kept beside it would start a second API server.
 */
import { posix } from 'node:path';
import { nodeCrypto } from '../node-modules.js';
import type { Component, ComponentFile, FlagChange, Host } from './types.js';

export const BACKUP_DIR = '/var/lib/ccm/backups';
const MANIFEST = 'manifest.json';
const FORMAT = 'ccm.cluster-prepare.backup/v2';
/** Sets of the first format: copies only, no record of what prepare wrote. */
const FORMAT_V1 = 'ccm.cluster-prepare.backup/v1';
/** Backups may hold credentials from flags and manifests: readable by root only. */
const BACKUP_FILE_MODE = 0o600;
/** Mode of a file restored after it was deleted since the backup (its mode was not recorded; kubeadm uses 0600). */
const RECREATED_FILE_MODE = 0o600;

export interface BackupEntry {
  /** Absolute host path of the original file. */
  path: string;
  /** False when the file did not exist at backup time: a restore removes it. */
  existed: boolean;
  /** Where the copy lives, relative to the set's folder (only when existed). */
  copy?: string;
  /** sha256 (hex) and length of the original bytes (only when existed). */
  sha256?: string;
  size?: number;
  /** What prepare wrote over the file (format v2); absent for a file it did not write. */
  written?: WriteRecord;
}

/** What prepare wrote: enough to recognise its bytes and to undo only its own edits. */
export interface WriteRecord {
  /** The file as detection described it (kind, component, env variable), for the editors. */
  file: ComponentFile;
  /** sha256 (hex) of the bytes prepare wrote. */
  sha256: string;
  /** The flag edits made, and for each the edit that restores the flag as it was before. */
  changes: FlagChange[];
  revert: FlagChange[];
}

/** The same for kube-system/kubeadm-config's ClusterConfiguration. */
export interface KubeadmConfigRecord {
  /** The ClusterConfiguration before prepare, and the sha256 of the text prepare wrote. */
  before: string;
  sha256: string;
  changes: Array<FlagChange & { component: Component }>;
  revert: Array<FlagChange & { component: Component }>;
}

/** A taint prepare put on an existing Node (--initialize-existing), so a rollback takes back only it. */
export interface TaintRecord {
  node: string;
  /** The Node's uid: a Node deleted and registered again under the name is another Node. */
  uid: string;
  key: string;
  value?: string;
  effect: string;
}

export interface BackupSet {
  /** Sortable by time: "2025-06-01T12-30-05.123Z-1a2b3c". */
  id: string;
  /** Absolute host path of the set's folder. */
  dir: string;
  /** ISO time of creation. */
  createdAt: string;
  /** Host.name at backup time ("local" or "user@host"). */
  host: string;
  files: BackupEntry[];
  /** Caller's extra texts. */
  extra: Record<string, string>;
  /** True for a set that records what prepare wrote (format v2). */
  recorded: boolean;
  /** What prepare wrote into kubeadm-config, on the one host that keeps it. */
  kubeadmConfig?: KubeadmConfigRecord;
  /** The taints prepare put on existing Nodes, on the same host. */
  taints?: TaintRecord[];
}

interface ManifestFile extends Omit<BackupSet, 'dir' | 'recorded'> {
  format: typeof FORMAT | typeof FORMAT_V1;
}

/** What prepare is about to write, recorded in the set before it writes. */
export interface BackupRecords {
  files?: ReadonlyMap<string, WriteRecord>;
  kubeadmConfig?: KubeadmConfigRecord;
  taints?: TaintRecord[];
}

export function sha256(data: Buffer): string {
  return nodeCrypto().createHash('sha256').update(data).digest('hex');
}

/** A time-sortable id; the random tail keeps two sets of the same millisecond apart. */
function newId(now: Date): string {
  return `${now.toISOString().replaceAll(':', '-')}-${nodeCrypto().randomBytes(3).toString('hex')}`;
}

/**
 * Copies each file's exact bytes (or records that it does not exist) into a new set, verifies every
 * copy by reading it back, and writes manifest.json last. Throws before the manifest is written when
 * anything fails, so a half-made set is never picked by latestBackup.
 */
export async function createBackup(
  host: Host,
  paths: string[],
  extra: Record<string, string> = {},
  now: Date = new Date(),
  records: BackupRecords = {},
): Promise<BackupSet> {
  const id = newId(now);
  const dir = posix.join(BACKUP_DIR, id);
  const files: BackupEntry[] = [];
  for (const path of [...new Set(paths)]) {
    if (!path.startsWith('/')) throw new Error(`backup: not an absolute path: ${path}`);
    const data = await host.read(path);
    const written = records.files?.get(path);
    if (data === undefined) {
      files.push({ path, existed: false, ...(written ? { written } : {}) });
      continue;
    }
    const copy = posix.join('files', posix.normalize(path));
    const digest = sha256(data);
    await host.writeAtomic(posix.join(dir, copy), data, BACKUP_FILE_MODE);
    const back = await host.read(posix.join(dir, copy));
    if (!back || sha256(back) !== digest) {
      throw new Error(`${host.name}: backup copy of ${path} does not match the original`);
    }
    files.push({
      path,
      existed: true,
      copy,
      sha256: digest,
      size: data.length,
      ...(written ? { written } : {}),
    });
  }
  const set: BackupSet = {
    id,
    dir,
    createdAt: now.toISOString(),
    host: host.name,
    files,
    extra: { ...extra },
    recorded: true,
    ...(records.kubeadmConfig ? { kubeadmConfig: records.kubeadmConfig } : {}),
    ...(records.taints?.length ? { taints: records.taints } : {}),
  };
  const manifest: ManifestFile = {
    format: FORMAT,
    id,
    createdAt: set.createdAt,
    host: set.host,
    files,
    extra: set.extra,
    ...(set.kubeadmConfig ? { kubeadmConfig: set.kubeadmConfig } : {}),
    ...(set.taints ? { taints: set.taints } : {}),
  };
  await host.writeAtomic(
    posix.join(dir, MANIFEST),
    Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`),
    BACKUP_FILE_MODE,
  );
  return set;
}

/** Reads one set's manifest; undefined when the set is incomplete (no manifest) or not ours. */
export async function readBackup(host: Host, id: string): Promise<BackupSet | undefined> {
  const dir = posix.join(BACKUP_DIR, id);
  const raw = await host.read(posix.join(dir, MANIFEST));
  if (!raw) return undefined;
  let parsed: ManifestFile;
  try {
    parsed = JSON.parse(raw.toString('utf8')) as ManifestFile;
  } catch {
    return undefined;
  }
  if (
    (parsed.format !== FORMAT && parsed.format !== FORMAT_V1) ||
    parsed.id !== id ||
    !Array.isArray(parsed.files)
  )
    return undefined;
  return {
    id,
    dir,
    createdAt: parsed.createdAt,
    host: parsed.host,
    files: parsed.files,
    extra: parsed.extra ?? {},
    recorded: parsed.format === FORMAT,
    ...(parsed.kubeadmConfig ? { kubeadmConfig: parsed.kubeadmConfig } : {}),
    ...(Array.isArray(parsed.taints) ? { taints: parsed.taints } : {}),
  };
}

/** Set ids on the host, newest first (ids sort by time). */
async function idsNewestFirst(host: Host): Promise<string[]> {
  const names = await host.list(BACKUP_DIR);
  return names
    .filter((n) => !n.startsWith('.'))
    .sort()
    .reverse();
}

/** The complete sets on the host, newest first, each read when asked for. */
export async function* backupsNewestFirst(host: Host): AsyncGenerator<BackupSet> {
  for (const id of await idsNewestFirst(host)) {
    const set = await readBackup(host, id);
    if (set) yield set;
  }
}

/** Every complete set on the host, newest first. */
export async function listBackups(host: Host): Promise<BackupSet[]> {
  const sets: BackupSet[] = [];
  for await (const set of backupsNewestFirst(host)) sets.push(set);
  return sets;
}

/** The newest complete set (one with a manifest), or undefined. */
export async function latestBackup(host: Host): Promise<BackupSet | undefined> {
  for await (const set of backupsNewestFirst(host)) return set;
  return undefined;
}

/** The verified bytes of the set's copy of a file; throws when the copy is lost or damaged. */
export async function readCopy(host: Host, set: BackupSet, entry: BackupEntry): Promise<Buffer> {
  if (!entry.copy || !entry.sha256) throw new Error(`backup ${set.id}: no copy recorded for ${entry.path}`);
  const data = await host.read(posix.join(set.dir, entry.copy));
  if (!data) throw new Error(`${host.name}: backup ${set.id} lost its copy of ${entry.path}`);
  if (sha256(data) !== entry.sha256) {
    throw new Error(`${host.name}: backup ${set.id}: the copy of ${entry.path} is damaged (sha256 mismatch)`);
  }
  return data;
}

/**
 * Puts every file of the set back byte for byte (atomically, keeping the current mode) and removes
 * the files that did not exist at backup time. Every copy is checked against its sha256 BEFORE
 * anything is written, and each restored file is read back and checked again.
 * Returns the paths that changed (files already equal to the backup are left untouched).
 */
export async function restoreBackup(host: Host, set: BackupSet): Promise<string[]> {
  const planned: { entry: BackupEntry; data?: Buffer }[] = [];
  for (const entry of set.files) {
    planned.push(entry.existed ? { entry, data: await readCopy(host, set, entry) } : { entry });
  }

  const changed: string[] = [];
  for (const { entry, data } of planned) {
    const current = await host.read(entry.path);
    if (data === undefined) {
      if (current === undefined) continue;
      await host.remove(entry.path);
      if ((await host.read(entry.path)) !== undefined) {
        throw new Error(`${host.name}: could not remove ${entry.path}`);
      }
    } else {
      if (current && sha256(current) === entry.sha256) continue;
      await host.writeAtomic(entry.path, data, RECREATED_FILE_MODE);
      const back = await host.read(entry.path);
      if (!back || sha256(back) !== entry.sha256) {
        throw new Error(`${host.name}: ${entry.path} does not match the backup after restoring it`);
      }
    }
    changed.push(entry.path);
  }
  return changed;
}
