/**
 * Runs the local `vagrant` tool and parses what it prints.
 *
 * `vagrant status --machine-readable` prints lines `timestamp,target,type,data...`. Commas inside data
 * are escaped as `%!(VAGRANT_COMMA)`, newlines as a literal `\n` (backslash, n), carriage returns as
 * `\r`. Per machine it prints `metadata,provider,<provider>` (when the machine is loaded),
 * `provider-name`, `state` (the state id, e.g. running, poweroff, not_created), `state-human-short`
 * and `state-human-long`; then an untargeted `ui,info,...` line with the human table. A failure prints
 * `,,ui,error,<text>` and `,,error-exit,<Ruby error class>,<text>` and exits non-zero.
 *
 * `vagrant ssh-config [names...]` prints OpenSSH config blocks (`Host <name>`, then indented
 * `HostName`, `User`, `Port`, `IdentityFile`, ...). It fails for machines that are not running, so it is
 * only asked about running ones, all in one invocation.
 *
 * Vagrant reports no guest addresses: with VirtualBox, ssh-config only knows the NAT port forward on
 * 127.0.0.1, while the kubelets run with `--node-ip <private_network IP>`. So the guest itself is
 * asked, with `vagrant ssh NAME --no-tty -c GUEST_NETWORK_SCRIPT`: one call per running machine,
 * a few at a time.
 */
import { stat } from 'node:fs/promises';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { InvalidConfigError, RetryableError } from '../errors.js';
import type { InstanceState } from '../types.js';

export interface VagrantOptions {
  /** Folder holding the Vagrantfile; undefined inherits the working directory of the process. */
  cwd?: string;
  /**
   * Extra environment for the vagrant process, merged over the inherited one. The provider passes none;
   * tests use it to put a stand-in `vagrant` first on PATH.
   */
  env?: Readonly<Record<string, string>>;
  /** Kill vagrant after this long (VirtualBox can hang); default 120 s. */
  timeoutMs?: number;
  /** Called once per vagrant invocation. */
  onCall?: (what: string) => void;
}

export interface VagrantMachine {
  name: string;
  /** Provider name, e.g. virtualbox, libvirt. */
  provider: string;
  /** Vagrant's state id, e.g. running, poweroff, not_created. */
  state: string;
}

/** One `Host` block of `vagrant ssh-config`, keys lower-cased (hostname, user, port, identityfile...). */
export type SshHostConfig = Record<string, string>;

export interface MachineReadableLine {
  timestamp: string;
  target: string;
  type: string;
  data: string[];
}

interface RunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

const DEFAULT_TIMEOUT_MS = 120_000;

const STOPPED_STATES = new Set([
  'poweroff',
  'saved',
  'aborted',
  'paused',
  'suspended',
  'shutoff',
  'inaccessible',
  'gurumeditation',
  'frozen',
]);

/** Errors that mean the folder or the Vagrantfile is wrong: retrying will not help, a person must act. */
const CONFIG_ERRORS = new Set([
  'Vagrant::Errors::NoEnvironmentError',
  'Vagrant::Errors::VagrantfileLoadError',
  'Vagrant::Errors::VagrantfileSyntaxError',
]);

/**
 * Vagrant's state id as an instance state; undefined for `not_created`, which only says that this
 * folder holds no VM of that name (never created here, destroyed, or created from a copy of the
 * Vagrantfile elsewhere): not an instance, and not a positive "gone" either. An unknown state is
 * "stopped", never "gone" by guess.
 */
export function mapVagrantState(state: string): Exclude<InstanceState, 'gone'> | undefined {
  if (state === 'running') return 'running';
  if (state === 'not_created') return undefined;
  if (STOPPED_STATES.has(state)) return 'stopped';
  return 'stopped';
}

export class Vagrant {
  readonly #cwd: string | undefined;
  readonly #env: Readonly<Record<string, string>>;
  readonly #timeoutMs: number;
  readonly #onCall: ((what: string) => void) | undefined;

