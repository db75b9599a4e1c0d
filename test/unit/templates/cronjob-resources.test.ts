/**
 * The CronJob's memory follows the measured peak (issue 6, item 11): the limit holds the largest max
 * RSS of the README's benchmark table with 20% to spare, and the request holds the 1,000-Node peak.
 * A new benchmark that outgrows the template fails here.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

const root = (path: string) => fileURLToPath(new URL(`../../../${path}`, import.meta.url));

function bytes(quantity: string): number {
  const m = /^(\d+)(Mi|Gi)$/.exec(quantity);
  if (!m) throw new Error(`unexpected quantity ${quantity}`);
  return Number(m[1]) * (m[2] === 'Gi' ? 1024 ** 3 : 1024 ** 2);
}

/** Max RSS (bytes) per row of the benchmark table, by Node count. */
function measuredPeaks(): Array<{ nodes: number; rss: number }> {
  const readme = readFileSync(root('README.md'), 'utf8');
  const table = readme.slice(readme.indexOf('<!-- bench -->'), readme.indexOf('<!-- benchstop -->'));
  return table
    .split('\n')
    .map((line) => /^\| [^|]+ \| ([\d,]+) \|.*\| (\d+) MB \|$/.exec(line))
    .filter((m) => m !== null)
    .map((m) => ({ nodes: Number(m[1]?.replaceAll(',', '')), rss: Number(m[2]) * 1e6 }));
}

describe('the nodes-init CronJob memory', () => {
  const docs = parseAllDocuments(readFileSync(root('templates/cloudlycke/nodes-init-cronjob.yaml'), 'utf8'));
  const cronjob = docs.map((d) => d.toJS()).find((d) => d?.kind === 'CronJob');
  const resources = cronjob.spec.jobTemplate.spec.template.spec.containers[0].resources;
  const peaks = measuredPeaks();

  it('has a limit above the largest measured peak, with 20% headroom', () => {
    expect(peaks.length).toBeGreaterThan(0);
    const largest = Math.max(...peaks.map((p) => p.rss));
    expect(bytes(resources.limits.memory)).toBeGreaterThanOrEqual(largest * 1.2);
  });

  it('requests at least the 1,000-Node peak', () => {
    const thousand = Math.max(...peaks.filter((p) => p.nodes === 1000).map((p) => p.rss));
    expect(bytes(resources.requests.memory)).toBeGreaterThanOrEqual(thousand);
  });
});
