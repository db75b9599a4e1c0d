/**
 * Hosts for `ccm cluster prepare`: this machine (`localHost`) or a node over ssh (`sshHost`).
 *
 * Both resolve absolute host paths under a `root` folder (default "/"), so tests can point a "node"
 * at a fake root. Both replace files the same way: the new bytes go to a dot-file next to the target
 * (`.<name>.ccm-tmp-<random>`; the kubelet ignores dot-files even in /etc/kubernetes/manifests), are
 * flushed, take the target's mode and owner, and are renamed over the target. A crash at any moment
 * leaves the target either old or new, at worst with a stray dot-file beside it.
 *
 * The ssh host needs nothing on the node beyond sshd and a POSIX shell with coreutils-level tools
 * (cat, mv, rm, mkdir, chmod, wc, printf; `sync`, `readlink -f` and GNU `--reference` when present).
 * File contents travel on stdin only, never in argv.
 */
import { constants, promises as fs } from 'node:fs';
import { basename, dirname, posix, join as sysJoin } from 'node:path';
import { nodeCrypto } from '../node-modules.js';
import { printable } from '../printable.js';
import type { ExecResult, Host, RunningProcess } from './types.js';

/** Mode of a file `writeAtomic` creates when the caller gives none (the usual 0644 of config files). */
export const DEFAULT_FILE_MODE = 0o644;
/** Mode of folders `writeAtomic` creates for a new file. */
const DIR_MODE = 0o755;

/** Marks the dot-files `writeAtomic` writes before renaming them over the target. */
export const TEMP_MARKER = '.ccm-tmp-';

/** The temp file name for a target: a dot-file in the same folder, unique per write. */
export function tempName(target: string): string {
  return `.${basename(target)}${TEMP_MARKER}${nodeCrypto().randomBytes(6).toString('hex')}`;
}

/** True for the leftovers of an interrupted `writeAtomic` of `name` (or of any file when name is omitted). */
export function isTempFile(entry: string, name?: string): boolean {
  return name === undefined
    ? entry.startsWith('.') && entry.includes(TEMP_MARKER)
    : entry.startsWith(`.${name}${TEMP_MARKER}`);
}

/** "/etc/x" under "/srv/root" → "/srv/root/etc/x"; refuses relative paths; `..` cannot climb above root. */
export function resolveUnder(root: string, path: string): string {
  if (!path.startsWith('/')) throw new Error(`not an absolute path: ${JSON.stringify(path)}`);
  const normalized = posix.normalize(path);
  return root === '/' ? normalized : posix.join(root, normalized);
}

/** Quotes one word for a POSIX shell: 'it'\''s' — safe for every byte sequence. */
export function shQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** /proc/<pid>/cmdline's bytes as argv: NUL-terminated words (an empty word stays one). */
export function parseCmdline(bytes: Buffer): string[] {
  const words = bytes.toString('utf8').split('\0');
  if (words.at(-1) === '') words.pop();
  return words;
}

/**
 * Whether /proc/<pid>/comm may belong to one of the programs: the kernel cuts comm to 15 bytes
 * (kube-controller-manager shows as "kube-controller"), so it only narrows which cmdline to read.
 */
function commMayBe(comm: string, programs: readonly string[]): boolean {
  return programs.some((p) => p.slice(0, 15) === comm);
}

/** The process of `pid` when argv[0]'s basename is one of the programs. */
function asProcess(pid: string, cmdline: Buffer, programs: readonly string[]): RunningProcess | undefined {
  const argv = parseCmdline(cmdline);
  const program = argv[0] === undefined ? undefined : posix.basename(argv[0]);
  return program !== undefined && programs.includes(program) ? { pid: Number(pid), argv } : undefined;
}

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

// ---------------------------------------------------------------------------------------------
// localHost

