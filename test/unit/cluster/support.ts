/**
 * Test support for the cluster editors: flag changes, fixture paths, a line diff, and two tiny Hosts (a fixture
 * folder read as a machine's root; an in-memory one) that answer `<binary> --version` from a table.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { diffLines } from 'diff';
import { readArgs as readEnvArgs } from '../../../src/cluster/env-file.js';
import { readExecStart } from '../../../src/cluster/systemd-unit.js';
import type { ExecResult, FlagChange, Host } from '../../../src/cluster/types.js';

/** A flag change as a plan makes it (its reason does not matter to an editor). */
export const set = (flag: string, value: string): FlagChange => ({ flag, value, reason: 'test' });
export const remove = (flag: string): FlagChange => ({ flag, reason: 'test' });
/** What preparing a control plane for an external cloud controller asks of each component. */
export const external = [set('cloud-provider', 'external'), remove('cloud-config')];

export const FIXTURES = fileURLToPath(new URL('../../fixtures/cluster/', import.meta.url));

export function fixture(root: string, path: string): Buffer {
  return readFileSync(join(FIXTURES, root, path));
}

export interface LineDiff {
  removed: string[];
  added: string[];
}

/** Lines (with their endings) only in `before` / only in `after`. */
export function changedLines(before: Buffer | string, after: Buffer | string): LineDiff {
  const removed: string[] = [];
  const added: string[] = [];
  for (const part of diffLines(before.toString(), after.toString())) {
    const lines = part.value.match(/[^\n]*\n|[^\n]+$/g) ?? [];
    if (part.added) added.push(...lines);
    if (part.removed) removed.push(...lines);
  }
  return { removed, added };
}

/** The same, with line endings stripped, for readable assertions. */
export function changed(before: Buffer | string, after: Buffer | string): LineDiff {
  const d = changedLines(before, after);
  const strip = (l: string) => l.replace(/\r?\n$/, '');
  return { removed: d.removed.map(strip), added: d.added.map(strip) };
}

function versionRun(versions: Record<string, string>, argv: string[]): ExecResult {
  const [program, flag] = argv;
  const v = program === undefined ? undefined : versions[program];
  if (flag === '--version' && v) return { exitCode: 0, stdout: `Kubernetes ${v}\n`, stderr: '' };
  return { exitCode: 127, stdout: '', stderr: `${program}: command not found\n` };
}

/** A fixture folder read as a machine's "/": read-only, `run` answers only `--version`. */
export function folderHost(
  folder: string,
  versions: Record<string, string> = {},
): Host & { runs: string[][] } {
  const runs: string[][] = [];
  return {
    name: `folder:${folder}`,
    runs,
    async read(path) {
      const p = join(folder, path);
      return existsSync(p) ? readFileSync(p) : undefined;
    },
    async writeAtomic() {
      throw new Error('read-only test host');
    },
    async remove() {
      throw new Error('read-only test host');
    },
    async list(dir) {
      const p = join(folder, dir);
      return existsSync(p) ? readdirSync(p) : [];
    },
    async run(argv) {
      runs.push(argv);
      return versionRun(versions, argv);
    },
    async processes() {
      return [];
    },
  };
}

/** An in-memory machine: path → bytes. */
export function memoryHost(
  files: Record<string, string | Buffer>,
  versions: Record<string, string> = {},
): Host & { files: Map<string, Buffer> } {
  const map = new Map(Object.entries(files).map(([k, v]) => [k, Buffer.from(v)]));
  return {
    name: 'memory',
    files: map,
    async read(path) {
      return map.get(path);
    },
    async writeAtomic(path, data) {
      map.set(path, Buffer.from(data));
    },
    async remove(path) {
      map.delete(path);
    },
    async list(dir) {
      const prefix = dir.endsWith('/') ? dir : `${dir}/`;
      return [
        ...new Set(
          [...map.keys()]
            .filter((k) => k.startsWith(prefix))
            .map((k) => k.slice(prefix.length).split('/')[0] as string),
        ),
      ];
    },
    async run(argv) {
      return versionRun(versions, argv);
    },
    async processes() {
      return [];
    },
  };
}

