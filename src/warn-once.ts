import { printableLine } from './printable.js';

/**
 * One `ccm: …` line on stderr: the one way a command writes a warning or an error line, screened
 * (printableLine), since the text may quote a cloud's answer or a Kubernetes object.
 */
export function stderrLine(text: string): void {
  process.stderr.write(`ccm: ${printableLine(text)}\n`);
}

const said = new Set<string>();

/** One `ccm: warning:` line on stderr, once per process whatever calls it again. */
export function warnOnce(text: string): void {
  if (said.has(text)) return;
  said.add(text);
  stderrLine(`warning: ${text}`);
}
