/** Exit codes every command shares. */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/** A usage or configuration problem: printed as one line, exit 2, nothing written. */
export class UsageError extends Error {
  override name = 'UsageError';
}

const CONFIG_ERROR_NAMES = new Set([
  'UsageError',
  'KubeConfigError',
  'KubeUnreachableError',
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

/** The first line of an error's message, without oclif's decorations. */
export function oneLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const first = message.split('\n').find((l) => l.trim() !== '') ?? 'unknown error';
  return first.replace(/^\s*(Error:\s*)?/, '').trim();
}
