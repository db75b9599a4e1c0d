import * as Flags from '@oclif/core/flags';
import { BaseCommand } from '../cli/base-command.js';
import { UsageError } from '../cli/errors.js';
import { nodeSelectorFlag, secretRefFlag } from '../cli/flag-values.js';
import type { ManifestRow } from '../cli/manifests-report.js';
import type { Report } from '../cli/output/report.js';
import { loadProvider } from '../providers/registry.js';

export default class Manifests extends BaseCommand {
  static override summary = 'Print the manifests that run ccm in a cluster (RBAC, DaemonSet, CronJob)';
  static override description = [
    'Prints kubectl-appliable YAML for one provider: the ServiceAccount, a least-privilege ClusterRole (exactly what the enabled controllers call), the leader-election Role, a get-by-name Role on the credentials Secret, a DaemonSet of `ccm run` (one pod per Node it may run on, one leader, the others standbys) and, with --cronjob, the `ccm nodes init` CronJob. The pods run before the CNI and on uninitialised Nodes.',
    'The pods run on control-plane Nodes only (required node affinity on node-role.kubernetes.io/control-plane, whose taint they tolerate): they hold the cloud credentials and may delete Nodes. --node-selector (still a DaemonSet, on those Nodes) or --any-node (a Deployment of two replicas, one per Node, with a PodDisruptionBudget) for clusters whose control plane runs elsewhere.',
    "Every flag given reaches the pods: --cloud-api-url, --log-level and --request-timeout are passed to `ccm run` and `ccm nodes init`; --kubeconfig, --context and --cloud-config have no meaning in a pod and are refused. The pods send the cloud token to --cloud-api-url from their Node's network, so it must be https (a plain http:// one on the Node's loopback only with --insecure-cloud-api).",
    'Apply with: ccm manifests --provider X --image <registry>/ccm:<version> | kubectl apply --server-side -f -',
  ].join('\n\n');
  static override examples = [
    '<%= config.bin %> manifests --provider digitalocean \\\n    --image registry.example.com/ccm:0.1.0 | kubectl apply --server-side -f -',
    '<%= config.bin %> manifests --provider digitalocean \\\n    --image registry.example.com/ccm:0.1.0 -o name',
    '<%= config.bin %> manifests --provider cloudlycke --image registry.example.com/ccm:0.1.0 \\\n    --cronjob --out ./ccm-manifests',
    '<%= config.bin %> manifests --provider openstack --image registry.example.com/ccm:0.1.0 \\\n    --node-selector node-role.kubernetes.io/system=true',
    '<%= config.bin %> manifests --provider digitalocean --image localhost/ccm:0.1.0 \\\n    --image-pull-policy Never',
  ];
  static override flags = {
    image: Flags.string({
      description:
        'Image of ccm, from a registry the Nodes pull from (pin it by digest), e.g. registry.example.com/ccm:0.1.0',
    }),
    'image-pull-policy': Flags.option({
      description:
        'imagePullPolicy of the pods: Never for an image loaded onto each Node (ctr images import) instead of pulled from a registry',
      options: ['IfNotPresent', 'Always', 'Never'] as const,
      default: 'IfNotPresent',
    })(),
    'node-selector': Flags.string({
      description:
        'Run the pods on Nodes with these labels (key=value,…) instead of control-plane Nodes: for clusters whose control plane runs elsewhere',
      exclusive: ['any-node'],
      parse: async (input) => nodeSelectorFlag(input),
    }),
    'any-node': Flags.boolean({
      description:
        'Let the pods run on any Node, beside other workloads (they hold the cloud credentials and may delete Nodes)',
      default: false,
      exclusive: ['node-selector'],
    }),
    namespace: Flags.string({
      description: 'Namespace of the DaemonSet, its Lease and ServiceAccount',
      default: 'kube-system',
    }),
    controllers: Flags.string({
      description: 'Controllers the pods run (and the RBAC allows)',
      default: '*',
    }),
    'credentials-secret': Flags.string({
      description:
        "Secret (namespace/name) with the provider's credentials; default: the official controller's",
      parse: async (input) => secretRefFlag(input),
    }),
    'cluster-name': Flags.string({
      description: 'Identity in the ownership tag of cloud resources (default: from kube-system)',
    }),
    'cluster-cidr': Flags.string({
      description: "The cluster's Pod CIDR(s), passed to `ccm run` (the route controller runs only with it)",
    }),
    'insecure-cloud-api': Flags.boolean({
      description:
        "Take a plain http:// --cloud-api-url on the Node's loopback (a proxy you run on every Node, a test cloud): the pods send the token to it unencrypted",
      default: false,
    }),
    cronjob: Flags.boolean({
      description: 'Also the `ccm nodes init` CronJob and its ClusterRole',
      default: false,
    }),
    out: Flags.string({
      description:
        'Write one file per object into this folder instead of printing (YAML; JSON with -o json), and list them. A later run replaces the files it wrote there and removes those it no longer writes; a folder holding YAML or JSON files ccm did not write is refused',
    }),
  };

