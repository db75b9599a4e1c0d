import { readKubeadmConfig, writeKubeadmConfig } from '../kube/kubeadm-config.js';
import { waitUntilReady } from '../kube/readyz.js';
import type { KubeTransport } from '../kube/transport.js';
import { createBackup, latestBackup, restoreBackup, sha256 } from './backup.js';
import { detect } from './detect.js';
import { planClusterConfiguration, planPrepare, readFlags } from './plan.js';
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

export interface HostPlan {
  host: Host;
  detection?: Detection;
  edits: FileEdit[];
  skips: Skip[];
  error?: string;
}

export interface KubeadmConfigPlan {
  before: string;
  after: string;
  resourceVersion: string;
  changes: FlagChange[];
  skips: Skip[];
}

export interface ClusterPlan {
  hosts: HostPlan[];
  kubeadmConfig?: KubeadmConfigPlan;
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
  restarted: boolean;
  backup?: string;
  result: HostResult;
  error?: string;
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
    const { edits, skips } = planPrepare(detection, contents, { providerID, extra: options.extra });
    return { host: target, detection, edits, skips };
  } catch (err) {
    return { host: target, edits: [], skips: [], error: (err as Error).message };
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
  readyAfterMs?: number;
  readyError?: string;
}

/** The host whose backup keeps the original ClusterConfiguration, for --rollback. */
function keeperOf(plan: ClusterPlan): HostPlan | undefined {
  return plan.hosts.find((p) => !p.error);
}

/** Step 1: on each host, in parallel: back up, write atomically, restart the kubelet if its flags changed. */
export function applyHost(plan: ClusterPlan, host: HostPlan, restart: boolean): Promise<HostReport> {
  const keep = host === keeperOf(plan) && plan.kubeadmConfig ? plan.kubeadmConfig.before : undefined;
  return applyOneHost(host, restart, keep);
}

/** Step 2: kubeadm-config, unless the host keeping its backup failed (it could not be rolled back). */
export async function updateKubeadmConfig(
  plan: ClusterPlan,
  hosts: HostReport[],
  kube: KubeTransport,
): Promise<string> {
  if (!plan.kubeadmConfig) return 'unchanged';
  const keeper = hosts.find((h) => h.host === keeperOf(plan)?.host.name);
  if (keeper?.result === 'failed') return 'not updated: its backup could not be written';
  try {
    await writeKubeadmConfig(kube, plan.kubeadmConfig.after, plan.kubeadmConfig.resourceVersion);
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
    result: 'unchanged',
  };
}

async function applyOneHost(
  p: HostPlan,
  restart: boolean,
  clusterConfiguration?: string,
): Promise<HostReport> {
  const report = baseReport(p);
  if (p.error) return { ...report, result: 'failed', error: p.error };
  if (p.edits.length === 0 && clusterConfiguration === undefined) return report;
  try {
    const backup = await createBackup(
      p.host,
      p.edits.map((e) => e.file.path),
      clusterConfiguration === undefined ? undefined : { clusterConfiguration },
    );
    report.backup = backup.id;
    // The backup read the files as they are now; if one changed since the preview, the planned
    // bytes would overwrite that change: stop here, nothing written.
    const changed = p.edits.find((edit) => {
      const entry = backup.files.find((f) => f.path === edit.file.path);
      return entry?.existed ? entry.sha256 !== sha256(edit.before) : edit.before.length > 0;
    });
    if (changed) throw new Error(`${changed.file.path} changed since it was read; run cluster prepare again`);
    for (const edit of p.edits) await p.host.writeAtomic(edit.file.path, edit.after);
    report.result = p.edits.length > 0 ? 'prepared' : 'unchanged';
    if (restart && p.edits.some((e) => e.file.component === 'kubelet')) {
      await restartKubelet(p.host);
      report.restarted = true;
    }
  } catch (err) {
    report.result = 'failed';
    report.error = (err as Error).message;
  }
  return report;
}

async function restartKubelet(host: Host): Promise<void> {
  for (const argv of [
    ['systemctl', 'daemon-reload'],
    ['systemctl', 'restart', 'kubelet'],
  ]) {
    const run = await host.run(argv);
    if (run.exitCode !== 0) {
      const why = (run.stderr || run.stdout).trim().split('\n')[0] || `exit ${run.exitCode}`;
      throw new Error(`${argv.join(' ')} failed on ${host.name}: ${why}`);
    }
  }
}

/** Restores each host's latest backup byte for byte, and kubeadm-config when that backup holds it. */
export async function rollbackCluster(hosts: Host[], options: ApplyOptions): Promise<ApplyResult> {
  let clusterConfiguration: string | undefined;
  const reports = await Promise.all(
    hosts.map(async (host): Promise<HostReport> => {
      const report: HostReport = {
        host: host.name,
        versions: {},
        files: [],
        skips: [],
        restarted: false,
        result: 'nothing to roll back',
      };
      try {
        const set = await latestBackup(host);
        if (!set) return report;
        report.backup = set.id;
        report.files = await restoreBackup(host, set);
        report.result = 'rolled back';
        clusterConfiguration ??= set.extra?.clusterConfiguration;
        if (options.restart && report.files.some((f) => f.includes('kubelet'))) {
          await restartKubelet(host);
          report.restarted = true;
        }
      } catch (err) {
        report.result = 'failed';
        report.error = (err as Error).message;
      }
      return report;
    }),
  );
  const result: ApplyResult = { hosts: reports };
  if (clusterConfiguration !== undefined && options.kube) {
    try {
      const current = await readKubeadmConfig(options.kube);
      if (current && current.clusterConfiguration !== clusterConfiguration) {
        await writeKubeadmConfig(options.kube, clusterConfiguration, current.resourceVersion);
        result.kubeadmConfig = 'restored';
      }
    } catch (err) {
      result.kubeadmConfig = `not restored: ${(err as Error).message}`;
    }
  }
  const restoredControlPlane = reports.some((r) =>
    r.files.some((f) => f.startsWith('/etc/kubernetes/manifests/')),
  );
  if (options.kube && (restoredControlPlane || reports.some((r) => r.restarted))) {
    try {
      result.readyAfterMs = await waitUntilReady(options.kube, { timeoutMs: options.readyTimeoutMs });
    } catch (err) {
      result.readyError = (err as Error).message;
    }
  }
  return result;
}
