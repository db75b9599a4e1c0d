/**
 * Byte-preserving text helpers shared by the file editors: decoding that refuses to lose bytes,
 * line endings, and a quote-aware word splitter that remembers where each word sits.
 */

/** An edit could not be made without guessing; the message names the file kind and what to do. */
export class EditError extends Error {
  override name = 'EditError';
}

/** The file as text; throws when the bytes are not UTF-8 (re-encoding would change them). */
export function decode(bytes: Buffer, what: string): string {
  const text = bytes.toString('utf8');
  if (!Buffer.from(text, 'utf8').equals(bytes)) {
    throw new EditError(`${what} is not UTF-8 text; edit it by hand`);
  }
  return text;
}

/** The line ending the file uses (the first one found), "\n" when it has none. */
export function eolOf(text: string): '\n' | '\r\n' {
  const i = text.indexOf('\n');
  return i > 0 && text[i - 1] === '\r' ? '\r\n' : '\n';
}

export interface Line {
  /** Offset of the first character. */
  start: number;
  /** Offset just past the content (before "\r\n" or "\n"). */
  end: number;
  /** The line ending: "", "\n" or "\r\n". */
  eol: string;
  content: string;
}

/** Lines with their offsets; the last line has eol "" when the file does not end with a newline. */
export function splitLines(text: string): Line[] {
  const lines: Line[] = [];
  let start = 0;
  while (start < text.length) {
    const nl = text.indexOf('\n', start);
    const stop = nl < 0 ? text.length : nl;
    const end = stop > start && text[stop - 1] === '\r' ? stop - 1 : stop;
    lines.push({ start, end, eol: text.slice(end, nl < 0 ? stop : nl + 1), content: text.slice(start, end) });
    start = nl < 0 ? text.length : nl + 1;
  }
  return lines;
}

export interface Word {
  /** Offsets in the string given to splitWords. */
  start: number;
  end: number;
  /** As written, quotes included. */
  raw: string;
  /** With quotes and backslash escapes resolved. */
  value: string;
  /** The quote the word opens with, if any. */
  quote: '"' | "'" | undefined;
}

/**
 * Splits text[from, to) into words at unquoted whitespace, the way systemd splits ExecStart= and
 * an unquoted $VARIABLE: "…" and '…' group (a backslash escapes the next character in "…" and outside
 * quotes), quotes are removed from the value. Throws on an unterminated quote.
 */
export function splitWords(text: string, from = 0, to = text.length): Word[] {
  const words: Word[] = [];
  let i = from;
  while (i < to) {
    while (i < to && /\s/.test(text[i] ?? '')) i++;
    if (i >= to) break;
    const start = i;
    let value = '';
    let quote: '"' | "'" | undefined;
    const first = text[i];
    const opening = first === '"' || first === "'" ? first : undefined;
    while (i < to) {
      const ch = text[i] ?? '';
      if (quote) {
        if (ch === quote) {
          quote = undefined;
        } else if (ch === '\\' && quote === '"' && i + 1 < to) {
          i++;
          value += text[i];
        } else {
          value += ch;
        }
      } else if (/\s/.test(ch)) {
        break;
      } else if (ch === '"' || ch === "'") {
        quote = ch;
      } else if (ch === '\\' && i + 1 < to) {
        i++;
        value += text[i];
      } else {
        value += ch;
      }
      i++;
    }
    if (quote) throw new EditError(`unterminated ${quote} in: ${text.slice(start, to)}`);
    words.push({ start, end: i, raw: text.slice(start, i), value, quote: opening });
  }
  return words;
}

/** Splices a list of [start, end, replacement] into text (ranges must not overlap). */
export function splice(text: string, edits: Array<[number, number, string]>): string {
  const sorted = [...edits].sort((a, b) => b[0] - a[0] || b[1] - a[1]);
  let out = text;
  for (const [start, end, replacement] of sorted) out = out.slice(0, start) + replacement + out.slice(end);
  return out;
}

/**
 * A flag that can be written into an env file's or a unit's word list as it is: no whitespace, quotes,
 * backslashes, `$` or backticks (which a reader would split, unquote or expand).
 */
export function isBareWord(value: string): boolean {
  return /^[^\s"'\\$`]*$/.test(value);
}