  async run(): Promise<Report<ManifestRow>> {
    const { flags } = await this.parse(Manifests);
    if (!flags.provider)
      throw new UsageError('no provider given; pass --provider (e.g. --provider cloudlycke)');
    // No default: there is no published image, and a made-up name would be pulled from wherever it points.
    if (!flags.image)
      throw new UsageError(
        `no image given; pass --image <registry>/ccm:${this.config.version} (built by \`npm run image\`, pushed to a registry the Nodes pull from)`,
      );
    // Flags every command takes that mean nothing in a pod: refused rather than dropped unseen.
    for (const flag of ['kubeconfig', 'context'] as const) {
      if (flags[flag] !== undefined) {
        throw new UsageError(
          `--${flag} does not apply to \`ccm manifests\`: it reads no cluster, and the pods reach the API server with their ServiceAccount; give it to the kubectl that applies the output`,
        );
      }
    }
    const provider = await loadProvider(flags.provider);
    if (flags['cloud-config'] !== undefined) {
      throw new UsageError(
        `--cloud-config does not apply to \`ccm manifests\`: the pods cannot read a file of this machine; ${
          provider.configFileField && !flags['credentials-secret'] && !provider.credentials.secretName
            ? `create the ConfigMap they mount: kubectl -n ${flags.namespace} create configmap ccm-${provider.name}-config --from-file=config=${flags['cloud-config']}`
            : `store it in the credentials Secret: ccm secret create --provider ${provider.name} --cloud-config ${flags['cloud-config']}`
        }`,
      );
    }
    const { parseNodeSelector, renderManifests } = await import('../cli/manifests.js');
    const { manifestsReport, manifestsWrittenReport } = await import('../cli/manifests-report.js');
    const objects = renderManifests(provider, {
      image: flags.image,
      imagePullPolicy: flags['image-pull-policy'],
      placement: flags['any-node']
        ? { kind: 'any-node' }
        : flags['node-selector']
          ? { kind: 'node-selector', labels: parseNodeSelector(flags['node-selector']) }
          : { kind: 'control-plane' },
      namespace: flags.namespace,
      controllers: flags.controllers,
      ...(flags['credentials-secret'] ? { credentialsSecret: flags['credentials-secret'] } : {}),
      ...(flags['cluster-name'] ? { clusterName: flags['cluster-name'] } : {}),
      ...(flags['cluster-cidr'] ? { clusterCIDR: flags['cluster-cidr'] } : {}),
      ...(flags['cloud-api-url'] !== undefined ? { cloudApiUrl: flags['cloud-api-url'] } : {}),
      insecureCloudApi: flags['insecure-cloud-api'],
      logLevel: flags['log-level'],
      ...(flags['request-timeout'] !== undefined ? { requestTimeoutMs: flags['request-timeout'] } : {}),
      cronjob: flags.cronjob,
      leaseName: 'cloud-controller-manager',
    });
    if (!flags.out) return manifestsReport(objects, flags.provider);
    const { writeManifests } = await import('../cli/manifests-out.js');
    const written = await writeManifests(flags.out, objects, this.view === 'json' ? 'json' : 'yaml');
    return manifestsWrittenReport(objects, written, flags.out);
  }
}
