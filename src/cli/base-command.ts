import type { Interfaces } from '@oclif/core';
import { Command } from '@oclif/core/command';
import * as Flags from '@oclif/core/flags';
import { closest } from '../closest.js';
import { printableLine } from '../printable.js';
import { useProxyEnvironment } from '../providers/http-transport.js';
import { providerNames } from '../providers/registry.js';
import { stderrLine } from '../warn-once.js';
import { endProcess } from './end-process.js';
import {
  EXIT_FAILED,
  EXIT_INTERRUPTED,
  EXIT_USAGE,
  exitCodeFor,
  expectedText,
  flagValueError,
  oneLine,
  UsageError,
} from './errors.js';
import { httpUrlFlag, parseBoolean, providerName } from './flag-values.js';
import { parseRequestTimeout } from './kube-flags.js';
import {
  chooseView,
  conflictIn,
  isHumanView,
  type OutputFlagValues,
  outputFlags,
  showsProgress,
  type View,
} from './output/flags.js';
import { isReport, jsonText } from './output/report.js';

/** An integer flag whose error names the allowed range, e.g. "--concurrency: expected a whole number from 1 to 256, got 0". */
export function integerInRange(options: { description: string; min: number; max: number }) {
  const { min, max } = options;
  return Flags.custom<number>({
    description: `${options.description} (${min}-${max})`,
    parse: async (input) => {
      const value = /^\s*-?\d+\s*$/.test(input) ? Number(input) : Number.NaN;
      if (!Number.isSafeInteger(value) || value < min || value > max) {
        throw new Error(expectedText(`a whole number from ${min} to ${max}`, input));
      }
      return value;
    },
  });
}

/** Flags every command shares. */
export const globalFlags = {
  kubeconfig: Flags.string({
    description: 'Path of the kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)',
    helpGroup: 'GLOBAL',
  }),
  context: Flags.string({ description: 'Kubeconfig context to use', helpGroup: 'GLOBAL' }),
  'request-timeout': Flags.custom<number>({
    description:
      "How long one request to the API server may take, as kubectl's flag: 30s, 2m, a number of seconds, or 0 for no limit (default: each request's own)",
    helpGroup: 'GLOBAL',
    parse: async (input) => parseRequestTimeout(input),
  })(),
  provider: Flags.string({
    description: `Cloud provider: ${providerNames.join(', ')}`,
    env: 'CCM_PROVIDER',
    helpGroup: 'GLOBAL',
    // DigitalOcean, OpenStack: the names as people write them are the same provider. A name ccm does
    // not know is refused here, before the kubeconfig is read, with the closest one.
    parse: async (input, context) => providerName(input, context?.token ? undefined : 'CCM_PROVIDER'),
  }),
  'cloud-config': Flags.string({
    description: "Provider config file (Cloudlycke: the inventory YAML; env: each provider's own)",
    helpGroup: 'GLOBAL',
  }),
  'cloud-api-url': Flags.string({
    description: "The cloud API's base URL, to override the provider's default (env: each provider's own)",
    helpGroup: 'GLOBAL',
    parse: async (input) => httpUrlFlag(input),
  }),
  'log-level': Flags.option({
    options: ['error', 'warn', 'info', 'debug'] as const,
    default: 'info',
    helpGroup: 'GLOBAL',
  })(),
};

/**
 * What every command shares but the global flags: `--flag=false`, and errors as one line on stderr
 * with the right exit code and no stack trace (unless --log-level=debug). `ccm completion`, which
 * has nothing to do with a cluster or a cloud, extends this.
 */
export abstract class CcmCommandCore extends Command {
  /**
   * Boolean flags also take `--name=false` / `--name=true` (and the rest of what Go's ParseBool
   * takes), the spelling of the reference controllers (e.g. `--leader-elect=false`), which oclif alone
   * reads as a stray argument. Any other value is the flag's bad value, not an argument.
   */
  override async init(): Promise<void> {
    const flags = { ...this.ctor.baseFlags, ...this.ctor.flags } as Record<
      string,
      { type?: string; allowNo?: boolean; default?: unknown } | undefined
    >;
    const end = this.argv.indexOf('--');
    this.argv = this.argv.flatMap((arg, i) => {
      const match = /^--([a-z0-9-]+)=(.*)$/is.exec(arg);
      const flag = match && (end < 0 || i < end) ? flags[match[1] as string] : undefined;
      if (!match || flag?.type !== 'boolean') return [arg];
      const value = parseBoolean(match[2] as string);
      if (value === undefined) throw flagValueError(match[1] as string, 'true or false', match[2] as string);
      if (value) return [`--${match[1]}`];
      if (flag.allowNo) return [`--no-${match[1]}`];
      // false is already the value of a flag that defaults to false.
      return flag.default ? [arg] : [];
    });
    // The cloud clients choose their proxy from this environment (HTTPS_PROXY, NO_PROXY).
    useProxyEnvironment(process.env);
    await super.init();
  }

