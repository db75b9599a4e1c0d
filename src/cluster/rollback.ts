/**
 * `ccm cluster prepare --rollback`, planned like prepare: read each host's newest backup set that holds
 * files (newer sets without files add their records), decide per file, show the diffs, and only then
 * write.
 *
 * Per file (the set records the sha256 of what prepare wrote, and its flag edits with their inverses):
 * - still exactly as prepare left it → the backup copy goes back byte for byte (or the file is removed
 *   when prepare created it);
 * - already as before prepare → nothing;
 * - changed since (a `kubeadm upgrade`, an operator's edit) → only ccm's own flag edits are undone, and
 *   only those still in effect: everything else in the file — a newer image, kubernetesVersion, other
 *   flags — stays. A ccm flag changed since is left as it is now, and said so;
 * - deleted since → left alone, and said so.
 * A set made by an older ccm records nothing of what it wrote: that host is refused, naming the set,
 * rather than overwritten blindly.
 * kube-system/kubeadm-config: only ccm's flag edits are undone, as the ConfigMap's own record (the
 * ccm.io/prepare-record annotation, written with them) says; never a whole text, and never what a
 * file on a host says, since anyone with root on any node could write that.
 * Nodes: the uninitialized taint `--initialize-existing` added comes off the Nodes the sets record
 * (same uid), and no other taint.
 */
import { KubeApiError } from '../kube/errors.js';
import { PREPARE_RECORD_ANNOTATION, readKubeadmConfig, writeKubeadmConfig } from '../kube/kubeadm-config.js';
import { createNodeClient, type SlimNode } from '../kube/nodes.js';
import { waitUntilReady } from '../kube/readyz.js';
import type { KubeTransport } from '../kube/transport.js';
import { TAINT_UNINITIALIZED } from '../kube/well-known.js';
import {
  type BackupSet,
  backupsNewestFirst,
  type KubeadmConfigRecord,
  readCopy,
  sha256,
  type TaintRecord,
} from './backup.js';
import * as kubeadmConfig from './kubeadm-config.js';
import { editFile, readFlags } from './plan.js';
import type { ApplyOptions, ApplyResult, HostReport, StaleProcess } from './prepare.js';
import {
  isLive,
  isUnit,
  liveArgs,
  mainPid,
  type RestartOptions,
  restartOrNote,
  type UnitRestart,
  unitsToRestart,
} from './restart.js';
import type { Component, ComponentFile, FlagChange, Host, Layout } from './types.js';

export interface RollbackFile {
  file: ComponentFile;
  /** The file now; undefined when it does not exist. */
  current?: Buffer;
  /** What it becomes; undefined: it is removed. */
  next?: Buffer;
  how: 'restore' | 'remove' | 'revert';
  /** The flag changes this rollback makes (for the restart check). */
  changes: FlagChange[];
}

export interface HostRollback {
  host: Host;
  /** The set whose files are rolled back. */
  set?: BackupSet;
  /** Newer sets that hold no file, only records of the cluster's side (kubeadm-config, taints). */
  newer: BackupSet[];
  files: RollbackFile[];
  /**
   * Units this rollback writes no file for whose process lacks what their files say now (a restart
   * after an earlier rollback failed, leaving the unit stopped or on prepare's flags): restarted.
   */
  stale: StaleProcess[];
  notes: string[];
  error?: string;
}

export interface KubeadmConfigRollback {
  before: string;
  after: string;
  resourceVersion: string;
  notes: string[];
}

/** A Node whose taint prepare added comes off: its taints without it, written if the Node is unchanged. */
export interface NodeUntaint {
  name: string;
  resourceVersion: string;
  taints: NonNullable<NonNullable<SlimNode['spec']>['taints']>;
}

export interface RollbackPlan {
  hosts: HostRollback[];
  kubeadmConfig?: KubeadmConfigRollback;
  kubeadmConfigNote?: string;
  untaint: NodeUntaint[];
  /** Taints prepare added that stay, and why (no kubeconfig, the Node was registered again). */
  taintNotes: string[];
}