/** This machine through node:fs; every path is resolved under `root`. */
export function localHost(root = '/'): Host {
  const at = (path: string) => resolveUnder(root, path);

  /** Where the bytes of `path` really live: a symlink is followed (only on the real root). */
  async function realTarget(path: string): Promise<string> {
    const abs = at(path);
    const st = await fs.lstat(abs).catch((err: unknown) => {
      if (errno(err) === 'ENOENT') return undefined;
      throw err;
    });
    if (!st?.isSymbolicLink()) return abs;
    if (root !== '/') throw new Error(`${path} is a symbolic link; links are only followed on the real root`);
    return fs.realpath(abs);
  }

  return {
    name: 'local',

    async read(path) {
      try {
        return await fs.readFile(at(path));
      } catch (err) {
        if (errno(err) === 'ENOENT' || errno(err) === 'ENOTDIR') return undefined;
        throw err;
      }
    },

    async writeAtomic(path, data, mode) {
      const target = await realTarget(path);
      const dir = dirname(target);
      await fs.mkdir(dir, { recursive: true, mode: DIR_MODE });
      const existing = await fs.stat(target).catch((err: unknown) => {
        if (errno(err) === 'ENOENT') return undefined;
        throw err;
      });
      if (existing && !existing.isFile()) throw new Error(`${path} is not a regular file`);
      const tmp = sysJoin(dir, tempName(target));
      try {
        const fh = await fs.open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
        try {
          await fh.writeFile(data);
          if (existing) {
            if (existing.uid !== process.getuid?.() || existing.gid !== process.getgid?.()) {
              await fh.chown(existing.uid, existing.gid);
            }
            await fh.chmod(existing.mode & 0o7777);
          } else {
            await fh.chmod(mode ?? DEFAULT_FILE_MODE);
          }
          await fh.sync();
        } finally {
          await fh.close();
        }
        await fs.rename(tmp, target);
      } catch (err) {
        await fs.rm(tmp, { force: true }).catch(() => {});
        throw err;
      }
      await syncDir(dir);
    },

    async remove(path) {
      const abs = at(path);
      try {
        await fs.unlink(abs);
      } catch (err) {
        if (errno(err) === 'ENOENT' || errno(err) === 'ENOTDIR') return;
        throw err;
      }
      await syncDir(dirname(abs));
    },

    async list(dir) {
      try {
        return (await fs.readdir(at(dir))).sort();
      } catch (err) {
        if (errno(err) === 'ENOENT') return [];
        throw err;
      }
    },

    async run(argv) {
      const [file, ...args] = argv;
      if (!file) throw new Error('run: empty command');
      const { execa } = await import('execa');
      const result = await execa(file, args, {
        reject: false,
        stdin: 'ignore',
        stripFinalNewline: false,
      });
      if (result.exitCode === undefined) {
        // The program could not be started at all (not installed): report it like a shell would.
        return { exitCode: 127, stdout: '', stderr: `${file}: ${result.shortMessage}\n` };
      }
      return { exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr };
    },

    async processes(programs) {
      const proc = at('/proc');
      const pids = (await fs.readdir(proc).catch(() => []))
        .filter((n) => /^\d+$/.test(n))
        .sort((a, b) => Number(a) - Number(b));
      const found: RunningProcess[] = [];
      // A process may end while it is read: whatever cannot be read is not running.
      const readOrNot = (path: string) => fs.readFile(path).catch(() => undefined);
      for (const pid of pids) {
        const comm = await readOrNot(sysJoin(proc, pid, 'comm'));
        if (comm !== undefined && !commMayBe(comm.toString('utf8').trimEnd(), programs)) continue;
        const cmdline = await readOrNot(sysJoin(proc, pid, 'cmdline'));
        const match = cmdline && asProcess(pid, cmdline, programs);
        if (match) found.push(match);
      }
      return found;
    },
  };
}

/** Makes a rename or unlink in `dir` durable. Some file systems cannot fsync a folder; that is not an error. */
async function syncDir(dir: string): Promise<void> {
  let fh: fs.FileHandle | undefined;
  try {
    fh = await fs.open(dir, constants.O_RDONLY | constants.O_DIRECTORY);
    await fh.sync();
  } catch (err) {
    if (!['EINVAL', 'ENOTSUP', 'EISDIR', 'EBADF', 'EPERM'].includes(errno(err) ?? '')) throw err;
  } finally {
    await fh?.close();
  }
}

// ---------------------------------------------------------------------------------------------
// sshHost

