/**
 * Every command line README.md and docs/ show a reader, found with marked's lexer (as the link test
 * reads the pages): each line of a ```sh block (comment lines left out), each `$ …` line of another
 * block (in the generated command reference, every line of an EXAMPLES section; its USAGE synopses
 * are no command lines), and each inline code span that is a command line: its first word, after any
 * `NAME=value` assignments, is a program a reader runs (PROGRAMS), followed by at least one more word.
 * In every kind of block a command continued with `\` on the next lines (as help examples and the
 * quick start wrap at 80 columns) is one line, joined as bash joins it, never its fragments.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { marked, type Token } from 'marked';

/** The programs whose code spans are command lines. */
export const PROGRAMS = [
  'ccm',
  'npm',
  'npx',
  'node',
  'bash',
  'sh',
  'kubectl',
  'helm',
  'kubeadm',
  'ctr',
  'skopeo',
  'podman',
  'buildah',
  'curl',
  'ip',
  'vagrant',
  'systemctl',
  'sudo',
  'triton',
  'openstack',
  'printf',
  'pass',
  'export',
  'go',
  'git',
  'tsx',
  'docker',
  'ssh',
  'openssl',
];

export type Where = 'sh' | 'prompt' | 'example' | 'inline';

export interface DocCommand {
  /** The line as a reader copies it (an inline span's line breaks and indentation as one space). */
  line: string;
  page: string;
  /** 1-based line of the page where it starts. */
  at: number;
  where: Where;
}

/** README.md and every page under docs/, relative to `root`. */
export function docPages(root: string): string[] {
  const docs = readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md'))
    .map((f) => join('docs', f));
  return ['README.md', ...docs.sort()];
}

/** Leading `NAME=value` assignments: a value quoted or a `<placeholder>` may hold spaces; `[…]` is optional. */
const ASSIGNMENT = /^(?:\[?[A-Za-z_][A-Za-z0-9_]*=(?:"[^"]*"|'[^']*'|<[^>]*>|[^\s\]])*\]?\s+)*/;

/** Whether an inline code span's text is a command line. */
export function isCommandLine(text: string): boolean {
  const words = text.replace(ASSIGNMENT, '').split(' ');
  return words.length > 1 && PROGRAMS.includes(words[0] as string);
}

/** Whether a line ends in a `\` that continues it (an odd run of backslashes: `\\` is one escaped). */
const continues = (line: string) => /(?:^|[^\\])(?:\\\\)*\\$/.test(line);

/**
 * The command starting at `raw[i]`, its `\` continuations joined as bash reads them: the backslash and
 * line break go, and the whitespace around them is one space (none when there was none); `end` is the
 * index of its last line.
 */
function joined(raw: string[], i: number): { line: string; end: number } {
  let line = raw[i] as string;
  let end = i;
  // A comment's backslash is part of the comment: bash continues no comment line.
  while (continues(line) && !line.trim().startsWith('#') && end + 1 < raw.length) {
    const head = line.slice(0, -1);
    const next = raw[++end] as string;
    line = /\s$/.test(head) || /^\s/.test(next) ? `${head.trimEnd()} ${next.trim()}` : `${head}${next}`;
  }
  return { line: line.trim(), end };
}

/** The command lines of a ```sh block's text, each with its first line's offset in the block. */
function shLines(text: string): { line: string; offset: number }[] {
  const out: { line: string; offset: number }[] = [];
  const raw = text.split('\n');
  for (let i = 0; i < raw.length; i++) {
    const { line, end } = joined(raw, i);
    if (line !== '' && !line.startsWith('#')) out.push({ line, offset: i });
    i = end;
  }
  return out;
}

/**
 * The command lines of another block: `$ ` lines; in the command reference, EXAMPLES, not USAGE. Only
 * a command is joined with the lines it continues: the output shown after one is left as it is.
 */
function promptLines(text: string): { line: string; where: Where; offset: number }[] {
  const out: { line: string; where: Where; offset: number }[] = [];
  const raw = text.split('\n');
  let section = '';
  for (let i = 0; i < raw.length; i++) {
    const first = raw[i] as string;
    if (/^[A-Z][A-Z ]+$/.test(first)) {
      section = first;
      continue;
    }
    const trimmed = first.trim();
    if (section === 'USAGE' || trimmed === '') continue;
    if (section !== 'EXAMPLES' && !trimmed.startsWith('$ ')) continue;
    const { line, end } = joined(raw, i);
    if (section === 'EXAMPLES') out.push({ line: line.replace(/^\$ /, ''), where: 'example', offset: i });
    else out.push({ line: line.slice(2), where: 'prompt', offset: i });
    i = end;
  }
  return out;
}

export function docCommands(root: string): DocCommand[] {
  const found: DocCommand[] = [];
  for (const page of docPages(root)) {
    const source = readFileSync(join(root, page), 'utf8');
    let cursor = 0;
    // A token's line: where its raw text is, or (a block inside a list item, whose raw text has lost
    // the item's indentation) its first line.
    const lineOf = (raw: string) => {
      const find = (text: string) => {
        const i = source.indexOf(text, cursor);
        return i >= 0 ? i : source.indexOf(text);
      };
      let i = find(raw);
      if (i < 0) i = find(raw.split('\n')[0] as string);
      if (i >= 0) cursor = i + 1;
      return source.slice(0, Math.max(i, 0)).split('\n').length;
    };
    marked.walkTokens(marked.lexer(source), (t: Token) => {
      if (t.type === 'code') {
        // The block's first line is its fence (indented blocks, which have none, are not used).
        const at = lineOf(t.raw) + 1;
        if (t.lang === 'sh') {
          for (const { line, offset } of shLines(t.text))
            found.push({ line, page, at: at + offset, where: 'sh' });
        } else {
          for (const { line, where, offset } of promptLines(t.text))
            found.push({ line, page, at: at + offset, where });
        }
      } else if (t.type === 'codespan') {
        const line = t.text.replace(/\s+/g, ' ').trim();
        const at = lineOf(t.raw);
        if (isCommandLine(line)) found.push({ line, page, at, where: 'inline' });
      }
    });
  }
  return found;
}