/** The taint `--initialize-existing` puts on existing Nodes: the only one a rollback takes off. */
const PREPARE_TAINT = { key: TAINT_UNINITIALIZED, effect: 'NoSchedule' };

function describe(change: FlagChange): string {
  return change.value === undefined ? `--${change.flag} removed` : `--${change.flag}=${change.value}`;
}

/** The inverses of the recorded changes that are still in effect in `args`; the others, named. */
function liveReverts(
  args: readonly string[],
  changes: readonly FlagChange[],
  revert: readonly FlagChange[],
): { reverts: FlagChange[]; changedSince: FlagChange[] } {
  const reverts: FlagChange[] = [];
  const changedSince: FlagChange[] = [];
  changes.forEach((change, i) => {
    if (isLive(args, change)) reverts.push(revert[i] as FlagChange);
    else changedSince.push(change);
  });
  return { reverts, changedSince };
}

/**
 * The newest set that holds files. A newer run that wrote no file on this host (it only recorded
 * kubeadm-config, or only restarted) leaves a set without files: it must not hide the set that can
 * put the files back, and what it records is kept beside it.
 */
async function setToRollBack(host: Host): Promise<{ set?: BackupSet; newer: BackupSet[] }> {
  const newer: BackupSet[] = [];
  for await (const set of backupsNewestFirst(host)) {
    if (set.files.length > 0 || !set.recorded) return { set, newer };
    newer.push(set);
  }
  const [newest, ...rest] = newer;
  return { set: newest, newer: rest };
}

async function planHost(host: Host): Promise<HostRollback> {
  const plan: HostRollback = { host, newer: [], files: [], stale: [], notes: [] };
  try {
    const { set, newer } = await setToRollBack(host);
    if (!set) return plan;
    plan.set = set;
    plan.newer = newer;
    if (!set.recorded) {
      throw new Error(
        `backup ${set.id} was made by an older ccm and does not record what it wrote, so a rollback cannot tell ccm's edits from later ones; restore by hand from ${set.dir} if needed`,
      );
    }
    const now = new Map<string, Buffer | undefined>();
    for (const entry of set.files) {
      const record = entry.written;
      if (!record) continue;
      const current = await host.read(entry.path);
      now.set(entry.path, current);
      const digest = current ? sha256(current) : undefined;
      if (entry.existed ? digest === entry.sha256 : current === undefined) continue;
      if (current === undefined) {
        plan.notes.push(`${entry.path} was deleted since prepare; left alone`);
        continue;
      }
      if (digest === record.sha256) {
        const next = entry.existed ? await readCopy(host, set, entry) : undefined;
        plan.files.push({
          file: record.file,
          current,
          ...(next ? { next } : {}),
          how: next ? 'restore' : 'remove',
          changes: record.revert,
        });
        continue;
      }
      const { reverts, changedSince } = liveReverts(
        readFlags(record.file, current),
        record.changes,
        record.revert,
      );
      for (const c of changedSince) {
        plan.notes.push(`${entry.path}: ${describe(c)} was changed since prepare; left as it is now`);
      }
      if (reverts.length === 0) continue;
      const next = editFile(record.file, current, reverts);
      if (next.equals(current)) continue;
      plan.notes.push(`${entry.path} changed since prepare: only ccm's flag edits are undone`);
      plan.files.push({ file: record.file, current, next, how: 'revert', changes: reverts });
    }
    plan.stale = await staleUnits(host, set, plan.files, now);
  } catch (err) {
    plan.error = (err as Error).message;
    plan.files = [];
    plan.stale = [];
  }
  return plan;
}

/**
 * The units whose files this rollback leaves alone (already as before prepare) but whose process does
 * not run with them: an earlier rollback restored the files and its restart failed, so the unit is
 * stopped (systemd: MainPID 0) or still runs prepare's flags. Compared: the recorded inverses of
 * prepare's edits that the files carry now. Where systemctl cannot answer, nothing is planned; a unit
 * one of whose files was deleted since is left alone.
 */
