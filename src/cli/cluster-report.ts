import chalk from 'chalk';
import { describeVersion } from '../cluster/detect.js';
import type { ClusterPlan, HostReport } from '../cluster/prepare.js';
import { unifiedDiff } from '../cluster/preview.js';
import type { RollbackPlan } from '../cluster/rollback.js';
import type { Detection } from '../cluster/types.js';
import { TAINT_UNINITIALIZED } from '../kube/well-known.js';
import type { ClusterPrepareOutput } from './cluster-prepare.js';

/** What `ccm cluster prepare` shows: the preview before anything is written, the summary after. */

export function printPreview(plan: ClusterPlan, candidates: string[], log: (line: string) => void): void {
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
        unifiedDiff(
          `${h.host.name === 'local' ? '' : `${h.host.name}:`}${e.file.path}`,
          e.before.toString('utf8'),
          e.after.toString('utf8'),
        ),
      );
    for (const s of h.skips) log(chalk.yellow(`  skip ${s.component}: ${s.reason}`));
    if (h.edits.length === 0) log(chalk.dim('  nothing to change'));
  }
  if (plan.kubeadmConfig) {
    log(
      unifiedDiff(
        'ConfigMap kube-system/kubeadm-config ClusterConfiguration',
        plan.kubeadmConfig.before,
        plan.kubeadmConfig.after,
      ),
    );
    for (const s of plan.kubeadmConfig.skips)
      log(chalk.yellow(`  kubeadm-config, ${s.component}: ${s.reason}`));
  } else if (plan.kubeadmConfigNote) {
    log(chalk.dim(plan.kubeadmConfigNote));
  }
  if (candidates.length > 0) {
    log(
      `--initialize-existing: ${candidates.length} Node(s) without a provider ID get the ${TAINT_UNINITIALIZED} taint, so \`ccm nodes init\` initialises them (the kubelet only taints Nodes it registers): ${candidates.join(', ')}`,
    );
  }
}

/** The rollback's preview: per host the set it reverts to, the diffs, and what it leaves alone. */
export function printRollbackPreview(plan: RollbackPlan, log: (line: string) => void): void {
  for (const h of plan.hosts) {
    if (h.error) {
      log(chalk.red(`${h.host.name}: ${h.error}`));
      continue;
    }
    log(
      chalk.bold(`${h.host.name}: ${h.set ? `rollback to backup ${h.set.id}` : 'no backup to roll back to'}`),
    );
    const prefix = h.host.name === 'local' ? '' : `${h.host.name}:`;
    for (const f of h.files) {
      log(
        unifiedDiff(
          `${prefix}${f.file.path}`,
          f.current?.toString('utf8') ?? '',
          f.next?.toString('utf8') ?? '',
        ),
      );
    }
    for (const note of h.notes) log(chalk.yellow(`  ${note}`));
    if (h.set && h.files.length === 0) log(chalk.dim('  nothing to roll back'));
  }
  if (plan.kubeadmConfig) {
    log(
      unifiedDiff(
        'ConfigMap kube-system/kubeadm-config ClusterConfiguration',
        plan.kubeadmConfig.before,
        plan.kubeadmConfig.after,
      ),
    );
    for (const note of plan.kubeadmConfig.notes) log(chalk.yellow(`  ${note}`));
  } else if (plan.kubeadmConfigNote) {
    log(chalk.dim(plan.kubeadmConfigNote));
  }
}

export function order(plan: ClusterPlan, host: string): number {
  return plan.hosts.findIndex((h) => h.host.name === host);
}

export function formatSummary(out: ClusterPrepareOutput): string {
  const rows = out.result?.hosts ?? [];
  const lines =
    rows.length > 0 ? hostTable(rows) : [out.dryRun ? 'Dry run: nothing written.' : 'Nothing to change.'];
  for (const row of rows) for (const note of row.notes) lines.push(chalk.yellow(`${row.host}: ${note}`));
  const r = out.result;
  if (r?.kubeadmConfig) lines.push(`kubeadm-config: ${r.kubeadmConfig}`);
  if (r?.readyAfterMs !== undefined) {
    lines.push(`API server ready (/readyz) after ${(r.readyAfterMs / 1000).toFixed(1)}s`);
  }
  if (r?.readyError) lines.push(chalk.red(r.readyError));
  if (out.initializeExisting?.length && !out.dryRun) {
    lines.push(
      `${out.initializeExisting.length} existing Node(s) tainted ${TAINT_UNINITIALIZED}: run \`ccm nodes init\` to initialise them.`,
    );
  }
  if (out.uninitialisedExisting?.length) {
    lines.push(
      `${out.uninitialisedExisting.length} existing Node(s) have no provider ID and the kubelet will not taint them again, so \`ccm nodes init\` leaves them alone: re-run with --initialize-existing to have them initialised.`,
    );
  }
  return lines.join('\n');
}

function hostTable(rows: HostReport[]): string[] {
  const table = [['HOST', 'LAYOUT', 'RESULT', 'FILES', 'RESTARTED', 'NOTES']];
  for (const r of rows) {
    table.push([
      r.host,
      r.layout ?? '-',
      r.result,
      String(r.files.length),
      r.restartedUnits.join(',') || '-',
      r.error ?? (r.skips.join('; ') || (r.backup ? `backup ${r.backup}` : '')),
    ]);
  }
  const widths = table[0]?.map((_, i) => Math.max(...table.map((row) => (row[i] ?? '').length))) ?? [];
  return table.map((row) =>
    row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  '),
  );
}
