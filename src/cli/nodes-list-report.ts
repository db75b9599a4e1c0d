import { age } from './age.js';
import type { NodeRow, NodeStatus, NodesListResult } from './nodes-list.js';
import { credentialsNote } from './nodes-report.js';
import { defineReport, type Report, type Tone } from './output/report.js';
import { grouped, plural } from './output/text.js';

const NOUN = ['Node', 'Nodes'] as const;

const TONE: Record<NodeStatus, Tone> = {
  ok: 'ok',
  // Another cloud's Node: listed, as every Node is, but nothing to do here.
  skipped: 'ok',
  pending: 'warning',
  stale: 'warning',
  unknown: 'warning',
  failed: 'failed',
};

const ORDER: NodeStatus[] = ['ok', 'pending', 'stale', 'unknown', 'failed', 'skipped'];

/** `ccm nodes list`: every Node is a row (a listing, not a change: nothing is hidden as unchanged). */
export function nodesListReport(result: NodesListResult): Report<NodeRow> {
  const counts = ORDER.map((s) => [s, result.nodes.filter((n) => n.status === s).length] as const)
    .filter(([, n]) => n > 0)
    .map(([s, n]) => `${grouped(n)} ${s}`);
  const summary =
    `${plural(result.nodes.length, NOUN)}${counts.length > 0 ? `: ${counts.join(', ')}` : ''}; ` +
    `${plural(result.cloudInstances, `${result.provider} instance`)}, ` +
    `${plural(result.kubeReads, 'Kubernetes read')}, ${plural(result.cloudCalls, 'cloud call')}, ` +
    `${(result.durationMs / 1000).toFixed(1)}s${credentialsNote(result.credentials)}`;
  const orphans = result.orphans
    ? [
        `Cloud instances no Node claims: ${result.orphans.length}${result.orphans.length > 0 ? ':' : ''}`,
        ...result.orphans.map(
          (o) => `  ${o.name} ${o.providerID} (${o.state}${o.type ? `, ${o.type}` : ''})`,
        ),
      ]
    : [];
  return defineReport<NodeRow>({
    data: result,
    kind: 'node',
    noun: NOUN,
    rows: result.nodes,
    name: (n) => n.name,
    tone: (n) => TONE[n.status],
    columns: [
      { header: 'NODE', value: (n) => n.name, give: 'last' },
      { header: 'PROVIDER ID', key: 'providerID', value: (n) => n.providerID, blank: '<none>', wide: true },
      { header: 'INSTANCE', value: (n) => n.instance?.name, blank: '<none>' },
      { header: 'STATE', value: (n) => n.instance?.state },
      { header: 'TYPE', value: (n) => n.instance?.type, wide: true },
      { header: 'ZONE', value: (n) => n.instance?.zone, wide: true },
      { header: 'INITIALISED', value: (n) => (n.initialized ? 'yes' : 'no') },
      {
        header: 'TAINTED FOR',
        key: 'tainted_for',
        value: (n) => (n.taintAgeSeconds === undefined ? undefined : age(n.taintAgeSeconds)),
      },
      { header: 'STATUS', value: (n) => n.status, toned: true, give: 'last' },
      // -o wide cuts nothing: the two texts go under their row, as `nodes init -o wide`'s changes do.
      { header: 'REASON', value: (n) => n.reason, blank: '', give: 'first', wideBelow: { label: 'reason' } },
      { header: 'FIX', value: (n) => n.fix, blank: '', give: 'first', wideBelow: { label: 'fix' } },
    ],
    summary,
    notes: orphans,
    errors: result.listingError ? [result.listingError] : [],
    // The rows say which Nodes need care; a cloud listing that failed leaves them without a verdict.
    failed: result.listingError !== undefined,
  });
}
