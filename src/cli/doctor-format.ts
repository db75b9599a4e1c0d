import chalk from 'chalk';
import type { DoctorResult } from './doctor.js';
import type { CheckStatus } from './doctor-checks.js';

const MARKS: Record<CheckStatus, string> = {
  pass: chalk.green('✓'),
  fail: chalk.red('✗'),
  warn: chalk.yellow('!'),
};

/** One line per check (✓ / ✗ / !), the fix indented under each failure or warning, then a summary. */
export function formatDoctor(result: DoctorResult): string {
  const lines: string[] = [];
  for (const check of result.checks) {
    lines.push(`${MARKS[check.status]} ${check.message}`);
    if (check.fix) lines.push(`    fix: ${check.fix}`);
  }
  const passed = result.checks.length - result.failed - result.warnings;
  lines.push(`${passed} passed, ${result.failed} failed, ${result.warnings} warning(s).`);
  return lines.join('\n');
}
