import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { annotationReference } from '../../../../src/providers/digitalocean/annotations.js';

/** The README's DigitalOcean annotation table, as generated from annotationReference. */
function annotationTable(): string {
  const cell = (s: string) => s.replace(/\|/g, '\\|');
  return [
    '| annotation | values | default | meaning |',
    '|---|---|---|---|',
    ...annotationReference.map(
      (a) => `| \`${a.name}\` | ${cell(a.values)} | ${cell(a.default)} | ${cell(a.description)} |`,
    ),
  ].join('\n');
}

describe('DigitalOcean annotation reference', () => {
  it('is the README table, one row per annotation, no name twice', () => {
    const readme = readFileSync(new URL('../../../../README.md', import.meta.url), 'utf8');
    const table =
      /<!-- digitalocean-annotations -->\n([\s\S]*?)\n<!-- digitalocean-annotations-stop -->/.exec(
        readme,
      )?.[1];
    expect(table).toBe(annotationTable());
    expect(new Set(annotationReference.map((a) => a.name)).size).toBe(annotationReference.length);
  });
});