  constructor(options: VagrantOptions = {}) {
    this.#cwd = options.cwd;
    this.#env = options.env ?? {};
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#onCall = options.onCall;
  }

  /** Where vagrant runs, for messages. */
  get folder(): string {
    return resolve(this.#cwd ?? '.');
  }

  /**
   * `vagrant status [target] --machine-readable`. Failures throw InvalidConfigError (MachineNotFound
   * included: it never means "gone") or RetryableError.
   */
  async status(target?: string, signal?: AbortSignal): Promise<VagrantMachine[]> {
    const args =
      target === undefined ? ['status', '--machine-readable'] : ['status', target, '--machine-readable'];
    const result = await this.#run(args, signal);
    const lines = parseMachineReadable(result.stdout);
    const failure = lines.find((line) => line.type === 'error-exit');
    if (result.exitCode !== 0 || failure) {
      const errorClass = failure?.data[0] ?? '';
      const text = oneLine(failure?.data[1] ?? result.stderr) || `exit code ${result.exitCode}`;
      if (target !== undefined && errorClass === 'Vagrant::Errors::MachineNotFound') {
        // The Vagrantfile here does not define that name: says nothing about whether a VM exists
        // (another folder's Vagrantfile, a Node named differently from its machine).
        throw new InvalidConfigError(
          `vagrant in ${this.folder} does not define machine "${target}", so it cannot tell whether that VM exists; point CLOUDLYCKE_VAGRANT_DIR at the cluster's Vagrantfile or give the kubelet --provider-id cloudlycke://<machine name>`,
        );
      }
      if (CONFIG_ERRORS.has(errorClass)) {
        throw new InvalidConfigError(
          `vagrant status in ${this.folder} failed: ${text.replace(/\.$/, '')}; set CLOUDLYCKE_VAGRANT_DIR to the folder holding the Vagrantfile`,
        );
      }
      throw new RetryableError(`vagrant status in ${this.folder} failed (exit ${result.exitCode}): ${text}`);
    }
    const machines = machinesFromStatus(lines);
    if (machines.length === 0) {
      throw new RetryableError(
        `vagrant status in ${this.folder} printed no machine state; is its output machine-readable?`,
      );
    }
    return machines;
  }

  /** `vagrant ssh-config <names...>`, one invocation for all names. Any failure throws RetryableError. */
  async sshConfig(names: readonly string[], signal?: AbortSignal): Promise<Map<string, SshHostConfig>> {
    if (names.length === 0) return new Map();
    const result = await this.#run(['ssh-config', ...names], signal);
    if (result.exitCode !== 0) {
      const text = oneLine(result.stderr) || oneLine(result.stdout) || `exit code ${result.exitCode}`;
      throw new RetryableError(
        `vagrant ssh-config in ${this.folder} failed (exit ${result.exitCode}): ${text}`,
      );
    }
    return parseSshConfig(result.stdout);
  }

  /**
   * What each running guest says about its network (GUEST_NETWORK_SCRIPT), GUEST_CONCURRENCY at a
   * time. A machine that cannot be asked (ssh not ready, a minimal image) is left out of the map:
   * its addresses are then unknown, which the node controller treats as "leave the Node's alone".
   */
  async guestNetworks(names: readonly string[], signal?: AbortSignal): Promise<Map<string, GuestNetwork>> {
    const networks = new Map<string, GuestNetwork>();
    let next = 0;
    const worker = async () => {
      while (next < names.length) {
        const name = names[next++] as string;
        const result = await this.#run(['ssh', name, '--no-tty', '-c', GUEST_NETWORK_SCRIPT], signal).catch(
          (err: unknown) => {
            if (signal?.aborted) throw err;
            return undefined;
          },
        );
        if (result?.exitCode === 0) networks.set(name, parseGuestNetwork(result.stdout));
      }
    };
    await Promise.all(Array.from({ length: Math.min(GUEST_CONCURRENCY, names.length) }, worker));
    return networks;
  }

