/** Exit codes every command shares. */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
/** The deletion brake held a pass's deletions: nothing is wrong with the pass, the cloud's answer needs a person. */
export const EXIT_HELD = 3;
/** 128 + SIGINT, as a shell reports a program Ctrl-C ended. */
export const EXIT_INTERRUPTED = 130;

/** A usage or configuration problem: printed as one line, exit 2, nothing written. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** Ctrl-C while a command works: one line saying what was written, and 130 as a shell reports SIGINT. */
export class InterruptedError extends Error {
  override name = 'InterruptedError';
  readonly oclif = { exit: EXIT_INTERRUPTED };
}

/** A flag's value outside what it takes, in the one wording every flag uses: "--flag: expected …, got "value"". */
export function flagValueError(flag: string, expected: string, value: string): UsageError {
  return new UsageError(`--${flag}: ${expectedText(expected, value)}`);
}

/** The text after "--flag: ", also for oclif's own parse errors (which oneLine prefixes with the flag). */
export function expectedText(expected: string, value: string): string {
  return `expected ${expected}, got ${JSON.stringify(value)}`;
}

/**
 * Exit 2: retrying the same command cannot help. An API server that cannot be reached is not among
 * them (exit 1): ccm cannot tell an address typed wrong from a server away for a moment, and a
 * CronJob's retry helps the second (docs/output.md, "Exit codes").
 */
const CONFIG_ERROR_NAMES = new Set([
  'UsageError',
  'KubeConfigError',
  'KubeUnauthorizedError',
  'InvalidConfigError',
  'UnauthorizedError',
]);

/** Which exit code an error deserves: configuration and usage errors are 2, everything else 1. */
export function exitCodeFor(err: unknown): number {
  const name = (err as Error)?.name;
  if (CONFIG_ERROR_NAMES.has(name)) return EXIT_USAGE;
  const oclifExit = (err as { oclif?: { exit?: number } })?.oclif?.exit;
  if (typeof oclifExit === 'number') return oclifExit;
  return EXIT_FAILED;
}

/**
 * The first line of an error's message, without oclif's decorations. oclif puts a flag's parse error
 * on the line after "Parsing --flag": the two become one line, "--flag: <what is wrong>".
 */
export function oneLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const lines = message.split('\n').filter((l) => l.trim() !== '');
  const first = (lines[0] ?? 'unknown error').replace(/^\s*(Error:\s*)?/, '').trim();
  const flag = /^Parsing (--[\w-]+)$/.exec(first)?.[1];
  const detail = lines[1]?.trim();
  if (flag && detail && !detail.startsWith('See more help')) return `${flag}: ${detail}`;
  return first;
}
