/**
 * The container image, built as an operator would (`npm run image`, the line docs/deploy.md shows;
 * buildah, no engine), unpacked from its OCI archive and run with chroot as the image's user; and
 * loaded into a containerd of the test's own as the page's "Without a registry" shows it.
 */
import { execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const version = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')).version as string;
const archive = join(repo, 'dist', 'image', `ccm-${version}.oci.tar`);

let work: string;
let rootfs: string;
let config: { config?: { User?: string; Entrypoint?: string[] } };

interface Descriptor {
  mediaType: string;
  digest: string;
}

const page = readFileSync(join(repo, 'docs', 'deploy.md'), 'utf8');
/** The line docs/deploy.md shows under "The image", run as written (bash, from the repository). */
const imageLine = /```sh\n([^\n]*)\n```/.exec(page.split('\n## The image\n')[1] ?? '')?.[1];
/** The page's "Without a registry": the line run on each Node, and the `ccm manifests` line. */
const [importLine, manifestsLine] = [
  ...(page.split('\n### Without a registry\n')[1]?.split('\n## ')[0] ?? '').matchAll(/```sh\n([^\n]*)\n```/g),
].map((m) => m[1] as string);

beforeAll(() => {
  expect(imageLine).toMatch(/^npm run image\b/);
  execFileSync('bash', ['-c', imageLine as string], { cwd: repo, stdio: 'pipe' });
  work = mkdtempSync(join(tmpdir(), 'ccm-image-'));
  const oci = join(work, 'oci');
  rootfs = join(work, 'rootfs');
  mkdirSync(oci);
  mkdirSync(rootfs);
  execFileSync('tar', ['-xf', archive, '-C', oci]);
  const blob = (d: Descriptor) => join(oci, 'blobs', ...d.digest.split(':'));
  const index = JSON.parse(readFileSync(join(oci, 'index.json'), 'utf8')) as { manifests: Descriptor[] };
  const manifest = JSON.parse(readFileSync(blob(index.manifests[0] as Descriptor), 'utf8')) as {
    config: Descriptor;
    layers: Descriptor[];
  };
  config = JSON.parse(readFileSync(blob(manifest.config), 'utf8'));
  for (const layer of manifest.layers) {
    const gzip = layer.mediaType.endsWith('+gzip') ? ['-z'] : [];
    execFileSync('tar', ['-x', ...gzip, '-f', blob(layer), '-C', rootfs]);
  }
}, 600_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

function inImage(...args: string[]): string {
  return execFileSync(
    '/usr/sbin/chroot',
    ['--userspec=65532:65532', rootfs, '/usr/bin/node', '/app/bin/run.js', ...args],
    {
      encoding: 'utf8',
      env: { HOME: '/home/nonroot', PATH: '/usr/bin' },
    },
  );
}

describe('the ccm image', () => {
  it('runs as uid 65532 with ccm as its entrypoint', () => {
    expect(config.config?.User).toBe('65532:65532');
    expect(config.config?.Entrypoint).toEqual(['/usr/bin/node', '/app/bin/run.js']);
  });

  it('runs `ccm --version`, `ccm version` (the commit it was built from) and `ccm run --help` inside it as that user', () => {
    expect(inImage('--version')).toMatch(
      new RegExp(`^ccm/${version.replace(/\./g, '\\.')} linux-x64 node-v24\\.`),
    );
    // The commit `npm run image` built from: this checkout's HEAD (build/commit.mjs).
    const head = execFileSync('git', ['-C', repo, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
    expect(JSON.parse(inImage('version', '-o', 'json'))).toMatchObject({
      version,
      commit: expect.stringMatching(new RegExp(`^${head}(-dirty)?$`)),
      platform: 'linux/x64',
    });
    expect(inImage('nodes', 'init', '--help')).toMatch(/Initialise and reconcile every Node/);
    expect(inImage('run', '--help')).toMatch(/USAGE\s+\$ ccm run/);
  });

  it('holds no dev dependencies, test files, sources or npm cache', () => {
    const modules = readdirSync(join(rootfs, 'app', 'node_modules'));
    const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { devDependencies: object };
    for (const dev of Object.keys(pkg.devDependencies).filter((name) => name !== '@types/node')) {
      expect(existsSync(join(rootfs, 'app', 'node_modules', dev)), dev).toBe(false);
    }
    expect(modules).toContain('@oclif');
    for (const path of ['app/test', 'app/src', 'app/bin/dev.js', 'root/.npm', 'home/nonroot/.npm']) {
      expect(existsSync(join(rootfs, path)), path).toBe(false);
    }
    expect(statSync(join(rootfs, 'usr', 'bin', 'node')).isFile()).toBe(true);
  });
});

describe('the image without a registry', () => {
  it("imports into containerd, with the page's ctr line, as the name its `ccm manifests` line passes", async () => {
    expect(importLine).toMatch(/^ctr -n k8s\.io images import /);
    const image = /--image (\S+) --image-pull-policy Never /.exec(manifestsLine ?? '')?.[1];
    expect(image).toBe(`localhost/ccm:${version}`);
    // A containerd of its own: its own root, state and socket, nothing of the machine's.
    const dir = join(work, 'containerd');
    mkdirSync(dir);
    const address = join(dir, 'containerd.sock');
    writeFileSync(
      join(dir, 'config.toml'),
      `version = 2\nroot = "${dir}/root"\nstate = "${dir}/state"\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n[grpc]\n  address = "${address}"\n`,
    );
    const containerd = spawn('containerd', ['--config', join(dir, 'config.toml')], { stdio: 'ignore' });
    try {
      for (let i = 0; i < 100 && !existsSync(address); i++) await new Promise((r) => setTimeout(r, 100));
      const env = { ...process.env, CONTAINERD_ADDRESS: address };
      // As on a Node, from the folder the archive was copied to.
      execFileSync('bash', ['-c', importLine as string], { cwd: dirname(archive), env, stdio: 'pipe' });
      const names = execFileSync('ctr', ['-n', 'k8s.io', 'images', 'ls', '-q'], { env, encoding: 'utf8' });
      expect(names.trim().split('\n')).toContain(image);
    } finally {
      containerd.kill('SIGTERM');
      await new Promise((r) => containerd.once('exit', r));
    }
  }, 120_000);
});