export interface SshHostOptions {
  /** Folder on the node that stands for "/" (tests point nodes at fake roots). Default "/". */
  root?: string;
  /** Extra ssh arguments before the target, e.g. ['-p', '2222', '-i', key]. They win over ccm's defaults. */
  sshArgs?: string[];
  /** The ssh program; default "ssh" from PATH. */
  ssh?: string;
}

/** ssh itself failed (exit 255: unreachable, refused, authentication): the node was never reached. */
export class SshError extends Error {
  constructor(
    readonly target: string,
    detail: string,
  ) {
    super(`ssh ${target}: ${detail}`);
    this.name = 'SshError';
  }
}

/** Exit code the remote scripts use for "no such file or folder" (cat and friends use 1). */
const MISSING = 3;

/**
 * Shell code shared by the scripts: `missing P` exits MISSING when P really does not exist, or fails
 * loudly when the answer cannot be trusted. `[ -e ]` alone says "no" for a file behind a folder we may
 * not search, so the nearest existing ancestor must be a searchable folder for "missing" to be true.
 */
const MISSING_FN =
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a JS template
  'missing() { d=$1; while :; do d=${d%/*}; [ -n "$d" ] || d=/; ' +
  'if [ -e "$d" ]; then if [ -d "$d" ] && [ ! -x "$d" ]; then echo "permission denied: cannot search $d" >&2; exit 1; fi; ' +
  `exit ${MISSING}; fi; [ "$d" != / ] || exit ${MISSING}; done; };`;

/**
 * The remote scripts. Each is constant text run as `sh -c SCRIPT sh ARG...`; paths and names only
 * ever arrive as positional parameters, quoted once for the login shell. Every script first prints
 * MARKER on stdout and on stderr: whatever a chatty login profile prints before it is dropped, and a
 * missing marker on stderr means the script never started (ssh failed), even if a command exits 255.
 * Exported for tests.
 */
