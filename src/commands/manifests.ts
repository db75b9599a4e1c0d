import { Flags } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { UsageError } from '../cli/errors.js';

export default class Manifests extends BaseCommand {
  static override summary = 'Print the manifests that run ccm in a cluster (RBAC, Deployment, CronJob)';
  static override description = [
    'Prints kubectl-appliable YAML for one provider: the ServiceAccount, a least-privilege ClusterRole (exactly what the enabled controllers call), the leader-election Role, a get-by-name Role on the credentials Secret, a Deployment of `ccm run` with two replicas and a PodDisruptionBudget and, with --cronjob, the `ccm nodes init` CronJob. The pods run before the CNI and on uninitialised Nodes.',
    'Apply with: ccm manifests --provider X | kubectl apply --server-side -f -',
  ].join('\n\n');
  static override examples = [
    '<%= config.bin %> manifests --provider digitalocean | kubectl apply --server-side -f -',
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
    out: Flags.string({ description: 'Write one file per object into this folder instead of printing' }),
    output: Flags.option({ char: 'o', options: ['yaml', 'json'] as const, default: 'yaml' })(),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Manifests);
    if (!flags.provider)
      throw new UsageError('no provider given; pass --provider (e.g. --provider cloudlycke)');
    const { loadProvider } = await import('../providers/registry.js');
    const { renderManifests, manifestsAsYaml, writeManifests } = await import('../cli/manifests.js');
    const objects = renderManifests(await loadProvider(flags.provider), {
      image: flags.image ?? `localhost/ccm:${this.config.version}`,
      namespace: flags.namespace,
      controllers: flags.controllers,
      ...(flags['credentials-secret'] ? { credentialsSecret: flags['credentials-secret'] } : {}),
      ...(flags['cluster-name'] ? { clusterName: flags['cluster-name'] } : {}),
      cronjob: flags.cronjob,
      leaseName: 'cloud-controller-manager',
    });
    if (flags.out) {
      const written = await writeManifests(flags.out, objects, flags.output);
      this.log(`wrote ${written.length} files to ${flags.out}`);
    } else if (flags.output === 'json' || flags.json) {
      this.log(JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }, null, 2));
    } else {
      process.stdout.write(manifestsAsYaml(objects));
    }
  }
}
