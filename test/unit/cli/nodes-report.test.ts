/** The human summary line of `nodes init` (issue 6, item 11: plurals). */
import { describe, expect, it } from 'vitest';
import { formatNodesReport } from '../../../src/cli/nodes-report.js';

function result(total: number, kubeWrites: number, cloudCalls: number) {
  return {
    report: {
      provider: 'cloudlycke',
      dryRun: false,
      nodes: [],
      summary: { total, initialized: total, updated: 0, deleted: 0, unchanged: 0, skipped: 0, failed: 0 },
      cloudInstances: 1,
    },
    plans: [],
    kubeWrites,
    cloudCalls,
    durationMs: 1200,
  };
}

describe('formatNodesReport', () => {
  it('says "1 cloud call", "1 Kubernetes write", "1 Node" in the singular', () => {
    expect(formatNodesReport(result(1, 1, 1))).toContain(
      '1 Node: 1 initialized. 1 Kubernetes write, 1 cloud call, 1.2s.',
    );
  });

  it('and the plural otherwise', () => {
    expect(formatNodesReport(result(2, 0, 3))).toContain(
      '2 Nodes: 2 initialized. 0 Kubernetes writes, 3 cloud calls, 1.2s.',
    );
  });
});
