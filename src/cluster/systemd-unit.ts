/**
 * "Hard way" systemd units whose flags sit on the ExecStart= command line, usually one per line:
 *
 *   ExecStart=/usr/local/bin/kube-apiserver \
 *     --allow-privileged=true \
 *     --v=2
 *
 * Edits touch only the lines of the flags that change. A removed flag takes its whole line with it
 * (and the new last line loses its trailing " \"); a new flag gets a line of its own after the last one,
 * indented like its neighbours; a one-line ExecStart= grows at its end. Everything else — other
 * sections, comments, spacing, line endings — stays byte for byte.
 */
import { planArgEdits } from './flags.js';
import {
  decode,
  EditError,
  eolOf,
  isBareWord,
  type Line,
  splitLines,
  splitWords,
  type Word,
} from './text.js';
import type { FlagChange } from './types.js';

interface ExecLine {
  line: Line;
  /** Offsets of the part holding words (after "ExecStart=" on the first line, before the " \"). */
  from: number;
  to: number;
  /** Whether the line ends in a backslash continuation. */
  continued: boolean;
  /** A comment line inside the continuation (ignored by systemd). */
  comment: boolean;
}

interface ExecStart {
  lines: ExecLine[];
  /** Words with the index of the physical line they are on. */
  words: Array<Word & { lineIndex: number }>;
}

function findExecStart(text: string): ExecStart | undefined {
  const lines = splitLines(text);
  let section = '';
  let found: ExecStart | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as Line;
    const trimmed = line.content.trim();
    if (/^\[.*\]$/.test(trimmed)) {
      section = trimmed;
      continue;
    }
    if (section !== '[Service]') continue;
    const m = /^\s*ExecStart\s*=\s*/.exec(line.content);
    if (!m) continue;
    const exec: ExecLine[] = [];
    let j = i;
    let from = line.start + m[0].length;
    for (;;) {
      const current = lines[j] as Line;
      const comment = j > i && /^\s*[#;]/.test(current.content);
      const cont = /\s*\\$/.exec(current.content);
      const continued = comment || cont !== null;
      const to = cont ? current.start + cont.index : current.end;
      exec.push({
        line: current,
        from: comment ? current.end : from,
        to: comment ? current.end : to,
        continued,
        comment,
      });
      if (!continued || j + 1 >= lines.length) break;
      j++;
      from = (lines[j] as Line).start;
    }
    const words = exec.flatMap((l, lineIndex) =>
      splitWords(text, l.from, l.to).map((w) => ({ ...w, lineIndex })),
    );
    // "ExecStart=" with nothing after it resets the list; the last non-empty one is the command.
    found = words.length > 0 ? { lines: exec, words } : undefined;
    i = j;
  }
  return found;
}

/** systemd expands %specifiers in ExecStart=; a literal % is written %%. */
function unescapeSpecifiers(value: string): string {
  return value.replaceAll('%%', '%');
}

/** The ExecStart= command: program (with any "-@:+!" prefix removed) and its arguments; [] when absent. */
export function readExecStart(bytes: Buffer): string[] {
  const found = findExecStart(decode(bytes, 'the systemd unit'));
  if (!found) return [];
  return found.words.map((w, i) => {
    const value = unescapeSpecifiers(w.value);
    return i === 0 ? value.replace(/^[-@:+!]+/, '') : value;
  });
}

/** The flags of the ExecStart= command (the program left out). */
export function readArgs(bytes: Buffer): string[] {
  return readExecStart(bytes).slice(1);
}

function render(token: string): string {
  if (!isBareWord(token))
    throw new EditError(`cannot write ${token} into a systemd unit without quoting; set it by hand`);
  return token.replaceAll('%', '%%');
}

