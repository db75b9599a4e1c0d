import { nodeUtil } from './node-modules.js';

/**
 * Text from elsewhere (a credential plugin, a remote host's stderr or files, a kubeconfig) made safe
 * to print on a terminal: escape sequences, other control characters and bidirectional overrides are
 * removed, so that it cannot rewrite what the operator sees (move the cursor, clear the screen, set
 * the title, hide text). Newlines stay; tabs become spaces.
 */
export function printable(text: string): string {
  // Most text has none of them (the cells of a table of thousands of Nodes): returned as it is.
  // Every escape sequence starts with ESC or CSI, both among them.
  if (!UNSAFE.test(text)) return text;
  return nodeUtil().stripVTControlCharacters(text).replace(/\t/g, ' ').replace(CONTROLS, '');
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
