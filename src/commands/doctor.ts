import * as Flags from '@oclif/core/flags';
import { BaseCommand } from '../cli/base-command.js';
import type { CheckRow } from '../cli/doctor-report.js';
import { cmonGroupsFlag, secretRefFlag } from '../cli/flag-values.js';
import type { Report } from '../cli/output/report.js';

export default class Doctor extends BaseCommand {
  static override summary = 'Check a cluster for an external cloud controller; say how to fix each problem';
  static override description = [
    "One row per check (✓ pass, ✗ fail, ! warning) with the fix of each failure: the kubeconfig and API server version; Nodes tainted uninitialized and for how long; Nodes without a provider ID or with another cloud's; kube-controller-manager with --cloud-provider=external; kube-apiserver 1.33+ without --cloud-provider; kubelets registered external; the controller's Lease and Pods (and the CCM↔CNI bootstrap deadlock); the credentials Secret, its keys and whether the cloud accepts them (one call); the ServiceAccount's RBAC (one SubjectAccessReview per rule verb); whether the cloud listing holds the cluster's instances; whether every Pod CIDR has its route in the cloud (one listing) and no Node is still NetworkUnavailable; Triton's CMON certificate (each kubernetes.io/tls Secret triton-cmon, in any namespace, or --cmon-secret; none found is said): its expiry (a warning 14 days before), its account against ccm's, whether CMON accepts it, whether CMON lists the Nodes' machines in the cluster's CMON groups (as Prometheus' job asks), and whether their series will carry their Node's name. Writes nothing.",
    'Exit status: 0 no check failed, 1 some check failed, 2 usage or configuration error.',
  ].join('\n\n');
  static override examples = [
    '<%= config.bin %> doctor --provider digitalocean',
    '<%= config.bin %> doctor --provider cloudlycke --cloud-config inventory.yaml -o wide',
  ];
  static override flags = {
    namespace: Flags.string({
      description: "Namespace of ccm's DaemonSet, Lease and ServiceAccount",
      default: 'kube-system',
    }),
    lease: Flags.string({
      description: 'Name of the leader-election Lease',
      default: 'cloud-controller-manager',
    }),
    'service-account': Flags.string({ description: "ccm's ServiceAccount (in --namespace)", default: 'ccm' }),
    controllers: Flags.string({ description: 'Controllers ccm runs (their RBAC is checked)', default: '*' }),
    'credentials-secret': Flags.string({
      description:
        "Secret (namespace/name) with the provider's credentials; default: the official controller's",
      parse: async (input) => secretRefFlag(input),
    }),
    'cmon-secret': Flags.string({
      description:
        'Triton: the Secret (namespace/name) of the CMON certificate, which must then exist; default: every kubernetes.io/tls Secret triton-cmon, in any namespace',
      parse: async (input) => secretRefFlag(input),
    }),
    'cmon-url': Flags.string({
      description: "Triton: CMON's URL (default: CloudAPI ListServices' cmon entry)",
      env: 'TRITON_CMON_URL',
    }),
    'cmon-ca': Flags.string({
      description: "Triton: a PEM file of the CAs that CMON's own certificate is checked against",
      env: 'TRITON_CMON_CA',
    }),
    'cmon-groups': Flags.string({
      description:
        "Triton: the --cmon-groups ccm runs with, when doctor cannot read it (default: the ccm DaemonSet's, else the key cmon-groups of the credentials Secret, else TRITON_CMON_GROUPS): CMON is asked for the cluster's groups, as Prometheus' job asks",
      parse: async (input) => cmonGroupsFlag(input),
    }),
    'cluster-name': Flags.string({
      description: "The --cluster-name ccm runs with, if any (it names this cluster's routes in the cloud)",
    }),
  };

  async run(): Promise<Report<CheckRow>> {
    const { flags } = await this.parse(Doctor);
    const { runDoctor } = await import('../cli/doctor.js');
    const { doctorReport } = await import('../cli/doctor-report.js');
    const { kubeWaitNotices, waitNotices } = await import('../cli/kube-flags.js');
    const { onCloudWait } = await import('../providers/http.js');
    const { cancellableRead } = await import('../cli/read-interrupt.js');
    const stopNotices = onCloudWait(...waitNotices(this.progress));
    try {
      return doctorReport(
        await cancellableRead(this.progress, () =>
          runDoctor({
            ...flags,
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
