import * as Flags from '@oclif/core/flags';
import { BaseCommand } from '../cli/base-command.js';
import { buildCommit } from '../cli/build-info.js';
import { UsageError } from '../cli/errors.js';
import { outputFlags } from '../cli/output/flags.js';
import { defineReport, type Report } from '../cli/output/report.js';

interface VersionInfo {
  version: string;
  /** The commit the build was made from (`-dirty` when its work tree had changes), or 'unknown'. */
  commit: string;
  node: string;
  platform: string;
}

/** The commit as `git log --oneline` abbreviates it, at 12 characters, with its `-dirty`. */
const shortCommit = (commit: string) => commit.replace(/^([0-9a-f]{12})[0-9a-f]+/, '$1');

/**
 * The flags every other command takes that mean nothing to `ccm version`, and why: refused in one line
 * (exit 2), as `ccm manifests` refuses --kubeconfig, rather than taken and dropped unseen. They are
 * hidden (not in its help, not completed) and plain: no environment variable (CCM_PROVIDER) or default
 * can make one look given.
 */
const VERSION_ONLY = "it prints this ccm's own version";
const ALONE = "`ccm version -o jsonpath='{.version}'` prints the version alone";
const REFUSED: Record<string, string> = {
  kubeconfig: `${VERSION_ONLY} and reads no cluster`,
  context: `${VERSION_ONLY} and reads no cluster`,
  'request-timeout': `${VERSION_ONLY} and reads no cluster`,
  provider: `${VERSION_ONLY} and reaches no cloud`,
  'cloud-config': `${VERSION_ONLY} and reaches no cloud`,
  'cloud-api-url': `${VERSION_ONLY} and reaches no cloud`,
  'log-level': `${VERSION_ONLY} and logs nothing`,
  'no-headers': `its one line has no header; ${ALONE}`,
  quiet: `it prints only failures, and there is none; ${ALONE}`,
};

/**
 * `ccm version`, as `kubectl version --client`: one line, or the fields with -o json|yaml. `ccm
 * --version` (oclif's) prints the same version, Node and platform in one word each, without the commit.
 */
export default class Version extends BaseCommand {
  static override summary = "Print ccm's version and commit, and the Node.js and platform it runs on";
  static override examples = ['<%= config.bin %> version', '<%= config.bin %> version -o json'];
  // Typed as BaseCommand's (a subclass must keep its static side): the refused flags here are plain
  // strings and are only ever checked for being given.
  static override baseFlags = {
    output: outputFlags.output,
    json: outputFlags.json,
    'allow-missing-template-keys': outputFlags['allow-missing-template-keys'],
    ...Object.fromEntries(
      Object.keys(REFUSED)
        .filter((name) => name !== 'no-headers' && name !== 'quiet')
        .map((name) => [name, Flags.string({ hidden: true })]),
    ),
    'no-headers': Flags.boolean({ hidden: true }),
    quiet: Flags.boolean({ char: 'q', hidden: true }),
  } as unknown as typeof BaseCommand.baseFlags;

  async run(): Promise<Report<VersionInfo>> {
    const { flags } = await this.parse(Version);
    const given = Object.keys(REFUSED).find((name) => (flags as Record<string, unknown>)[name] !== undefined);
    if (given) throw new UsageError(`--${given} does not apply to \`ccm version\`: ${REFUSED[given]}`);
    const info: VersionInfo = {
      version: this.config.version,
      commit: buildCommit,
      node: process.version,
      platform: `${process.platform}/${process.arch}`,
    };
    const line = `ccm ${info.version} (commit ${shortCommit(info.commit)}, Node.js ${info.node}, ${info.platform})`;
    return defineReport<VersionInfo>({
      data: info,
      kind: 'version',
      noun: ['version', 'versions'],
      rows: [info],
      name: (v) => v.version,
      tone: () => 'ok',
      columns: [],
      summary: line,
      documents: { table: () => line, wide: () => line },
      failed: false,
    });
  }
}