export const crlf = (b: Buffer | string) => Buffer.from(b.toString().replace(/\r?\n/g, '\r\n'));

/** What `systemctl restart` prints when the unit does not start (systemd's own words). */
export const restartFailure = (unit: string) =>
  `Job for ${unit}.service failed because the control process exited with error code.\nSee "systemctl status ${unit}.service" and "journalctl -xeu ${unit}.service" for details.\n`;

/**
 * A fixture root that behaves like a machine with systemd: `systemctl restart UNIT` starts a "process"
 * whose /proc/<pid>/cmdline (under the root) is the unit's command line as the files say now — the
 * hard-way unit's ExecStart, or for the kubeadm kubelet its env files' flags. Units in `stale` keep
 * their old process across restarts (a unit whose new flags never went live); units in `fail` keep it
 * too and their restart fails as systemd's does; units in `stop` fail so and are left with no process
 * (MainPID 0), as a kubelet that does not come back up. `systemctl show -p MainPID --value UNIT` answers the
 * pid. Every systemctl call is recorded; other programs answer `--version` from the table.
 */
export function systemdHost(
  base: Host,
  root: string,
  options: { stale?: string[]; fail?: string[]; stop?: string[]; versions?: Record<string, string> } = {},
): Host & { systemctl: string[][] } {
  const systemctl: string[][] = [];
  const pids = new Map<string, number>();
  let next = 100;
  const start = (unit: string) => {
    const pid = next++;
    pids.set(unit, pid);
    mkdirSync(join(root, 'proc', String(pid)), { recursive: true });
    writeFileSync(join(root, 'proc', String(pid), 'cmdline'), `${commandLine(unit).join('\0')}\0`);
  };
  const commandLine = (unit: string): string[] => {
    const hardWay = join(root, 'etc/systemd/system', `${unit}.service`);
    if (existsSync(hardWay)) return readExecStart(readFileSync(hardWay));
    const flags = join(root, 'var/lib/kubelet/kubeadm-flags.env');
    const extra = join(root, 'etc/sysconfig/kubelet');
    return [
      unit,
      ...(existsSync(flags) ? readEnvArgs(readFileSync(flags), 'KUBELET_KUBEADM_ARGS') : []),
      ...(existsSync(extra) ? readEnvArgs(readFileSync(extra), 'KUBELET_EXTRA_ARGS') : []),
    ];
  };
  // On kubeadm only the kubelet is a unit; kube-apiserver and kube-controller-manager are static pods.
  for (const unit of ['kube-apiserver', 'kube-controller-manager']) {
    if (existsSync(join(root, 'etc/systemd/system', `${unit}.service`))) start(unit);
  }
  start('kubelet');
  return {
    ...base,
    name: base.name,
    systemctl,
    async run(argv) {
      if (argv[0] !== 'systemctl') return versionRun(options.versions ?? {}, argv);
      systemctl.push(argv.slice(1));
      const [verb] = argv.slice(1);
      const unit = argv.at(-1) as string;
      if (verb === 'restart' && (options.stop ?? []).includes(unit)) {
        pids.delete(unit);
        return { exitCode: 1, stdout: '', stderr: restartFailure(unit) };
      }
      if (verb === 'restart' && (options.fail ?? []).includes(unit)) {
        return { exitCode: 1, stdout: '', stderr: restartFailure(unit) };
      }
      if (verb === 'restart' && !(options.stale ?? []).includes(unit)) start(unit);
      if (verb === 'show') return { exitCode: 0, stdout: `${pids.get(unit) ?? 0}\n`, stderr: '' };
      return { exitCode: 0, stdout: '', stderr: '' };
    },
  };
}
