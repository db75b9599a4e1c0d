/** `ccm run`'s lines for a person at a terminal: what a record quotes cannot drive the terminal. */
import { describe, expect, it } from 'vitest';
import { terminalLine } from '../../../src/cli/log.js';

describe('terminalLine', () => {
  it("removes the escape sequences and line breaks of a record's message, controller and Node", () => {
    const hostile = '\u001b]0;x\u0007\u001b[2J\u001b[1A\u009b2J\nFORGED';
    const line = terminalLine(
      JSON.stringify({
        level: 40,
        time: 0,
        msg: `annotation says ${hostile}`,
        controller: 'service',
        node: `n${hostile}`,
      }),
    );
    // biome-ignore lint/suspicious/noControlCharactersInRegex: chalk's own colour, which stays
    const text = line.replace(/\u001b\[[0-9;]*m/g, '');
    // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
    expect(text.slice(0, -1)).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    expect(text).toMatch(/annotation says .*FORGED\n$/);
  });
});
