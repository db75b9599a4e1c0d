/**
 * The EXAMPLES of every command's help fit 80 columns, as oclif wraps the rest of the help: a long
 * example goes on with ` \` on the next line, broken before a flag, so that the terminal never cuts
 * it inside a word. Read in a real terminal (tmux) of 80 columns: `capture-pane -J` joins only the
 * lines the terminal itself wrapped. So does each command's summary, the help's first line, which oclif
 * prints as it is (review 44).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { Terminal } from '../helpers/terminal.js';

const WIDTH = 80;
const manifest = JSON.parse(
  readFileSync(fileURLToPath(new URL('../../oclif.manifest.json', import.meta.url)), 'utf8'),
) as { commands: Record<string, { examples?: string[]; summary?: string }> };
const withExamples = Object.entries(manifest.commands)
  .filter(([, c]) => (c.examples ?? []).length > 0)
  .map(([id]) => id.replaceAll(':', ' '));

it.each(withExamples)(
  'ccm %s -h: every example fits 80 columns, a long one continued with \\',
  async (command) => {
    const terminal = await Terminal.open([...command.split(' '), '-h'], { width: WIDTH, height: 50 });
    try {
      expect(await terminal.exit()).toBe(0);
      const section = (screen: string) => screen.split('\nEXAMPLES\n')[1]?.split(/\n[A-Z]+\n/)[0] ?? '';
      const shown = section(await terminal.screen()).split('\n');
      const joined = section(await terminal.screen({ joined: true })).split('\n');
      expect(joined.length, joined.join('\n')).toBeGreaterThan(1);
      expect(joined.filter((l) => l.trimEnd().length > WIDTH)).toEqual([]);
      expect(shown.length).toBe(joined.length);
      // A continued example: its next line is indented under the command, never a new `$ ccm`.
      joined.forEach((line, i) => {
        if (line.endsWith(' \\')) expect(joined[i + 1]).toMatch(/^ {6}\S/);
      });
    } finally {
      await terminal.close();
    }
  },
);

it('every command summary (the first line of its help) fits 80 columns', () => {
  const long = Object.entries(manifest.commands)
    .filter(([, c]) => (c.summary ?? '').length > WIDTH)
    .map(([id, c]) => `${id}: ${c.summary}`);
  expect(long).toEqual([]);
});
