/**
 * `ccm cluster prepare`: the shared vocabulary of detection, editing, hosts and backups.
 * A Host is where files live (this machine, a fake root in tests, or a node over ssh); the editors
 * are pure functions from file bytes to file bytes, so every edit can be previewed, diffed and tested.
 */

export type Component = 'kubelet' | 'kube-apiserver' | 'kube-controller-manager';

/** How a file carries a component's flags. */
export type FileKind =
  | 'static-pod' // /etc/kubernetes/manifests/*.yaml: spec.containers[0].command list
  | 'env-file' // /var/lib/kubelet/kubeadm-flags.env (KUBELET_KUBEADM_ARGS), /etc/default|sysconfig/kubelet (KUBELET_EXTRA_ARGS)
  | 'systemd-unit'; // "hard way" units: ExecStart=... \ continued lines

export type Layout = 'kubeadm' | 'hard-way';

export interface ComponentFile {
  component: Component;
  kind: FileKind;
  /** Absolute path on the host (without the test root prefix). */
  path: string;
  /** For env files: the variable holding the flags (KUBELET_KUBEADM_ARGS or KUBELET_EXTRA_ARGS). */
  variable?: string;
}

/** A Kubernetes minor version, e.g. { major: 1, minor: 33, patch: 2 }. */
export interface Version {
  major: number;
  minor: number;
  patch: number;
}

export interface Detection {
  layout: Layout;
  files: ComponentFile[];
  /** Version of each component found on the host; absent when it could not be determined. */
  versions: Partial<Record<Component, Version>>;
  /** How each version was learned, for the report: "image tag", "kubelet --version", "--kubelet-version". */
  versionSources: Partial<Record<Component, string>>;
}

/** One flag change: add/replace (`value` set) or remove (`value` undefined). */
export interface FlagChange {
  flag: string; // without leading dashes, e.g. "cloud-provider"
  value?: string;
  /** One line for the preview and summary: why this change is (or is not) made. */
  reason: string;
}

export interface FileEdit {
  file: ComponentFile;
  before: Buffer;
  after: Buffer;
  changes: FlagChange[];
}

/** A component deliberately left alone, with the reason shown to the operator. */
export interface Skip {
  component: Component;
  reason: string;
}

/** A running process, as /proc tells it. */
export interface RunningProcess {
  pid: number;
  /** Its command line, argv[0] first. */
  argv: string[];
}

export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/**
 * Files and commands of one machine. `localHost(root)` and `sshHost(target, { root })` implement it;
 * paths are absolute host paths, resolved under `root` (default "/").
 */
export interface Host {
  /** "local" or "user@host". */
  readonly name: string;
  /** The file's bytes, or undefined when it does not exist. */
  read(path: string): Promise<Buffer | undefined>;
  /**
   * Replaces a file atomically: the bytes go to a dot-file in the same folder (ignored by the
   * kubelet in the manifests folder), are flushed, and are renamed over the target. Keeps the
   * target's mode, or uses `mode` for a new file. Either the old or the new file, never a mix.
   */
  writeAtomic(path: string, data: Buffer, mode?: number): Promise<void>;
  remove(path: string): Promise<void>;
  /** Names in a folder; [] when it does not exist. */
  list(dir: string): Promise<string[]>;
  /** Runs a program on the host (systemctl, kubelet --version); never throws for a non-zero exit. */
  run(argv: string[]): Promise<ExecResult>;
  /**
   * The running processes whose program (argv[0]'s basename) is one of `programs`, from
   * /proc/<pid>/cmdline under the root; [] when there is no /proc there.
   */
  processes(programs: readonly string[]): Promise<RunningProcess[]>;
}
