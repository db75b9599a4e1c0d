/**
 * Under a Node older than 22 (the machine's own here), bin/run.js re-runs itself with the Node 24 of
 * <tools>/node24/bin/node. That binary runs with the caller's rights, root's under sudo: it runs only
 * when its sha256 is the one .ci/node.sha256 records and nobody but the user or root can change it or
 * its folders; under sudo the folder is root's own, whatever the caller's environment names.
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { userInfo } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/tmp.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const bin = join(root, 'bin', 'run.js');
const NOBODY = 65534;
const recorded = readFileSync(join(root, '.ci', 'node.sha256'), 'utf8');
const platform = `${process.platform}-${process.arch}`;
const digest = recorded.match(new RegExp(`^([0-9a-f]{64})\\s+${platform}$`, 'm'))?.[1] as string;

/** The first `node` on PATH that is not the Node 24 the tests run under (.ci/node puts it first). */
function machineNode(): string {
  const dirs = (process.env.PATH ?? '').split(delimiter).filter((d) => !d.includes('ccm-tools'));
  for (const dir of dirs) if (existsSync(join(dir, 'node'))) return join(dir, 'node');
  return process.execPath;
}

let oldNode: string;
beforeAll(() => {
  oldNode = machineNode();
  const major = Number(
    execFileSync(oldNode, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }),
  );
  expect(major, `the machine's node (${oldNode}) must be older than 22 for these tests`).toBeLessThan(22);
  expect(digest, `.ci/node.sha256 has no digest for ${platform}`).toMatch(/^[0-9a-f]{64}$/);
});

/** A tools folder (0755, root's) whose node24/bin/node is made by `make`; returns the folder. */
function tools(make: (node: string) => void): string {
  const dir = tempDir('ccm-tools-');
  chmodSync(dir, 0o755);
  mkdirSync(join(dir, 'node24', 'bin'), { recursive: true, mode: 0o755 });
  make(join(dir, 'node24', 'bin', 'node'));
  return dir;
}

/** A "node" that leaves a mark when it runs: what someone else would plant. */
function planted(mark: string) {
  return (node: string) => writeFileSync(node, `#!/bin/sh\necho planted > '${mark}'\n`, { mode: 0o755 });
}

/** The Node 24 the tests run under: its sha256 is the recorded one. */
const copyOfNode24 = (node: string) => copyFileSync(process.execPath, node);
const linkToNode24 = (node: string) => symlinkSync(process.execPath, node);

async function ccmUnderOldNode(env: Record<string, string | undefined>) {
  return execa(oldNode, [bin, '--version'], {
    env: { CCM_TOOLS_DIR: undefined, XDG_CACHE_HOME: undefined, SUDO_USER: undefined, ...env },
    reject: false,
    timeout: 60_000,
  });
}

function expectRefused(run: { exitCode?: number; stdout: string; stderr: string }, pattern: RegExp) {
  expect(run.stdout).toBe('');
  expect(run.exitCode, run.stderr).toBe(2);
  const lines = run.stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^ccm: not running \S+\/node24\/bin\/node: /);
  expect(lines[0]).toMatch(pattern);
}

