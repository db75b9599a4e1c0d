import { posix } from 'node:path';
import { readKubeadmConfig, writeKubeadmConfig } from '../kube/kubeadm-config.js';
import type { KubeTransport } from '../kube/transport.js';
import {
  type BackupRecords,
  createBackup,
  type KubeadmConfigRecord,
  sha256,
  type TaintRecord,
  type WriteRecord,
} from './backup.js';
import { detect } from './detect.js';
import { inverseChanges } from './flags.js';
import { extraArgsAsFlags, readExtraArgs, SECTION_OF, type Section } from './kubeadm-config.js';
import {
  desiredChanges,
  type PlanOptions,
  planClusterConfiguration,
  planPrepare,
  readFlags,
} from './plan.js';
import {
  describeChange,
  isLive,
  isUnit,
  liveArgs,
  type RestartOptions,
  restartOrNote,
  type UnitRestart,
  unitsToRestart,
} from './restart.js';
import type { Component, Detection, FileEdit, FlagChange, Host, Skip } from './types.js';

/**
 * `ccm cluster prepare`, without the UI: plan every host (detect, read, compute edits), then apply
 * (backup, atomic writes, kubelet restart, kubeadm-config, /readyz), or roll the last change back.
 * One host failing never stops the others; its error is in its report row.
 */

export interface PrepareOptions {
  versions: { kubelet?: string; apiserver?: string; controllerManager?: string };
  /**
   * The kubelet's --provider-id for the Node of this host (the provider's format), when the provider
   * wants one; `kubeletFlags` are the kubelet's current flags (e.g. --hostname-override).
   */
  providerIDFor?: (host: Host, kubeletFlags: string[]) => Promise<string | undefined>;
  /** The provider's recommended flags per component, e.g. DigitalOcean's preferred address types. */
  extra?: Partial<Record<Component, Record<string, string>>>;
}

/** A unit whose running process lacks what its files (left alone by this run) say: it is restarted. */
export interface StaleProcess {
  component: Component;
  /** 0: the unit has no running process. */
  pid: number;
  /** The flag changes its files carry and its command line does not. */
  missing: FlagChange[];
}

export interface HostPlan {
  host: Host;
  detection?: Detection;
  edits: FileEdit[];
  skips: Skip[];
  stale: StaleProcess[];
  /** What the operator should know about the running processes that this run cannot fix. */
  notes: string[];
  error?: string;
}

export interface KubeadmConfigPlan {
  before: string;
  after: string;
  resourceVersion: string;
  changes: Array<FlagChange & { component: Component }>;
  skips: Skip[];
}

export interface ClusterPlan {
  hosts: HostPlan[];
  kubeadmConfig?: KubeadmConfigPlan;
  /** The taints --initialize-existing puts on existing Nodes, recorded beside kubeadm-config's record. */
  taints?: TaintRecord[];
  /** Why kubeadm-config is not edited (no kubeadm host, no kubeconfig, nothing to change...). */
  kubeadmConfigNote?: string;
}

export type HostResult = 'prepared' | 'unchanged' | 'failed' | 'rolled back' | 'nothing to roll back';

export interface HostReport {
  host: string;
  layout?: string;
  versions: Partial<Record<Component, string>>;
  files: string[];
  skips: string[];
  /** Whether any unit was restarted; `restartedUnits` names them, in order. */
  restarted: boolean;
  restartedUnits: string[];
  /** What the operator should know that is not a failure (e.g. units left to restart). */
  notes: string[];
  backup?: string;
  result: HostResult;
  error?: string;
  /** For a failed host: the step that failed (before it, nothing was written: 'backup'). */
  failedAt?: 'backup' | 'write' | 'restart';
}

