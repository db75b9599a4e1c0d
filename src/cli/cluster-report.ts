import chalk from 'chalk';
import { describeVersion } from '../cluster/detect.js';
import type { ClusterPlan, HostPlan, HostResult, StaleProcess } from '../cluster/prepare.js';
import { unifiedDiff } from '../cluster/preview.js';
import { describeChange } from '../cluster/restart.js';
import type { HostRollback, RollbackPlan } from '../cluster/rollback.js';
import type { Component, Detection } from '../cluster/types.js';
import { TAINT_UNINITIALIZED } from '../kube/well-known.js';
import type { ClusterPrepareOutput } from './cluster-prepare.js';
import { defineReport, type Report } from './output/report.js';
import { groupNotes, plural } from './output/text.js';

/** What `ccm cluster prepare` shows: the preview before anything is written, the summary after. */

export function printPreview(
  plan: ClusterPlan,
  candidates: string[],
  log: (line: string) => void,
  restart = true,
): void {
  for (const h of plan.hosts) {
    if (h.error) {
      log(chalk.red(`${h.host.name}: ${h.error}`));
      continue;
    }
    const d = h.detection as Detection;
    const components = [...new Set(d.files.map((f) => f.component))];
    log(chalk.bold(`${h.host.name}: ${d.layout}`));
    log(chalk.dim(`  ${components.map((c) => describeVersion(d, c)).join('; ')}`));
    for (const e of h.edits)
      log(
        unifiedDiff(hostPath(h.host.name, e.file.path), e.before.toString('utf8'), e.after.toString('utf8')),
      );
    for (const s of h.skips) log(chalk.yellow(`  skip ${s.component}: ${s.reason}`));
    for (const line of staleLines(h, restart)) log(chalk.yellow(`  ${line}`));
    for (const note of h.notes) log(chalk.yellow(`  ${note}`));
    if (h.edits.length === 0 && (h.stale.length === 0 || !restart)) log(chalk.dim('  nothing to change'));
  }
  if (plan.kubeadmConfig) {
    log(kubeadmConfigDiff(plan.kubeadmConfig));
    for (const s of plan.kubeadmConfig.skips)
      log(chalk.yellow(`  kubeadm-config, ${s.component}: ${s.reason}`));
  } else if (plan.kubeadmConfigNote) {
    log(chalk.dim(plan.kubeadmConfigNote));
  }
  if (candidates.length > 0) {
    const one = candidates.length === 1;
    log(
      `--initialize-existing: ${plural(candidates.length, ['Node', 'Nodes'])} without a provider ID ${one ? 'gets' : 'get'} the ${TAINT_UNINITIALIZED} taint, so \`ccm nodes init\` initialises ${one ? 'it' : 'them'} (the kubelet only taints Nodes it registers): ${candidates.join(', ')}`,
    );
  }
}

/** Units whose running process lacks their files' flags: restarted, or left so with --no-restart. */
function staleLines(h: { stale: readonly StaleProcess[] }, restart: boolean): string[] {
  return h.stale.map((s) => {
    const lacks =
      s.pid === 0
        ? 'it is not running'
        : `its running process (pid ${s.pid}) lacks ${s.missing.map(describeChange).join(', ')}, which its files have`;
    return restart
      ? `restart ${s.component}: ${lacks}`
      : `${s.component} not restarted (--no-restart): ${lacks}`;
  });
}

/** The rollback's preview: per host the set it reverts to, the diffs, and what it leaves alone. */
export function printRollbackPreview(plan: RollbackPlan, log: (line: string) => void, restart = true): void {
  for (const h of plan.hosts) {
    if (h.error) {
      log(chalk.red(`${h.host.name}: ${h.error}`));
      continue;
    }
    log(
      chalk.bold(`${h.host.name}: ${h.set ? `rollback to backup ${h.set.id}` : 'no backup to roll back to'}`),
    );
    if (h.newer.length > 0) {
      const n = h.newer.length;
      log(
        chalk.dim(
          `  ${plural(n, ['newer backup holds', 'newer backups hold'])} no file, only what prepare recorded for the cluster: ${h.newer.map((s) => s.id).join(', ')}`,
        ),
      );
    }
    for (const f of h.files) {
      log(
        unifiedDiff(
          hostPath(h.host.name, f.file.path),
          f.current?.toString('utf8') ?? '',
          f.next?.toString('utf8') ?? '',
        ),
      );
    }
    for (const line of staleLines(h, restart)) log(chalk.yellow(`  ${line}`));
    for (const note of h.notes) log(chalk.yellow(`  ${note}`));
    if (h.set && h.files.length === 0 && (h.stale.length === 0 || !restart))
      log(chalk.dim('  nothing to roll back'));
  }
  if (plan.kubeadmConfig) {
    log(kubeadmConfigDiff(plan.kubeadmConfig));
    for (const note of plan.kubeadmConfig.notes) log(chalk.yellow(`  ${note}`));
  } else if (plan.kubeadmConfigNote) {
    log(chalk.dim(plan.kubeadmConfigNote));
  }
  if (plan.untaint.length > 0) {
    log(
      `the ${TAINT_UNINITIALIZED} taint prepare added comes off ${plural(plan.untaint.length, ['Node', 'Nodes'])}: ${plan.untaint.map((u) => u.name).join(', ')}`,
    );
  }
  for (const note of plan.taintNotes) log(chalk.yellow(note));
}

