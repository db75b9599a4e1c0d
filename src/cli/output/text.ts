/** Text helpers for human output: counts with the right plural, natural order, cutting to a width. */
import stringWidth from 'string-width';

// ICU's collator and number format each cost ~8 ms the first time they are made: made when used.
let collator: Intl.Collator | undefined;

/** node-2 before node-10, as people count. */
export function naturalCompare(a: string, b: string): number {
  collator ??= new Intl.Collator('en', { numeric: true });
  return collator.compare(a, b);
}

/** 5000 → "5,000", as `toLocaleString('en')` writes it, without starting ICU for a whole number. */
export function grouped(n: number): string {
  return Number.isSafeInteger(n) ? String(n).replace(/\B(?=(\d{3})+$)/g, ',') : n.toLocaleString('en');
}

/** "1 Node", "5,000 Nodes", "0 Nodes". */
export function plural(n: number, noun: readonly [string, string] | string): string {
  const [one, many] = typeof noun === 'string' ? [noun, `${noun}s`] : noun;
  return `${grouped(n)} ${n === 1 ? one : many}`;
}

export const ELLIPSIS = '…';

/** Printable ASCII: one cell per character, as most names and messages are (no table of 5,000 rows pays more). */
const ASCII = /^[\x20-\x7e]*$/;

/**
 * Width of a string in terminal cells: East Asian wide characters (工作节点) take two, combining marks
 * and zero-width characters none (string-width, as listr2 and cli-truncate measure).
 */
export function widthOf(text: string): number {
  return ASCII.test(text) ? text.length : stringWidth(text);
}

let graphemes: Intl.Segmenter | undefined;

/** The string's first characters (whole graphemes: a letter with its accents) that fit in `width` cells. */
function fitting(text: string, width: number): string {
  if (ASCII.test(text)) return text.slice(0, Math.max(0, width));
  graphemes ??= new Intl.Segmenter();
  let used = 0;
  let end = 0;
  for (const { segment, index } of graphemes.segment(text)) {
    const w = stringWidth(segment);
    if (used + w > width) break;
    used += w;
    end = index + segment.length;
  }
  return text.slice(0, end);
}

/**
 * Cuts `text` to `width` cells with an ellipsis. Prose is cut after a whole word when one ends in
 * the last third of the room; an unbroken token (an ID, a path) is cut where the room ends.
 */
export function truncate(text: string, width: number): string {
  if (widthOf(text) <= width) return text;
  if (width <= 0) return '';
  let cut = fitting(text, width - 1);
  const space = cut.lastIndexOf(' ');
  if (space >= 0 && widthOf(cut.slice(0, space)) >= Math.ceil((width - 1) * (2 / 3)))
    cut = cut.slice(0, space);
  return `${cut.replace(/[\s,;:]+$/, '')}${ELLIPSIS}`;
}

/**
 * Words in lines of at most `width` cells, broken between words; only a word longer than a whole
 * line (a path, a fingerprint) is split, where the line ends. Nothing is cut.
 */
export function wrapWords(text: string, width: number): string[] {
  const room = Math.max(1, width);
  const lines: string[] = [];
  let line = '';
  for (let word of text.split(' ')) {
    const next = line === '' ? word : `${line} ${word}`;
    if (widthOf(next) <= room) {
      line = next;
      continue;
    }
    if (line !== '') lines.push(line);
    while (widthOf(word) > room) {
      // A character wider than the line (room 1, a wide one) still moves on.
      const head = fitting(word, room) || String.fromCodePoint(word.codePointAt(0) as number);
      lines.push(head);
      word = word.slice(head.length);
    }
    line = word;
  }
  lines.push(line);
  return lines;
}

/** How a column gives way when a table is wider than the terminal. */
export type Give = 'last' | 'normal' | 'first';

/**
 * Column widths that fit `room` cells. Columns that give first (free text) shrink first, down to
 * `floor`; then the normal ones share what is left equally (max-min fair: narrow columns keep their
 * width); the last resort shrinks every column, names too.
 */
export function fitWidths(
  natural: readonly number[],
  room: number,
  give: readonly Give[] = [],
  floor = 16,
): number[] {
  const widths = [...natural];
  const sum = () => widths.reduce((a, b) => a + b, 0);
  const share = (columns: number[], cap: (i: number) => number, minimum: number) => {
    const others = widths.reduce((a, w, i) => (columns.includes(i) ? a : a + w), 0);
    let left = room - others;
    let count = columns.length;
    for (const i of [...columns].sort((a, b) => cap(a) - cap(b))) {
      const w = cap(i);
      widths[i] = Math.min(w, Math.max(Math.floor(left / count), Math.min(w, minimum)));
      left -= widths[i] as number;
      count--;
    }
  };
  const all = natural.map((_, i) => i);
  const kind = (i: number) => give[i] ?? 'normal';
  if (sum() <= room) return widths;
  share(
    all.filter((i) => kind(i) === 'first'),
    (i) => natural[i] as number,
    floor,
  );
  if (sum() <= room) return widths;
  share(
    all.filter((i) => kind(i) === 'normal'),
    (i) => widths[i] as number,
    6,
  );
  if (sum() <= room) return widths;
  share(all, (i) => widths[i] as number, 4);
  return widths;
}

/** A logfmt value: bare when it can be, else a double-quoted JSON string. */
export function logfmtValue(value: string): string {
  return /^[^\s"=\\]+$/.test(value) ? value : JSON.stringify(value);
}

/**
 * Notes of many rows, grouped: a note that several rows share is one line with their count, a note
 * of one row names it. At most `max` lines, then how many more there are.
 */
export function groupNotes(
  entries: readonly { name: string; note: string }[],
  noun: readonly [string, string],
  max = 5,
): string[] {
  const groups = new Map<string, string[]>();
  for (const { name, note } of entries) {
    const names = groups.get(note);
    if (names) names.push(name);
    else groups.set(note, [name]);
  }
  const sorted = [...groups].sort(
    ([a, x], [b, y]) => y.length - x.length || naturalCompare(x[0] ?? '', y[0] ?? '') || a.localeCompare(b),
  );
  const lines = sorted
    .slice(0, max)
    .map(([note, names]) =>
      names.length === 1 ? `note: ${names[0]}: ${note}` : `note (${plural(names.length, noun)}): ${note}`,
    );
  if (sorted.length > max) lines.push(`${ELLIPSIS} ${plural(sorted.length - max, 'more note')}`);
  return lines;
}
