/**
 * The container image, built as an operator would (`npm run image`, the line docs/deploy.md shows;
 * buildah, no engine): one OCI index naming a linux/amd64 and a linux/arm64 image. Each image's
 * layers are unpacked from the archive and run with chroot as the image's user: the machine's own
 * architecture natively, the other under Debian's qemu-user-static. Every ELF file in each is of its
 * own architecture, and its SBOM lists every production dependency. The archive is then loaded into a
 * containerd of the test's own as the page's "Without a registry" shows it.
 *
 * The emulator: binfmt_misc is not mounted on these machines (no systemd), so the foreign node is
 * started by qemu-aarch64-static (or -x86_64-) itself. Not as `qemu-aarch64-static -L <rootfs>`: Debian
 * 12's qemu 7.2 maps open() under -L but not statx(), so Node finds no /app/bin/run.js, and a file
 * missing from the image would be read from this machine instead. The static emulator is copied into
 * the unpacked root (after the ELF check) and run inside the chroot, as binfmt_misc's F flag would.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { createNodes, fixtureApi } from '../controlplane/fixtures.js';
import { CCM_USER, type ControlPlane, startControlPlane } from '../controlplane/harness.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const version = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')).version as string;
const archive = join(repo, 'dist', 'image', `ccm-${version}.oci.tar`);
/** Each platform's SBOM, beside the archive (the Debian packages differ by architecture). */
const sbomBeside = (arch: string) => join(repo, 'dist', 'image', `ccm-${version}-${arch}.sbom.cdx.json`);
const nodeVersion = /^version=(\S+)$/m.exec(readFileSync(join(repo, '.ci', 'node'), 'utf8'))?.[1] as string;

type Arch = 'amd64' | 'arm64';
/** Per image platform: npm's name of it, its ELF e_machine, its qemu. */
const PLATFORMS: Record<Arch, { npm: string; machine: number; qemu: string }> = {
  amd64: { npm: 'linux-x64', machine: 62 /* EM_X86_64 */, qemu: 'qemu-x86_64-static' },
  arm64: { npm: 'linux-arm64', machine: 183 /* EM_AARCH64 */, qemu: 'qemu-aarch64-static' },
};
const ARCHES = Object.keys(PLATFORMS) as Arch[];
const NATIVE: Arch | undefined =
  process.arch === 'x64' ? 'amd64' : process.arch === 'arm64' ? 'arm64' : undefined;
/** Where the emulator goes in an unpacked root of the other architecture (not in the image). */
const EMULATOR = '/.test-emulator';

let work: string;
let indexName: string | undefined;
let indexPlatforms: string[] = [];

interface Descriptor {
  mediaType: string;
  digest: string;
  platform?: { architecture: string; os: string };
  annotations?: Record<string, string>;
}

interface Unpacked {
  rootfs: string;
  config: { architecture?: string; os?: string; config?: { User?: string; Entrypoint?: string[] } };
  /** Every ELF file of the image (path in the image) with its e_machine, read before the emulator came. */
  elf: Map<string, number>;
}
const images = {} as Record<Arch, Unpacked>;

const page = readFileSync(join(repo, 'docs', 'deploy.md'), 'utf8');
/** The lines docs/deploy.md shows under "The image", run as written (bash, from the repository). */
const [imageLine, inspectLine] = [
  ...(page.split('\n## The image\n')[1]?.split('\n### ')[0] ?? '').matchAll(/```sh\n([^\n]*)\n```/g),
].map((m) => m[1] as string);
/** The page's "Without a registry": the line run on each Node, and the `ccm manifests` line. */
const [importLine, manifestsLine] = [
  ...(page.split('\n### Without a registry\n')[1]?.split('\n## ')[0] ?? '').matchAll(/```sh\n([^\n]*)\n```/g),
].map((m) => m[1] as string);

/** The e_machine of an ELF file, or undefined for any other file. */
function elfMachine(path: string): number | undefined {
  const head = Buffer.alloc(20);
  const fd = openSync(path, 'r');
  try {
    if (readSync(fd, head, 0, 20, 0) < 20) return undefined;
  } finally {
    closeSync(fd);
  }
  if (head.readUInt32BE(0) !== 0x7f454c46) return undefined;
  // EI_DATA: 1 little-endian, 2 big-endian.
  return head[5] === 2 ? head.readUInt16BE(18) : head.readUInt16LE(18);
}