/** Applies the changes to the ExecStart= flags; changes already in effect leave the bytes as they are. */
export function edit(bytes: Buffer, changes: readonly FlagChange[]): Buffer {
  const text = decode(bytes, 'the systemd unit');
  const found = findExecStart(text);
  if (!found) throw new EditError('the unit has no ExecStart= in its [Service] section');
  const { lines, words } = found;
  // The program is not a flag: plan over the arguments only, then shift indexes by one.
  const args = words.slice(1).map((w) => unescapeSpecifiers(w.value));
  const edits = planArgEdits(args, changes);
  if (edits.length === 0) return bytes;

  const replaced = new Map<number, string>();
  const removed = new Set<number>();
  const appended: string[] = [];
  for (const e of edits) {
    if (e.op === 'append') appended.push(...e.tokens.map(render));
    else if (e.tokens.length === 0) for (let i = e.start; i < e.end; i++) removed.add(i + 1);
    else
      e.tokens.forEach((token, k) => {
        if (args[e.start + k] !== token) replaced.set(e.start + k + 1, render(token));
      });
  }

  // Each physical line of the command, edited in place; a line whose words all go is dropped.
  const entries = lines.map((l, li) => {
    const onLine = words.map((w, wi) => ({ w, wi })).filter(({ w }) => w.lineIndex === li);
    const drop = onLine.length > 0 && onLine.every(({ wi }) => removed.has(wi));
    const splices: Array<[number, number, string]> = [];
    for (let k = 0; k < onLine.length && !drop; k++) {
      const { w, wi } = onLine[k] as { w: Word; wi: number };
      const replacement = replaced.get(wi);
      if (replacement !== undefined) splices.push([w.start, w.end, replacement]);
      if (!removed.has(wi)) continue;
      // A run of removed words goes with the space up to the next kept word on the line, or (at the
      // end of the line) back to the previous one.
      let m = k;
      while (m < onLine.length && removed.has((onLine[m] as { wi: number }).wi)) m++;
      const last = (onLine[m - 1] as { w: Word }).w;
      const next = onLine[m];
      const prev = onLine[k - 1];
      if (next) splices.push([w.start, next.w.start, '']);
      else if (prev) splices.push([prev.w.end, last.end, '']);
      k = m - 1;
    }
    const base = l.line.start;
    let content = l.line.content;
    for (const [a, b, r] of splices.sort((x, y) => y[0] - x[0])) {
      content = content.slice(0, a - base) + r + content.slice(b - base);
    }
    return { content, eol: l.line.eol, drop, hasWords: onLine.length > 0 };
  });

  const stripContinuation = (c: string) => c.replace(/\s*\\$/, '');
  const wordLines = entries.filter((e) => e.hasWords);
  const lastBefore = wordLines.at(-1) as (typeof entries)[number];
  const kept = entries.filter((e) => !e.drop);
  const lastWordLine = kept.filter((e) => e.hasWords).at(-1) as (typeof entries)[number];
  // The original last line was removed: the new last one must not continue into the next setting.
  if (lastWordLine !== lastBefore) lastWordLine.content = stripContinuation(lastWordLine.content);

  if (appended.length > 0) {
    if (lines.length === 1) {
      // One line: the new flags go after its last word (replacements may have changed lengths before
      // it, so count from the end of the line).
      const single = lines[0] as ExecLine;
      const trailing = single.line.end - (words.at(-1) as Word).end;
      const c = lastWordLine.content;
      lastWordLine.content = `${c.slice(0, c.length - trailing)} ${appended.join(' ')}${c.slice(c.length - trailing)}`;
    } else {
      const first = lines[0] as ExecLine;
      const continuation = first.continued ? first.line.content.slice(first.to - first.line.start) : ' \\';
      // New lines are indented like the last flag line that stays.
      const model = words.filter((w, wi) => w.lineIndex > 0 && !removed.has(wi)).at(-1);
      const modelStart = model ? words.find((w) => w.lineIndex === model.lineIndex)?.start : undefined;
      const indent =
        model && modelStart !== undefined
          ? text.slice((lines[model.lineIndex] as ExecLine).line.start, modelStart)
          : '  ';
      const eol = eolOf(text);
      const added = appended.map((t, k) => ({
        content: k === appended.length - 1 ? `${indent}${t}` : `${indent}${t}${continuation}`,
        eol: k === appended.length - 1 ? lastWordLine.eol : eol,
        drop: false,
        hasWords: true,
      }));
      lastWordLine.content = `${stripContinuation(lastWordLine.content)}${continuation}`;
      if (lastWordLine.eol === '') lastWordLine.eol = eol;
      kept.splice(kept.indexOf(lastWordLine) + 1, 0, ...added);
    }
  }

  const first = lines[0] as ExecLine;
  const last = lines.at(-1) as ExecLine;
  const before = text.slice(0, first.line.start);
  const after = text.slice(last.line.end + last.line.eol.length);
  const body = kept.map((e) => e.content + e.eol).join('');
  return Buffer.from(before + body + after, 'utf8');
}
