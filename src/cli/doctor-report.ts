import type { DoctorResult } from './doctor.js';
import type { CheckResult, CheckStatus } from './doctor-checks.js';
import { defineReport, type Report, type Tone } from './output/report.js';
import { plural } from './output/text.js';

const MARK: Record<CheckStatus, string> = { pass: '✓', fail: '✗', warn: '!' };
const TONE: Record<CheckStatus, Tone> = { pass: 'ok', fail: 'failed', warn: 'warning' };

/** A check as -o json, yaml and custom-columns show it: named `name`, as every report's rows are. */
export type CheckRow = { name: string } & CheckResult;

/**
 * `ccm doctor`: one row per check (✓ / ✗ / !), with its fix; exit 1 when any check failed. Each row
 * is named `name` (docs/output.md); `id`, its name before, stays for the scripts that read it.
 */
export function doctorReport(result: DoctorResult): Report<CheckRow> {
  const passed = result.checks.length - result.failed - result.warnings;
  const checks: CheckRow[] = result.checks.map((c) => ({ name: c.id, ...c }));
  return defineReport<CheckRow>({
    data: { ...result, checks },
    kind: 'check',
    noun: ['check', 'checks'],
    rows: checks,
    // In the order docs/troubleshooting.md's table explains them (failures still come last).
    keepOrder: true,
    name: (c) => c.id,
    // The checks that need care, for `xargs`: a passed check is nothing to act on.
    named: (c) => c.status !== 'pass',
    tone: (c) => TONE[c.status],
    columns: [
      {
        header: ' ',
        key: 'status',
        value: (c) => MARK[c.status],
        logValue: (c) => c.status,
        toned: true,
        give: 'last',
      },
      { header: 'CHECK', value: (c) => c.id, give: 'last' },
      { header: 'RESULT', value: (c) => c.message, give: 'first' },
      // Under a failed or warned row, whole: as a column it was cut, or wrapped every line with -o wide.
      { header: 'FIX', value: (c) => c.fix, below: { label: 'fix' } },
    ],
    summary: `${plural(result.checks.length, ['check', 'checks'])}: ${passed} passed, ${result.failed} failed, ${plural(result.warnings, 'warning')}`,
    failed: result.failed > 0,
  });
}
