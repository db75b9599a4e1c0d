import { Command, Flags } from '@oclif/core';
import { providerNames } from '../providers/registry.js';
import { EXIT_USAGE, exitCodeFor, oneLine } from './errors.js';

/** An integer flag whose error names the allowed range, e.g. "--concurrency: expected a whole number from 1 to 256, got 0". */
export function integerInRange(options: { description: string; min: number; max: number }) {
  const { min, max } = options;
  return Flags.custom<number>({
    description: `${options.description} (${min}-${max})`,
    parse: async (input) => {
      const value = /^\s*-?\d+\s*$/.test(input) ? Number(input) : Number.NaN;
      if (!Number.isSafeInteger(value) || value < min || value > max) {
        throw new Error(`expected a whole number from ${min} to ${max}, got ${JSON.stringify(input)}`);
      }
      return value;
    },
  });
}

/**
 * Flags every command shares, and the one place errors become output: one line on stderr, the
 * right exit code, no stack trace (unless --log-level=debug).
 */
export abstract class BaseCommand extends Command {
  static override baseFlags = {
    kubeconfig: Flags.string({
      description: 'Path of the kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)',
      helpGroup: 'GLOBAL',
    }),
    context: Flags.string({ description: 'Kubeconfig context to use', helpGroup: 'GLOBAL' }),
    provider: Flags.string({
      description: `Cloud provider: ${providerNames.join(', ')}`,
      env: 'CCM_PROVIDER',
      helpGroup: 'GLOBAL',
    }),
    'cloud-config': Flags.string({
      description: "Provider config file (Cloudlycke: the inventory YAML; env: each provider's own)",
      helpGroup: 'GLOBAL',
    }),
    'cloud-api-url': Flags.string({
      description: "The cloud API's base URL, to override the provider's default (env: each provider's own)",
      helpGroup: 'GLOBAL',
    }),
    json: Flags.boolean({
      description: 'Print a machine-readable JSON report on stdout',
      helpGroup: 'GLOBAL',
    }),
    'log-level': Flags.option({
      options: ['error', 'warn', 'info', 'debug'] as const,
      default: 'info',
      helpGroup: 'GLOBAL',
    })(),
  };

  /**
   * Boolean flags also take `--name=false` / `--name=true`, the spelling of the reference controllers
   * (e.g. `--leader-elect=false`), which oclif alone reads as a stray argument.
   */
  override async init(): Promise<void> {
    const flags = { ...this.ctor.baseFlags, ...this.ctor.flags } as Record<
      string,
      { type?: string; allowNo?: boolean } | undefined
    >;
    this.argv = this.argv.map((arg) => {
      const match = /^--([a-z0-9-]+)=(true|false)$/i.exec(arg);
      const flag = match ? flags[match[1] as string] : undefined;
      if (!match || flag?.type !== 'boolean') return arg;
      if (match[2]?.toLowerCase() === 'true') return `--${match[1]}`;
      return flag.allowNo ? `--no-${match[1]}` : arg;
    });
    await super.init();
  }

  protected override async catch(err: Error & { exitCode?: number }): Promise<void> {
    // oclif's own exit() throws an ExitError; let it through untouched.
    if ((err as { code?: string }).code === 'EEXIT') throw err;
    const debug =
      this.argv.includes('--log-level=debug') || this.argv.join(' ').includes('--log-level debug');
    process.stderr.write(`ccm: ${oneLine(err)}\n`);
    if (debug && err.stack) process.stderr.write(`${err.stack}\n`);
    const code = err.name === 'CLIError' || isParseError(err) ? EXIT_USAGE : exitCodeFor(err);
    process.exit(code);
  }
}

function isParseError(err: Error): boolean {
  return /Nonexistent flag|Unexpected argument|Expected --|Missing required flag|Expected .* to be one of|Parsing --/i.test(
    err.message,
  );
}
