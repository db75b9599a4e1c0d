/**
 * Editing an argv-style flag list the way Kubernetes components read it (spf13/pflag with the
 * word-separator normaliser): `--name=value`, `--name value` and bare `--name` forms, `_` and `-` are the
 * same in a name, and when a flag is given twice the last one counts.
 *
 * The editors of each file kind parse their file into tokens, ask `planArgEdits` what to change and
 * apply the answer to their own bytes, so the rules live here once.
 */
import type { FlagChange } from './types.js';

/** One flag as it appears in a list: tokens [start, end) of the list. */
export interface FlagOccurrence {
  /** Normalised name (no dashes, `_` → `-`). */
  name: string;
  /** undefined for a bare `--name`. */
  value: string | undefined;
  form: 'equals' | 'separate' | 'bare';
  start: number;
  end: number;
}

/**
 * Replace tokens [start, end) with `tokens` (empty: remove them), or append `tokens` at the end of the
 * list. Edits are returned in list order and never overlap.
 */
export type ArgEdit =
  | { op: 'replace'; start: number; end: number; tokens: string[] }
  | { op: 'append'; tokens: string[] };

/** "cloud_provider", "--cloud-provider" → "cloud-provider". */
export function normalizeFlagName(name: string): string {
  return name.replace(/^-+/, '').replaceAll('_', '-');
}

/** `--name=value`. */
export function formatFlag(name: string, value: string): string {
  return `--${normalizeFlagName(name)}=${value}`;
}

function isFlagToken(token: string): boolean {
  return token.startsWith('--') && token.length > 2;
}

/**
 * Every `--flag` in the list. A token after a `--name` without `=` that does not itself start with
 * `-` is read as its value (`--v 2`); Kubernetes components take no positional arguments, so nothing else
 * can be meant. Tokens that are not flags (the program name, `$VARS`) are skipped.
 */
export function parseArgs(args: readonly string[]): FlagOccurrence[] {
  const out: FlagOccurrence[] = [];
  for (let i = 0; i < args.length; i++) {
    const token = args[i] ?? '';
    if (token === '--') break;
    if (!isFlagToken(token)) continue;
    const eq = token.indexOf('=');
    if (eq >= 0) {
      out.push({
        name: normalizeFlagName(token.slice(2, eq)),
        value: token.slice(eq + 1),
        form: 'equals',
        start: i,
        end: i + 1,
      });
      continue;
    }
    const next = args[i + 1];
    if (next !== undefined && !next.startsWith('-') && !next.startsWith('$')) {
      out.push({
        name: normalizeFlagName(token.slice(2)),
        value: next,
        form: 'separate',
        start: i,
        end: i + 2,
      });
      i++;
      continue;
    }
    out.push({
      name: normalizeFlagName(token.slice(2)),
      value: undefined,
      form: 'bare',
      start: i,
      end: i + 1,
    });
  }
  return out;
}

/** The value the component will see for `name` (the last occurrence), or undefined when unset or bare. */
export function getFlag(args: readonly string[], name: string): string | undefined {
  const wanted = normalizeFlagName(name);
  const found = parseArgs(args).filter((f) => f.name === wanted);
  return found.at(-1)?.value;
}

export function hasFlag(args: readonly string[], name: string): boolean {
  const wanted = normalizeFlagName(name);
  return parseArgs(args).some((f) => f.name === wanted);
}

/** Whether the list already satisfies the change: set → exactly one occurrence with that value; remove → none. */
export function isSatisfied(args: readonly string[], change: FlagChange): boolean {
  const wanted = normalizeFlagName(change.flag);
  const found = parseArgs(args).filter((f) => f.name === wanted);
  if (change.value === undefined) return found.length === 0;
  return found.length === 1 && found[0]?.value === change.value;
}

/** The changes that would alter the list; the others are already in effect. */
export function effectiveChanges(args: readonly string[], changes: readonly FlagChange[]): FlagChange[] {
  return changes.filter((c) => !isSatisfied(args, c));
}

/**
 * What to do to the list for the changes: a set replaces the first occurrence in place (keeping its
 * `=` or separate form), drops later duplicates (the last one would win otherwise), or appends
 * `--name=value` at the end; a remove drops every occurrence. Changes already in effect produce nothing,
 * so a second run over the result returns no edits. Later changes to the same flag override earlier ones.
 */
export function planArgEdits(args: readonly string[], changes: readonly FlagChange[]): ArgEdit[] {
  const desired = new Map<string, FlagChange>();
  for (const c of changes) desired.set(normalizeFlagName(c.flag), c);
  const occurrences = parseArgs(args);
  const replaces: Array<Extract<ArgEdit, { op: 'replace' }>> = [];
  const appends: ArgEdit[] = [];
  for (const [name, change] of desired) {
    if (isSatisfied(args, change)) continue;
    const found = occurrences.filter((f) => f.name === name);
    found.forEach((f, i) => {
      let tokens: string[] = [];
      if (change.value !== undefined && i === 0) {
        const written = args[f.start] ?? `--${name}`;
        tokens =
          f.form === 'separate' ? [written, change.value] : [`${written.split('=')[0]}=${change.value}`];
      }
      replaces.push({ op: 'replace', start: f.start, end: f.end, tokens });
    });
    if (change.value !== undefined && found.length === 0) {
      appends.push({ op: 'append', tokens: [formatFlag(name, change.value)] });
    }
  }
  replaces.sort((a, b) => a.start - b.start);
  return [...replaces, ...appends];
}

/** Applies edits from `planArgEdits` to a plain list. */
export function applyArgEdits(args: readonly string[], edits: readonly ArgEdit[]): string[] {
  const out: string[] = [];
  const replaces = edits.filter((e) => e.op === 'replace');
  let next = 0;
  for (const e of replaces) {
    out.push(...args.slice(next, e.start), ...e.tokens);
    next = e.end;
  }
  out.push(...args.slice(next));
  for (const e of edits) if (e.op === 'append') out.push(...e.tokens);
  return out;
}

/** `applyArgEdits(args, planArgEdits(args, changes))`. */
export function applyFlagChanges(args: readonly string[], changes: readonly FlagChange[]): string[] {
  return applyArgEdits(args, planArgEdits(args, changes));
}

/**
 * For each change, the change that puts the flag back as `args` had it: its last value when it was
 * set (a bare flag comes back bare as an empty value), a removal when it was absent.
 */
export function inverseChanges(args: readonly string[], changes: readonly FlagChange[]): FlagChange[] {
  const occurrences = parseArgs(args);
  return changes.map((c) => {
    const name = normalizeFlagName(c.flag);
    const last = occurrences.filter((f) => f.name === name).at(-1);
    return last
      ? { flag: name, value: last.value ?? '', reason: 'as it was before cluster prepare' }
      : { flag: name, reason: 'absent before cluster prepare' };
  });
}
