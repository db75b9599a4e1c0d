/** `ccm doctor`'s table and data: the fix under its row, whole; lists whole in -o json. */
import { describe, expect, it } from 'vitest';
import { checkProviderIDs } from '../../../src/cli/doctor-checks.js';
import { doctorReport } from '../../../src/cli/doctor-report.js';
import { render, type Terminal } from '../../../src/cli/output/render.js';
import { widthOf } from '../../../src/cli/output/text.js';
import type { SlimNode } from '../../../src/kube/slim-node.js';

const terminal: Terminal = { tty: true, width: 120, height: 40, colour: 0 };
const nodes = Array.from(
  { length: 14 },
  (_, i) => ({ metadata: { name: `worker-${i + 1}` }, spec: {} }) as SlimNode,
);

function result() {
  const checks = [
    { id: 'kubeconfig', status: 'pass' as const, message: 'the API server at https://10.0.0.1:6443 answers' },
    checkProviderIDs(nodes),
  ];
  return { checks, failed: 1, warnings: 0 };
}

describe('ccm doctor output', () => {
  it('table at 120 columns: each row one line, the fix whole on the lines under a failed row', async () => {
    const text = await render(doctorReport(result()), 'table', terminal);
    const lines = text.split('\n');
    for (const line of lines) expect(widthOf(line), line).toBeLessThanOrEqual(120);
    const row = lines.findIndex((l) => l.startsWith('✗'));
    expect(lines[row]).toMatch(/^✗ +provider-id +14 Node\(s\) without a provider ID/);
    const fix = lines
      .slice(row + 1)
      .map((l) => l.trim())
      .join(' ');
    expect(fix).toBe(
      'fix: the cloud controller sets it from the instance of the same name (`ccm nodes list` says why it cannot), or start the kubelet with --provider-id',
    );
  });

  it('-o wide: no line wraps a fix onto the passed rows', async () => {
    const text = await render(doctorReport(result()), 'wide', terminal);
    expect(text.split('\n').find((l) => l.startsWith('✓'))).toMatch(/answers$/);
  });

  it('-o json: the message shortens a long list, the items keep it whole', async () => {
    const json = JSON.parse(await render(doctorReport(result()), 'json', terminal));
    const check = json.checks.find((c: { id: string }) => c.id === 'provider-id');
    expect(check.message).toContain('and 9 more');
    expect(check.items).toHaveLength(14);
    expect(check.items.at(-1)).toBe('worker-14');
  });
});
