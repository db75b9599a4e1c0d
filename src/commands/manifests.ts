import * as Flags from '@oclif/core/flags';
import { BaseCommand } from '../cli/base-command.js';
import { UsageError } from '../cli/errors.js';
import type { ManifestRow } from '../cli/manifests-report.js';
import type { Report } from '../cli/output/report.js';
import { loadProvider } from '../providers/registry.js';

export default class Manifests extends BaseCommand {
  static override summary = 'Print the manifests that run ccm in a cluster (RBAC, Deployment, CronJob)';
  static override description = [
    'Prints kubectl-appliable YAML for one provider: the ServiceAccount, a least-privilege ClusterRole (exactly what the enabled controllers call), the leader-election Role, a get-by-name Role on the credentials Secret, a Deployment of `ccm run` with two replicas and a PodDisruptionBudget and, with --cronjob, the `ccm nodes init` CronJob. The pods run before the CNI and on uninitialised Nodes.',
    'Apply with: ccm manifests --provider X | kubectl apply --server-side -f -',
  ].join('\n\n');
  static override examples = [
    '<%= config.bin %> manifests --provider digitalocean | kubectl apply --server-side -f -',
    '<%= config.bin %> manifests --provider digitalocean -o name',
    '<%= config.bin %> manifests --provider cloudlycke --cronjob --out ./ccm-manifests',
  ];
  static override flags = {
    image: Flags.string({ description: 'Image of ccm (pin it by digest in production)' }),
    namespace: Flags.string({
      description: 'Namespace of the Deployment, its Lease and ServiceAccount',
      default: 'kube-system',
    }),
    controllers: Flags.string({
      description: 'Controllers the Deployment runs (and the RBAC allows)',
      default: '*',
    }),
    'credentials-secret': Flags.string({
      description:
        "Secret (namespace/name) with the provider's credentials; default: the official controller's",
    }),
    'cluster-name': Flags.string({
      description: 'Identity in the ownership tag of cloud resources (default: from kube-system)',
    }),
    cronjob: Flags.boolean({
      description: 'Also the `ccm nodes init` CronJob and its ClusterRole',
      default: false,
    }),
    out: Flags.string({
      description:
        'Write one file per object into this folder instead of printing (YAML files; JSON files with -o json), and list what was written',
    }),
  };

  async run(): Promise<Report<ManifestRow>> {
    const { flags } = await this.parse(Manifests);
    if (!flags.provider)
      throw new UsageError('no provider given; pass --provider (e.g. --provider cloudlycke)');
    const { renderManifests, writeManifests } = await import('../cli/manifests.js');
    const { manifestsReport, manifestsWrittenReport } = await import('../cli/manifests-report.js');
    const objects = renderManifests(await loadProvider(flags.provider), {
      image: flags.image ?? `localhost/ccm:${this.config.version}`,
      namespace: flags.namespace,
      controllers: flags.controllers,
      ...(flags['credentials-secret'] ? { credentialsSecret: flags['credentials-secret'] } : {}),
      ...(flags['cluster-name'] ? { clusterName: flags['cluster-name'] } : {}),
      cronjob: flags.cronjob,
      leaseName: 'cloud-controller-manager',
    });
    if (!flags.out) return manifestsReport(objects, flags.provider);
    const files = await writeManifests(flags.out, objects, this.view === 'json' ? 'json' : 'yaml');
    return manifestsWrittenReport(objects, files, flags.out);
  }
}
