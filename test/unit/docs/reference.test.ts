/**
 * The generated references in docs/reference stay what the code says: the command reference is what
 * `oclif readme` writes from the built CLI, the annotation reference what the providers declare.
 * `npm run readme` rewrites both.
 */
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { withAnnotationReference } from '../../../src/cli/annotation-reference.js';
import { loadProvider, providerNames } from '../../../src/providers/registry.js';
import { tempDir } from '../../helpers/tmp.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const annotations = () => readFileSync(join(root, 'docs/reference/annotations.md'), 'utf8');

describe('the annotation reference (docs/reference/annotations.md)', () => {
  it('is what the providers declare (run `npm run readme` after changing an annotation)', async () => {
    expect(await withAnnotationReference(annotations())).toBe(annotations());
  });

  it.each(providerNames)('%s: every annotation once, each with what it accepts and means', async (name) => {
    const { annotations: declared = [] } = await loadProvider(name);
    expect(new Set(declared.map((a) => a.key)).size).toBe(declared.length);
    for (const a of declared) {
      expect(a.accepted, a.key).not.toBe('');
      expect(a.description, a.key).not.toBe('');
      expect(annotations()).toContain(`| \`${a.key}\` |`);
    }
  });
});

describe('the command reference (docs/reference/commands.md)', () => {
  it('is what `oclif readme` writes from the built CLI (run `npm run readme` after changing a command)', async () => {
    const page = join(root, 'docs/reference/commands.md');
    const copy = join(tempDir('ccm-docs-'), 'commands.md');
    copyFileSync(page, copy);
    // The flags of `npm run readme`, on a copy, so that the test never rewrites the page itself.
    const oclif = join(root, 'node_modules/oclif/bin/run.js');
    await execa(
      process.execPath,
      [oclif, 'readme', '--no-aliases', '--no-source-links', '--readme-path', copy],
      {
        cwd: root,
      },
    );
    const written = readFileSync(copy, 'utf8');
    expect(written).toContain('## `ccm nodes init`');
    expect(written).toBe(readFileSync(page, 'utf8'));
  });
});
