/** Flag errors name what is allowed (issue 6, item 11). */
import { Parser } from '@oclif/core';
import { describe, expect, it } from 'vitest';
import { integerInRange, parseErrorText } from '../../../src/cli/base-command.js';
import { oneLine } from '../../../src/cli/errors.js';
import { parseBoolean } from '../../../src/cli/flag-values.js';

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

describe("oclif's other parse errors, in the one style (review 44, finding 10)", () => {
  const text = (message: string) =>
    parseErrorText(message, 'manifests', ['any-node', 'node-selector'], false);

  it('a flag without its value', () => {
    expect(text('Flag --output expects a value')).toBe('--output: expected a value, got nothing');
    expect(text('Flag --log-level expects one of these values: error, warn')).toBe(
      '--log-level: expected one of error, warn, got nothing',
    );
  });

  it('flags that exclude each other, and one that needs another', () => {
    expect(
      text(
        'The following errors occurred:\n  --node-selector=a=b cannot also be provided when using --any-node\nSee more help with --help',
      ),
    ).toBe('--node-selector and --any-node exclude each other; give one of them');
    expect(
      text(
        'The following errors occurred:\n  All of the following must be provided when using --tls-cert-file: --tls-private-key-file\nSee more help with --help',
      ),
    ).toBe('--tls-cert-file needs --tls-private-key-file as well');
  });
});

describe('parseBoolean', () => {
  it("takes what Go's ParseBool takes, in any case, and nothing else", () => {
    for (const yes of ['true', 'TRUE', 'True', 't', 'T', '1']) expect(parseBoolean(yes), yes).toBe(true);
    for (const no of ['false', 'FALSE', 'f', 'F', '0']) expect(parseBoolean(no), no).toBe(false);
    for (const bad of ['flase', 'yes', 'no', '', '2', ' true'])
      expect(parseBoolean(bad), bad).toBeUndefined();
  });
});
