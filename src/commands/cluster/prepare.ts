import { isatty } from 'node:tty';
import * as Flags from '@oclif/core/flags';
import { BaseCommand, integerInRange } from '../../cli/base-command.js';
import type { HostReportRow } from '../../cli/cluster-report.js';
import { parseDuration } from '../../cli/duration.js';
import { flagValueError } from '../../cli/errors.js';
import type { Report } from '../../cli/output/report.js';

export default class ClusterPrepare extends BaseCommand {
  static override summary = 'Switch a kubeadm or "hard way" cluster to an external cloud provider';
  static override description = [
    'Sets --cloud-provider=external on the kubelet and kube-controller-manager (removing an in-tree --cloud-config), and on kube-apiserver only where its version still has the flag (before 1.33); records the kube-controller-manager flag in kube-system/kubeadm-config so `kubeadm upgrade` keeps it. Shows a diff of every file first; --dry-run stops there.',
    "Writes are atomic, backups go to /var/lib/ccm/backups (never the manifests folder) with a record of what was written; --rollback restores a file byte for byte when it is still as prepare left it, and otherwise undoes only ccm's own flag edits (after a `kubeadm upgrade`, say). --rollback previews, stops at --dry-run and asks like prepare. With --ssh the same runs on each node over ssh; a failing node does not stop the others.",
  ].join('\n\n');
  static override examples = [
    '<%= config.bin %> cluster prepare --dry-run',
    '<%= config.bin %> cluster prepare --provider cloudlycke --yes',
    '<%= config.bin %> cluster prepare --ssh root@10.0.0.11 --ssh root@10.0.0.12 --yes',
    '<%= config.bin %> cluster prepare --rollback --yes',
  ];
  static override flags = {
    'dry-run': Flags.boolean({ description: 'Show the diffs; write nothing', default: false }),
    yes: Flags.boolean({ char: 'y', description: 'Apply without asking', default: false }),
    restart: Flags.boolean({
      description:
        "Restart what was edited or still runs without its files' flags (the kubelet; on hard-way hosts kube-apiserver and kube-controller-manager first) and check the new flags are live",
      default: true,
      allowNo: true,
    }),
    rollback: Flags.boolean({
      description:
        "Undo the last prepare (files, kubeadm-config, the taints --initialize-existing added): byte for byte where nothing changed since, else only ccm's own flag edits; previews like prepare",
      default: false,
    }),
    'initialize-existing': Flags.boolean({
      description: 'Taint existing Nodes without a provider ID so `ccm nodes init` initialises them',
      default: false,
    }),
    ssh: Flags.string({
      description: 'Prepare this node over ssh (user@host); repeatable',
      multiple: true,
    }),
    'ssh-from-nodes': Flags.boolean({
      description: 'Prepare every Node of the cluster over ssh, by its InternalIP',
      default: false,
    }),
    'ssh-user': Flags.string({ description: 'User for --ssh-from-nodes', default: 'root' }),
    'ssh-port': integerInRange({ description: 'ssh port', min: 1, max: 65535 })(),
    'ssh-identity': Flags.string({ description: 'ssh private key file' }),
    'ssh-option': Flags.string({
      description: 'Extra ssh -o option (KEY=VALUE); repeatable',
      multiple: true,
    }),
    'provider-id': Flags.string({
      description:
        "The kubelet's --provider-id for this node (default: with --provider, the provider ID of the listed instance whose name or address matches the node; refused when none does)",
    }),
    'kubelet-version': Flags.string({ description: 'Kubelet version, when `kubelet --version` cannot tell' }),
    'apiserver-version': Flags.string({
      description: 'kube-apiserver version, when the manifest or binary cannot tell',
    }),
    'controller-manager-version': Flags.string({ description: 'kube-controller-manager version, likewise' }),
    'ready-timeout': Flags.string({
      description: 'How long to wait for the API server to answer /readyz',
      default: '3m',
    }),
    root: Flags.string({
      description: 'Root folder of the machine to prepare (a mounted image)',
      default: '/',
      hidden: true,
    }),
    'remote-root': Flags.string({
      description: 'Root folder on ssh hosts: PATH for all, or TARGET=PATH for one; repeatable',
      multiple: true,
      hidden: true,
    }),
  };

  async run(): Promise<Report<HostReportRow>> {
    const { flags } = await this.parse(ClusterPrepare);
    const readyTimeoutMs = parseDuration(flags['ready-timeout']);
    if (readyTimeoutMs === undefined)
      throw flagValueError('ready-timeout', 'a duration such as 90s or 3m', flags['ready-timeout']);
    const { runClusterPrepare } = await import('../../cli/cluster-prepare.js');
    const { clusterPrepareReport } = await import('../../cli/cluster-report.js');
    const out = await runClusterPrepare({
      root: flags.root,
      ssh: flags.ssh ?? [],
      sshFromNodes: flags['ssh-from-nodes'],
      sshUser: flags['ssh-user'],
      sshPort: flags['ssh-port'],
      sshIdentity: flags['ssh-identity'],
      sshOption: flags['ssh-option'] ?? [],
      remoteRoot: flags['remote-root'] ?? [],
      provider: flags.provider,
      cloudConfig: flags['cloud-config'],
      providerId: flags['provider-id'],
      kubeconfig: flags.kubeconfig,
      context: flags.context,
      ...(flags['request-timeout'] !== undefined ? { requestTimeoutMs: flags['request-timeout'] } : {}),
      kubeletVersion: flags['kubelet-version'],
      apiserverVersion: flags['apiserver-version'],
      controllerManagerVersion: flags['controller-manager-version'],
      dryRun: flags['dry-run'],
      yes: flags.yes,
      restart: flags.restart,
      rollback: flags.rollback,
      initializeExisting: flags['initialize-existing'],
      readyTimeoutMs,
      preview: this.human,
      progress: this.progress,
      interactive: isatty(0) && Boolean(process.stdout.isTTY),
      env: process.env,
      log: (line) => this.log(line),
      logToStderr: (line) => process.stderr.write(`${line}\n`),
    });
    return clusterPrepareReport(out);
  }
}
