import type { NodeReport, PassResult } from '../controllers/nodes-pass.js';
import type { PassHold } from '../controllers/pass-brake.js';
import { EXIT_HELD } from './errors.js';
import type { NodesInitResult } from './nodes-init.js';
import { defineReport, type Report, type Tone } from './output/report.js';
import { grouped, groupNotes, plural } from './output/text.js';

const NOUN = ['Node', 'Nodes'] as const;

const TONE: Record<PassResult, Tone> = {
  initialized: 'changed',
  updated: 'changed',
  deleted: 'warning',
  // Kept by --quiet, as failures are: the pass exits 3 for them.
  held: 'failed',
  waiting: 'warning',
  // Not compared with its instance: the listing failed (the report's error says why), not the Node.
  unknown: 'warning',
  failed: 'failed',
  unchanged: 'unchanged',
  // A Node of another cloud or of bare metal, left alone on every pass: counted, not listed.
  skipped: 'unchanged',
};

const ORDER: PassResult[] = [
  'initialized',
  'updated',
  'deleted',
  'waiting',
  'held',
  'unknown',
  'failed',
  'unchanged',
  'skipped',
];

const WOULD: Partial<Record<PassResult, string>> = {
  initialized: 'would initialize',
  updated: 'would update',
  deleted: 'would delete',
};

/** `ccm nodes init`'s result: the JSON report scripts and the CronJob read, and its table. */
export function nodesInitReport({
  report,
  kubeWrites,
  cloudCalls,
  durationMs,
  maxRssBytes,
  credentials,
}: Omit<NodesInitResult, 'plans'>): Report<NodeReport> {
  const resultWord = (r: PassResult) => (report.dryRun ? (WOULD[r] ?? r) : r);
  const changeTexts = (n: NodeReport) => n.changes.map((c) => (report.dryRun ? `would ${c}` : c));
  const s = report.summary;
  const leaving = report.instanceGroups ?? [];
  const counts = ORDER.filter((k) => s[k] > 0).map((k) => `${grouped(s[k])} ${resultWord(k)}`);
  const summary =
    `${report.dryRun ? 'Dry run, nothing written. ' : ''}${plural(s.total, NOUN)}` +
    `${counts.length > 0 ? `: ${counts.join(', ')}` : ''}; ` +
    `${plural(kubeWrites, 'Kubernetes write')}, ${plural(cloudCalls, 'cloud call')}, ${(durationMs / 1000).toFixed(1)}s` +
    credentialsNote(credentials);
  return defineReport<NodeReport>({
    data: { ...report, kubeWrites, cloudCalls, durationMs, maxRssBytes, credentials },
    kind: 'node',
    noun: NOUN,
    rows: report.nodes,
    name: (n) => n.name,
    tone: (n) => TONE[n.result],
    columns: [
      { header: 'NODE', value: (n) => n.name, give: 'last' },
      { header: 'RESULT', value: (n) => resultWord(n.result), toned: true, give: 'last' },
      { header: 'PROVIDER ID', key: 'providerID', value: (n) => n.providerID },
      { header: 'TYPE', value: (n) => n.instanceType },
      { header: 'ZONE', value: (n) => n.zone },
      { header: 'REASON', value: (n) => n.reason, blank: '', give: 'first', wideBelow: { label: 'reason' } },
      {
        header: 'CHANGES',
        value: (n) => changeTexts(n).join('; '),
        wide: true,
        // One change a line under its Node: at 120 columns a joined list wrapped over the table.
        below: { lines: changeTexts },
      },
    ],
    summary,
    notes: [
      ...groupNotes(
        report.nodes.flatMap((n) => (n.notes ?? []).map((note) => ({ name: n.name, note }))),
        NOUN,
      ),
      // Instances whose Node left: ccm's groups come off them (said, as a Node's changes are).
      ...leaving
        .filter((i) => !i.error)
        .map((i) => `instance ${i.providerID} (no Node): ${report.dryRun ? 'would ' : ''}${i.change}`),
    ],
    errors: [
      ...(report.listingError ? [report.listingError] : []),
      ...(report.hold ? [holdLine(report.hold)] : []),
      ...leaving
        .filter((i) => i.error)
        .map((i) => `instance ${i.providerID} (no Node): ${i.change}: ${i.error}`),
    ],
    // A pass whose cloud listing failed reconciled nothing that needs the cloud, even when every Node
    // was skipped: exit 1, so a CronJob's failed Job shows it.
    failed:
      s.failed > 0 ||
      report.listingError !== undefined ||
      report.hold !== undefined ||
      leaving.some((i) => i.error !== undefined),
    ...(report.hold ? { exitCode: EXIT_HELD } : {}),
  });
}

/** The hold in one line: what, why, and the one command that releases it. */
export function holdLine(hold: PassHold): string {
  return `deletion held (hold ${hold.id}, ${plural(hold.count, NOUN)}): ${hold.reason}; if \`ccm nodes list\` shows their instances are really gone, release it: ${hold.release}`;
}

/** The summary's word on the credentials: named when a Secret was read, which the user may not have typed. */
export function credentialsNote(credentials: string): string {
  return credentials.startsWith('Secret ') ? `; credentials from ${credentials}` : '';
}