describe("bin/run.js under an old Node runs <tools>/node24/bin/node only when it is the recorded, the user's or root's own", () => {
  it('runs the recorded Node 24, and keeps its check for the next start', async () => {
    const dir = tools(copyOfNode24);
    const run = await ccmUnderOldNode({ CCM_TOOLS_DIR: dir });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^ccm\/\S+ \S+ node-v24\./);
    const record = readFileSync(join(dir, 'node24', 'verified'), 'utf8');
    const st = statSync(join(dir, 'node24', 'bin', 'node'), { bigint: true });
    expect(record).toBe(`${digest} ${[st.dev, st.ino, st.size, st.mtimeNs, st.ctimeNs].join(' ')}\n`);
    expect(statSync(join(dir, 'node24', 'verified')).mode & 0o022).toBe(0);
  });

  it('refuses a binary whose sha256 is not the recorded one, and does not run it', async () => {
    const mark = join(tempDir('ccm-mark-'), 'ran');
    const run = await ccmUnderOldNode({ CCM_TOOLS_DIR: tools(planted(mark)) });
    expectRefused(
      run,
      new RegExp(
        `its sha256 is [0-9a-f]{64}, not ${digest} as \\.ci/node\\.sha256 records for ${platform}; remove \\S+/node24 and run`,
      ),
    );
    expect(existsSync(mark)).toBe(false);
  });

  it('a check recorded for the binary does not let it through once its contents changed, mtime set back or not', async () => {
    const dir = tools(copyOfNode24);
    expect((await ccmUnderOldNode({ CCM_TOOLS_DIR: dir })).exitCode).toBe(0);
    const node = join(dir, 'node24', 'bin', 'node');
    const before = statSync(node);
    const mark = join(tempDir('ccm-mark-'), 'ran');
    // Same inode and size, other contents, the mtime put back: only the ctime tells.
    const script = Buffer.from(`#!/bin/sh\necho planted > '${mark}'\nexit 0\n`);
    const contents = Buffer.concat([script, Buffer.alloc(before.size - script.length, 0x0a)]);
    writeFileSync(node, contents);
    utimesSync(node, before.atime, before.mtime);
    expect(statSync(node).ino).toBe(before.ino);
    expectRefused(await ccmUnderOldNode({ CCM_TOOLS_DIR: dir }), /its sha256 is [0-9a-f]{64}, not /);
    expect(existsSync(mark)).toBe(false);
  });

  it('ignores a record of the check that another user could have written', async () => {
    const mark = join(tempDir('ccm-mark-'), 'ran');
    const dir = tools(planted(mark));
    const st = statSync(join(dir, 'node24', 'bin', 'node'), { bigint: true });
    const forged = join(dir, 'node24', 'verified');
    writeFileSync(forged, `${digest} ${[st.dev, st.ino, st.size, st.mtimeNs, st.ctimeNs].join(' ')}\n`);
    chownSync(forged, NOBODY, NOBODY);
    expectRefused(await ccmUnderOldNode({ CCM_TOOLS_DIR: dir }), /its sha256 is /);
    expect(existsSync(mark)).toBe(false);
  });

  it.each([
    [
      'its folder node24 writable by all',
      (dir: string) => chmodSync(join(dir, 'node24'), 0o777),
      /node24 is writable by its group and others \(mode 777\); `chmod go-w /,
    ],
    [
      'its folder bin writable by the group',
      (dir: string) => chmodSync(join(dir, 'node24', 'bin'), 0o775),
      /node24\/bin is writable by its group \(mode 775\)/,
    ],
    [
      'the tools folder writable by all',
      (dir: string) => chmodSync(dir, 0o777),
      /ccm-tools-\w+ is writable by its group and others \(mode 777\)/,
    ],
    [
      'a folder above the tools folder writable by all, not sticky',
      (dir: string) => chmodSync(dirname(dir), 0o777),
      /ccm-outer-\w+ is writable by its group and others \(mode 777\)/,
      true,
    ],
  ])('refuses the recorded Node 24 with %s', async (_what, open, pattern, nested = false) => {
    let dir = tools(linkToNode24);
    if (nested) {
      // tools inside a folder of its own, so that the test opens that one and not /tmp
      const outer = tempDir('ccm-outer-');
      const inner = join(outer, 'ccm-tools');
      execFileSync('cp', ['-a', dir, inner]);
      dir = inner;
    }
    open(dir);
    expectRefused(await ccmUnderOldNode({ CCM_TOOLS_DIR: dir }), pattern);
  });

  it.each([
    [
      'the binary',
      (dir: string) => chownSync(join(dir, 'node24', 'bin', 'node'), NOBODY, NOBODY),
      /bin\/node belongs to uid 65534, neither to you \(uid 0\) nor root/,
    ],
    [
      'its folder',
      (dir: string) => chownSync(join(dir, 'node24'), NOBODY, NOBODY),
      /\/node24 belongs to uid 65534/,
    ],
  ])('refuses the recorded Node 24 when %s belongs to another user', async (_what, give, pattern) => {
    const dir = tools(copyOfNode24);
    give(dir);
    expectRefused(await ccmUnderOldNode({ CCM_TOOLS_DIR: dir }), pattern);
  });

  it("under sudo, takes the folder from neither CCM_TOOLS_DIR nor XDG_CACHE_HOME nor HOME, but root's home", async () => {
    const marks = tempDir('ccm-mark-');
    const byToolsDir = tools(planted(join(marks, 'tools-dir')));
    const cacheHome = tempDir('ccm-cache-home-');
    mkdirSync(join(cacheHome, 'ccm-tools', 'node24', 'bin'), { recursive: true });
    planted(join(marks, 'xdg'))(join(cacheHome, 'ccm-tools', 'node24', 'bin', 'node'));
    const home = tempDir('ccm-home-');
    mkdirSync(join(home, '.cache', 'ccm-tools', 'node24', 'bin'), { recursive: true });
    planted(join(marks, 'home'))(join(home, '.cache', 'ccm-tools', 'node24', 'bin', 'node'));

    for (const env of [
      { CCM_TOOLS_DIR: byToolsDir, XDG_CACHE_HOME: cacheHome, HOME: home },
      { XDG_CACHE_HOME: cacheHome, HOME: home },
      { HOME: home },
    ]) {
      const run = await ccmUnderOldNode({ ...env, SUDO_USER: 'alice' });
      expect(readdirNames(marks), JSON.stringify(env)).toEqual([]);
      // root's own ~/.cache/ccm-tools: its Node 24 when .ci/node installed one there, else none.
      const own = join(userInfo().homedir, '.cache', 'ccm-tools', 'node24', 'bin', 'node');
      if (existsSync(own)) {
        expect(run.exitCode, run.stderr).toBe(0);
        expect(run.stdout).toMatch(/node-v24\./);
      } else expect(run.stderr).toMatch(/^ccm: needs Node\.js 22 or newer/);
    }
    // Without sudo, the caller's folder is the one: refused, as planted.
    expectRefused(await ccmUnderOldNode({ CCM_TOOLS_DIR: byToolsDir }), /its sha256 is /);
  });
});

describe('the published package', () => {
  it('ships the digest with bin/run.js, and its wrapper checks the Node 24 with it', async () => {
    const dest = tempDir('ccm-pack-');
    const packed = await execa('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dest], {
      cwd: root,
    });
    const [{ filename, files }] = JSON.parse(packed.stdout) as [
      { filename: string; files: { path: string }[] },
    ];
    expect(files.map((f) => f.path)).toEqual(
      expect.arrayContaining(['.ci/node.sha256', 'bin/run.js', 'bin/node24.js', 'dist/bundle/entry.js']),
    );
    await execa('tar', ['-xzf', join(dest, filename), '-C', dest]);
    const packageBin = join(dest, 'package', 'bin', 'run.js');
    const run = await execa(oldNode, [packageBin, '--version'], {
      env: { CCM_TOOLS_DIR: tools(linkToNode24), XDG_CACHE_HOME: undefined, SUDO_USER: undefined },
      reject: false,
    });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/node-v24\./);
    const mark = join(tempDir('ccm-mark-'), 'ran');
    const refused = await execa(oldNode, [packageBin, '--version'], {
      env: { CCM_TOOLS_DIR: tools(planted(mark)), XDG_CACHE_HOME: undefined, SUDO_USER: undefined },
      reject: false,
    });
    expectRefused(refused, /its sha256 is /);
    expect(existsSync(mark)).toBe(false);
  });
});

function readdirNames(dir: string): string[] {
  return execFileSync('ls', ['-A', dir], { encoding: 'utf8' }).split('\n').filter(Boolean);
}
