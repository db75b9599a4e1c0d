import { printable } from './printable.js';

const said = new Set<string>();

/** One `ccm: warning:` line on stderr, once per process whatever calls it again. */
export function warnOnce(text: string): void {
  if (said.has(text)) return;
  said.add(text);
  process.stderr.write(`ccm: warning: ${printable(text)}\n`);
}
