/**
 * The container image, built as an operator would (`npm run image`, the line docs/deploy.md shows;
 * buildah, no engine), unpacked from its OCI archive and run with chroot as the image's user: no
 * container runtime is needed.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

/** The line docs/deploy.md shows under "The image", run as written (bash, from the repository). */
const imageLine = /```sh\n([^\n]*)\n```/.exec(
  readFileSync(join(repo, 'docs', 'deploy.md'), 'utf8').split('\n## The image\n')[1] ?? '',
)?.[1];

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

  it('runs `ccm --version` and `ccm run --help` inside it as that user', () => {
    expect(inImage('--version')).toMatch(
      new RegExp(`^ccm/${version.replace(/\./g, '\\.')} linux-x64 node-v24\\.`),
    );
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