async function staleUnits(
  host: Host,
  set: BackupSet,
  files: readonly RollbackFile[],
  now: ReadonlyMap<string, Buffer | undefined>,
): Promise<StaleProcess[]> {
  const entries = set.files.filter((e) => e.written);
  const layout: Layout = entries.some((e) => e.written?.file.kind === 'systemd-unit')
    ? 'hard-way'
    : 'kubeadm';
  const written = new Set(files.map((f) => f.file.component));
  const stale: StaleProcess[] = [];
  for (const component of new Set(entries.map((e) => e.written?.file.component as Component))) {
    if (written.has(component) || !isUnit(layout, component)) continue;
    const own = entries.filter((e) => e.written?.file.component === component);
    if (own.some((e) => e.existed && now.get(e.path) === undefined)) continue;
    const args = own.flatMap((e) => readFlags(e.written?.file as ComponentFile, now.get(e.path)));
    const expected = own.flatMap((e) => e.written?.revert ?? []).filter((c) => isLive(args, c));
    if (expected.length === 0) continue;
    const live = await liveArgs(host, component).catch(() => undefined);
    if (live === undefined) continue;
    if (typeof live === 'string') {
      stale.push({ component, pid: 0, missing: expected });
      continue;
    }
    const missing = expected.filter((c) => !isLive(live, c));
    if (missing.length === 0) continue;
    stale.push({ component, pid: await mainPid(host, component).catch(() => 0), missing });
  }
  return stale;
}

type PrepareRecord = Pick<KubeadmConfigRecord, 'sha256' | 'changes' | 'revert'>;

/**
 * prepare's record on the kubeadm-config ConfigMap, checked: flag edits of the components whose flags
 * ClusterConfiguration keeps, each revert undoing one recorded change. Anything else is no record.
 */
