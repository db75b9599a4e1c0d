import type { CommandSpec, CompletionSpec, FlagSpec } from './spec.js';

/** A command's flag spellings: the long name, the short one, the negation. */
export function spellings(flag: FlagSpec): string[] {
  return [flag.long, flag.short, flag.negation].filter((s): s is string => s !== undefined);
}

/** The flags that take a value, that take none, and that may be given again, of a command. */
export function flagSets(flags: FlagSpec[]): { value: string[]; bool: string[]; multiple: string[] } {
  return {
    value: flags.filter((f) => f.takesValue).flatMap(spellings),
    bool: flags.filter((f) => !f.takesValue).flatMap(spellings),
    multiple: flags.filter((f) => f.multiple).flatMap(spellings),
  };
}

/** `-o:--output` pairs: a short flag and its long name are one flag, once given. */
export function shortPairs(flags: FlagSpec[]): string[] {
  return flags.filter((f) => f.short).map((f) => `${f.short}:${f.long}`);
}

/**
 * The flags with a fixed set of values, grouped by that set: each group's keys are "command flag"
 * (`nodes init --provider`, `nodes init -o`), one case of the script for all that share the set.
 */
export function valueGroups(spec: CompletionSpec): { keys: string[]; items: string[]; list: boolean }[] {
  const groups = new Map<string, { keys: string[]; items: string[]; list: boolean }>();
  for (const command of spec.commands)
    for (const flag of command.flags) {
      if (!flag.values) continue;
      const id = JSON.stringify(flag.values);
      const group = groups.get(id) ?? { keys: [], ...flag.values };
      for (const s of [flag.long, flag.short]) if (s) group.keys.push(`${command.words.join(' ')} ${s}`);
      groups.set(id, group);
    }
  return [...groups.values()];
}

/** The commands whose arguments complete, and how. */
export function argCommands(spec: CompletionSpec): { id: string; args: NonNullable<CommandSpec['args']> }[] {
  return spec.commands.flatMap((c) => (c.args ? [{ id: c.words.join(' '), args: c.args }] : []));
}