export const REMOTE_SCRIPTS = {
  /** $1 = path. stdout = bytes; exit MISSING when it does not exist. */
  read: `${MISSING_FN} if [ -e "$1" ] || [ -L "$1" ]; then exec cat -- "$1"; fi; missing "$1"`,

  /** $1 = folder. stdout = NUL-terminated names (every name, even with newlines); exit MISSING when absent. */
  list:
    `${MISSING_FN} if [ -d "$1" ]; then ` +
    `if [ ! -r "$1" ] || [ ! -x "$1" ]; then echo "permission denied: $1" >&2; exit 1; fi; cd -- "$1" || exit 1; ` +
    `for f in * .[!.]* ..?*; do if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\\0' "$f"; fi; done; exit 0; fi; ` +
    `if [ -e "$1" ]; then echo "not a folder: $1" >&2; exit 1; fi; missing "$1"`,

  /** $1 = path. Removing a missing file is not an error. */
  remove:
    'if [ -d "$1" ] && [ ! -L "$1" ]; then echo "is a folder: $1" >&2; exit 1; fi; rm -f -- "$1" || exit 1; ' +
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a JS template
    'd=${1%/*}; sync -- "${d:-/}" 2>/dev/null || :',

  /**
   * $1 = target, $2 = mode for a new file (octal), $3 = temp suffix, $4 = expected byte count,
   * $5 = "follow" when symlinks may be followed (real root only). stdin = the bytes.
   *
   * Mode and owner are put on the (empty) temp file first and survive the `cat >` that fills it:
   * GNU `chmod/chown --reference` where available, else POSIX `cp -p` of the target (which copies mode,
   * owner and times; its old bytes are then truncated away). No stat or ls parsing. The byte count is
   * checked before the rename, so a connection that drops mid-stream never replaces the target.
   */
  write:
    't=$1; if [ -L "$t" ]; then if [ "$5" != follow ]; then ' +
    'echo "$t is a symbolic link; links are only followed on the real root" >&2; exit 1; fi; ' +
    't=$(readlink -f -- "$t") || exit 1; fi; ' +
    'if [ -e "$t" ] && [ ! -f "$t" ]; then echo "not a regular file: $t" >&2; exit 1; fi; ' +
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a JS template
    'd=${t%/*}; d=${d:-/}; b=${t##*/}; tmp=$d/.$b.ccm-tmp-$3; ' +
    'mkdir -p -- "$d" || exit 1; ' +
    "trap 'rm -f -- \"$tmp\"' EXIT; trap 'exit 1' HUP INT TERM PIPE; " +
    'umask 077; ' +
    'if [ -e "$t" ]; then : > "$tmp" || exit 1; ' +
    'if chmod --reference="$t" "$tmp" 2>/dev/null; then chown --reference="$t" "$tmp" || exit 1; ' +
    'else rm -f -- "$tmp"; cp -p -- "$t" "$tmp" || exit 1; fi; ' +
    'else : > "$tmp" && chmod "$2" "$tmp" || exit 1; fi; ' +
    'cat > "$tmp" || exit 1; ' +
    'n=$(wc -c < "$tmp") || exit 1; n=$((n + 0)); ' +
    'if [ "$n" != "$4" ]; then echo "received $n of $4 bytes; $t left unchanged" >&2; exit 1; fi; ' +
    'sync -- "$tmp" 2>/dev/null || sync 2>/dev/null || :; ' +
    'mv -f -- "$tmp" "$t" || exit 1; trap - EXIT; ' +
    'sync -- "$d" 2>/dev/null || :',

  /** $@ = argv. */
  run: 'exec "$@"',

  /**
   * $1 = the /proc folder, $2... = programs. stdout = one line per candidate process: its pid and its
   * cmdline in hex (`od`, as cmdline is NUL-separated); the caller keeps those whose argv[0] matches.
   * /proc/<pid>/comm (cut to 15 bytes by the kernel) narrows the candidates when it exists.
   */
  processes:
    'p=$1; shift; names=" "; for n in "$@"; do names="$names$(printf %.15s "$n") "; done; ' +
    'for d in "$p"/[0-9]*; do [ -r "$d/cmdline" ] || continue; ' +
    'if [ -r "$d/comm" ]; then IFS= read -r c < "$d/comm" || continue; ' +
    'case "$names" in *" $c "*) ;; *) continue ;; esac; fi; ' +
    'h=$(od -An -v -tx1 < "$d/cmdline" 2>/dev/null | tr -d \' \\n\') || continue; ' +
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a JS template
    'printf \'%s %s\\n\' "${d##*/}" "$h"; done',
} as const;

/** Printed first on stdout and stderr by every remote script (ASCII record separators around "ccm"). */
const MARKER = '\x1eccm\x1e';
const PRINT_MARKER = "printf '\\036ccm\\036'; printf '\\036ccm\\036' >&2; ";

/** The last non-empty line of stderr, for a one-line error. */
function lastLine(text: string, otherwise = 'connection failed (exit 255)'): string {
  // A node's stderr is printed to the operator: it must not drive their terminal.
  const lines = printable(text)
    .split(/\r?\n/)
    .map((l) => l.trim().replace(/^ssh: /, ''))
    .filter(Boolean);
  return lines.at(-1) ?? otherwise;
}

/**
 * A node over ssh (OpenSSH client via execa). `target` is "user@host" (or an ssh config alias).
 * Every call is one ssh connection: BatchMode (never a password prompt), a connect timeout and keepalives;
 * add `-o ControlMaster=auto -o ControlPath=... -o ControlPersist=60` to `sshArgs` to reuse one.
 */