function parsePrepareRecord(text: string): PrepareRecord | undefined {
  try {
    const r = JSON.parse(text) as PrepareRecord;
    const edit = (c: unknown): c is FlagChange & { component: Component } => {
      const e = c as Partial<FlagChange & { component: Component }>;
      return (
        typeof e?.flag === 'string' &&
        (e.value === undefined || typeof e.value === 'string') &&
        typeof e.component === 'string' &&
        kubeadmConfig.SECTION_OF[e.component] !== undefined
      );
    };
    const ok =
      typeof r?.sha256 === 'string' &&
      Array.isArray(r.changes) &&
      Array.isArray(r.revert) &&
      r.changes.length === r.revert.length &&
      r.changes.every(edit) &&
      r.revert.every(
        (c, i) => edit(c) && c.flag === r.changes[i]?.flag && c.component === r.changes[i]?.component,
      );
    return ok ? r : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Undo only ccm's flag edits in kubeadm-config's ClusterConfiguration, as the ConfigMap's own record
 * says: never a whole text, so a rollback can put back nothing but the values prepare found.
 */
function planClusterConfiguration(
  record: PrepareRecord,
  current: string,
): { after: string; notes: string[] } {
  const untouched = sha256(Buffer.from(current)) === record.sha256;
  const notes: string[] = [];
  const perSection: Partial<Record<kubeadmConfig.Section, FlagChange[]>> = {};
  record.changes.forEach((change, i) => {
    const section = kubeadmConfig.SECTION_OF[change.component];
    if (!section) return;
    const args = kubeadmConfig.extraArgsAsFlags(kubeadmConfig.readExtraArgs(current, section));
    if (isLive(args, change)) {
      perSection[section] = [...(perSection[section] ?? []), record.revert[i] as FlagChange];
    } else {
      notes.push(
        `kubeadm-config ${section}: ${describe(change)} was changed since prepare; left as it is now`,
      );
    }
  });
  const after = kubeadmConfig.edit(current, perSection);
  if (after !== current && !untouched) {
    notes.unshift("kubeadm-config changed since prepare: only ccm's flag edits are undone");
  }
  return { after, notes };
}

/**
 * The taints prepare's records say it added, on the Nodes that still carry them. A Node of the same
 * name with another uid was registered again since (its kubelet tainted it): left alone.
 * The records live on a host, where root may rewrite them: whatever they say, only the uninitialized
 * taint prepare adds ever comes off, never another (a control-plane taint, say).
 */
async function planUntaint(plan: RollbackPlan, kube: KubeTransport | undefined): Promise<void> {
  const records = new Map<string, TaintRecord>();
  for (const h of plan.hosts) {
    if (h.error) continue;
    for (const set of [h.set, ...h.newer]) {
      for (const t of set?.taints ?? []) {
        if (t.key === PREPARE_TAINT.key && t.effect === PREPARE_TAINT.effect) records.set(t.uid, t);
      }
    }
  }
  if (records.size === 0) return;
  if (!kube) {
    plan.taintNotes.push(
      `no kubeconfig: the taint prepare put on ${[...records.values()].map((t) => t.node).join(', ')} stays; pass --kubeconfig`,
    );
    return;
  }
  const nodes = createNodeClient(kube);
  for (const record of records.values()) {
    const node = await nodes.getNode(record.node).catch((err: unknown) => {
      if (err instanceof KubeApiError && err.status === 404) return undefined;
      throw err;
    });
    if (!node) continue;
    if (node.metadata?.uid !== record.uid) {
      plan.taintNotes.push(
        `Node ${record.node} was registered again since prepare tainted it: its taints are left as they are`,
      );
      continue;
    }
    const taints = node.spec?.taints ?? [];
    const kept = taints.filter((t) => t.key !== PREPARE_TAINT.key || t.effect !== PREPARE_TAINT.effect);
    if (kept.length === taints.length) continue;
    plan.untaint.push({
      name: record.node,
      resourceVersion: node.metadata?.resourceVersion ?? '',
      taints: kept,
    });
  }
}

export async function planRollback(hosts: Host[], kube?: KubeTransport): Promise<RollbackPlan> {
  const plans = await Promise.all(hosts.map(planHost));
  const plan: RollbackPlan = { hosts: plans, untaint: [], taintNotes: [] };
  await planUntaint(plan, kube);
  // A host's backup says whether prepare touched kubeadm-config; what to undo comes from the cluster.
  const touched = plans.some((p) => !p.error && [p.set, ...p.newer].some((s) => s?.kubeadmConfig));
  if (!touched) return plan;
  if (!kube) {
    plan.kubeadmConfigNote = 'no kubeconfig: kubeadm-config not rolled back; pass --kubeconfig';
    return plan;
  }
  const current = await readKubeadmConfig(kube);
  if (!current) {
    plan.kubeadmConfigNote = 'the cluster has no kube-system/kubeadm-config ConfigMap';
    return plan;
  }
  const record = current.prepareRecord === undefined ? undefined : parsePrepareRecord(current.prepareRecord);
  if (!record) {
    plan.kubeadmConfigNote = `kubeadm-config carries no usable record of prepare (annotation ${PREPARE_RECORD_ANNOTATION}): left as it is; a record on a host is not trusted for the cluster`;
    return plan;
  }
  const { after, notes } = planClusterConfiguration(record, current.clusterConfiguration);
  if (after !== current.clusterConfiguration) {
    plan.kubeadmConfig = {
      before: current.clusterConfiguration,
      after,
      resourceVersion: current.resourceVersion,
      notes,
    };
  } else if (notes.length > 0) {
    plan.kubeadmConfigNote = notes.join('; ');
  }
  return plan;
}

/**
 * The units to restart after this host's rollback, in the safe order: those whose files it writes,
 * and those running without what their files say (`stale`, already hard-way units or the kubelet).
 */
export function rollbackRestarts(
  files: readonly RollbackFile[],
  stale: readonly StaleProcess[] = [],
): UnitRestart[] {
  const layout: Layout =
    files.some((f) => f.file.kind === 'systemd-unit') || stale.some((s) => s.component !== 'kubelet')
      ? 'hard-way'
      : 'kubeadm';
  return unitsToRestart(layout, [
    ...files.map((f) => ({ component: f.file.component, changes: f.changes })),
    ...stale.map((s) => ({ component: s.component, changes: s.missing })),
  ]);
}

/**
 * Writes one host's planned rollback. Each file is checked again right before it is written: a file
 * that changed after the preview is not touched (the rollback of that host stops there).
 */
export async function writeRollback(plan: HostRollback): Promise<string[]> {
  const written: string[] = [];
  for (const f of plan.files) {
    const now = await plan.host.read(f.file.path);
    if (!(now === undefined ? f.current === undefined : f.current?.equals(now))) {
      throw new Error(`${f.file.path} changed since the preview; run the rollback again`);
    }
    if (f.next === undefined) {
      await plan.host.remove(f.file.path);
    } else {
      await plan.host.writeAtomic(f.file.path, f.next);
      const back = await plan.host.read(f.file.path);
      if (!back?.equals(f.next))
        throw new Error(`${plan.host.name}: ${f.file.path} did not read back as written`);
    }
    written.push(f.file.path);
  }
  return written;
}

/** Writes the planned rollback on every host, restarts what it changed, then kubeadm-config and /readyz. */
export async function applyRollback(
  plan: RollbackPlan,
  options: ApplyOptions & RestartOptions,
): Promise<ApplyResult> {
  const reports = await Promise.all(
    plan.hosts.map(async (h): Promise<HostReport> => {
      const report: HostReport = {
        host: h.host.name,
        versions: {},
        files: [],
        skips: [],
        restarted: false,
        restartedUnits: [],
        notes: [...h.notes],
        result: 'nothing to roll back',
        ...(h.set ? { backup: h.set.id } : {}),
      };
      if (h.error) return { ...report, result: 'failed', error: h.error };
      try {
        report.files = await writeRollback(h);
        const units = rollbackRestarts(h.files, h.stale);
        await restartOrNote(report, h.host, units, options.restart, options);
        if (h.files.length > 0 || report.restarted) report.result = 'rolled back';
      } catch (err) {
        report.result = 'failed';
        report.error = (err as Error).message;
      }
      return report;
    }),
  );
  const result: ApplyResult = { hosts: reports };
  // As prepare: kubeadm-config follows the host whose backup records it, not ahead of a failure there.
  const keeper = reports.find(
    (r, i) =>
      r.result === 'failed' &&
      [plan.hosts[i]?.set, ...(plan.hosts[i]?.newer ?? [])].some((s) => s?.kubeadmConfig),
  );
  if (plan.kubeadmConfig && options.kube && keeper) {
    result.kubeadmConfig = `not rolled back: ${(keeper.error ?? 'failed').replace(/\.$/, '')} (on ${keeper.host}, whose backup records kubeadm-config); fix that and run \`ccm cluster prepare --rollback\` again: it restarts what still runs without its files' flags and rolls kubeadm-config back`;
  } else if (plan.kubeadmConfig && options.kube) {
    try {
      await writeKubeadmConfig(
        options.kube,
        plan.kubeadmConfig.after,
        plan.kubeadmConfig.resourceVersion,
        null,
      );
      result.kubeadmConfig = 'rolled back';
    } catch (err) {
      result.kubeadmConfig = `not rolled back: ${(err as Error).message}`;
    }
  }
  if (plan.untaint.length > 0 && options.kube) {
    const nodes = createNodeClient(options.kube);
    result.untainted = [];
    for (const u of plan.untaint) {
      try {
        await nodes.patchNode(u.name, {
          metadata: { resourceVersion: u.resourceVersion },
          spec: { taints: u.taints },
        });
        result.untainted.push(u.name);
      } catch (err) {
        result.taints = `not removed from Node ${u.name}: ${(err as Error).message}`;
        break;
      }
    }
  }
  const controlPlane = plan.hosts.some((h) => h.files.some((f) => f.file.component !== 'kubelet'));
  if (options.kube && (controlPlane || reports.some((r) => r.restarted))) {
    try {
      result.readyAfterMs = await waitUntilReady(options.kube, { timeoutMs: options.readyTimeoutMs });
    } catch (err) {
      result.readyError = (err as Error).message;
    }
  }
  return result;
}
