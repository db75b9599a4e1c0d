import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ANNOTATIONS, type AnnotationSpec } from '../../../../src/providers/brightbox/annotations.js';

/** The README's Brightbox annotation table, as generated from the annotation constants. */
function annotationRows(): string {
  const strip = (key: string) => key.replace('service.beta.kubernetes.io/', '');
  return Object.values(ANNOTATIONS as Record<string, AnnotationSpec>)
    .map((s) => {
      const aliases = s.aliases ? ` (also \`${s.aliases.map(strip).join('`, `')}\`)` : '';
      return `| \`${strip(s.key)}\`${aliases} | ${s.accepted.replace(/\|/g, '\\|')} | ${s.description} |`;
    })
    .join('\n');
}

describe('README', () => {
  it('lists every Brightbox annotation as annotations.ts describes it', () => {
    const readme = readFileSync(new URL('../../../../README.md', import.meta.url), 'utf8');
    const block =
      /<!-- brightbox-annotations -->\n(?:.*\n){2}((?:.*\n)*?)<!-- brightbox-annotations-stop -->/.exec(
        readme,
      );
    expect(block?.[1]?.trimEnd()).toBe(annotationRows());
  });
});