export async function planCluster(
  hosts: Host[],
  options: PrepareOptions,
  kube?: KubeTransport,
): Promise<ClusterPlan> {
  const plans = await Promise.all(hosts.map((host) => planHost(host, options)));
  const plan: ClusterPlan = { hosts: plans };
  const kubeadm = plans.find((p) => p.detection?.layout === 'kubeadm');
  if (!kubeadm) {
    plan.kubeadmConfigNote = 'no kubeadm host: kubeadm-config left alone';
  } else if (!kube) {
    plan.kubeadmConfigNote =
      'no kubeconfig: kubeadm-config not updated, so a later `kubeadm upgrade` would drop the flags; pass --kubeconfig';
  } else {
    const current = await readKubeadmConfig(kube);
    if (!current) {
      plan.kubeadmConfigNote = 'the cluster has no kube-system/kubeadm-config ConfigMap';
    } else {
      const withApiserver =
        plans.find((p) => p.detection?.versions['kube-apiserver'])?.detection ?? kubeadm.detection;
      const edit = planClusterConfiguration(current.clusterConfiguration, withApiserver as Detection, {
        extra: options.extra,
      });
      if (edit.after !== current.clusterConfiguration) {
        plan.kubeadmConfig = {
          before: current.clusterConfiguration,
          after: edit.after,
          resourceVersion: current.resourceVersion,
          changes: edit.changes,
          skips: edit.skips,
        };
      } else {
        plan.kubeadmConfigNote = 'kubeadm-config already has the flags';
      }
    }
  }
  return plan;
}

/**
 * The host with each file read at most once while planning: detection looks at a file to learn the
 * layout and the plan needs its bytes again, and over ssh every read is a connection.
 */
function readingOnce(host: Host): Host {
  const reads = new Map<string, Promise<Buffer | undefined>>();
  return {
    name: host.name,
    read: (path) => {
      let read = reads.get(path);
      if (!read) {
        read = host.read(path);
        reads.set(path, read);
      }
      return read;
    },
    writeAtomic: (path, data, mode) => host.writeAtomic(path, data, mode),
    remove: (path) => host.remove(path),
    list: (dir) => host.list(dir),
    run: (argv) => host.run(argv),
    processes: (programs) => host.processes(programs),
  };
}

async function planHost(target: Host, options: PrepareOptions): Promise<HostPlan> {
  const host = readingOnce(target);
  try {
    const detection = await detect(host, {
      kubeletVersion: options.versions.kubelet,
      apiserverVersion: options.versions.apiserver,
      controllerManagerVersion: options.versions.controllerManager,
    });
    const contents = new Map<string, Buffer | undefined>();
    for (const file of detection.files) contents.set(file.path, await host.read(file.path));
    const kubeletFlags = detection.files
      .filter((f) => f.component === 'kubelet')
      .flatMap((f) => readFlags(f, contents.get(f.path)));
    const providerID = await options.providerIDFor?.(host, kubeletFlags);
    const planOptions = { providerID, extra: options.extra };
    const { edits, skips } = planPrepare(detection, contents, planOptions);
    const running = await runningProcesses(host, detection, contents, edits, planOptions);
    return { host: target, detection, edits, skips, ...running };
  } catch (err) {
    return { host: target, edits: [], skips: [], stale: [], notes: [], error: (err as Error).message };
  }
}

/**
 * A file prepared by an earlier run does not prove its process runs with it (that run's restart may
 * have failed): for each component whose files this run leaves alone, prepare's flags as the files
 * carry them are compared with the command line of its running process.
 */
async function runningProcesses(
  host: Host,
  detection: Detection,
  contents: ReadonlyMap<string, Buffer | undefined>,
  edits: readonly FileEdit[],
  options: PlanOptions,
): Promise<Pick<HostPlan, 'stale' | 'notes'>> {
  const edited = new Set(edits.map((e) => e.file.component));
  const expected = new Map<Component, FlagChange[]>();
  for (const component of new Set(detection.files.map((f) => f.component))) {
    if (edited.has(component)) continue;
    const args = detection.files
      .filter((f) => f.component === component)
      .flatMap((f) => readFlags(f, contents.get(f.path)));
    const carried = desiredChanges(component, detection.versions[component], options).changes.filter((c) =>
      isLive(args, c),
    );
    if (carried.length > 0) expected.set(component, carried);
  }
  const stale: StaleProcess[] = [];
  const notes: string[] = [];
  if (expected.size === 0) return { stale, notes };
  const running = await host.processes([...expected.keys()]);
  for (const [component, changes] of expected) {
    const own = running.filter((p) => posix.basename(p.argv[0] ?? '') === component);
    if (own.length > 1) {
      notes.push(
        `${component}: ${own.length} processes run here (pids ${own.map((p) => p.pid).join(', ')}); their flags were not compared with the files`,
      );
      continue;
    }
    const [proc] = own;
    if (!proc) {
      // A unit that systemd says is not running (a restart that failed after the files were written):
      // starting it is the fix. Where systemctl cannot answer, nothing is known and nothing planned.
      if (isUnit(detection.layout, component) && (await unitStopped(host, component))) {
        stale.push({ component, pid: 0, missing: changes });
      }
      continue;
    }
    const missing = changes.filter((c) => !isLive(proc.argv.slice(1), c));
    if (missing.length === 0) continue;
    if (isUnit(detection.layout, component)) {
      stale.push({ component, pid: proc.pid, missing });
    } else {
      notes.push(
        `${component}: its running process (pid ${proc.pid}) lacks ${missing.map(describeChange).join(', ')}, which its manifest has; the kubelet restarts a static pod when its manifest changes: check the kubelet's log (journalctl -u kubelet)`,
      );
    }
  }
  return { stale, notes };
}

