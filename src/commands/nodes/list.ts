import * as Flags from '@oclif/core/flags';
import { BaseCommand } from '../../cli/base-command.js';
import { secretRefFlag } from '../../cli/flag-values.js';
import type { NodeRow } from '../../cli/nodes-list.js';
import type { Report } from '../../cli/output/report.js';

export default class NodesList extends BaseCommand {
  static override summary = 'List every Node beside its cloud instance, and why a Node is not initialised';
  static override description = [
    "One table: each Node, its provider ID, its cloud instance (name, state, type, zone), whether it is initialised, how long it has carried the uninitialized taint and, for each Node that is not as it should be, the reason and the fix. The verdict is `ccm nodes init --dry-run`'s own plan. Reads: one Node listing and one cloud listing; writes nothing.",
    'Exit status: 0 listed; 1 the cloud listing failed (the Nodes are still listed, without their instances), or the API server failed or could not be reached; 2 usage or configuration error, a server that is not a Kubernetes API server included.',
  ].join('\n\n');
  static override examples = [
    '<%= config.bin %> nodes list --provider digitalocean',
    '<%= config.bin %> nodes list --provider cloudlycke --cloud-config inventory.yaml \\\n    -o wide --show-orphans',
  ];
  static override flags = {
    'show-orphans': Flags.boolean({
      description: 'Also list cloud instances that no Node claims',
      default: false,
    }),
    'credentials-secret': Flags.string({
      description:
        "Read the provider's credentials from this Secret (namespace/name); default: the flags and environment, else the provider's Secret in kube-system (the one `secret create` writes)",
      parse: async (input) => secretRefFlag(input),
    }),
  };

  async run(): Promise<Report<NodeRow>> {
    const { flags } = await this.parse(NodesList);
    const { runNodesList } = await import('../../cli/nodes-list.js');
    const { kubeWaitNotices, waitNotices } = await import('../../cli/kube-flags.js');
    const { nodesListReport } = await import('../../cli/nodes-list-report.js');
    const { onCloudWait } = await import('../../providers/http.js');
    const { cancellableRead } = await import('../../cli/read-interrupt.js');
    const stopNotices = onCloudWait(...waitNotices(this.progress));
    try {
      return nodesListReport(
        await cancellableRead(this.progress, () =>
          runNodesList({
            ...flags,
            showOrphans: flags['show-orphans'],
            env: process.env,
            ...kubeWaitNotices(this.progress),
          }),
        ),
      );
    } finally {
      stopNotices();
    }
  }
}