export function sshHost(target: string, options: SshHostOptions = {}): Host {
  const root = options.root ?? '/';
  const at = (path: string) => resolveUnder(root, path);
  const sshArgs = [
    '-T',
    '-o',
    'BatchMode=yes',
    ...(options.sshArgs ?? []),
    // ssh keeps the first value of each option, so these are defaults the caller's sshArgs override.
    '-o',
    'ConnectTimeout=10',
    '-o',
    'ServerAliveInterval=15',
    '-o',
    'ServerAliveCountMax=3',
    '--',
    target,
  ];

  /**
   * Runs `sh -c MARKER+SCRIPT sh ARGS...` on the node and strips everything up to the markers.
   * Throws SshError when the script never started (ssh failed: exit 255 without our marker).
   */
  async function remote(script: string, args: string[], input?: Buffer) {
    const command = ['sh', '-c', PRINT_MARKER + script, 'sh', ...args].map(shQuote).join(' ');
    const { execa } = await import('execa');
    const result = await execa(options.ssh ?? 'ssh', [...sshArgs, command], {
      reject: false,
      encoding: 'buffer',
      stripFinalNewline: false,
      ...(input === undefined ? { stdin: 'ignore' as const } : { input }),
      maxBuffer: 1024 * 1024 * 1024,
    });
    if (result.exitCode === undefined) {
      throw new SshError(target, `cannot run ssh: ${result.shortMessage}`);
    }
    const rawOut = Buffer.from(result.stdout ?? new Uint8Array());
    const rawErr = Buffer.from(result.stderr ?? new Uint8Array());
    const errAt = rawErr.indexOf(MARKER);
    if (errAt < 0) {
      const detail = lastLine(rawErr.toString('utf8'));
      if (result.exitCode === 255) throw new SshError(target, detail);
      throw new Error(`${target}: no POSIX sh on the node? ${detail}`);
    }
    const outAt = rawOut.indexOf(MARKER);
    return {
      exitCode: result.exitCode,
      stdout: outAt < 0 ? rawOut : rawOut.subarray(outAt + MARKER.length),
      stderr: rawErr.subarray(errAt + MARKER.length).toString('utf8'),
    };
  }

  function fail(op: string, path: string, r: { exitCode: number; stderr: string }): never {
    const why = lastLine(r.stderr, `exit ${r.exitCode}`);
    throw new Error(`${target}: ${op} ${path}: ${why}`);
  }

  return {
    name: target,

    async read(path) {
      const r = await remote(REMOTE_SCRIPTS.read, [at(path)]);
      if (r.exitCode === 0) return r.stdout;
      if (r.exitCode === MISSING) return undefined;
      return fail('read', path, r);
    },

    async writeAtomic(path, data, mode) {
      const abs = at(path);
      const suffix = nodeCrypto().randomBytes(6).toString('hex');
      const newMode = (mode ?? DEFAULT_FILE_MODE).toString(8).padStart(4, '0');
      const follow = root === '/' ? 'follow' : 'no-follow';
      const r = await remote(REMOTE_SCRIPTS.write, [abs, newMode, suffix, String(data.length), follow], data);
      if (r.exitCode !== 0) fail('write', path, r);
    },

    async remove(path) {
      const r = await remote(REMOTE_SCRIPTS.remove, [at(path)]);
      if (r.exitCode !== 0) fail('remove', path, r);
    },

    async list(dir) {
      const r = await remote(REMOTE_SCRIPTS.list, [at(dir)]);
      if (r.exitCode === MISSING) return [];
      if (r.exitCode !== 0) fail('list', dir, r);
      return r.stdout
        .toString('utf8')
        .split('\0')
        .filter((n) => n !== '')
        .sort();
    },

    async run(argv): Promise<ExecResult> {
      if (argv.length === 0) throw new Error('run: empty command');
      const r = await remote(REMOTE_SCRIPTS.run, argv);
      return { exitCode: r.exitCode, stdout: r.stdout.toString('utf8'), stderr: r.stderr };
    },

    async processes(programs) {
      const r = await remote(REMOTE_SCRIPTS.processes, [at('/proc'), ...programs]);
      if (r.exitCode !== 0) fail('list processes in', '/proc', r);
      return parseProcessLines(r.stdout.toString('utf8'), programs);
    },
  };
}

/** The `processes` script's lines ("<pid> <cmdline in hex>"), kept when argv[0] is one of the programs. */
export function parseProcessLines(text: string, programs: readonly string[]): RunningProcess[] {
  const found: RunningProcess[] = [];
  for (const line of text.split('\n')) {
    const [pid, hex] = line.split(' ');
    if (!pid || !/^\d+$/.test(pid) || !hex || !/^([0-9a-f]{2})+$/.test(hex)) continue;
    const match = asProcess(pid, Buffer.from(hex, 'hex'), programs);
    if (match) found.push(match);
  }
  return found.sort((a, b) => a.pid - b.pid);
}
