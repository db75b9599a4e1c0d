import { BaseCommand } from '../cli/base-command.js';
import { buildCommit } from '../cli/build-info.js';
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
 * `ccm version`, as `kubectl version --client`: one line, or the fields with -o json|yaml. `ccm
 * --version` (oclif's) prints the same version, Node and platform in one word each, without the commit.
 */
export default class Version extends BaseCommand {
  static override summary = "Print ccm's version and commit, and the Node.js and platform it runs on";
  static override examples = ['<%= config.bin %> version', '<%= config.bin %> version -o json'];

  async run(): Promise<Report<VersionInfo>> {
    await this.parse(Version);
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