async function unitStopped(host: Host, unit: string): Promise<boolean> {
  try {
    return typeof (await liveArgs(host, unit)) === 'string';
  } catch {
    return false;
  }
}

export interface ApplyOptions {
  restart: boolean;
  kube?: KubeTransport;
  readyTimeoutMs: number;
}

export interface ApplyResult {
  hosts: HostReport[];
  kubeadmConfig?: 'updated' | string;
  /** What went wrong with the taints: prepare did not add them (the host keeping their record failed), a rollback could not remove one. */
  taints?: string;
  /** Rollback: the Nodes the taint prepare added came off. */
  untainted?: string[];
  readyAfterMs?: number;
  readyError?: string;
}

/** The host whose backup keeps what prepare does to the cluster (kubeadm-config, taints), for --rollback. */
function keeperOf(plan: ClusterPlan): HostPlan | undefined {
  return plan.hosts.find((p) => !p.error);
}

/** Step 1: on each host, in parallel: back up (with a record of what is written), write atomically, restart what changed. */
export function applyHost(
  plan: ClusterPlan,
  host: HostPlan,
  restart: boolean,
  restartOptions: RestartOptions = {},
): Promise<HostReport> {
  const keep: ClusterRecords = {};
  if (host === keeperOf(plan)) {
    if (plan.kubeadmConfig) keep.kubeadmConfig = kubeadmConfigRecord(plan.kubeadmConfig);
    if (plan.taints?.length) keep.taints = plan.taints;
  }
  return applyOneHost(host, restart, keep, restartOptions);
}

type ClusterRecords = Pick<BackupRecords, 'kubeadmConfig' | 'taints'>;

/** What prepare writes into kubeadm-config, and how to undo exactly that. */
function kubeadmConfigRecord(edit: KubeadmConfigPlan): KubeadmConfigRecord {
  const revert = edit.changes.map((change) => {
    const section = SECTION_OF[change.component] as Section;
    const before = extraArgsAsFlags(readExtraArgs(edit.before, section));
    return { ...(inverseChanges(before, [change])[0] as FlagChange), component: change.component };
  });
  return { before: edit.before, sha256: sha256(Buffer.from(edit.after)), changes: edit.changes, revert };
}

/** What prepare writes over each file, and how to undo exactly its flag edits. */
function writeRecords(edits: readonly FileEdit[]): Map<string, WriteRecord> {
  return new Map(
    edits.map((e) => [
      e.file.path,
      {
        file: e.file,
        sha256: sha256(e.after),
        changes: e.changes,
        revert: inverseChanges(readFlags(e.file, e.before.length > 0 ? e.before : undefined), e.changes),
      },
    ]),
  );
}

/**
 * Why a step on the cluster's side (kubeadm-config, taints) is left alone: the host keeping its record
 * failed. Names the failure and what to do (`finish`: what a re-run then does); undefined when the
 * keeper did not fail.
 */
export function keeperFailure(
  plan: ClusterPlan,
  hosts: readonly HostReport[],
  finish: string,
): string | undefined {
  const keeper = hosts.find((h) => h.host === keeperOf(plan)?.host.name);
  if (keeper?.result !== 'failed') return undefined;
  const error = (keeper.error ?? 'failed').replace(/\.$/, '');
  const again = 'run `ccm cluster prepare` again';
  switch (keeper.failedAt) {
    case 'restart':
      return `${error} (the files on ${keeper.host} are written, backup ${keeper.backup}); fix that and ${again}: it restarts what still runs without the new flags and ${finish}`;
    case 'write':
      return `${error} while writing the files on ${keeper.host} (backup ${keeper.backup}); roll back with \`ccm cluster prepare --rollback\`, or fix that and ${again}`;
    default:
      return `${error} (nothing was written on ${keeper.host}); fix that and ${again}`;
  }
}