  private parseErrorLine(err: Error): string | undefined {
    if (!isParseError(err)) return undefined;
    const flags = Object.keys({ ...this.ctor.baseFlags, ...this.ctor.flags });
    return parseErrorText(
      err.message,
      (this.id ?? '').replaceAll(':', ' '),
      flags,
      Object.keys(this.ctor.args ?? {}).length > 0,
    );
  }

  protected override async catch(err: Error & { exitCode?: number }): Promise<void> {
    // oclif's own exit() throws an ExitError; let it through untouched.
    if ((err as { code?: string }).code === 'EEXIT') throw err;
    // The error's line says it all: without this, oclif adds a warning (with NODE_ENV=development or
    // test) that a command refused while parsing did not parse.
    this.parsed = true;
    // Ctrl-C at a prompt (inquirer's ExitPromptError): what a shell reports for SIGINT, not its text.
    if (err.name === 'ExitPromptError') {
      process.stderr.write('ccm: cancelled at the prompt (Ctrl-C); nothing was written\n');
      return endProcess(EXIT_INTERRUPTED);
    }
    const debug =
      this.argv.includes('--log-level=debug') || this.argv.join(' ').includes('--log-level debug');
    // An error's message may quote a cloud's answer or a Kubernetes object: no escape sequence of theirs
    // reaches the terminal.
    stderrLine(this.parseErrorLine(err) ?? oneLine(err));
    if (debug && err.stack) process.stderr.write(`${debugStack(err)}\n`);
    // Ended by its loop running dry, as a success is (end-process.ts): work still under way when the
    // error came gets the backstop's second at most.
    endProcess(err.name === 'CLIError' || isParseError(err) ? EXIT_USAGE : exitCodeFor(err));
  }
}

/**
 * What every command shares: the global flags, and CcmCommandCore's flag values and error lines. A
 * command with a result to print extends BaseCommand; `ccm run`, which logs until it is stopped,
 * extends this.
 */
export abstract class CcmCommand extends CcmCommandCore {
  static override baseFlags = globalFlags;
}

/**
 * A command whose run() returns a Report; this class is the one place output is made: it prints the
 * report in the chosen view (-o, --json, --quiet, terminal or not) and sets the exit status.
 */
export abstract class BaseCommand extends CcmCommand {
  // oclif's --json contract: a returned result is printed as JSON and this.log() is silenced.
  static override enableJsonFlag = true;
  static override baseFlags = { ...globalFlags, ...outputFlags };

  private output: OutputFlagValues = {};

  /** How the result will be shown; known once the command has parsed its flags. */
  protected get view(): View {
    return chooseView(this.output, Boolean(process.stdout.isTTY));
  }

  /** Whether a spinner or task list may draw on the terminal. */
  protected get progress(): boolean {
    return showsProgress(this.view, Boolean(process.stdout.isTTY));
  }

  /** Whether text for a person (previews, hints) may go to stdout around the result. */
  protected get human(): boolean {
    return isHumanView(this.view);
  }

  protected override async parse<
    F extends Record<string, unknown>,
    B extends Record<string, unknown>,
    A extends Record<string, unknown>,
  >(options?: Interfaces.Input<F, B, A>, argv?: string[]): Promise<Interfaces.ParserOutput<F, B, A>> {
    const parsed = await super.parse(options, argv);
    const output = parsed.flags as OutputFlagValues;
    const conflict = conflictIn(output);
    if (conflict) throw new UsageError(conflict);
    this.output = output;
    return parsed;
  }

  override jsonEnabled(): boolean {
    return this.view === 'json' || super.jsonEnabled();
  }

