/**
 * `ccm version` names the commit the build was made from (build/commit.mjs, put into the bundle by
 * build/bundle.mjs), beside the version, Node and platform that `ccm --version` (oclif's line) names
 * too; a build without git, or from sources that are no git work tree, says `unknown` and still builds.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { ccm } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const nodeDir = dirname(process.execPath);
const HASH = /^[0-9a-f]{40}$/;

/** build/commit.mjs's answer for `dir`, in a Node of its own with this PATH. */
async function commitOf(dir: string, path = process.env.PATH ?? ''): Promise<string> {
  const script = `import(${JSON.stringify(join(root, 'build/commit.mjs'))}).then((m) => process.stdout.write(m.buildCommit(${JSON.stringify(dir)})))`;
  const run = await execa(process.execPath, ['-e', script], { env: { PATH: path }, extendEnv: true });
  return run.stdout;
}

/** A git repository with one commit, as a reader's clone is. */
function repository(): { dir: string; git: (...args: string[]) => string } {
  const dir = tempDir('ccm-commit-');
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', dir, ...args], {
      encoding: 'utf8',
      env: { ...process.env, GIT_DIR: undefined, GIT_WORK_TREE: undefined },
    }).trim();
  git('init', '-q');
  writeFileSync(join(dir, 'package.json'), '{}\n');
  writeFileSync(join(dir, '.gitignore'), 'dist/\n');
  git('add', '.');
  git('-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', 'one');
  return { dir, git };
}