  async #run(args: string[], signal?: AbortSignal): Promise<RunResult> {
    signal?.throwIfAborted();
    this.#onCall?.(`vagrant ${args[0]}`);
    // Loaded on first use: execa costs ~20 MB of memory, and an inventory-only pass never runs vagrant.
    const { execa } = await import('execa');
    const result = await execa('vagrant', args, {
      cwd: this.#cwd,
      // No update check over the network on every call.
      env: { VAGRANT_CHECKPOINT_DISABLE: '1', ...this.#env },
      stdin: 'ignore',
      reject: false,
      timeout: this.#timeoutMs,
      ...(signal ? { cancelSignal: signal } : {}),
      maxBuffer: 16 * 1024 * 1024,
    });
    if (result.isCanceled) throw signal?.reason ?? new RetryableError('vagrant was canceled');
    if (result.timedOut) {
      throw new RetryableError(
        `vagrant ${args[0]} in ${this.folder} did not finish within ${duration(this.#timeoutMs)}; is VirtualBox hung?`,
      );
    }
    if (result.exitCode === undefined) {
      if (result.signal) throw new RetryableError(`vagrant ${args[0]} was killed by ${result.signal}`);
      throw await this.#spawnError(result.code);
    }
    return { exitCode: result.exitCode, stdout: String(result.stdout), stderr: String(result.stderr) };
  }

  async #spawnError(code: string | undefined): Promise<Error> {
    if (this.#cwd !== undefined) {
      const folder = await stat(this.#cwd).catch(() => undefined);
      if (!folder?.isDirectory()) {
        return new InvalidConfigError(
          `vagrant folder ${this.folder} does not exist or is not a folder; set CLOUDLYCKE_VAGRANT_DIR to the folder holding the Vagrantfile`,
        );
      }
    }
    if (code === 'ENOENT') {
      return new InvalidConfigError(
        'vagrant not found on PATH; install it or pass --cloud-config <inventory.yaml>',
      );
    }
    if (code === 'EACCES') {
      return new InvalidConfigError('vagrant on PATH is not executable; fix its permissions or PATH');
    }
    return new RetryableError(`cannot start vagrant (${code ?? 'unknown error'})`);
  }
}

/** How many `vagrant ssh` run at once (each starts a Ruby process and an ssh connection). */
const GUEST_CONCURRENCY = 4;

/**
 * Run on the guest: its physical network adapters (those backed by a device: not docker0, cni0,
 * flannel.1, veth...), the interface of its default route, and its global addresses, one per line.
 */
export const GUEST_NETWORK_SCRIPT =
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a JS template
  'for d in /sys/class/net/*; do [ -e "$d/device" ] && echo "nic ${d##*/}"; done; ip -o route show default; ip -o addr show scope global';

export interface GuestNetwork {
  /** Interfaces backed by a (virtual) hardware adapter. */
  nics: Set<string>;
  /** Interface of the default route, if any. */
  defaultDevice?: string;
  /** Global addresses in the order `ip` printed them. */
  addresses: { device: string; ip: string }[];
}

/** Parses the output of GUEST_NETWORK_SCRIPT; unknown lines are ignored. */
export function parseGuestNetwork(stdout: string): GuestNetwork {
  const network: GuestNetwork = { nics: new Set(), addresses: [] };
  for (const raw of stdout.split(/\r?\n/)) {
    const line = raw.trim();
    const nic = /^nic (\S+)$/.exec(line);
    if (nic) {
      network.nics.add(nic[1] as string);
      continue;
    }
    if (line.startsWith('default ')) {
      network.defaultDevice ??= / dev (\S+)/.exec(line)?.[1];
      continue;
    }
    const addr = /^\d+:\s+(\S+)\s+inet6?\s+([0-9A-Fa-f.:]+)\/\d+/.exec(line);
    if (addr && isIP(addr[2] as string))
      network.addresses.push({ device: addr[1] as string, ip: addr[2] as string });
  }
  return network;
}

