/**
 * Environment files that carry kubelet flags in one variable, as systemd's EnvironmentFile= reads
 * them: /var/lib/kubelet/kubeadm-flags.env (KUBELET_KUBEADM_ARGS="…", written by kubeadm) and
 * /etc/default/kubelet or /etc/sysconfig/kubelet (KUBELET_EXTRA_ARGS=…, the operator's).
 *
 * Only the words of the variable's value change: its other lines, comments, quoting, spacing and line
 * endings stay byte for byte. When the variable is set more than once the last assignment counts
 * (as in systemd), so that is the one edited.
 */
import { applyArgEdits, planArgEdits } from './flags.js';
import {
  decode,
  EditError,
  eolOf,
  isBareWord,
  type Line,
  splice,
  splitLines,
  splitWords,
  type Word,
} from './text.js';
import type { FlagChange } from './types.js';

interface Assignment {
  line: Line;
  /** Offsets (in the file) of the value's words region: inside the quotes when quoted. */
  from: number;
  to: number;
  quote: '"' | "'" | undefined;
  words: Word[];
}

function findAssignment(text: string, variable: string): Assignment | undefined {
  const pattern = new RegExp(`^\\s*(?:export\\s+)?${variable}\\s*=`);
  let found: Assignment | undefined;
  for (const line of splitLines(text)) {
    const m = pattern.exec(line.content);
    if (!m) continue;
    const valueStart = line.start + m[0].length;
    const rest = text.slice(valueStart, line.end);
    if (/\\\s*$/.test(rest)) {
      throw new EditError(
        `${variable} continues over several lines (trailing \\); join it into one line first`,
      );
    }
    const lead = rest.length - rest.trimStart().length;
    const first = rest[lead];
    let from: number;
    let to: number;
    let quote: '"' | "'" | undefined;
    if (first === '"' || first === "'") {
      quote = first;
      const close = rest.indexOf(first, lead + 1);
      if (close < 0) throw new EditError(`${variable}: unterminated ${first}`);
      const after = rest.slice(close + 1).trim();
      if (after !== '' && !after.startsWith('#')) {
        throw new EditError(`${variable}: unexpected text after the closing ${first}: ${after}`);
      }
      from = valueStart + lead + 1;
      to = valueStart + close;
    } else {
      from = valueStart + lead;
      to = valueStart + rest.trimEnd().length;
    }
    found = { line, from, to, quote, words: splitWords(text, from, to) };
  }
  return found;
}

/** The flags in `variable` (the words of its value), [] when the file or the variable is absent. */
export function readArgs(bytes: Buffer | undefined, variable: string): string[] {
  if (!bytes) return [];
  const found = findAssignment(decode(bytes, 'the environment file'), variable);
  return found ? found.words.map((w) => w.value) : [];
}

function checkValue(token: string): string {
  if (!isBareWord(token)) {
    throw new EditError(`cannot write ${token} into an environment file without quoting; set it by hand`);
  }
  return token;
}

/**
 * Applies the changes to `variable`. A file that does not exist (undefined) or lacks the variable gets
 * `VARIABLE="--flag=value …"` added as a new last line. Changes already in effect change nothing, so
 * a second run returns the same bytes.
 */
export function edit(bytes: Buffer | undefined, variable: string, changes: readonly FlagChange[]): Buffer {
  const text = bytes ? decode(bytes, 'the environment file') : '';
  const found = findAssignment(text, variable);
  if (!found) {
    const edits = planArgEdits([], changes);
    if (edits.length === 0) return bytes ?? Buffer.alloc(0);
    const args = applyArgEdits([], edits).map(checkValue);
    const eol = eolOf(text);
    const sep = text === '' || text.endsWith('\n') ? '' : eol;
    return Buffer.from(`${text}${sep}${variable}="${args.join(' ')}"${eol}`, 'utf8');
  }

  const { words } = found;
  const args = words.map((w) => w.value);
  const edits = planArgEdits(args, changes);
  if (edits.length === 0) return bytes ?? Buffer.alloc(0);

  const splices: Array<[number, number, string]> = [];
  const removed = new Set<number>();
  const appended: string[] = [];
  for (const e of edits) {
    if (e.op === 'append') {
      appended.push(...e.tokens.map(checkValue));
    } else if (e.tokens.length === 0) {
      for (let i = e.start; i < e.end; i++) removed.add(i);
    } else {
      e.tokens.forEach((token, k) => {
        const word = words[e.start + k];
        if (word && word.value !== token) splices.push([word.start, word.end, checkValue(token)]);
      });
    }
  }
  // Removed words go with the whitespace that separated them from their neighbours: a run of removed
  // words takes the space up to the next kept word, or (at the end) back to the previous kept one.
  for (let a = 0; a < words.length; a++) {
    if (!removed.has(a)) continue;
    let b = a;
    while (b < words.length && removed.has(b)) b++;
    const first = words[a] as Word;
    const last = words[b - 1] as Word;
    if (b < words.length) splices.push([first.start, (words[b] as Word).start, '']);
    else if (a > 0) splices.push([(words[a - 1] as Word).end, last.end, '']);
    else splices.push([first.start, last.end, '']);
    a = b;
  }
  let out = splice(text, splices);
  if (appended.length > 0) {
    // Offsets before found.to are unchanged in length only up to the first splice; recompute the end
    // of the value from the edited text instead of reusing found.to.
    const again = findAssignment(out, variable) as Assignment;
    const lastWord = again.words.at(-1);
    const insertAt = lastWord ? lastWord.end : again.from;
    const addition = (lastWord ? ' ' : '') + appended.join(' ');
    if (again.quote || appended.length + again.words.length <= 1) {
      out = splice(out, [[insertAt, insertAt, addition]]);
    } else {
      // An unquoted value that would hold several words: quote it, or the spaces would end it.
      out = splice(out, [
        [again.to, again.to, `${addition}"`],
        [again.from, again.from, '"'],
      ]);
    }
  }
  return Buffer.from(out, 'utf8');
}
