/** The questions of `secret create`, broken between words to the terminal's width (review 44, finding 9). */
import { describe, expect, it } from 'vitest';
import { answeredLabel, fitted } from '../../../src/secrets/prompts.js';

const question =
  "VPC id of the cluster's droplets, for its load balancers; default: the VPC of a backend droplet that exists, else the region's default VPC (optional, Enter to skip)";

describe('fitted', () => {
  it.each([120, 80, 40])(
    'at %i columns: every line fits after the "? ", the last column free, words whole',
    (width) => {
      const lines = fitted(question, width, 20).split('\n');
      expect(lines.join(' ').replace(/ {3}/g, ' ')).toBe(question);
      // The first line follows inquirer's "? "; the others carry their own indent under it.
      const cells = lines.map((line, i) => (i === 0 ? 2 : 0) + line.length);
      for (const n of cells) expect(n).toBeLessThan(width);
      for (const line of lines.slice(1)) expect(line).toMatch(/^ {2}\S/);
      // Room for the default or the first characters typed after the last line.
      expect((cells.at(-1) ?? 0) + 1 + 20).toBeLessThan(width);
    },
  );

  it('leaves a question that fits as it is', () => {
    expect(fitted('Account login name', 80, 16)).toBe('Account login name');
  });

  it('the answered label is still the short one', () => {
    expect(answeredLabel(question)).toBe("VPC id of the cluster's droplets");
  });
});