/**
 * The guest's node addresses: those on its physical adapters, leaving out the adapter of the default
 * route when vagrant reaches the machine through a loopback port forward (VirtualBox's NAT adapter,
 * 10.0.2.15 on every VM, unreachable from the other machines).
 */
export function guestIPs(network: GuestNetwork | undefined, natted: boolean): string[] {
  if (!network) return [];
  return network.addresses
    .filter((a) => network.nics.has(a.device) && !(natted && a.device === network.defaultDevice))
    .map((a) => a.ip);
}

/** Splits machine-readable output into lines; anything that is not `timestamp,target,type,...` is skipped. */
export function parseMachineReadable(stdout: string): MachineReadableLine[] {
  const lines: MachineReadableLine[] = [];
  for (const raw of stdout.split(/\r?\n/)) {
    const fields = raw.split(',');
    const [timestamp = '', target = '', type = ''] = fields;
    if (fields.length < 3 || !/^\d+$/.test(timestamp) || type === '') continue;
    lines.push({ timestamp, target, type, data: fields.slice(3).map(unescapeField) });
  }
  return lines;
}

function unescapeField(field: string): string {
  return field.replaceAll('%!(VAGRANT_COMMA)', ',').replaceAll('\\n', '\n').replaceAll('\\r', '\r');
}

/** Machines in the order vagrant names them; a machine without a `state` line is an error. */
function machinesFromStatus(lines: MachineReadableLine[]): VagrantMachine[] {
  const byName = new Map<string, { provider: string; state?: string }>();
  for (const line of lines) {
    if (line.target === '') continue;
    const entry = byName.get(line.target) ?? { provider: '' };
    byName.set(line.target, entry);
    if (line.type === 'metadata' && line.data[0] === 'provider') entry.provider ||= line.data[1] ?? '';
    if (line.type === 'provider-name') entry.provider = line.data[0] ?? entry.provider;
    if (line.type === 'state') entry.state = line.data[0];
  }
  const machines: VagrantMachine[] = [];
  for (const [name, entry] of byName) {
    if (!entry.state) throw new RetryableError(`vagrant status printed no state for machine "${name}"`);
    machines.push({ name, provider: entry.provider, state: entry.state });
  }
  return machines;
}

/** Parses OpenSSH config text into its `Host` blocks. */
export function parseSshConfig(text: string): Map<string, SshHostConfig> {
  const hosts = new Map<string, SshHostConfig>();
  let current: SshHostConfig | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = /^(\S+?)(?:\s*=\s*|\s+)(.*)$/.exec(line);
    if (!match) continue;
    const key = (match[1] ?? '').toLowerCase();
    const value = unquote((match[2] ?? '').trim());
    if (key === 'host') {
      current = {};
      hosts.set(value, current);
    } else if (current && !(key in current)) {
      current[key] = value;
    }
  }
  return hosts;
}

/** The HostName of an ssh-config block when it is a usable node IP (not loopback, as VirtualBox NAT gives). */
export function internalIPFromSsh(config: SshHostConfig | undefined): string | undefined {
  const host = config?.hostname;
  if (!host || isIP(host) === 0 || isLoopbackOrUnspecified(host)) return undefined;
  return host;
}

function isLoopbackOrUnspecified(ip: string): boolean {
  const v4 = ip.toLowerCase().replace(/^::ffff:/, '');
  if (isIP(v4) === 4) return v4.startsWith('127.') || v4 === '0.0.0.0';
  return ip === '::1' || ip === '::' || /^(0+:){7}0*1$/.test(ip) || /^(0+:){7}0+$/.test(ip);
}

function duration(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

function unquote(value: string): string {
  return value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value;
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 300 ? `${flat.slice(0, 297)}...` : flat;
}
