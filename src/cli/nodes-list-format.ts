import type { NodesListResult } from './nodes-list.js';
import { age, formatTable } from './table.js';

/** The table of `ccm nodes list` (`wide` adds provider ID, instance type and zone), then what to do. */
export function formatNodesList(result: NodesListResult, wide: boolean): string {
  const headers = wide
    ? [
        'NODE',
        'PROVIDER-ID',
        'INSTANCE',
        'STATE',
        'TYPE',
        'ZONE',
        'INITIALISED',
        'TAINTED',
        'STATUS',
        'REASON',
        'FIX',
      ]
    : ['NODE', 'INSTANCE', 'STATE', 'INITIALISED', 'TAINTED', 'STATUS', 'REASON'];
  const rows = result.nodes.map((n) => {
    const cells = {
      node: n.node,
      providerID: n.providerID || '<none>',
      instance: n.instance?.name ?? '<none>',
      state: n.instance?.state ?? '-',
      type: n.instance?.type || '-',
      zone: n.instance?.zone || '-',
      initialised: n.initialized ? 'yes' : 'no',
      tainted: n.taintAgeSeconds !== undefined ? age(n.taintAgeSeconds) : '-',
      status: n.status,
      reason: n.reason ?? '',
      fix: n.fix ?? '',
    };
    return wide
      ? [
          cells.node,
          cells.providerID,
          cells.instance,
          cells.state,
          cells.type,
          cells.zone,
          cells.initialised,
          cells.tainted,
          cells.status,
          cells.reason,
          cells.fix,
        ]
      : [
          cells.node,
          cells.instance,
          cells.state,
          cells.initialised,
          cells.tainted,
          cells.status,
          cells.reason,
        ];
  });
  const lines = [formatTable(headers, rows)];
  if (!wide) {
    const fixes = result.nodes.filter((n) => n.fix);
    if (fixes.length > 0) lines.push('', 'Fix:');
    for (const n of fixes) lines.push(`  ${n.node}: ${n.fix}`);
  }
  if (result.orphans) {
    lines.push('', `Cloud instances no Node claims: ${result.orphans.length}`);
    if (result.orphans.length > 0) {
      lines.push(
        formatTable(
          ['INSTANCE', 'PROVIDER-ID', 'STATE', 'TYPE', 'ZONE'],
          result.orphans.map((o) => [o.name, o.providerID, o.state, o.type || '-', o.zone || '-']),
        ),
      );
    }
  }
  if (result.listingError) lines.push('', result.listingError);
  return lines.join('\n');
}
