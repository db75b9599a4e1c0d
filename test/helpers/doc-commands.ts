/**
 * Every command line README.md and docs/ show a reader, found with marked's lexer (as the link test
 * reads the pages): each line of a ```sh block (`\` continuations joined, comment lines left out),
 * each `$ …` line of another block (in the generated command reference, every line of an EXAMPLES
 * section; its USAGE synopses are no command lines), and each inline code span that is a command
 * line: its first word, after any `NAME=value` assignments, is a program a reader runs
 * (PROGRAMS), followed by at least one more word.
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

/** The command lines of a ```sh block's text, each with its line's offset in the block. */
function shLines(text: string): { line: string; offset: number }[] {
  const out: { line: string; offset: number }[] = [];
  const raw = text.split('\n');
  for (let i = 0; i < raw.length; i++) {
    const first = i;
    let line = raw[i] as string;
    while (line.endsWith('\\') && i + 1 < raw.length)
      line = `${line.slice(0, -1)}${(raw[++i] as string).trim()}`;
    line = line.trim();
    if (line !== '' && !line.startsWith('#')) out.push({ line, offset: first });
  }
  return out;
}

/** The command lines of another block: `$ ` lines; in the command reference, EXAMPLES, not USAGE. */
function promptLines(text: string): { line: string; where: Where; offset: number }[] {
  const out: { line: string; where: Where; offset: number }[] = [];
  let section = '';
  text.split('\n').forEach((raw, offset) => {
    if (/^[A-Z][A-Z ]+$/.test(raw)) {
      section = raw;
      return;
    }
    const line = raw.trim();
    if (section === 'USAGE' || line === '') return;
    if (section === 'EXAMPLES') out.push({ line: line.replace(/^\$ /, ''), where: 'example', offset });
    else if (line.startsWith('$ ')) out.push({ line: line.slice(2), where: 'prompt', offset });
  });
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
