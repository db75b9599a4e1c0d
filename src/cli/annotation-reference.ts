import { readFile, writeFile } from 'node:fs/promises';
import { loadProvider, providerNames } from '../providers/registry.js';

/**
 * The Service annotation reference (docs/reference/annotations.md), generated from each provider's
 * `annotations` (so the table and the parsers never drift apart). `npm run readme` rewrites it; a test
 * checks it.
 */
export const START = '<!-- annotations -->';
export const STOP = '<!-- annotations-stop -->';

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export async function annotationReference(): Promise<string> {
  const sections: string[] = [];
  for (const name of providerNames) {
    const { annotations = [] } = await loadProvider(name);
    if (annotations.length === 0) continue;
    sections.push(
      [
        `## ${name}`,
        '',
        '| annotation | accepted | meaning |',
        '|---|---|---|',
        ...annotations.map((a) => `| \`${a.key}\` | ${cell(a.accepted)} | ${cell(a.description)} |`),
      ].join('\n'),
    );
  }
  return sections.join('\n\n');
}

/** The page's text with the reference between its markers replaced. */
export async function withAnnotationReference(page: string): Promise<string> {
  const start = page.indexOf(START);
  const stop = page.indexOf(STOP);
  if (start < 0 || stop < start) throw new Error(`the page has no ${START} … ${STOP} block`);
  return `${page.slice(0, start + START.length)}\n${await annotationReference()}\n${page.slice(stop)}`;
}

/** Rewrites the reference in the page at `path` (`npm run readme`: docs/reference/annotations.md). */
export async function updateAnnotationReference(path: string): Promise<void> {
  await writeFile(path, await withAnnotationReference(await readFile(path, 'utf8')));
}
