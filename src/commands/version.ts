import { BaseCommand } from '../cli/base-command.js';
import { defineReport, type Report } from '../cli/output/report.js';

interface VersionInfo {
  version: string;
  node: string;
  platform: string;
}

/** `ccm version`, as `kubectl version --client`: one line, or the fields with -o json|yaml. */
export default class Version extends BaseCommand {
  static override summary = "Print ccm's version, and the Node.js and platform it runs on";
  static override examples = ['<%= config.bin %> version', '<%= config.bin %> version -o json'];

  async run(): Promise<Report<VersionInfo>> {
    await this.parse(Version);
    const info: VersionInfo = {
      version: this.config.version,
      node: process.version,
      platform: `${process.platform}/${process.arch}`,
    };
    const line = `ccm ${info.version} (Node.js ${info.node}, ${info.platform})`;
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
