/** Flag errors name what is allowed (issue 6, item 11). */
import { Parser } from '@oclif/core';
import { describe, expect, it } from 'vitest';
import { integerInRange } from '../../../src/cli/base-command.js';
import { oneLine } from '../../../src/cli/errors.js';

const concurrency = integerInRange({ description: 'Nodes written in parallel', min: 1, max: 256 })({
  default: 32,
});

async function parseError(argv: string[]): Promise<string> {
  try {
    await Parser.parse(argv, { flags: { concurrency } });
  } catch (err) {
    return oneLine(err);
  }
  throw new Error('expected a parse error');
}

describe('integerInRange', () => {
  it('says the allowed range in one line for 0, 257 and a non-number', async () => {
    expect(await parseError(['--concurrency', '0'])).toBe(
      '--concurrency: expected a whole number from 1 to 256, got "0"',
    );
    expect(await parseError(['--concurrency', '257'])).toContain('from 1 to 256, got "257"');
    expect(await parseError(['--concurrency', '2.5'])).toContain('from 1 to 256, got "2.5"');
  });

  it('accepts the range and keeps the default', async () => {
    expect((await Parser.parse(['--concurrency', '256'], { flags: { concurrency } })).flags.concurrency).toBe(
      256,
    );
    expect((await Parser.parse([], { flags: { concurrency } })).flags.concurrency).toBe(32);
  });
});
