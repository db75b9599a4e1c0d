/**
 * `ccm manifests --out DIR`: one file per object, in a folder that `kubectl apply -f DIR` reads whole.
 *
 * kubectl applies every .yaml, .yml and .json file of the folder, in name order, so the folder must
 * hold exactly the objects of the last run: a file an earlier run wrote and this one does not (the
 * CronJob after --cronjob is dropped, the YAML after -o json) would be applied too, and a second copy
 * of an object, read later, would win. So:
 * - each object's file name depends on the object alone (its kind's place in the apply order, its
 *   kind and name), never on what else the set holds;
 * - the folder's index (OUT_INDEX, a dot-file kubectl skips) lists the files ccm wrote there; the next
 *   run replaces them and removes those it no longer writes;
 * - a folder holding a YAML or JSON file ccm did not write is refused: ccm cannot tell an object the
 *   operator keeps there from a stale one;
 * - every file is written beside its target and renamed over it, and a new folder is filled under a
 *   temporary name and renamed into place, so kubectl never reads a half-written file.
 */
import { constants, type Dirent, promises as fs } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { isTempFile, localHost, TEMP_MARKER } from '../cluster/host.js';
import { nodeCrypto } from '../node-modules.js';
import { UsageError } from './errors.js';
import type { K8sObject } from './manifests.js';
import { objectYaml } from './output/object-yaml.js';

/** The list of the files ccm wrote in an --out folder. */
export const OUT_INDEX = '.ccm-manifests';

/** Apply order by kind: a Namespace before what lives in it, a Role before its binding. */
const KIND_ORDER = [
  'Namespace',
  'ServiceAccount',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
  'DaemonSet',
  'Deployment',
  'PodDisruptionBudget',
  'CronJob',
  // Last, so that the files of the kinds above keep their names: `--cmon-format additional-scrape-configs`.
  'Secret',
  // After it, for the same reason: what `--service-monitor` adds.
  'Service',
  'ServiceMonitor',
] as const;

/** A file name ccm writes: "01-serviceaccount-ccm.yaml". Nothing else in an index is trusted. */
const OWN_NAME = /^\d{2}-[a-z]+-[a-z0-9.-]+\.(yaml|json)$/;

/** What `kubectl apply -f DIR` reads of a folder (not its subfolders, without -R). */
const KUBECTL_READS = /\.(ya?ml|json)$/i;

const YAML_HEADER =
  '# Written by `ccm manifests --out`: its next run into this folder replaces this file, or removes it.\n';

const INDEX_HEADER = [
  '# The files `ccm manifests --out` wrote in this folder. Its next run replaces them and removes those',
  '# it no longer writes; it stops at a YAML or JSON file that is not listed here.',
];

export type OutFormat = 'yaml' | 'json';

export interface WrittenManifests {
  /** The path of each object's file, in the order of the objects. */
  files: string[];
  /** Files an earlier run wrote that this one removed (names in the folder). */
  removed: string[];
}

/** An object's file: the same for the same object, whatever else the set holds. */
export function fileName(object: K8sObject, format: OutFormat = 'yaml'): string {
  const rank = (KIND_ORDER as readonly string[]).indexOf(object.kind);
  if (rank < 0) throw new Error(`no file order for kind ${object.kind}`);
  const safe = object.metadata.name.toLowerCase().replace(/[^a-z0-9.-]+/g, '-');
  return `${String(rank).padStart(2, '0')}-${object.kind.toLowerCase()}-${safe}.${format}`;
}

function content(object: K8sObject, format: OutFormat): string {
  return format === 'json' ? `${JSON.stringify(object, null, 2)}\n` : `${YAML_HEADER}${objectYaml(object)}`;
}

function indexText(names: readonly string[]): string {
  return `${[...INDEX_HEADER, ...[...names].sort()].join('\n')}\n`;
}

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

async function statOrNone(path: string) {
  return fs.stat(path).catch((err: unknown) => {
    if (errno(err) === 'ENOENT' || errno(err) === 'ENOTDIR') return undefined;
    throw err;
  });
}

/** A file system error as one line about --out, exit 2: permissions and the like do not pass by retrying. */
function outError(dir: string, err: unknown): unknown {
  const code = errno(err);
  if (
    !code ||
    !['EACCES', 'EPERM', 'EROFS', 'ENOENT', 'ENOTDIR', 'EISDIR', 'ENOSPC', 'EDQUOT'].includes(code)
  )
    return err;
  return new UsageError(`--out ${dir}: ${(err as Error).message}`);
}

/**
 * Writes one file per object into `dir` (see the module comment); returns the files and what it
 * removed. A usage error (exit 2) when `dir` is a file, its parent folder does not exist, or it holds
 * YAML or JSON files ccm did not write.
 */
