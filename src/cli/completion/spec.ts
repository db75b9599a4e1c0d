/**
 * What `ccm completion` completes, read once when the script is printed: the commands, topics and
 * flags oclif knows (from oclif.manifest.json when it is there, as for `--help`), and the values of
 * the flags that take a fixed set. Each shell's script (bash.ts, zsh.ts, fish.ts) holds all of it, so
 * that a TAB starts no program: no ccm, no Node, nothing that could reach a network or an API server.
 */
import type { Command } from '@oclif/core/command';
import { controllerNames } from '../../controllers/manager.js';
import { providerNames } from '../../providers/registry.js';
import { FORMATS, TEMPLATES } from '../output/flags.js';

/** The shells `ccm completion` writes a script for. */
export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

export interface FlagSpec {
  /** `--name`. */
  long: string;
  /** `-c`, when the flag has one. */
  short?: string;
  /** `--no-name`, for a boolean that takes it. */
  negation?: string;
  takesValue: boolean;
  /** Given more than once (`--ssh a --ssh b`): still offered once given. */
  multiple: boolean;
  description: string;
  /** A fixed set of values; `list`: a comma list of them (`--controllers cloud-node,route`). */
  values?: { items: string[]; list: boolean };
}

export interface CommandSpec {
  /** The command's words: ['nodes', 'init']. */
  words: string[];
  summary: string;
  flags: FlagSpec[];
  /** What its arguments are: the words of a command (`help`), or one of these values (`completion`). */
  args?: 'commands' | string[];
}

export interface CompletionSpec {
  bin: string;
  commands: CommandSpec[];
  /** Every leading run of words that is not itself a command (`nodes`), with what it is about. */
  topics: { words: string[]; summary: string }[];
  /** What the bin takes alone: --help, -h, --version. */
  rootFlags: FlagSpec[];
}

/**
 * The values of the flags whose value is one of a fixed set oclif does not list (they are parsed by
 * ccm, case-insensitively or as a list): by flag name, the same in every command that has the flag.
 * A flag that lists its `options` to oclif (--log-level, --image-pull-policy…) needs no entry.
 */
function fixedValues(flag: Command.Flag.Cached): FlagSpec['values'] {
  if (flag.type !== 'option') return undefined;
  switch (flag.name) {
    case 'provider':
      return { items: [...providerNames], list: false };
    case 'output':
      // A template's text follows its `=`: completed up to it, without a space after.
      return { items: [...FORMATS, ...TEMPLATES.map((t) => `${t}=`)], list: false };
    case 'controllers':
      return { items: ['*', ...controllerNames()], list: true };
  }
  return flag.options?.length ? { items: [...flag.options], list: false } : undefined;
}

/** The first clause of a help text, short enough for a completion menu's line. */
export function shortDescription(text: string | undefined, bin: string): string {
  const line = (text ?? '').replaceAll('<%= config.bin %>', bin).split('\n')[0]?.trim() ?? '';
  const clause = line.split(/;\s|\.\s|\s\((?!e\.g\.)/)[0]?.replace(/[.:]$/, '') ?? '';
  if (clause.length <= 60) return clause;
  const cut = clause.slice(0, 59);
  return `${cut.slice(0, Math.max(cut.lastIndexOf(' '), 40)).replace(/[,;:]$/, '')}…`;
}

function flagSpec(flag: Command.Flag.Cached, bin: string): FlagSpec {
  const spec: FlagSpec = {
    long: `--${flag.name}`,
    takesValue: flag.type === 'option',
    multiple: flag.type === 'option' && Boolean(flag.multiple),
    description: shortDescription(flag.summary ?? flag.description, bin),
  };
  if (flag.char) spec.short = `-${flag.char}`;
  if (flag.type === 'boolean' && flag.allowNo) spec.negation = `--no-${flag.name}`;
  const values = fixedValues(flag);
  if (values) spec.values = values;
  return spec;
}

const HELP_FLAGS: FlagSpec[] = [
  { long: '--help', short: '-h', takesValue: false, multiple: false, description: 'Show help' },
];

/** The spec of these commands (oclif's Config: `config.commands`, `config.topics`). */
export function completionSpec(config: {
  bin: string;
  commands: Command.Loadable[];
  topics: { name: string; description?: string | undefined; hidden?: boolean | undefined }[];
}): CompletionSpec {
  const { bin } = config;
  const commands = config.commands
    .filter((c) => !c.hidden)
    .map((c): CommandSpec => {
      const flags = Object.values(c.flags)
        .filter((f) => !f.hidden)
        .map((f) => flagSpec(f, bin));
      const spec: CommandSpec = {
        words: c.id.split(':'),
        summary: shortDescription(c.summary ?? c.description, bin),
        flags: [...flags, ...HELP_FLAGS.filter((h) => !flags.some((f) => f.long === h.long))],
      };
      if (c.id === 'help') spec.args = 'commands';
      if (c.id === 'completion') spec.args = [...SHELLS];
      return spec;
    })
    .sort((a, b) => (a.words.join(' ') < b.words.join(' ') ? -1 : 1));
  const ids = new Set(commands.map((c) => c.words.join(' ')));
  const topics = [
    ...new Set(
      commands.flatMap((c) => c.words.slice(0, -1).map((_, i) => c.words.slice(0, i + 1).join(' '))),
    ),
  ]
    .filter((t) => !ids.has(t))
    .sort()
    .map((t) => ({
      words: t.split(' '),
      summary: shortDescription(
        config.topics.find((x) => x.name === t.replaceAll(' ', ':'))?.description,
        bin,
      ),
    }));
  return {
    bin,
    commands,
    topics,
    rootFlags: [
      ...HELP_FLAGS,
      { long: '--version', takesValue: false, multiple: false, description: "Print ccm's version" },
    ],
  };
}

/** The words that may follow `words` (none: the top) on the way to a command, with what each is. */
export function nextWords(spec: CompletionSpec, words: string[]): { word: string; summary: string }[] {
  const under = [...spec.commands, ...spec.topics].filter(
    (c) => c.words.length === words.length + 1 && words.every((w, i) => c.words[i] === w),
  );
  return under.map((c) => ({ word: c.words.at(-1) as string, summary: c.summary }));
}