/** A file as the diffs name it: the path alone on this machine, `host:path` over ssh. */
const hostPath = (host: string, path: string) => `${host === 'local' ? '' : `${host}:`}${path}`;

const kubeadmConfigDiff = (change: { before: string; after: string }) =>
  unifiedDiff('ConfigMap kube-system/kubeadm-config ClusterConfiguration', change.before, change.after);

export function order(plan: ClusterPlan, host: string): number {
  return plan.hosts.findIndex((h) => h.host.name === host);
}

/** One host in the result table: from the apply (or rollback) when there was one, else from the plan. */
export interface HostRow {
  host: string;
  layout?: string;
  result: HostResult | 'would prepare' | 'would roll back';
  files: string[];
  /** The units restarted, in order. */
  restartedUnits: string[];
  skips: string[];
  /** What the operator should know that is not a failure (units left to restart, files changed since). */
  notes: string[];
  versions: Partial<Record<Component, string>>;
  backup?: string;
  error?: string;
}

/**
 * A host as -o json, yaml and custom-columns show it: named `name`, as every report's rows are
 * (docs/output.md); `host`, its name before, stays for the scripts that read it.
 */
export type HostReportRow = { name: string } & HostRow;

const UNCHANGED = new Set<HostRow['result']>(['unchanged', 'nothing to roll back']);

/** kubeadm-config outcomes that belong in the summary line; any other is a note. */
const KUBEADM_CONFIG_DONE = new Set(['updated', 'rolled back']);

