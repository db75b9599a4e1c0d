import chalk from 'chalk';
import type { NodeResult } from '../controllers/nodes-pass.js';
import type { NodesInitResult } from './nodes-init.js';

const COLOURS: Record<NodeResult, (s: string) => string> = {
  initialized: chalk.green,
  updated: chalk.green,
  deleted: chalk.yellow,
  unchanged: chalk.dim,
  skipped: chalk.dim,
  failed: chalk.red,
};

/** "1 cloud call", "2 cloud calls". */
function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** Human-readable lines for a nodes pass: every Node that changes, fails or is noted, then a summary. */
export function formatNodesReport({ report, kubeWrites, cloudCalls, durationMs }: NodesInitResult): string {
  const lines: string[] = [];
  const verb = report.dryRun ? 'would ' : '';
  for (const node of report.nodes) {
    if (node.result === 'unchanged' && !node.notes) continue;
    const colour = COLOURS[node.result];
    const what = node.changes.length > 0 ? `: ${verb}${node.changes.join('; ')}` : '';
    const why = node.reason ? ` (${node.reason})` : '';
    lines.push(`${colour(node.result.padEnd(11))} ${node.name}${what}${why}`);
    for (const note of node.notes ?? []) lines.push(`${' '.repeat(12)}${chalk.dim(`note: ${note}`)}`);
  }
  const s = report.summary;
  const counts = (['initialized', 'updated', 'deleted', 'unchanged', 'skipped', 'failed'] as const)
    .filter((k) => s[k] > 0)
    .map((k) => `${s[k]} ${k}`)
    .join(', ');
  lines.push(
    `${report.dryRun ? 'Dry run, nothing written. ' : ''}${count(s.total, 'Node')}: ${counts || 'none'}. ` +
      `${count(kubeWrites, 'Kubernetes write')}, ${count(cloudCalls, 'cloud call')}, ${(durationMs / 1000).toFixed(1)}s.`,
  );
  if (report.listingError) lines.push(chalk.red(report.listingError));
  return lines.join('\n');
}
