import * as Flags from '@oclif/core/flags';
import { expectedText } from '../errors.js';

/** The -o formats, as kubectl names them. */
export const FORMATS = ['table', 'wide', 'json', 'yaml', 'name'] as const;
export type Format = (typeof FORMATS)[number];

/** kubectl's template formats: `-o jsonpath=TEMPLATE`, `-o custom-columns=HEADER:.path,…`. */
export const TEMPLATES = ['jsonpath', 'custom-columns'] as const;
export type Template = (typeof TEMPLATES)[number];

/**
 * What a command's result is shown as: a -o format or template, plain log lines (the default off a
 * terminal), or --quiet.
 */
export type View = Format | Template | 'lines' | 'quiet';

/** `-o`'s value: a format, or a template with its text after `=`. */
export async function parseOutput(value: string): Promise<string> {
  const template = TEMPLATES.find((t) => value.startsWith(`${t}=`));
  if ((FORMATS as readonly string[]).includes(value)) return value;
  if (template && value.length > template.length + 1) {
    // jsonpath-plus is loaded only when a template is asked for.
    const { checkTemplate } = await import('./templates.js');
    checkTemplate(template, value.slice(template.length + 1));
    return value;
  }
  throw new Error(
    expectedText(`one of ${FORMATS.join(', ')}, jsonpath=TEMPLATE or custom-columns=HEADER:.path,…`, value),
  );
}

/** Output flags every command shares (part of the base command's flags). */
export const outputFlags = {
  output: Flags.string({
    char: 'o',
    description:
      'Output format: table, wide, json, yaml, name, jsonpath=TEMPLATE or custom-columns=HEADER:.path,… (as kubectl). Default: table on a terminal, else a summary line and one line per changed or failed object',
    helpGroup: 'OUTPUT',
    parse: parseOutput,
  }),
  json: Flags.boolean({ description: 'Same as -o json', helpGroup: 'OUTPUT' }),
  'no-headers': Flags.boolean({
    description: "The rows alone, as kubectl's: no summary line and no column header",
    helpGroup: 'OUTPUT',
  }),
  'allow-missing-template-keys': Flags.boolean({
    description:
      "As kubectl's: with -o jsonpath, a field no object has prints nothing; =false makes it an error (exit 1), for scripts that must not read a misspelt path as an empty answer",
    // A section of its own: its long name would widen OUTPUT's first column past the terminal.
    helpGroup: 'TEMPLATE',
    default: true,
    allowNo: true,
  }),
  quiet: Flags.boolean({
    char: 'q',
    description: 'Print only failures (nothing when there are none); the exit status stays the same',
    helpGroup: 'OUTPUT',
  }),
};

export interface OutputFlagValues {
  output?: string;
  json?: boolean;
  quiet?: boolean;
  'no-headers'?: boolean;
  'allow-missing-template-keys'?: boolean;
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
  const template = TEMPLATES.find((t) => flags.output?.startsWith(`${t}=`));
  if (template) return template;
  if (flags.output) return flags.output as Format;
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
