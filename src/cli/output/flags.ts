import * as Flags from '@oclif/core/flags';

/** The -o formats, as kubectl names them. */
export const FORMATS = ['table', 'wide', 'json', 'yaml', 'name'] as const;
export type Format = (typeof FORMATS)[number];

/** What a command's result is shown as: a -o format, plain log lines (the default off a terminal), or --quiet. */
export type View = Format | 'lines' | 'quiet';

/** Output flags every command shares (part of the base command's flags). */
export const outputFlags = {
  output: Flags.option({
    char: 'o',
    options: FORMATS,
    description:
      'Output format. Default: table on a terminal, else a summary line and one line per changed or failed object',
    helpGroup: 'OUTPUT',
  })(),
  json: Flags.boolean({ description: 'Same as -o json', helpGroup: 'OUTPUT' }),
  'no-headers': Flags.boolean({
    description: "The rows alone, as kubectl's: no summary line and no column header",
    helpGroup: 'OUTPUT',
  }),
  quiet: Flags.boolean({
    char: 'q',
    description: 'Print only failures (nothing when there are none); the exit status stays the same',
    helpGroup: 'OUTPUT',
  }),
};

export interface OutputFlagValues {
  output?: Format;
  json?: boolean;
  quiet?: boolean;
  'no-headers'?: boolean;
}

/** Why the output flags contradict each other, if they do. */
export function conflictIn(flags: OutputFlagValues): string | undefined {
  if (flags.quiet && (flags.output || flags.json)) {
    return `--quiet prints only failures; it cannot be combined with ${flags.json ? '--json' : `-o ${flags.output}`}`;
  }
  if (flags.json && flags.output && flags.output !== 'json') {
    return `--json is -o json; it cannot be combined with -o ${flags.output}`;
  }
  return undefined;
}

export function chooseView(flags: OutputFlagValues, tty: boolean): View {
  if (flags.quiet) return 'quiet';
  if (flags.output) return flags.output;
  if (flags.json) return 'json';
  return tty ? 'table' : 'lines';
}

/** Spinners and task lists only for a person watching a table form on a terminal. */
export function showsProgress(view: View, tty: boolean): boolean {
  return tty && (view === 'table' || view === 'wide');
}

/** Whether the view is for a person (diffs, hints and previews may be printed around it). */
export function isHumanView(view: View): boolean {
  return view === 'table' || view === 'wide' || view === 'lines';
}
