import * as Flags from '@oclif/core/flags';
import { BaseCommand } from '../cli/base-command.js';
import { UsageError } from '../cli/errors.js';
import { secretRefFlag } from '../cli/flag-values.js';
import type { MigrateInput, ServicePlan } from '../cli/migrate.js';
import type { Report } from '../cli/output/report.js';

export default class Migrate extends BaseCommand {
  static override summary = "Take over the official controller's load balancers, in place, with a way back";
  static override description = [
    "Finds what the cloud's official controller left in the cluster (its Deployment or DaemonSet, its Lease, its Secret, the Services it finalised and their annotations) and, in the cloud, the load balancer of each Service by that controller's own naming and tagging rules. Prints the plan: the Secret ccm will read, the load balancer ccm adopts for each Service with its IP, the tags it adds next to the official ones, and what it leaves alone.",
    "By default a dry run that writes nothing. --yes applies (on a terminal the plan is confirmed first): a backup in ConfigMap kube-system/ccm-migrate-backup, ccm's ownership tag where the cloud can tag, and the annotation ccm.io/adopted-load-balancer on each Service; `ccm run` then updates that load balancer in place (same id, name and address). --rollback restores the tags and annotations exactly as they were. No load balancer is ever created or deleted, no address changed.",
    'Sequence: scale the official controller to 0; `ccm migrate --yes`; deploy ccm (`ccm manifests`). Exit status: 0 done (or nothing to do), 1 the cluster or cloud failed, 2 usage or configuration error.',
  ].join('\n\n');
  static override examples = [
    '<%= config.bin %> migrate --provider digitalocean',
    '<%= config.bin %> migrate --provider digitalocean --yes',
    '<%= config.bin %> migrate --provider digitalocean --rollback',
    '<%= config.bin %> migrate --provider digitalocean --rollback --yes',
  ];
  static override flags = {
    from: Flags.string({
      description:
        "The official controller to take over from, where the cloud has more than one (default: the cloud's own)",
    }),
    'dry-run': Flags.boolean({
      description: 'Print the plan and write nothing (the default)',
      default: false,
    }),
    yes: Flags.boolean({
      char: 'y',
      description: 'Apply the plan (the hand-over, or with --rollback the give-back) without asking',
      default: false,
    }),
    rollback: Flags.boolean({
      description:
        'Plan giving everything back to the official controller (the tags and annotations as they were before --yes); with --yes, do it',
      default: false,
    }),
    'cluster-name': Flags.string({
      description:
        "ccm's identity in its ownership tags, as `ccm run --cluster-name` (default: derived from the kube-system namespace UID)",
    }),
    'official-cluster-name': Flags.string({
      description:
        "The --cluster-name the official controller ran with (default: the one its Deployment or DaemonSet passes it, else that controller's default)",
    }),
    'credentials-secret': Flags.string({
      description:
        "Read the provider's credentials from this Secret (namespace/name); default: the flags and environment, else the official controller's Secret in kube-system",
      parse: async (input) => secretRefFlag(input),
    }),
  };

  async run(): Promise<Report<ServicePlan>> {
    const { flags } = await this.parse(Migrate);
    // --rollback says what is done, --dry-run and --yes whether it is done: as `cluster prepare`.
    if (flags['dry-run'] && flags.yes) {
      throw new UsageError(
        '--dry-run and --yes exclude each other; pass one (no flag: a plan, confirmed on a terminal)',
      );
    }
    // A slow API server or cloud is said as in every command (docs/output.md).
    const { kubeWaitNotices, waitNotices } = await import('../cli/kube-flags.js');
    const { onCloudWait } = await import('../providers/http.js');
    const stopNotices = onCloudWait(...waitNotices(this.progress));
    try {
      return await this.migrate({ ...flags, env: process.env, ...kubeWaitNotices(this.progress) });
    } finally {
      stopNotices();
    }
  }

  /** The plan, a confirmation on a terminal, then the hand-over or the give-back (--rollback). */
  private async migrate(
    input: Omit<MigrateInput, 'mode'> & { rollback: boolean; yes: boolean; 'dry-run': boolean },
  ): Promise<Report<ServicePlan>> {
    const { planKeys, runMigrate } = await import('../cli/migrate.js');
    const { migrateReport } = await import('../cli/migrate-report.js');
    const { cancellableRead } = await import('../cli/read-interrupt.js');
    // The plans only read: Ctrl-C while they wait ends with one line. The writes keep to the signal.
    const plan = (mode: 'dry-run' | 'rollback-dry-run') =>
      cancellableRead(this.progress, () => runMigrate({ ...input, mode }));
    if (input.rollback) {
      if (input.yes) return migrateReport(await runMigrate({ ...input, mode: 'rollback' }));
      const back = await plan('rollback-dry-run');
      if (
        input['dry-run'] ||
        !this.human ||
        !process.stdin.isTTY ||
        !process.stdout.isTTY ||
        back.services.length === 0
      )
        return migrateReport(back);
      // The load balancer's name is the tenant's (do-loadbalancer-name): screened, as the hand-over's.
      const { printableLine } = await import('../printable.js');
      this.log(
        back.services
          .map((s) => printableLine(`  ${s.namespace}/${s.name} ← ${s.loadBalancer?.name}`))
          .join('\n'),
      );
      const { confirm } = await import('@inquirer/prompts');
      const go = await confirm({ message: 'Give these back to the official controller?', default: false });
      return migrateReport(go ? await runMigrate({ ...input, mode: 'rollback' }) : back);
    }
    if (input.yes) return migrateReport(await runMigrate({ ...input, mode: 'apply' }));
    const handOver = await plan('dry-run');
    if (input['dry-run'] || !this.human || !process.stdin.isTTY || !process.stdout.isTTY)
      return migrateReport(handOver);
    if (!handOver.services.some((s) => s.action === 'adopt')) return migrateReport(handOver);
    // Names and addresses of the cloud and of Services: printable, one line each, as the report's are
    // (render.ts).
    const { printableLine } = await import('../printable.js');
    this.log(
      handOver.services
        .filter((s) => s.action === 'adopt')
        .map((s) =>
          printableLine(
            `  ${s.namespace}/${s.name} → ${s.loadBalancer?.name} (${s.loadBalancer?.addresses.join(', ')})`,
          ),
        )
        .join('\n'),
    );
    const { confirm } = await import('@inquirer/prompts');
    const go = await confirm({ message: `Hand these load balancers to ccm?`, default: false });
    if (!go) return migrateReport(handOver);
    // Exactly the plan confirmed: applying refuses if the cluster or the cloud changed it meanwhile.
    return migrateReport(
      await runMigrate({ ...input, mode: 'apply', confirmed: planKeys(handOver.services) }),
    );
  }
}