function elfFiles(root: string, dir = ''): Map<string, number> {
  const found = new Map<string, number>();
  for (const name of readdirSync(join(root, dir))) {
    const path = `${dir}/${name}`;
    const stat = lstatSync(join(root, path));
    if (stat.isDirectory()) for (const [p, m] of elfFiles(root, path)) found.set(p, m);
    else if (stat.isFile()) {
      const machine = elfMachine(join(root, path));
      if (machine !== undefined) found.set(path, machine);
    }
  }
  return found;
}

beforeAll(() => {
  expect(imageLine).toMatch(/^npm run image\b/);
  execFileSync('bash', ['-c', imageLine as string], { cwd: repo, stdio: 'pipe' });
  work = mkdtempSync(join(tmpdir(), 'ccm-image-'));
  const oci = join(work, 'oci');
  mkdirSync(oci);
  execFileSync('tar', ['-xf', archive, '-C', oci]);
  const blob = (d: Descriptor) => join(oci, 'blobs', ...d.digest.split(':'));
  const json = <T>(path: string) => JSON.parse(readFileSync(path, 'utf8')) as T;
  // The archive's one name is the index; the index names one image per platform.
  const top = json<{ manifests: Descriptor[] }>(join(oci, 'index.json')).manifests;
  expect(top.map((d) => d.mediaType)).toEqual(['application/vnd.oci.image.index.v1+json']);
  indexName = top[0]?.annotations?.['org.opencontainers.image.ref.name'];
  const index = json<{ manifests: Descriptor[] }>(blob(top[0] as Descriptor));
  indexPlatforms = index.manifests.map((d) => `${d.platform?.os}/${d.platform?.architecture}`);
  for (const d of index.manifests) {
    const arch = d.platform?.architecture as Arch;
    const rootfs = join(work, `rootfs-${arch}`);
    mkdirSync(rootfs);
    const manifest = json<{ config: Descriptor; layers: Descriptor[] }>(blob(d));
    for (const layer of manifest.layers) {
      const gzip = layer.mediaType.endsWith('+gzip') ? ['-z'] : [];
      execFileSync('tar', ['-x', ...gzip, '-f', blob(layer), '-C', rootfs]);
    }
    images[arch] = { rootfs, config: json(blob(manifest.config)), elf: elfFiles(rootfs) };
    if (arch !== NATIVE) {
      const found = spawnSync('bash', ['-c', `command -v ${PLATFORMS[arch].qemu}`], { encoding: 'utf8' });
      if (found.status !== 0) {
        throw new Error(
          `no ${PLATFORMS[arch].qemu} to run the ${arch} image: bash test/setup.sh installs it`,
        );
      }
      const qemu = found.stdout.trim();
      copyFileSync(qemu, join(rootfs, EMULATOR));
      chmodSync(join(rootfs, EMULATOR), 0o755);
    }
  }
}, 600_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

/** `argv` inside the image of `arch`, with chroot as the image's user (under qemu if foreign). */
function inImage(arch: Arch, argv: string[]): { status: number | null; stdout: string; stderr: string } {
  const emulator = arch === NATIVE ? [] : [EMULATOR];
  const run = spawnSync(
    '/usr/sbin/chroot',
    ['--userspec=65532:65532', images[arch].rootfs, ...emulator, ...argv],
    {
      encoding: 'utf8',
      env: { HOME: '/home/nonroot', PATH: '/usr/bin', NODE_ENV: 'production' },
      timeout: 120_000,
    },
  );
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** `ccm args…` in the image of `arch`; its stdout, after a zero exit. */
function ccmIn(arch: Arch, ...args: string[]): string {
  const run = inImage(arch, ['/usr/bin/node', '/app/bin/run.js', ...args]);
  expect(run.stderr).toBe('');
  expect(run.status).toBe(0);
  return run.stdout;
}

/** name@version of every package installed under `dir`/node_modules (nested ones too). */
function installed(dir: string): Set<string> {
  const found = new Set<string>();
  const modules = join(dir, 'node_modules');
  if (!existsSync(modules)) return found;
  for (const entry of readdirSync(modules)) {
    const names = entry.startsWith('@')
      ? readdirSync(join(modules, entry)).map((n) => `${entry}/${n}`)
      : [entry];
    for (const name of names.filter((n) => !n.startsWith('.'))) {
      const pkg = JSON.parse(readFileSync(join(modules, name, 'package.json'), 'utf8'));
      found.add(`${pkg.name}@${pkg.version}`);
      for (const nested of installed(join(modules, name))) found.add(nested);
    }
  }
  return found;
}

describe('the index', () => {
  it('is the one name of the archive and names a linux/amd64 and a linux/arm64 image', () => {
    expect(indexName).toBe(`localhost/ccm:${version}`);
    expect(indexPlatforms.sort()).toEqual(['linux/amd64', 'linux/arm64']);
  });

  it("is what the page's skopeo line shows, with both platforms", () => {
    expect(inspectLine).toMatch(/^skopeo inspect --raw oci-archive:dist\/image\/ccm-0\.1\.0\.oci\.tar$/);
    const shown = JSON.parse(
      execFileSync('bash', ['-c', inspectLine as string], {
        cwd: repo,
        encoding: 'utf8',
      }),
    ) as { mediaType: string; manifests: Descriptor[] };
    expect(shown.mediaType).toBe('application/vnd.oci.image.index.v1+json');
    expect(shown.manifests.map((d) => `${d.platform?.os}/${d.platform?.architecture}`).sort()).toEqual([
      'linux/amd64',
      'linux/arm64',
    ]);
  });
});

describe.each(ARCHES)('the linux/%s image', (arch) => {
  it('says its platform, runs as uid 65532 with ccm as its entrypoint', () => {
    const { config } = images[arch];
    expect([config.os, config.architecture]).toEqual(['linux', arch]);
    expect(config.config?.User).toBe('65532:65532');
    expect(config.config?.Entrypoint).toEqual(['/usr/bin/node', '/app/bin/run.js']);
  });

  it(`holds ELF files of its own machine only: Node ${nodeVersion}, its loader and glibc, nothing of the build machine`, () => {
    const { elf } = images[arch];
    const foreign = [...elf].filter(([, machine]) => machine !== PLATFORMS[arch].machine);
    expect(foreign).toEqual([]);
    expect([...elf.keys()]).toContain('/usr/bin/node');
    expect([...elf.keys()].some((p) => /\/libc\.so\.6$/.test(p))).toBe(true);
    // Node is the registry's binary whose digest .ci/node.sha256 records.
    const want = readFileSync(join(repo, '.ci', 'node.sha256'), 'utf8')
      .split('\n')
      .find((l) => l.endsWith(`  ${PLATFORMS[arch].npm}`))
      ?.split(' ')[0];
    const got = execFileSync('sha256sum', [join(images[arch].rootfs, 'usr/bin/node')], { encoding: 'utf8' });
    expect(got.split(' ')[0]).toBe(want);
  });

  it('runs its node, `ccm --version`, `ccm version` (the commit it was built from), `ccm nodes init --help` and `ccm run --help` as that user', () => {
    const node = inImage(arch, [
      '/usr/bin/node',
      '-p',
      'process.version + " " + process.platform + "-" + process.arch',
    ]);
    expect(node.stdout.trim()).toBe(`v${nodeVersion} ${PLATFORMS[arch].npm}`);
    expect(ccmIn(arch, '--version')).toMatch(
      new RegExp(
        `^ccm/${version.replace(/\./g, '\\.')} ${PLATFORMS[arch].npm} node-v${nodeVersion.replace(/\./g, '\\.')}\\n`,
      ),
    );
    // The commit `npm run image` built from: this checkout's HEAD (build/commit.mjs).
    const head = execFileSync('git', ['-C', repo, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
    expect(JSON.parse(ccmIn(arch, 'version', '-o', 'json'))).toMatchObject({
      version,
      commit: expect.stringMatching(new RegExp(`^${head}(-dirty)?$`)),
      platform: PLATFORMS[arch].npm.replace('-', '/'),
    });
    expect(ccmIn(arch, 'nodes', 'init', '--help')).toMatch(/Initialise and reconcile every Node/);
    expect(ccmIn(arch, 'run', '--help')).toMatch(/USAGE\s+\$ ccm run/);
  });

  it('holds no dev dependencies, test files, sources or npm cache', () => {
    const { rootfs } = images[arch];
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

  it('gives its HOME, /home/nonroot, to its user 65532', () => {
    const home = statSync(join(images[arch].rootfs, 'home', 'nonroot'));
    expect(home.isDirectory()).toBe(true);
    expect([home.uid, home.gid]).toEqual([65532, 65532]);
  });

  it('holds the SBOM beside the archive at /app/sbom.cdx.json, listing every production dependency as installed', () => {
    const { rootfs } = images[arch];
    const sbom = readFileSync(join(rootfs, 'app', 'sbom.cdx.json'), 'utf8');
    expect(sbom).toBe(readFileSync(sbomBeside(arch), 'utf8'));
    const bom = JSON.parse(sbom) as {
      bomFormat: string;
      metadata: { component: { name: string; version: string } };
      components: { name: string; version: string; purl: string }[];
    };
    bom.components = bom.components.filter((c) => c.purl.startsWith('pkg:npm/'));
    expect(bom.bomFormat).toBe('CycloneDX');
    expect(bom.metadata.component).toMatchObject({ name: 'ccm', version });
    const listed = new Set(bom.components.map((c) => `${c.name}@${c.version}`));
    // Every production dependency of the lock (npm ci --omit=dev installs these) …
    const lock = JSON.parse(readFileSync(join(repo, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { name?: string; version: string; dev?: boolean; link?: boolean }>;
    };
    const production = Object.entries(lock.packages)
      .filter(([path, p]) => path.startsWith('node_modules/') && !p.dev && !p.link)
      .map(([path, p]) => `${p.name ?? path.split('node_modules/').pop()}@${p.version}`);
    expect(production.length).toBeGreaterThan(100);
    expect(production.filter((p) => !listed.has(p))).toEqual([]);
    expect(production).toContain(`@oclif/core@${lock.packages['node_modules/@oclif/core']?.version}`);
    // … and exactly what is installed in the image.
    expect([...listed].sort()).toEqual([...installed(join(rootfs, 'app'))].sort());
  });
});

describe.each(ARCHES)('the linux/%s image, for scanners', (arch) => {
  /** The Debian packages the image holds files of; ca-certificates made its CA bundle. */
  const DEBIAN = ['libc6', 'libstdc++6', 'libgcc-s1', 'ca-certificates'];
  type Component = {
    name: string;
    version: string;
    purl: string;
    hashes?: { alg: string; content: string }[];
  };
  const components = () =>
    (
      JSON.parse(readFileSync(join(images[arch].rootfs, 'app', 'sbom.cdx.json'), 'utf8')) as {
        components: Component[];
      }
    ).components;
  /** A deb822 paragraph (a dpkg status record): its fields, continuation lines joined. */
  function deb822(text: string): Record<string, string> {
    const fields: Record<string, string> = {};
    let last = '';
    for (const line of text.split('\n')) {
      if (line === '') continue;
      if (/^[ \t]/.test(line)) {
        expect(last, `continuation line before any field: ${line}`).not.toBe('');
        fields[last] += `\n${line}`;
        continue;
      }
      const m = /^([A-Za-z0-9][A-Za-z0-9-]*):[ \t]*(.*)$/.exec(line);
      expect(m, `not a field: ${line}`).not.toBeNull();
      last = (m as RegExpExecArray)[1] as string;
      fields[last] = (m as RegExpExecArray)[2] as string;
    }
    return fields;
  }

  it(`lists in its SBOM Node ${nodeVersion} (its sha256) and the Debian packages of ${arch}, as /var/lib/dpkg/status.d records`, () => {
    const all = components();
    const node = all.filter((c) => c.name === 'node');
    expect(node).toHaveLength(1);
    expect(node[0]?.version).toBe(nodeVersion);
    expect(node[0]?.purl).toMatch(new RegExp(`^pkg:generic/node@${nodeVersion.replace(/\./g, '\\.')}\\?`));
    const nodeSha = execFileSync('sha256sum', [join(images[arch].rootfs, 'usr/bin/node')], {
      encoding: 'utf8',
    });
    expect(node[0]?.hashes).toEqual([{ alg: 'SHA-256', content: nodeSha.split(' ')[0] }]);

    const status = join(images[arch].rootfs, 'var', 'lib', 'dpkg', 'status.d');
    expect(existsSync(join(images[arch].rootfs, 'var', 'lib', 'dpkg', 'status'))).toBe(false);
    expect(
      readdirSync(status)
        .filter((f) => !f.endsWith('.md5sums'))
        .sort(),
    ).toEqual([...DEBIAN].sort());
    for (const name of DEBIAN) {
      const record = deb822(readFileSync(join(status, name), 'utf8'));
      const want = name === 'ca-certificates' ? 'all' : arch;
      expect(record, name).toMatchObject({ Package: name, Architecture: want });
      expect(record.Version, name).toMatch(/^[0-9][A-Za-z0-9.+~:-]*$/);
      expect(record.Status, name).toBeUndefined();
      const listed = all.filter((c) => c.name === name);
      expect(listed, name).toHaveLength(1);
      expect(listed[0]?.version, name).toBe(record.Version);
      expect(listed[0]?.purl, name).toBe(
        `pkg:deb/debian/${name}@${encodeURIComponent(record.Version as string)}?arch=${want}&distro=debian-${
          /^VERSION_ID="?([^"\n]*)/m.exec(
            readFileSync(join(images[arch].rootfs, 'etc', 'os-release'), 'utf8'),
          )?.[1]
        }`,
      );
      expect(listed[0]?.hashes?.[0]?.content, name).toMatch(/^[0-9a-f]{64}$/);
    }
    // The release they came from, for a scanner to match them against (syft: os-release; trivy: debian_version).
    const release = /^VERSION_ID="?([^"\n]*)/m.exec(
      readFileSync(join(images[arch].rootfs, 'etc', 'os-release'), 'utf8'),
    )?.[1] as string;
    expect(readFileSync(join(images[arch].rootfs, 'etc', 'os-release'), 'utf8')).toMatch(/^ID=debian$/m);
    expect(readFileSync(join(images[arch].rootfs, 'etc', 'debian_version'), 'utf8')).toMatch(
      new RegExp(`^${release}\\.\\d+\\n$`),
    );
    // Every component but the npm packages is one of these.
    expect(
      all
        .filter((c) => !c.purl.startsWith('pkg:npm/'))
        .map((c) => c.name)
        .sort(),
    ).toEqual(['node', ...DEBIAN].sort());
  });

  it("records the Debian libraries' digests (status.d/<name>.md5sums), and the copies in the image are those files", () => {
    const { rootfs } = images[arch];
    const status = join(rootfs, 'var', 'lib', 'dpkg', 'status.d');
    let checked = 0;
    for (const name of ['libc6', 'libstdc++6', 'libgcc-s1']) {
      const lines = readFileSync(join(status, `${name}.md5sums`), 'utf8')
        .split('\n')
        .filter(Boolean);
      expect(lines.length, name).toBeGreaterThan(0);
      for (const line of lines) {
        const m = /^([0-9a-f]{32}) {2}(\S.*)$/.exec(line);
        expect(m, line).not.toBeNull();
        const path = join(rootfs, (m as RegExpExecArray)[2] as string);
        if (!existsSync(path) || !lstatSync(path).isFile()) continue;
        expect(execFileSync('md5sum', [path], { encoding: 'utf8' }).split(' ')[0], path).toBe(
          (m as RegExpExecArray)[1],
        );
        checked++;
      }
    }
    // libc.so.6 and the loader, libstdc++.so.6, libgcc_s.so.1, libm …: each file ccm's node needs.
    expect(checked).toBeGreaterThanOrEqual(4);
  });
});

describe('`ccm nodes init --dry-run` in each image against a real kube-apiserver', () => {
  let cp: ControlPlane;

  beforeAll(async () => {
    cp = await startControlPlane();
    await createNodes(fixtureApi(cp.kubeconfigPath), [{ name: 'node-1' }]);
  }, 180_000);

  afterAll(async () => {
    await cp?.stop();
  });

  it.each(ARCHES)(
    'linux/%s: plans to initialise the Node, writes nothing',
    async (arch) => {
      const { rootfs } = images[arch];
      const dir = join(rootfs, 'tmp', 'ccm-test');
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'kubeconfig'), readFileSync(cp.kubeconfigPath), { mode: 0o644 });
      writeFileSync(
        join(dir, 'inventory.yaml'),
        stringify({
          defaults: { type: 'vbox.vm.1g.2cpu', region: 'virtualbox', zone: 'virtualbox' },
          instances: [{ id: 'node-1', addresses: [{ type: 'InternalIP', address: '192.168.56.11' }] }],
        }),
        { mode: 0o644 },
      );
      const out = ccmIn(
        arch,
        ...['nodes', 'init', '--provider', 'cloudlycke', '--kubeconfig', '/tmp/ccm-test/kubeconfig'],
        ...['--cloud-config', '/tmp/ccm-test/inventory.yaml', '--dry-run', '--json'],
      );
      const result = JSON.parse(out) as {
        summary: { initialized: number; failed: number };
        nodes: { name: string; providerID?: string }[];
      };
      expect(result.summary).toMatchObject({ initialized: 1, failed: 0 });
      expect(result.nodes.find((n) => n.name === 'node-1')).toMatchObject({
        providerID: 'cloudlycke://node-1',
      });
      expect(await cp.writes(CCM_USER)).toEqual([]);
    },
    180_000,
  );
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
