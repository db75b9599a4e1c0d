import chalk from 'chalk';
import { describeVersion } from '../cluster/detect.js';
import type { ClusterPlan, HostReport } from '../cluster/prepare.js';
import { unifiedDiff } from '../cluster/preview.js';
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

export function order(plan: ClusterPlan, host: string): number {
  return plan.hosts.findIndex((h) => h.host.name === host);
}

export function formatSummary(out: ClusterPrepareOutput): string {
  const rows = out.result?.hosts ?? [];
  const lines =
    rows.length > 0 ? hostTable(rows) : [out.dryRun ? 'Dry run: nothing written.' : 'Nothing to change.'];
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
  const table = [['HOST', 'LAYOUT', 'RESULT', 'FILES', 'KUBELET', 'NOTES']];
  for (const r of rows) {
    table.push([
      r.host,
      r.layout ?? '-',
      r.result,
      String(r.files.length),
      r.restarted ? 'restarted' : '-',
      r.error ?? (r.skips.join('; ') || (r.backup ? `backup ${r.backup}` : '')),
    ]);
  }
  const widths = table[0]?.map((_, i) => Math.max(...table.map((row) => (row[i] ?? '').length))) ?? [];
  return table.map((row) =>
    row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  '),
  );
}
