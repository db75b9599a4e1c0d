import * as Flags from '@oclif/core/flags';
import { BaseCommand } from '../cli/base-command.js';
import { UsageError } from '../cli/errors.js';
import {
  envFlag,
  nodeSelectorFlag,
  quantitiesFlag,
  secretRefFlag,
  tolerationFlag,
} from '../cli/flag-values.js';
import { CMON_FORMATS, CMON_SECRET_DEFAULT, type CmonFormat } from '../cli/manifests-cmon-flags.js';
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
    'Helm: --helm DIR writes, instead, the templates of the chart in DIR (charts/ccm of the repository), generated from this same code for every provider and value: each value of the chart is one of these flags, and `helm template` prints what this command prints for the same choices.',
    "Triton: --cmon prints, instead, what Prometheus needs to scrape the cluster's Nodes through CMON (Triton's Container Monitor): a scrape job whose Triton discovery finds the machines of the cluster's CMON group (the one --cmon-groups cluster of ccm run tags), reads the client certificate of the kubernetes.io/tls Secret that secret create --cmon writes, and labels every series with its Node's name (node) and machine UUID (instance). --cmon-format additional-scrape-configs puts the job in a Secret for the Prometheus Operator's spec.additionalScrapeConfigs (its ScrapeConfig resource has no Triton discovery).",
  ].join('\n\n');
  static override examples = [
    '<%= config.bin %> manifests --provider digitalocean \\\n    --image registry.example.com/ccm:0.1.0 | kubectl apply --server-side -f -',
    '<%= config.bin %> manifests --provider digitalocean \\\n    --image registry.example.com/ccm:0.1.0 -o name',
    '<%= config.bin %> manifests --provider cloudlycke --image registry.example.com/ccm:0.1.0 \\\n    --cronjob --out ./ccm-manifests',
    '<%= config.bin %> manifests --provider openstack --image registry.example.com/ccm:0.1.0 \\\n    --node-selector node-role.kubernetes.io/system=true',
    '<%= config.bin %> manifests --provider digitalocean --image localhost/ccm:0.1.0 \\\n    --image-pull-policy Never',
    '<%= config.bin %> manifests --provider triton --cmon --cluster-name prod \\\n    --cmon-url https://cmon.us-east-1.triton.zone:9163 --cmon-account acme',
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
    replicas: Flags.integer({
      description:
        'Run `ccm run` as a Deployment of this many replicas, one per Node, instead of a DaemonSet (--any-node: 2)',
      min: 1,
    }),
    'leader-elect': Flags.boolean({
      description:
        'Run `ccm run` with leader election and the Role of its Lease; --no-leader-elect only with --replicas 1',
      default: true,
      allowNo: true,
    }),
    toleration: Flags.string({
      description:
        'Also tolerate this taint (key[=value]:Effect, as kubectl taint names it), beside those every ccm pod tolerates; repeatable',
      multiple: true,
      parse: async (input) => tolerationFlag(input),
    }),
    requests: Flags.string({
      description:
        'Resource requests of `ccm run` (e.g. cpu=100m): each replaces that one of the measured default (cpu=50m,memory=256Mi); memory=none removes one, none all',
      parse: async (input) => quantitiesFlag(input),
    }),
    limits: Flags.string({
      description:
        'Resource limits of `ccm run` (e.g. memory=1Gi): each replaces that one of the measured default (memory=512Mi); none removes them',
      parse: async (input) => quantitiesFlag(input),
    }),
    'extra-arg': Flags.string({
      description: 'A further argument of `ccm run`, e.g. --extra-arg=--concurrency=4; repeatable',
      multiple: true,
    }),
    env: Flags.string({
      description:
        'An environment variable of both pods (NAME=VALUE), e.g. --env HTTPS_PROXY=http://proxy.corp.example:3128; repeatable. Not HOME, NODE_OPTIONS, MALLOC_ARENA_MAX, which ccm sets',
      multiple: true,
      parse: async (input) => envFlag(input),
    }),
    'service-monitor': Flags.boolean({
      description:
        'Also a Service and a Prometheus Operator ServiceMonitor for /metrics, and the ClusterRole the scraper needs (get /metrics)',
      default: false,
    }),
    'metrics-scraper': Flags.string({
      description:
        "With --service-monitor: the scraper's ServiceAccount (namespace/name), allowed get /metrics; default: monitoring/prometheus-k8s (kube-prometheus)",
      dependsOn: ['service-monitor'],
      parse: async (input) => secretRefFlag(input),
    }),
    helm: Flags.string({
      description:
        'Write the templates of the Helm chart into this chart folder (its templates/), generated from the code that prints the manifests',
    }),
    out: Flags.string({
      description:
        'Write one file per object into this folder instead of printing (YAML; JSON with -o json), and list them. A later run replaces the files it wrote there and removes those it no longer writes; a folder holding YAML or JSON files ccm did not write is refused',
    }),
    cmon: Flags.boolean({
      description:
        "Triton: instead of ccm's manifests, the Prometheus scrape job of the cluster's Nodes through CMON, each series labelled with its Node's name",
      // No default: oclif's dependsOn of the --cmon-* flags takes a false as given.
    }),
    'cmon-format': Flags.option({
      description:
        "With --cmon: job (default: a prometheus.yml holding the scrape job) or additional-scrape-configs (a Secret holding it, for the Prometheus Operator's spec.additionalScrapeConfigs)",
      options: CMON_FORMATS,
      dependsOn: ['cmon'],
    })(),
    'cmon-url': Flags.string({
      description:
        "With --cmon: CMON's URL, the cmon entry of `triton services` (CloudAPI ListServices), e.g. https://cmon.us-east-1.triton.zone:9163",
      dependsOn: ['cmon'],
    }),
    'cmon-account': Flags.string({
      description:
        'With --cmon: the Triton account whose machines CMON lists (its login, as in the certificate); default: TRITON_ACCOUNT, SDC_ACCOUNT',
      dependsOn: ['cmon'],
    }),
    'cmon-group': Flags.string({
      description:
        "With --cmon: the cluster's CMON group, as ccm run's --cmon-groups tags it; default: --cluster-name",
      dependsOn: ['cmon'],
    }),
    'cmon-secret': Flags.string({
      description: `With --cmon: the kubernetes.io/tls Secret (namespace/name) with the CMON client certificate, in the namespace Prometheus runs in; default: ${CMON_SECRET_DEFAULT}`,
      dependsOn: ['cmon'],
      parse: async (input) => secretRefFlag(input),
    }),
    'cmon-ca': Flags.string({
      description:
        "With --cmon: a PEM file of the CA that signed CMON's certificate; the job checks CMON against ca.crt of the certificate's Secret (secret create --cmon --cmon-ca FILE writes it). Not for CMON's own certificate, which names it in the CN only: Prometheus refuses that one even when trusted",
      dependsOn: ['cmon'],
      exclusive: ['cmon-insecure-skip-verify'],
    }),
    'cmon-insecure-skip-verify': Flags.boolean({
      description:
        "With --cmon: the job does not check CMON's certificate (insecure_skip_verify). What CMON's own certificate needs (self-signed, its name in the CN only, refused by Prometheus) until its operator installs one with subjectAltNames",
      dependsOn: ['cmon'],
    }),
  };

  async run(): Promise<Report<ManifestRow>> {
    const { flags } = await this.parse(Manifests);
    if (flags.helm !== undefined) {
      // The templates hold every provider and value; what picks one set of objects means nothing here.
      const given = (['image', 'out', 'cmon'] as const).find((f) => flags[f] !== undefined);
      if (given) {
        throw new UsageError(
          `--${given} does not apply with --helm, which writes the chart's templates for every provider and value`,
        );
      }
      const { writeHelmTemplates, helmTemplatesReport } = await import('../cli/manifests-helm.js');
      return helmTemplatesReport(await writeHelmTemplates(flags.helm), flags.helm);
    }
    if (!flags.provider)
      throw new UsageError('no provider given; pass --provider (e.g. --provider cloudlycke)');
    if (flags.cmon) return this.cmon({ ...flags, provider: flags.provider });
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
    const { METRICS_SCRAPER_DEFAULT, parseNodeSelector, RUN_RESOURCES, renderManifests } = await import(
      '../cli/manifests.js'
    );
    const { mergeQuantities, parseEnv, parseQuantities, parseSecretRef, parseToleration } = await import(
      '../cli/flag-values.js'
    );
    const env: Record<string, string> = {};
    for (const [name, value] of (flags.env ?? []).map(parseEnv)) {
      if (Object.hasOwn(env, name)) throw new UsageError(`--env: ${name} given twice`);
      env[name] = value;
    }
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
      ...(flags.replicas !== undefined ? { replicas: flags.replicas } : {}),
      leaderElect: flags['leader-elect'],
      ...(flags.toleration ? { tolerations: flags.toleration.map(parseToleration) } : {}),
      ...(flags.requests !== undefined || flags.limits !== undefined
        ? {
            // By resource, as helm merges the chart's `resources` value into its default.
            resources: Object.fromEntries(
              (['requests', 'limits'] as const).flatMap((part) => {
                const merged =
                  flags[part] === undefined
                    ? RUN_RESOURCES[part]
                    : mergeQuantities(RUN_RESOURCES[part], parseQuantities(flags[part] as string));
                return merged === undefined ? [] : [[part, merged]];
              }),
            ),
          }
        : {}),
      ...(flags['extra-arg'] ? { extraArgs: flags['extra-arg'] } : {}),
      ...(Object.keys(env).length > 0 ? { env } : {}),
      ...(flags['service-monitor']
        ? { metrics: { scraper: parseSecretRef(flags['metrics-scraper'] ?? METRICS_SCRAPER_DEFAULT) } }
        : {}),
    });
    if (!flags.out) return manifestsReport(objects, flags.provider);
    const { writeManifests } = await import('../cli/manifests-out.js');
    const written = await writeManifests(flags.out, objects, this.view === 'json' ? 'json' : 'yaml');
    return manifestsWrittenReport(objects, written, flags.out);
  }

  /** --cmon: the Prometheus side of Triton CMON (src/cli/manifests-cmon.ts) instead of ccm's manifests. */
  private async cmon(flags: CmonFlags): Promise<Report<ManifestRow>> {
    if (flags.provider !== 'triton') {
      throw new UsageError(
        `--cmon is Triton's (CMON, its Container Monitor); --provider is ${flags.provider}`,
      );
    }
    // What configures ccm's own pods means nothing here: refused rather than dropped unseen.
    const given = (
      [
        ['image', flags.image],
        ['node-selector', flags['node-selector']],
        ['any-node', flags['any-node'] || undefined],
        ['cronjob', flags.cronjob || undefined],
        ['credentials-secret', flags['credentials-secret']],
        ['cluster-cidr', flags['cluster-cidr']],
        ['replicas', flags.replicas],
        ['no-leader-elect', flags['leader-elect'] === false ? true : undefined],
        ['toleration', flags.toleration],
        ['requests', flags.requests],
        ['limits', flags.limits],
        ['extra-arg', flags['extra-arg']],
        ['env', flags.env],
        ['service-monitor', flags['service-monitor'] || undefined],
        ['cloud-api-url', flags['cloud-api-url']],
        ['insecure-cloud-api', flags['insecure-cloud-api'] || undefined],
        ['request-timeout', flags['request-timeout']],
        ['kubeconfig', flags.kubeconfig],
        ['context', flags.context],
        ['cloud-config', flags['cloud-config']],
      ] as const
    ).find(([, value]) => value !== undefined);
    if (given) {
      throw new UsageError(
        `--${given[0]} does not apply with --cmon, which prints a Prometheus scrape job and not ccm's own pods`,
      );
    }
    if (!flags['cmon-url']) {
      throw new UsageError(
        "--cmon needs --cmon-url, CMON's URL: the cmon entry of `triton services` (e.g. https://cmon.us-east-1.triton.zone:9163)",
      );
    }
    const account = flags['cmon-account'] ?? envValue('TRITON_ACCOUNT') ?? envValue('SDC_ACCOUNT');
    if (!account) {
      throw new UsageError('--cmon needs the Triton account: pass --cmon-account or set TRITON_ACCOUNT');
    }
    const group = flags['cmon-group'] ?? flags['cluster-name'];
    if (!group) {
      throw new UsageError(
        "--cmon needs the cluster's CMON group and `ccm manifests` reads no cluster: pass --cluster-name as `ccm run` has it, or --cmon-group (by default k8s- and the first 16 hex digits of the kube-system namespace's UID)",
      );
    }
    const { parseSecretRef } = await import('../cli/provider-config.js');
    const {
      checkCmonCa,
      cmonAdditionalScrapeConfigs,
      cmonPrometheusConfig,
      cmonPrometheusYaml,
      parseCmonUrl,
    } = await import('../cli/manifests-cmon.js');
    if (flags['cmon-ca']) {
      const { readValueFile } = await import('../secrets/values.js');
      checkCmonCa(readValueFile(flags['cmon-ca'], '--cmon-ca'), parseCmonUrl(flags['cmon-url']).host);
    }
    const options = {
      format: flags['cmon-format'] ?? 'job',
      url: flags['cmon-url'],
      account,
      group,
      secret: parseSecretRef(flags['cmon-secret'] ?? CMON_SECRET_DEFAULT),
      ...(flags['cmon-ca'] ? { ca: true } : {}),
      ...(flags['cmon-insecure-skip-verify'] ? { insecureSkipVerify: true } : {}),
    };
    const { manifestsReport, manifestsWrittenReport, scrapeJobReport } = await import(
      '../cli/manifests-report.js'
    );
    if (options.format === 'job') {
      if (flags.out) {
        throw new UsageError(
          '--out writes Kubernetes objects for `kubectl apply -f DIR`, and a scrape job is none: redirect the output to a file, or use --cmon-format additional-scrape-configs',
        );
      }
      if (this.view === 'name') {
        throw new UsageError(
          '-o name names Kubernetes objects, and a scrape job is none: use -o yaml, or --cmon-format additional-scrape-configs',
        );
      }
      return scrapeJobReport(cmonPrometheusConfig(options), cmonPrometheusYaml(options));
    }
    const objects = [cmonAdditionalScrapeConfigs(options)];
    if (!flags.out) return manifestsReport(objects, flags.provider);
    const { writeManifests } = await import('../cli/manifests-out.js');
    const written = await writeManifests(flags.out, objects, this.view === 'json' ? 'json' : 'yaml');
    return manifestsWrittenReport(objects, written, flags.out);
  }
}

