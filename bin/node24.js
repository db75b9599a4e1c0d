// The Node 24 that bin/run.js re-runs itself with under an older Node: <tools>/node24/bin/node, as
// .ci/node installs it. Written for any Node, as bin/run.js is, and loaded only on that path.
//
// That binary runs with the user's rights, root's under sudo, so it is run only when
// - its sha256 is the one .ci/node.sha256 records (shipped with the package, see package.json "files");
// - it, the folders it is in and the folders where ccm looks for it belong to this user or root and
//   nobody else can write them (a folder writable by all but sticky, like /tmp, is taken), so that
//   nobody else can change it between the check and the start;
// - under sudo (or setuid), the tools folder is root's own, not one named by the caller's environment.
// Hashing 120 MB takes ~0.2 s, as long as the start itself: a hash is recorded in node24/verified with
// the binary's device, inode, size, mtime and ctime (a write or a chmod changes the ctime, which no
// one can set back), and a start whose binary still has those takes the record instead of hashing.
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  lstatSync,
  openSync,
  readFileSync,
  readSync,
  realpathSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';

const INSTALL =
  "run `bash .ci/node --bin-dir` in ccm's repository to install it again, or run ccm with Node 22 or newer";

/** Under sudo (euid 0 with SUDO_USER set) or setuid (euid ≠ uid): the environment is the caller's. */
function elevated(env) {
  const euid = process.geteuid?.();
  return euid !== undefined && ((euid === 0 && Boolean(env.SUDO_USER)) || euid !== process.getuid?.());
}

/**
 * Where the tools are: $CCM_TOOLS_DIR, $XDG_CACHE_HOME/ccm-tools or ~/.cache/ccm-tools (absolute paths
 * only); elevated, ~/.cache/ccm-tools in the passwd home of the effective user, whatever the
 * environment says.
 */
export function toolsDir(env = process.env) {
  if (elevated(env)) return join(userInfo().homedir, '.cache', 'ccm-tools');
  const absolute = (p) => (p && isAbsolute(p) ? p : undefined);
  return (
    absolute(env.CCM_TOOLS_DIR) ??
    join(absolute(env.XDG_CACHE_HOME) ?? join(homedir(), '.cache'), 'ccm-tools')
  );
}

/**
 * { node } to run; { missing, elevated } when there is none; { refused }: one line saying what is
 * wrong and what to do.
 */
export async function node24(env = process.env) {
  let tools;
  try {
    tools = toolsDir(env);
  } catch (err) {
    return {
      refused: `cannot tell the home folder of uid ${process.geteuid?.()}, where the Node 24 of ccm-tools is (${err.message}); run ccm with Node 22 or newer`,
    };
  }
  const link = join(tools, 'node24', 'bin', 'node');
  if (!existsSync(link)) return { missing: link, elevated: elevated(env) };
  try {
    return { node: await verified(link) };
  } catch (err) {
    const why = err instanceof Refusal ? err.message : `cannot check it (${err.message}); ${INSTALL}`;
    return { refused: `not running ${link}: ${why}` };
  }
}

class Refusal extends Error {}

async function verified(link) {
  const platform = `${process.platform}-${process.arch}`;
  let recorded;
  try {
    recorded = readFileSync(new URL('../.ci/node.sha256', import.meta.url), 'utf8');
  } catch (err) {
    throw new Refusal(
      `no digest to check it with (${err.message}); reinstall ccm, or run it with Node 22 or newer`,
    );
  }
  const want = recorded
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .find((f) => f[1] === platform)?.[0];
  if (!want)
    throw new Refusal(`.ci/node.sha256 records no Node 24 for ${platform}; run ccm with Node 22 or newer`);
  const euid = process.geteuid?.() ?? 0;
  // Where ccm looks (the folders of the link), then the binary the link leads to and its folders.
  const bin = realpathSync(dirname(link));
  walkUp(bin, euid);
  mine(link, lstatSync(link), euid, false);
  const real = realpathSync(link);
  walkUp(dirname(real), euid);
  const fd = openSync(real, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const st = fstatSync(fd, { bigint: true });
    if (!st.isFile()) throw new Refusal(`${real} is not a file; remove it and ${INSTALL}`);
    mine(real, st, euid, false);
    const stamp = join(dirname(bin), 'verified');
    const record = `${want} ${[st.dev, st.ino, st.size, st.mtimeNs, st.ctimeNs].join(' ')}\n`;
    if (readRecord(stamp, euid) === record) return real;
    const got = await sha256(fd);
    if (got !== want) {
      throw new Refusal(
        `its sha256 is ${got}, not ${want} as .ci/node.sha256 records for ${platform}; remove ${dirname(bin)} and ${INSTALL}`,
      );
    }
    writeRecord(stamp, record);
    return real;
  } finally {
    closeSync(fd);
  }
}

/** Refuses what another user could change: owned by neither `euid` nor root, or writable by group or others. */
function mine(path, st, euid, folder) {
  const uid = Number(st.uid);
  if (uid !== euid && uid !== 0) {
    throw new Refusal(
      `${path} belongs to uid ${uid}, neither to you (uid ${euid}) nor root, and so could be changed by that user; install Node 24 in a folder of your own (\`bash .ci/node --bin-dir\` in ccm's repository), or run ccm with Node 22 or newer`,
    );
  }
  const mode = Number(st.mode);
  if (st.isSymbolicLink()) return;
  const sticky = folder && (mode & 0o1000) !== 0;
  if ((mode & 0o022) !== 0 && !sticky) {
    const who = mode & 0o020 ? (mode & 0o002 ? 'its group and others' : 'its group') : 'others';
    throw new Refusal(
      `${path} is writable by ${who} (mode ${(mode & 0o7777).toString(8)}); \`chmod go-w ${path}\` if nobody else wrote to it, else remove it and ${INSTALL}`,
    );
  }
}

/** Every folder from `dir` (a real path) up to /. */
function walkUp(dir, euid) {
  for (let up = dir; ; up = dirname(up)) {
    mine(up, statSync(up), euid, true);
    if (up === dirname(up)) return;
  }
}

/** Imports node:crypto (~2 ms) only when there is something to hash. */
async function sha256(fd) {
  const { createHash } = await import('node:crypto');
  const hash = createHash('sha256');
  const buffer = Buffer.allocUnsafe(1 << 20);
  for (let position = 0; ; ) {
    const n = readSync(fd, buffer, 0, buffer.length, position);
    if (n === 0) return hash.digest('hex');
    hash.update(buffer.subarray(0, n));
    position += n;
  }
}

/** The record, if it is a file of this user or root that nobody else can write. */
function readRecord(path, euid) {
  let fd;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    const st = fstatSync(fd);
    if (!st.isFile() || (st.uid !== euid && st.uid !== 0) || (st.mode & 0o022) !== 0) return undefined;
    return readFileSync(fd, 'utf8');
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Written whole (a new file renamed over the old), or not at all: a folder ccm may not write is fine. */
function writeRecord(path, record) {
  const temporary = `${path}.${process.pid}`;
  try {
    writeFileSync(temporary, record, { flag: 'wx', mode: 0o644 });
    renameSync(temporary, path);
  } catch {
    try {
      unlinkSync(temporary);
    } catch {}
  }
}
