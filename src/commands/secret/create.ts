import { isatty } from 'node:tty';
import * as Flags from '@oclif/core/flags';
import { BaseCommand, integerInRange } from '../../cli/base-command.js';
import type { Report } from '../../cli/output/report.js';
import type { SecretRow } from '../../secrets/report.js';
import { stderrLine } from '../../warn-once.js';

export default class SecretCreate extends BaseCommand {
  static override summary = "Create or update a provider's credentials Secret, checked with the cloud first";
  static override description = [
    "Works from each provider's credentials schema: asks for what is missing when stdin is a terminal (secrets not echoed, a list of SSH keys from ~/.ssh and the ssh-agent), otherwise takes every value from --set, --from-file, --from-stdin or the provider's environment variables. One call to the cloud proves the credentials before anything is written. The Secret gets the official controller's name, keys and namespace by default; an identical second run writes nothing.",
    'RBAC: get, create and update on that Secret. Exit status: 0 written or unchanged, 1 the cluster or the cloud could not be reached (nothing written), 2 usage error, missing value, a namespace that does not exist or credentials the cloud refused (nothing written), 130 Ctrl-C.',
  ].join('\n\n');
  static override examples = [
    '<%= config.bin %> secret create --provider digitalocean',
    'pass show do-token | <%= config.bin %> secret create --provider digitalocean --from-stdin',
    '<%= config.bin %> secret create --provider triton \\\n    --set url=https://us-east-1.api.example.com --set account=me \\\n    --from-file key-material=$HOME/.ssh/id_rsa',
    '<%= config.bin %> secret create --provider openstack --cloud-config cloud.conf --dry-run',
    '<%= config.bin %> secret create --provider triton --cmon',
  ];
  static override flags = {
    set: Flags.string({
      description:
        'A value, as key=value (the Secret key, e.g. vpc-id, or a field the Secret does not hold); repeatable',
      multiple: true,
    }),
    'from-file': Flags.string({
      description: 'A value read from a file, as key=path (e.g. key-material=~/.ssh/ccm-triton); repeatable',
      multiple: true,
    }),
    'from-stdin': Flags.boolean({
      description: 'Read the secret value (e.g. the token) from stdin',
      default: false,
    }),
    name: Flags.string({ description: "Secret name (default: the official controller's)" }),
    namespace: Flags.string({ description: 'Secret namespace', default: 'kube-system' }),
    verify: Flags.boolean({
      description:
        'Prove the credentials with one cloud call before writing (default: on; off with --dry-run, which then calls nothing)',
      allowNo: true,
    }),
    'dry-run': Flags.boolean({
      description:
        'Print the Secret (secret values redacted); write nothing, and call neither the cluster nor the cloud unless --verify',
      default: false,
    }),
    'show-secrets': Flags.boolean({ description: 'With --dry-run: print the values too', default: false }),
    cmon: Flags.boolean({
      description:
        "Triton: write a CMON (Container Monitor) client certificate, signed with the account's key as `triton profile cmon-certgen` signs it, to a kubernetes.io/tls Secret (default name triton-cmon), once CMON accepts it",
      default: false,
    }),
    'cmon-url': Flags.string({
      description:
        "With --cmon: CMON's URL (default: CloudAPI ListServices' cmon entry); an IP address is where to connect, CMON still named as ListServices names it",
      env: 'TRITON_CMON_URL',
      dependsOn: ['cmon'],
    }),
    'cmon-ca': Flags.string({
      description:
        "With --cmon: a PEM file of the CAs that CMON's own certificate is checked against (CMON's default certificate is self-signed)",
      env: 'TRITON_CMON_CA',
      dependsOn: ['cmon'],
    }),
    'cmon-lifetime': integerInRange({
      description: "With --cmon: the certificate's lifetime in days (default 3650, as cmon-certgen's)",
      min: 1,
      max: 3650,
    })({ dependsOn: ['cmon'] }),
  };

  async run(): Promise<Report<SecretRow>> {
    const { flags } = await this.parse(SecretCreate);
    const { createSecret } = await import('../../secrets/create.js');
    const { readStdin, secretReport } = await import('../../secrets/report.js');
    const result = await createSecret({
      ...(flags.provider ? { provider: flags.provider } : {}),
      given: {
        set: flags.set ?? [],
        fromFile: flags['from-file'] ?? [],
        ...(flags['from-stdin'] ? { stdin: await readStdin() } : {}),
        ...(flags['cloud-config'] ? { cloudConfig: flags['cloud-config'] } : {}),
        ...(flags['cloud-api-url'] ? { cloudApiUrl: flags['cloud-api-url'] } : {}),
        env: process.env,
      },
      ...(flags.name ? { name: flags.name } : {}),
      namespace: flags.namespace,
      verify: flags.verify ?? !flags['dry-run'],
      dryRun: flags['dry-run'],
      showSecrets: flags['show-secrets'],
      interactive: isatty(0) && !flags['from-stdin'],
      progress: this.progress,
      kubeconfig: flags.kubeconfig,
      context: flags.context,
      ...(flags['request-timeout'] !== undefined ? { requestTimeoutMs: flags['request-timeout'] } : {}),
      env: process.env,
      version: this.config.version,
      // The cloud's message (a refusal) is in it: stderrLine screens it.
      warn: stderrLine,
      ...(flags.cmon
        ? {
            cmon: {
              ...(flags['cmon-url'] ? { url: flags['cmon-url'] } : {}),
              ...(flags['cmon-ca'] ? { caFile: flags['cmon-ca'] } : {}),
              ...(flags['cmon-lifetime'] !== undefined ? { lifetimeDays: flags['cmon-lifetime'] } : {}),
            },
          }
        : {}),
    });
    return secretReport(result);
  }
}