  protected override toSuccessJson(result: unknown): unknown {
    return isReport(result) ? result.data : result;
  }

  /** Plain JSON: never coloured, and fast on a report of thousands of rows. */
  protected override logJson(json: unknown): void {
    process.stdout.write(`${jsonText(json)}\n`);
  }

  protected override async _run<T>(): Promise<T> {
    const result = await super._run<T>();
    if (isReport(result)) {
      if (!this.jsonEnabled()) {
        const { render, stdoutTerminal } = await import('./output/render.js');
        let text: string;
        try {
          text = await render(result, this.view, stdoutTerminal(), {
            noHeaders: this.output['no-headers'] ?? false,
            allowMissingKeys: this.output['allow-missing-template-keys'] ?? true,
            ...(this.output.output ? { template: this.output.output } : {}),
          });
        } catch (err) {
          // A template that fails on the result (--allow-missing-template-keys=false): one line, exit 1.
          await this.catch(err as Error);
          return result;
        }
        // A jsonpath template may end its own last line (`{"\n"}`), as kubectl prints it.
        if (text !== '') process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
      }
      if (result.failed) endProcess(result.exitCode ?? EXIT_FAILED);
    }
    return result;
  }
}

/**
 * oclif's parse errors in the one style docs/output.md shows ("--flag: expected …, got …"), a
 * misspelt flag with the closest one, and the command's own help named.
 */
export function parseErrorText(
  message: string,
  command: string,
  flagNames: readonly string[],
  takesArguments: boolean,
): string | undefined {
  const unknown = /^Nonexistent flags?: (\S+)/.exec(message)?.[1]?.replace(/,$/, '');
  if (unknown) {
    const typed = unknown.replace(/^-+/, '').split('=')[0] ?? '';
    const near = closest(typed, flagNames);
    return `unknown flag ${unknown.split('=')[0]}; ${near ? `did you mean --${near}?` : `\`ccm ${command} --help\` lists the flags`}`;
  }
  const argument = /^Unexpected arguments?: (.+)$/m.exec(message)?.[1];
  if (argument) {
    return `unexpected argument "${argument.split(/,\s*/)[0]}"; ${takesArguments ? `\`ccm ${command} --help\` shows what it takes` : `ccm ${command} takes no arguments, only flags`}`;
  }
  const choice = /^Expected --([\w-]+)=(.*) to be one of: (.+)$/m.exec(message);
  if (choice) return `--${choice[1]}: ${expectedText(`one of ${choice[3]}`, choice[2] as string)}`;
  // `-o` or `--provider` last on the line, or before another flag.
  const noValue = /^Flag --([\w-]+) expects (?:a value|one of these values: (.+))$/m.exec(message);
  if (noValue)
    return `--${noValue[1]}: expected ${noValue[2] ? `one of ${noValue[2]}` : 'a value'}, got nothing`;
  const exclusive = /^\s*--([\w-]+)(?:=.*)? cannot also be provided when using --([\w-]+)$/m.exec(message);
  if (exclusive) return `--${exclusive[1]} and --${exclusive[2]} exclude each other; give one of them`;
  const needs = /^\s*All of the following must be provided when using --([\w-]+): (.+)$/m.exec(message);
  if (needs) return `--${needs[1]} needs ${needs[2]} as well`;
  return undefined;
}

function isParseError(err: Error): boolean {
  return /Nonexistent flag|Unexpected argument|Expected --|Missing required flag|Expected .* to be one of|Parsing --|^Flag --[\w-]+ expects|cannot also be provided when using|must be provided when using/im.test(
    err.message,
  );
}

/**
 * The stack --log-level=debug prints under the error's line: its message (which may quote a cloud's
 * answer, newlines and all) on one line, and every other line indented, so that nothing in it reads
 * as a `ccm: …` line of its own.
 */
export function debugStack(err: Error): string {
  const stack = err.stack ?? '';
  const head = `${err.name}: ${err.message}`;
  const [first, ...rest] = stack.startsWith(head)
    ? [`${err.name}: ${printableLine(err.message)}`, ...stack.slice(head.length).split('\n').slice(1)]
    : stack.split('\n');
  return [printableLine(first ?? ''), ...rest.map((line) => `    ${printableLine(line).trimStart()}`)].join(
    '\n',
  );
}