describe('ccm version', () => {
  it('names the version, the commit of the build, Node and the platform; -o json gives each', async () => {
    const json = await ccm(['version', '-o', 'json']);
    expect(json.exitCode, json.stderr).toBe(0);
    const info = JSON.parse(json.stdout) as Record<string, string>;
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    expect(Object.keys(info)).toEqual(['version', 'commit', 'node', 'platform']);
    expect(info.version).toBe(pkg.version);
    expect(info.node).toBe(process.version);
    expect(info.platform).toBe(`${process.platform}/${process.arch}`);
    // The repository's HEAD when `npm run build` ran (this checkout is a git work tree); rebuilt since a
    // commit, it would be that commit.
    const built = (await commitOf(root)).replace(/-dirty$/, '');
    expect(built, 'this checkout is a git work tree').toMatch(HASH);
    expect(info.commit, 'the commit of the last `npm run build`; run it again after a commit').toMatch(
      new RegExp(`^${built}(-dirty)?$`),
    );

    const line = await ccm(['version']);
    expect(line.exitCode).toBe(0);
    expect(line.stdout).toBe(
      `ccm ${info.version} (commit ${info.commit?.slice(0, 12)}${info.commit?.endsWith('-dirty') ? '-dirty' : ''}, Node.js ${info.node}, ${info.platform})`,
    );
  });

  it("agrees with `ccm --version` (oclif's line: ccm/VERSION OS-ARCH node-vX) on all it names", async () => {
    const flag = await ccm(['--version']);
    expect(flag.exitCode).toBe(0);
    const info = JSON.parse((await ccm(['version', '-o', 'json'])).stdout) as Record<string, string>;
    expect(flag.stdout).toBe(`ccm/${info.version} ${info.platform?.replace('/', '-')} node-${info.node}`);
  });

  it('refuses, in one line with exit 2, the flags it has no use for: --no-headers, -q, and the cluster, cloud and log flags', async () => {
    // Each would otherwise be taken and dropped: -q and --no-headers printed nothing at all (exit 0).
    for (const [args, why] of [
      [
        ['--no-headers'],
        "its one line has no header; `ccm version -o jsonpath='{.version}'` prints the version alone",
      ],
      [['-q'], 'it prints only failures, and there is none;'],
      [['--quiet'], 'it prints only failures, and there is none;'],
      [['--kubeconfig', '/nonexistent'], "it prints this ccm's own version and reads no cluster"],
      [['--context=prod'], 'reads no cluster'],
      [['--request-timeout', '5s'], 'reads no cluster'],
      [['--cloud-api-url', 'http://evil.example'], "it prints this ccm's own version and reaches no cloud"],
      [['--provider', 'digitalocean'], 'reaches no cloud'],
      [['--cloud-config', 'cloud.conf'], 'reaches no cloud'],
      [['--log-level', 'warn'], 'logs nothing'],
    ] as const) {
      const run = await ccm(['version', ...args]);
      const flag = args[0] === '-q' ? '--quiet' : (args[0].split('=')[0] as string);
      expect(run.exitCode, args.join(' ')).toBe(2);
      expect(run.stdout, args.join(' ')).toBe('');
      expect(run.stderr, args.join(' ')).toMatch(
        new RegExp(`^ccm: ${flag} does not apply to \`ccm version\`: `),
      );
      expect(run.stderr, args.join(' ')).toContain(why);
      expect(run.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
    }
    // What --no-headers and -q would be used for: the version alone.
    const alone = await ccm(['version', '-o', 'jsonpath={.version}']);
    expect(alone.stdout).toBe(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version);
    // Nothing of the environment makes a refused flag look given (CCM_PROVIDER is --provider's variable).
    const env = await ccm(['version'], { CCM_PROVIDER: 'no-such-cloud' });
    expect(env.exitCode, env.stderr).toBe(0);
    expect(env.stderr).toBe('');
  });

  it('takes -o, --json and -o=json; its help shows only those', async () => {
    for (const args of [['-o=json'], ['--json'], ['-o', 'yaml']]) {
      const run = await ccm(['version', ...args]);
      expect(run.exitCode, run.stderr).toBe(0);
      expect(run.stdout).toContain('version');
    }
    const help = await ccm(['version', '--help']);
    expect(help.stdout).toMatch(/\$ ccm version \[--json\] \[-o <value>\] \[--allow-missing-template-keys\]/);
    for (const hidden of ['--kubeconfig', '--no-headers', '--quiet', '--log-level', '--provider'])
      expect(help.stdout, hidden).not.toContain(hidden);
  });
});

describe("the build's commit (build/commit.mjs)", () => {
  it("is HEAD in a git work tree, -dirty with a change git status shows, 'unknown' without git", async () => {
    const { dir, git } = repository();
    const head = git('rev-parse', 'HEAD');
    expect(await commitOf(dir)).toBe(head);
    // Ignored output (dist/) is not a change; an edited or a new file is.
    mkdirSync(join(dir, 'dist'));
    writeFileSync(join(dir, 'dist', 'x.js'), '');
    expect(await commitOf(dir)).toBe(head);
    writeFileSync(join(dir, 'new.ts'), '');
    expect(await commitOf(dir)).toBe(`${head}-dirty`);
    // No git on PATH (a machine or an image without it): unknown, no error.
    expect(await commitOf(dir, nodeDir)).toBe('unknown');
  });

  it("is 'unknown' for sources that are no work tree's top: a tarball, even unpacked inside another repository", async () => {
    expect(await commitOf(tempDir('ccm-no-git-'))).toBe('unknown');
    const { dir } = repository();
    const unpacked = join(dir, 'vendor', 'ccm');
    mkdirSync(unpacked, { recursive: true });
    expect(await commitOf(unpacked)).toBe('unknown');
  });

  it('a checkout without git builds, and its ccm version says commit unknown', async () => {
    // The sources as a tarball gives them (no .git), with this checkout's node_modules.
    const copy = tempDir('ccm-tarball-');
    for (const entry of ['src', 'build', 'bin', 'templates', 'package.json', 'tsconfig.json'])
      cpSync(join(root, entry), join(copy, entry), { recursive: true });
    symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'));
    const bundle = await execa(process.execPath, ['build/bundle.mjs'], { cwd: copy, reject: false });
    expect(bundle.exitCode, bundle.stderr).toBe(0);
    const run = await execa(process.execPath, [join(copy, 'bin/run.js'), 'version', '-o', 'json'], {
      reject: false,
      env: { KUBECONFIG: undefined, CCM_PROVIDER: undefined },
    });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ commit: 'unknown', version: expect.any(String) });
    const line = await execa(process.execPath, [join(copy, 'bin/run.js'), 'version'], { reject: false });
    expect(line.stdout).toMatch(/^ccm \S+ \(commit unknown, Node\.js v/);
  }, 180_000);
});