/** Step 2: kubeadm-config, unless the host keeping its record failed. */
export async function updateKubeadmConfig(
  plan: ClusterPlan,
  hosts: HostReport[],
  kube: KubeTransport,
): Promise<string> {
  if (!plan.kubeadmConfig) return 'unchanged';
  const failure = keeperFailure(plan, hosts, 'updates kubeadm-config');
  if (failure) return `not updated: ${failure}`;
  try {
    const { sha256: written, changes, revert } = kubeadmConfigRecord(plan.kubeadmConfig);
    await writeKubeadmConfig(
      kube,
      plan.kubeadmConfig.after,
      plan.kubeadmConfig.resourceVersion,
      JSON.stringify({ sha256: written, changes, revert }),
    );
    return 'updated';
  } catch (err) {
    return `not updated: ${(err as Error).message}`;
  }
}

/** Step 3 is needed when a control-plane manifest changed or a kubelet restarted. */
export function needsReadyCheck(plan: ClusterPlan, hosts: HostReport[]): boolean {
  const controlPlane = plan.hosts.some((p) =>
    p.edits.some(
      (e) => e.file.component === 'kube-apiserver' || e.file.component === 'kube-controller-manager',
    ),
  );
  return controlPlane || hosts.some((h) => h.restarted);
}

function baseReport(p: HostPlan): HostReport {
  const versions: Partial<Record<Component, string>> = {};
  for (const [component, v] of Object.entries(p.detection?.versions ?? {})) {
    versions[component as Component] = `${v.major}.${v.minor}.${v.patch}`;
  }
  return {
    host: p.host.name,
    layout: p.detection?.layout,
    versions,
    files: p.edits.map((e) => e.file.path),
    skips: p.skips.map((s) => `${s.component}: ${s.reason}`),
    restarted: false,
    restartedUnits: [],
    notes: [...p.notes],
    result: 'unchanged',
  };
}

/** The units to restart on a host: those whose files are edited, and those running without their files' flags. */
export function hostRestarts(p: HostPlan): UnitRestart[] {
  return unitsToRestart(p.detection?.layout, [
    ...p.edits.map((e) => ({ component: e.file.component, changes: e.changes })),
    ...p.stale.map((s) => ({ component: s.component, changes: s.missing })),
  ]);
}

async function applyOneHost(
  p: HostPlan,
  restart: boolean,
  cluster: ClusterRecords,
  restartOptions: RestartOptions,
): Promise<HostReport> {
  const report = baseReport(p);
  if (p.error) return { ...report, result: 'failed', error: p.error };
  const units = hostRestarts(p);
  const keeps = cluster.kubeadmConfig !== undefined || cluster.taints !== undefined;
  if (p.edits.length === 0 && !keeps && units.length === 0) return report;
  let step: HostReport['failedAt'] = 'backup';
  try {
    if (p.edits.length > 0 || keeps) {
      const records: BackupRecords = { files: writeRecords(p.edits), ...cluster };
      const backup = await createBackup(
        p.host,
        p.edits.map((e) => e.file.path),
        {},
        new Date(),
        records,
      );
      report.backup = backup.id;
      // The backup read the files as they are now; if one changed since the preview, the planned
      // bytes would overwrite that change: stop here, nothing written.
      const changed = p.edits.find((edit) => {
        const entry = backup.files.find((f) => f.path === edit.file.path);
        return entry?.existed ? entry.sha256 !== sha256(edit.before) : edit.before.length > 0;
      });
      if (changed)
        throw new Error(`${changed.file.path} changed since it was read; run cluster prepare again`);
      step = 'write';
      for (const edit of p.edits) await p.host.writeAtomic(edit.file.path, edit.after);
    }
    step = 'restart';
    await restartOrNote(report, p.host, units, restart, restartOptions);
    report.result = p.edits.length > 0 || report.restarted ? 'prepared' : 'unchanged';
  } catch (err) {
    report.result = 'failed';
    report.error = (err as Error).message;
    report.failedAt = step;
  }
  return report;
}
