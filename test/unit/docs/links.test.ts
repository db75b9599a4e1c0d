/**
 * Every link between the pages of README.md and docs/ leads somewhere: a relative link names a file
 * of the repository, and its `#anchor` is a heading of that page, slugged as GitHub slugs headings
 * (github-slugger: lower case, punctuation dropped, spaces to "-", a repeated heading gets "-1", "-2").
 * Markdown is read by marked's lexer, so links in code blocks and code spans are not links.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import GithubSlugger from 'github-slugger';
import { marked, type Token } from 'marked';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../helpers/tmp.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));

/** README.md and every page under docs/, relative to `base`. */
function pages(base: string): string[] {
  const docs = existsSync(join(base, 'docs'))
    ? readdirSync(join(base, 'docs'), { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.md'))
        .map((f) => join('docs', f))
    : [];
  return ['README.md', ...docs.sort()];
}

/** A heading's text as GitHub renders it: code spans and link texts kept, HTML tags dropped. */
function plain(tokens: Token[]): string {
  return tokens
    .map((t) => {
      if (t.type === 'html') return '';
      if ('tokens' in t && t.tokens) return plain(t.tokens);
      return 'text' in t ? String(t.text) : '';
    })
    .join('');
}

function parse(text: string): { anchors: Set<string>; links: string[] } {
  const tokens = marked.lexer(text);
  const slugger = new GithubSlugger();
  const anchors = new Set<string>();
  const links: string[] = [];
  marked.walkTokens(tokens, (t) => {
    if (t.type === 'heading') anchors.add(slugger.slug(plain(t.tokens ?? [])));
    if (t.type === 'link' || t.type === 'image') links.push(t.href);
  });
  return { anchors, links };
}

/** Every broken link of the pages under `base`, as "page: target (why)". */
function brokenLinks(base: string): string[] {
  const parsed = new Map<string, ReturnType<typeof parse>>();
  const read = (page: string) => {
    if (!parsed.has(page)) parsed.set(page, parse(readFileSync(join(base, page), 'utf8')));
    return parsed.get(page) as ReturnType<typeof parse>;
  };
  const broken: string[] = [];
  for (const page of pages(base)) {
    for (const href of read(page).links) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(href)) continue; // https:, mailto: — another site's business
      const [path = '', anchor] = href.split('#', 2);
      const target = path === '' ? page : relative(base, resolve(base, dirname(page), decodeURI(path)));
      if (target.startsWith('..')) {
        broken.push(`${page}: ${href} (leaves the repository)`);
      } else if (!existsSync(join(base, target))) {
        broken.push(`${page}: ${href} (no file ${target})`);
      } else if (anchor !== undefined) {
        if (!target.endsWith('.md')) broken.push(`${page}: ${href} (an anchor in a file that is not a page)`);
        else if (!read(target).anchors.has(anchor))
          broken.push(`${page}: ${href} (no heading #${anchor} in ${target})`);
      }
    }
  }
  return broken;
}

describe('links between the pages of README.md and docs/', () => {
  it('the pages are the front door and docs/', () => {
    const all = pages(root);
    expect(all).toContain('docs/architecture.md');
    expect(all).toContain('docs/reference/commands.md');
    expect(all.length).toBeGreaterThan(15);
  });

  it('every relative link names a file, and every #anchor a heading of its page', () => {
    expect(brokenLinks(root)).toEqual([]);
  });

  it('the README links to every page of docs/', () => {
    const linked = new Set(
      parse(readFileSync(join(root, 'README.md'), 'utf8')).links.map((href) => href.split('#')[0]),
    );
    const unlinked = pages(root).filter((p) => p !== 'README.md' && !linked.has(p));
    expect(unlinked).toEqual([]);
  });

  it('the check finds a missing page, a missing heading and a link out of the repository', () => {
    const base = tempDir('ccm-docs-');
    mkdirSync(join(base, 'docs/providers'), { recursive: true });
    writeFileSync(
      join(base, 'README.md'),
      [
        '# ccm',
        '## Quick start',
        '## Quick start',
        '[ok](#quick-start-1) [ok](docs/a.md#why-is-a-node-stuck-ccm-nodes-list) [ok](docs/providers/b.md)',
        '[gone](docs/missing.md) [no heading](docs/a.md#nowhere) [out](../x.md)',
        '`[in code](docs/nothing.md)`',
        '```sh\n[in a block](docs/nothing.md)\n```',
      ].join('\n\n'),
    );
    writeFileSync(
      join(base, 'docs/a.md'),
      '# A\n\n## Why is a Node stuck? (`ccm nodes list`)\n\n[up](../README.md#ccm)\n',
    );
    writeFileSync(join(base, 'docs/providers/b.md'), '# B\n\n[wrong depth](a.md)\n');
    expect(brokenLinks(base)).toEqual([
      'README.md: docs/missing.md (no file docs/missing.md)',
      'README.md: docs/a.md#nowhere (no heading #nowhere in docs/a.md)',
      'README.md: ../x.md (leaves the repository)',
      'docs/providers/b.md: a.md (no file docs/providers/a.md)',
    ]);
  });
});
