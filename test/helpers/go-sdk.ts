/**
 * The clouds' official Go SDKs, as evidence that no one here wrote:
 * - `buildSdkProgram(cloud)` builds test/sdk/<cloud> (our own program, on the SDK pinned by its go.mod)
 *   with test/sdk/shared/*.go added to its package, once per content hash into ~/.cache/ccm-sdk, and
 *   `runSdkProgram` runs it against a simulator;
 * - `goModuleDir(module, version)` is where the Go module cache keeps a pinned module, so a test can
 *   read the SDK's own test fixtures at test time (nothing of them is copied into this repository).
 * Go is already required by the tests (test/controlplane); modules come from the Go module proxy.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';

const SDK_ROOT = fileURLToPath(new URL('../sdk/', import.meta.url));
/** Go files every program's package gets at build time (each program is a module of its own). */
const SHARED = join(SDK_ROOT, 'shared');
const CACHE = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'ccm-sdk');

/**
 * Builds test/sdk/<cloud>, with the shared files added by `go build -overlay` (nothing is written
 * into the program's folder), unless a binary of the same sources is cached; resolves to its path.
 */
export async function buildSdkProgram(cloud: string): Promise<string> {
  return buildGoProgram(join(SDK_ROOT, cloud), cloud, SHARED);
}

/**
 * Builds the Go program (a module with a committed go.sum) in `dir`, plus the .go files of `shared`
 * added to its package as shared_<name>, unless a binary of the same sources is cached in
 * ~/.cache/ccm-sdk as <name>-<hash>; resolves to its path. Built under a per-process temporary
 * name and renamed, so that a build cut short is never cached and two at once do not clash.
 */
export async function buildGoProgram(dir: string, name: string, shared?: string): Promise<string> {
  const hash = createHash('sha256');
  const sources = (folder: string) =>
    readdirSync(folder)
      .sort()
      .filter((file) => file === 'go.mod' || file === 'go.sum' || file.endsWith('.go'));
  for (const file of sources(dir)) hash.update(file).update(readFileSync(join(dir, file)));
  const extra = shared ? sources(shared) : [];
  for (const file of extra) hash.update(`shared/${file}`).update(readFileSync(join(shared as string, file)));
  const bin = join(CACHE, `${name}-${hash.digest('hex').slice(0, 16)}`);
  if (existsSync(bin)) return bin;
  mkdirSync(CACHE, { recursive: true });
  const partial = `${bin}.${process.pid}.partial`;
  const overlay = `${partial}.overlay.json`;
  const replace = Object.fromEntries(
    extra.map((file) => [join(dir, `shared_${file}`), join(shared as string, file)]),
  );
  writeFileSync(overlay, JSON.stringify({ Replace: replace }));
  try {
    // -mod=readonly: go.sum is committed, so a build never rewrites it (or fetches what it does not pin).
    await execa('go', ['build', '-mod=readonly', `-overlay=${overlay}`, '-o', partial, '.'], {
      cwd: dir,
      timeout: 15 * 60_000,
    });
  } finally {
    rmSync(overlay, { force: true });
  }
  renameSync(partial, bin);
  return bin;
}

export interface SdkRun {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs a built SDK program; it never throws for a non-zero exit, so the test can show its output. */
export async function runSdkProgram(
  bin: string,
  args: readonly string[],
  env: Record<string, string>,
  timeoutMs = 120_000,
): Promise<SdkRun> {
  const r = await execa(bin, args, { env, extendEnv: false, reject: false, timeout: timeoutMs });
  return { exitCode: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr) };
}

/** The folder of `module@version` in the Go module cache, downloading it through the proxy if needed. */
export async function goModuleDir(module: string, version: string): Promise<string> {
  const { stdout } = await execa('go', ['mod', 'download', '-json', `${module}@${version}`], {
    cwd: SDK_ROOT,
    timeout: 10 * 60_000,
  });
  const info = JSON.parse(stdout) as { Dir?: string; Error?: string };
  if (!info.Dir) throw new Error(`go mod download ${module}@${version}: ${info.Error ?? 'no Dir'}`);
  return info.Dir;
}