export async function writeManifests(
  dir: string,
  objects: readonly K8sObject[],
  format: OutFormat,
): Promise<WrittenManifests> {
  const names = objects.map((o) => fileName(o, format));
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice) throw new Error(`two objects would go to the same file, ${twice}`);
  const target = resolve(dir);
  try {
    const st = await statOrNone(target);
    if (st && !st.isDirectory()) {
      throw new UsageError(
        `--out ${dir} is a file; --out takes a folder (one file per object): name a new or empty folder, or print to a file with \`ccm manifests … > ${dir}\``,
      );
    }
    const files = names.map((n) => join(dir, n));
    if (!st) {
      await writeNewFolder(dir, target, objects, names, format);
      return { files, removed: [] };
    }
    return { files, removed: await replaceInFolder(dir, target, objects, names, format) };
  } catch (err) {
    throw outError(dir, err);
  }
}

/** A new folder: filled under a temporary name beside it, then renamed into place whole. */
async function writeNewFolder(
  dir: string,
  target: string,
  objects: readonly K8sObject[],
  names: readonly string[],
  format: OutFormat,
): Promise<void> {
  const parent = dirname(target);
  // Only the folder itself is made: a missing parent is more likely a typo than a wish (and Node's
  // recursive mkdir never returns for some paths under /proc).
  if (!(await statOrNone(parent))?.isDirectory()) {
    throw new UsageError(
      `--out ${dir}: the folder ${parent} does not exist; create it first, or name another`,
    );
  }
  const tmp = join(
    parent,
    `.${basename(target)}${TEMP_MARKER}${nodeCrypto().randomBytes(6).toString('hex')}`,
  );
  await fs.mkdir(tmp, { mode: 0o755 }).catch((err: unknown) => {
    throw new UsageError(
      `--out ${dir}: cannot make a folder in ${parent} (${(err as Error).message.split(',')[0]})`,
    );
  });
  try {
    for (const [i, object] of objects.entries()) {
      await writeSynced(join(tmp, names[i] as string), content(object, format));
    }
    await writeSynced(join(tmp, OUT_INDEX), indexText(names));
    await fs.rename(tmp, target);
  } catch (err) {
    await fs.rm(tmp, { recursive: true, force: true }).catch(() => {});
    if (errno(err) === 'ENOTEMPTY' || errno(err) === 'EEXIST') {
      throw new UsageError(`--out ${dir} was made by someone else while ccm wrote it; run the command again`);
    }
    throw err;
  }
}

async function writeSynced(path: string, data: string): Promise<void> {
  const fh = await fs.open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** The names the folder's index lists, or none when it has no index. */
async function readIndex(target: string): Promise<Set<string>> {
  const text = await fs.readFile(join(target, OUT_INDEX), 'utf8').catch((err: unknown) => {
    if (errno(err) === 'ENOENT') return '';
    throw err;
  });
  return new Set(
    text
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => OWN_NAME.test(l)),
  );
}

/** The YAML and JSON files of the folder that ccm did not write there. */
function foreignFiles(entries: readonly Dirent[], own: ReadonlySet<string>): string[] {
  return entries
    .filter((e) => !e.isDirectory() && KUBECTL_READS.test(e.name) && !own.has(e.name))
    .map((e) => e.name)
    .sort();
}

/** An existing folder: ccm's files replaced, those it no longer writes removed; returns those. */
async function replaceInFolder(
  dir: string,
  target: string,
  objects: readonly K8sObject[],
  names: readonly string[],
  format: OutFormat,
): Promise<string[]> {
  const entries = await fs.readdir(target, { withFileTypes: true });
  const own = await readIndex(target);
  const foreign = foreignFiles(entries, own);
  if (foreign.length > 0) {
    const shown = foreign.slice(0, 3).join(', ');
    const more = foreign.length > 3 ? ` and ${foreign.length - 3} more` : '';
    throw new UsageError(
      `--out ${dir} holds files ccm did not write (${shown}${more}), which \`kubectl apply -f ${dir}\` would apply too; name a new or empty folder, or move them out`,
    );
  }
  const host = localHost();
  // Every file stays listed while it is written: a run cut short leaves a folder the next one takes.
  await host.writeAtomic(join(target, OUT_INDEX), Buffer.from(indexText([...new Set([...own, ...names])])));
  for (const [i, object] of objects.entries()) {
    await host.writeAtomic(join(target, names[i] as string), Buffer.from(content(object, format)));
  }
  const stale = [...own].filter((n) => !names.includes(n)).sort();
  for (const name of stale) await fs.rm(join(target, name), { force: true });
  // What an interrupted earlier run left beside its files.
  for (const e of entries)
    if (isTempFile(e.name) && e.isFile()) await fs.rm(join(target, e.name), { force: true });
  await host.writeAtomic(join(target, OUT_INDEX), Buffer.from(indexText(names)));
  return stale;
}
