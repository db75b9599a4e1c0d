import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { withAnnotationReference } from '../../../src/cli/annotation-reference.js';
import { loadProvider, providerNames } from '../../../src/providers/registry.js';

const readme = () => readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');

describe('the README annotation reference', () => {
  it('is what the providers declare (run `npm run readme` after changing an annotation)', async () => {
    expect(await withAnnotationReference(readme())).toBe(readme());
  });

  it.each(providerNames)('%s: every annotation once, each with what it accepts and means', async (name) => {
    const { annotations = [] } = await loadProvider(name);
    expect(new Set(annotations.map((a) => a.key)).size).toBe(annotations.length);
    for (const a of annotations) {
      expect(a.accepted, a.key).not.toBe('');
      expect(a.description, a.key).not.toBe('');
      expect(readme()).toContain(`| \`${a.key}\` |`);
    }
  });
});
