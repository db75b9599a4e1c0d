import * as Flags from '@oclif/core/flags';
import { BaseCommand, integerInRange } from '../../cli/base-command.js';
import { brakeFlags, brakeOptionsFrom } from '../../cli/brake-flags.js';
import { parseDuration } from '../../cli/duration.js';
import { flagValueError } from '../../cli/errors.js';
import { cmonGroupsFlag, secretRefFlag } from '../../cli/flag-values.js';
import type { Report } from '../../cli/output/report.js';
import type { NodeReport } from '../../controllers/nodes-pass.js';

export default class NodesInit extends BaseCommand {
  static override summary = 'Initialise and reconcile every Node against the cloud once, then exit';
  static override description = [
    'Initialises Nodes tainted node.cloudprovider.kubernetes.io/uninitialized (provider ID, instance type, zone and region labels, addresses; the taint is removed), reconciles labels and addresses of initialised Nodes, taints Nodes whose instance is shut down, and deletes Nodes whose instance the cloud positively reports as gone. Meant for a CronJob.',
    'Deletions pass the deletion brake: when the listing lost more than --max-deletion-ratio of the Nodes at once (counting those deleted in the last 10 minutes), none is deleted and the report names the hold; beyond 3 back to back, deletions wait for --node-deletion-rate, and a later pass deletes the rest.',
    'Exit status: 0 all Nodes reconciled (some may wait for the deletion rate), 1 some failed or the cloud listing failed (the report says which and why), or the API server could not be reached, 2 usage or configuration error, 3 the deletion brake held the deletions (release them with --allow-mass-deletion <id>), 130 Ctrl-C (its line says whether anything was written).',
  ].join('\n\n');
  static override examples = [
    '<%= config.bin %> nodes init --provider cloudlycke --cloud-config inventory.yaml',
    '<%= config.bin %> nodes init --provider cloudlycke --dry-run -o wide',
    '<%= config.bin %> nodes init --provider cloudlycke -o json',
    '<%= config.bin %> nodes init --provider digitalocean --allow-mass-deletion 18-3f9a2c1b',
    '<%= config.bin %> nodes init --provider triton --cmon-groups cluster,role --dry-run',
  ];
  static override flags = {
    'dry-run': Flags.boolean({ description: 'Print the plan; write nothing', default: false }),
    concurrency: integerInRange({ description: 'Nodes written in parallel', min: 1, max: 256 })({
      default: 32,
    }),
    'credentials-secret': Flags.string({
      description:
        "Read the provider's credentials from this Secret (namespace/name), as a CronJob does; default: the flags and environment, else the provider's Secret in kube-system (the one `secret create` writes)",
      parse: async (input) => secretRefFlag(input),
    }),
    'deletion-grace-period': Flags.string({
      description: 'A Node younger than this is never deleted (clouds are eventually consistent)',
      default: '5m',
    }),
    'cmon-groups': Flags.string({
      description:
        "Triton: the CMON groups kept in the triton.cmon.groups tag of each Node's machine, merged with others' (cluster, cluster=NAME, role; comma-separated; none takes ccm's off; env TRITON_CMON_GROUPS)",
      parse: async (input) => cmonGroupsFlag(input),
    }),
    'cluster-name': Flags.string({
      description:
        "The cluster identity `ccm run` is given (its --cluster-name): the default CMON cluster group, and the owner in ccm's record of its groups (default: derived from the kube-system namespace UID)",
    }),
    ...brakeFlags,
    'allow-mass-deletion': Flags.string({
      description:
        'Delete the Nodes of this held deletion (the id the held report and Events name), in this pass only; refused unless it is the current hold',
    }),
  };

  async run(): Promise<Report<NodeReport>> {
    const { flags } = await this.parse(NodesInit);
    const grace = parseDuration(flags['deletion-grace-period']);
    if (grace === undefined) {
      throw flagValueError(
        'deletion-grace-period',
        'a duration such as 90s, 5m or 1h',
        flags['deletion-grace-period'],
      );
    }
    const { runNodesInit } = await import('../../cli/nodes-init.js');
    const { nodesInitReport } = await import('../../cli/nodes-report.js');
    const result = await runNodesInit({
      ...flags,
      progress: this.progress,
      pass: {
        dryRun: flags['dry-run'],
        concurrency: flags.concurrency,
        deletionGracePeriodMs: grace,
        brake: brakeOptionsFrom(flags),
      },
      ...(flags['allow-mass-deletion'] !== undefined
        ? { allowMassDeletion: flags['allow-mass-deletion'] }
        : {}),
      env: process.env,
    });
    return nodesInitReport(result);
  }
}