/** The flags `--cmon` reads, or refuses. */
interface CmonFlags {
  provider: string;
  image?: string | undefined;
  'node-selector'?: string | undefined;
  'any-node': boolean;
  cronjob: boolean;
  'credentials-secret'?: string | undefined;
  'cluster-cidr'?: string | undefined;
  replicas?: number | undefined;
  'leader-elect': boolean;
  toleration?: string[] | undefined;
  requests?: string | undefined;
  limits?: string | undefined;
  'extra-arg'?: string[] | undefined;
  env?: string[] | undefined;
  'service-monitor': boolean;
  'cloud-api-url'?: string | undefined;
  'insecure-cloud-api': boolean;
  'request-timeout'?: number | undefined;
  kubeconfig?: string | undefined;
  context?: string | undefined;
  'cloud-config'?: string | undefined;
  'cluster-name'?: string | undefined;
  out?: string | undefined;
  'cmon-format'?: CmonFormat | undefined;
  'cmon-url'?: string | undefined;
  'cmon-account'?: string | undefined;
  'cmon-group'?: string | undefined;
  'cmon-secret'?: string | undefined;
  'cmon-ca'?: string | undefined;
  'cmon-insecure-skip-verify'?: boolean | undefined;
}

function envValue(name: string): string | undefined {
  const value = process.env[name]?.trim();
  return value ? value : undefined;
}