/** `ccm cluster prepare`'s result (prepare or --rollback): the JSON report scripts read, and its table. */
export function clusterPrepareReport(out: ClusterPrepareOutput): Report<HostReportRow> {
  const { plan, rollbackPlan, restart = true, ...rest } = out;
  const rows: HostReportRow[] = (
    out.result?.hosts ??
    plan?.hosts.map((h) => fromPlan(h, out.dryRun, restart)) ??
    rollbackPlan?.hosts.map((h) => fromRollbackPlan(h, out.dryRun, restart)) ??
    []
  ).map((h) => ({ name: h.host, ...h }));
  const r = out.result;
  const counts = new Map<string, number>();
  for (const row of rows) counts.set(row.result, (counts.get(row.result) ?? 0) + 1);
  const parts = [
    `${plural(rows.length, NOUN)}${counts.size > 0 ? `: ${[...counts].map(([k, n]) => `${n} ${k}`).join(', ')}` : ''}`,
    ...(!out.dryRun && !r ? [rollbackPlan ? 'nothing written' : 'nothing to change'] : []),
    ...(r?.kubeadmConfig && KUBEADM_CONFIG_DONE.has(r.kubeadmConfig)
      ? [`kubeadm-config ${r.kubeadmConfig}`]
      : []),
    ...(r?.untainted?.length ? [`taint removed from ${plural(r.untainted.length, ['Node', 'Nodes'])}`] : []),
    ...(r?.readyAfterMs !== undefined
      ? [`API server ready (/readyz) after ${(r.readyAfterMs / 1000).toFixed(1)}s`]
      : []),
  ];
  const notes = groupNotes(
    rows.flatMap((row) => row.notes.map((note) => ({ name: row.host, note }))),
    NOUN,
  );
  if (r?.kubeadmConfig && !KUBEADM_CONFIG_DONE.has(r.kubeadmConfig)) {
    notes.push(`kubeadm-config: ${r.kubeadmConfig}`);
  }
  if (r?.taints)
    notes.push(`${rollbackPlan ? `${TAINT_UNINITIALIZED} taint` : 'existing Nodes'} ${r.taints}`);
  if (rollbackPlan) notes.push(...rollbackPlan.taintNotes);
  if (out.initializeExisting?.length && !out.dryRun) {
    const n = out.initializeExisting.length;
    notes.push(
      `${plural(n, ['existing Node', 'existing Nodes'])} tainted ${TAINT_UNINITIALIZED}: run \`ccm nodes init\` to initialise ${n === 1 ? 'it' : 'them'}.`,
    );
  }
  if (out.uninitialisedExisting?.length) {
    const n = out.uninitialisedExisting.length;
    notes.push(
      `${plural(n, ['existing Node has', 'existing Nodes have'])} no provider ID and the kubelet will not taint ${n === 1 ? 'it' : 'them'} again, so \`ccm nodes init\` leaves ${n === 1 ? 'it' : 'them'} alone: re-run with --initialize-existing to have ${n === 1 ? 'it' : 'them'} initialised.`,
    );
  }
  return defineReport<HostReportRow>({
    data: {
      ...rest,
      ...(rollbackPlan
        ? {
            rollback: rollbackPlan.hosts.map((h) => ({
              name: h.host.name,
              host: h.host.name,
              backup: h.set?.id,
              files: h.files.map((f) => ({ path: f.file.path, how: f.how })),
              // units running without what their files say (restarted unless --no-restart)
              stale: h.stale,
              notes: h.notes,
              error: h.error,
            })),
            ...(rollbackPlan.untaint.length > 0 ? { untaint: rollbackPlan.untaint.map((u) => u.name) } : {}),
          }
        : {}),
      hosts: plan?.hosts.map((h) => ({
        name: h.host.name,
        host: h.host.name,
        layout: h.detection?.layout,
        files: h.edits.map((e) => ({ path: e.file.path, changes: e.changes })),
        skips: h.skips,
        // units whose running process lacks what their files say (restarted unless --no-restart)
        stale: h.stale,
        notes: h.notes,
        error: h.error,
      })),
    },
    kind: 'host',
    noun: NOUN,
    rows,
    name: (h) => h.host,
    tone: (h) => (h.result === 'failed' ? 'failed' : UNCHANGED.has(h.result) ? 'unchanged' : 'changed'),
    columns: [
      { header: 'HOST', value: (h) => h.host, give: 'last' },
      { header: 'LAYOUT', value: (h) => h.layout },
      { header: 'RESULT', value: (h) => h.result, toned: true, give: 'last' },
      { header: 'FILES', value: (h) => String(h.files.length) },
      { header: 'RESTARTED', value: (h) => h.restartedUnits.join(',') },
      {
        header: 'NOTES',
        value: (h) => h.error ?? (h.skips.join('; ') || (h.backup ? `backup ${h.backup}` : '')),
        blank: '',
        give: 'first',
        wideBelow: { label: 'notes' },
      },
      {
        header: 'VERSIONS',
        value: (h) =>
          Object.entries(h.versions)
            .map(([c, v]) => `${c} ${v}`)
            .join(', '),
        wide: true,
      },
      { header: 'BACKUP', value: (h) => h.backup, wide: true },
      {
        header: 'PATHS',
        value: (h) => h.files.join(', '),
        wide: true,
        blank: '',
        give: 'first',
        wideBelow: { label: 'paths' },
      },
    ],
    summary: `${out.dryRun ? 'Dry run: nothing written. ' : ''}${parts.join('; ')}`,
    notes,
    errors: r?.readyError ? [r.readyError] : [],
    failed: out.failed,
  });
}

const NOUN = ['host', 'hosts'] as const;

function fromPlan(h: HostPlan, dryRun: boolean, restart: boolean): HostRow {
  const versions: Partial<Record<Component, string>> = {};
  for (const [c, v] of Object.entries(h.detection?.versions ?? {})) {
    versions[c as Component] = `${v.major}.${v.minor}.${v.patch}`;
  }
  const changes = h.edits.length > 0 || (restart && h.stale.length > 0);
  return {
    host: h.host.name,
    layout: h.detection?.layout,
    result: h.error ? 'failed' : changes && dryRun ? 'would prepare' : 'unchanged',
    files: h.edits.map((e) => e.file.path),
    restartedUnits: [],
    skips: h.skips.map((s) => `${s.component}: ${s.reason}`),
    notes: [...staleLines(h, restart), ...h.notes],
    versions,
    error: h.error,
  };
}

function fromRollbackPlan(h: HostRollback, dryRun: boolean, restart: boolean): HostRow {
  const changes = h.files.length > 0 || (restart && h.stale.length > 0);
  return {
    host: h.host.name,
    result: h.error
      ? 'failed'
      : changes && dryRun
        ? 'would roll back'
        : changes
          ? 'rolled back'
          : 'nothing to roll back',
    files: h.files.map((f) => f.file.path),
    restartedUnits: [],
    skips: [],
    notes: [...staleLines(h, restart), ...h.notes],
    versions: {},
    ...(h.set ? { backup: h.set.id } : {}),
    error: h.error,
  };
}
