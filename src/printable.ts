import { nodeUtil } from './node-modules.js';

/**
 * Text from elsewhere (a credential plugin, a remote host's stderr or files, a kubeconfig, a cloud's
 * answer, a tenant's annotation) made safe to print on a terminal: escape sequences, other control
 * characters and bidirectional overrides are removed, so that it cannot rewrite what the operator sees
 * (move the cursor, clear the screen, set the title, hide text). Newlines stay; tabs, and the line
 * and paragraph separators U+2028 and U+2029 (which some terminals and viewers break a line at),
 * become spaces. Invisible format characters (zero-width space and joiners, word joiner, BOM, soft
 * hyphen…) are shown as <U+200B>: `worker-3` followed by them does not look like `worker-3`.
 */
export function printable(text: string): string {
  // Most text has none of them (the cells of a table of thousands of Nodes): returned as it is.
  // Every escape sequence starts with ESC or CSI, both among them.
  if (!UNSAFE.test(text)) return text;
  return nodeUtil()
    .stripVTControlCharacters(text)
    .replace(SPACES, ' ')
    .replace(CONTROLS, '')
    .replace(INVISIBLE, (c) => `<U+${(c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}>`);
}

/**
 * printable(), on one line: what goes where a line is expected (a task list's title, a warning, an
 * error, an item of a list before a question). The one function for them, so that each of them is
 * screened the same way.
 */
export function printableLine(text: string): string {
  const shown = printable(text);
  return shown.includes('\n') ? shown.replaceAll('\n', ' ') : shown;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const SPACES = /[\t\u2028\u2029]/g;
/** Unicode's format characters (Cf) but the bidirectional ones, which CONTROLS removes. */
const INVISIBLE = /\p{Cf}/gu;
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\p{Cf}]/u;
