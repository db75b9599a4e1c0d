/**
 * Node's compile cache of `bin/run.js` lives in a folder of the user's own, never in the shared temp
 * folder: another local user could plant a V8 code cache there (or a symlink) for root's next
 * `sudo ccm cluster prepare`.
 */
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { expect, it } from 'vitest';
import { tempDir } from '../helpers/tmp.js';

const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));

/** `ccm --version` with this cache home and temp folder; what each then holds. */
async function start(cacheHome: string) {
  const tmp = tempDir('ccm-cc-tmp-');
  const run = await execa(process.execPath, [bin, '--version'], {
    env: { XDG_CACHE_HOME: cacheHome, TMPDIR: tmp, NODE_DISABLE_COMPILE_CACHE: undefined },
    reject: false,
  });
  expect(run.exitCode, run.stderr).toBe(0);
  return { inTmp: readdirSync(tmp), ccm: join(cacheHome, 'ccm') };
}

const cacheFiles = (dir: string) =>
  existsSync(dir) ? readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()) : [];

it('is written to $XDG_CACHE_HOME/ccm, made 0700, and nothing to the temp folder', async () => {
  const home = tempDir('ccm-cc-home-');
  const { inTmp, ccm } = await start(home);
  expect(inTmp).toEqual([]);
  expect(statSync(ccm).mode & 0o777).toBe(0o700);
  expect(cacheFiles(ccm).length).toBeGreaterThan(0);
});

it('is not used when the folder is open to others, is a symlink, or sits in a folder others can write', async () => {
  const open = tempDir('ccm-cc-open-');
  mkdirSync(join(open, 'ccm'), { mode: 0o777 });
  chmodSync(join(open, 'ccm'), 0o777);

  const linked = tempDir('ccm-cc-link-');
  const elsewhere = tempDir('ccm-cc-elsewhere-');
  chmodSync(elsewhere, 0o700);
  symlinkSync(elsewhere, join(linked, 'ccm'));

  const shared = tempDir('ccm-cc-shared-');
  chmodSync(shared, 0o777); // world-writable, not sticky: anyone may swap the ccm folder

  for (const [name, home, watched] of [
    ['open', open, join(open, 'ccm')],
    ['symlink', linked, elsewhere],
    ['shared parent', shared, join(shared, 'ccm')],
  ] as const) {
    const { inTmp } = await start(home);
    expect(inTmp, name).toEqual([]);
    expect(cacheFiles(watched), name).toEqual([]);
  }
});

it('is used in the folder that was checked: a symlink on its way swapped after the check leads nowhere else', async () => {
  // XDG_CACHE_HOME is a symlink in a folder anyone may write (not sticky): its target passes the
  // check, and someone swaps the link between the check and Node's use of the folder.
  const shared = tempDir('ccm-cc-shared-');
  chmodSync(shared, 0o777);
  const checked = tempDir('ccm-cc-checked-');
  const elsewhere = tempDir('ccm-cc-elsewhere-');
  mkdirSync(join(elsewhere, 'ccm'), { mode: 0o700 });
  const link = join(shared, 'cache');
  symlinkSync(checked, link);
  // Runs right after the check, as the swap's best moment: in enableCompileCache, before it reads its folder.
  const swap = join(tempDir('ccm-cc-swap-'), 'swap.mjs');
  writeFileSync(
    swap,
    `import module from 'node:module';
import { rmSync, symlinkSync } from 'node:fs';
const enable = module.enableCompileCache;
module.enableCompileCache = (dir) => {
  rmSync(${JSON.stringify(link)});
  symlinkSync(${JSON.stringify(elsewhere)}, ${JSON.stringify(link)});
  return enable(dir);
};
`,
  );
  const run = await execa(process.execPath, ['--import', swap, bin, '--version'], {
    env: { XDG_CACHE_HOME: link, NODE_DISABLE_COMPILE_CACHE: undefined },
    reject: false,
  });
  expect(run.exitCode, run.stderr).toBe(0);
  expect(cacheFiles(join(elsewhere, 'ccm'))).toEqual([]);
  expect(cacheFiles(join(checked, 'ccm')).length).toBeGreaterThan(0);
});

/** A user's folder (owned by uid 65534), as root sees it under `sudo -E` or `su` without `-`. */
function othersFolder(prefix: string): string {
  const dir = tempDir(prefix);
  chmodSync(dir, 0o755);
  chownSync(dir, 65534, 65534);
  return dir;
}

it.runIf(process.geteuid?.() === 0)(
  "under root with the caller's XDG_CACHE_HOME or HOME kept, creates nothing in the caller's folders",
  async () => {
    // XDG_CACHE_HOME kept (sudo -E, doas keepenv): no root-owned ccm folder in it.
    const xdg = othersFolder('ccm-cc-user-xdg-');
    const tmp = tempDir('ccm-cc-tmp-');
    const viaXdg = await execa(process.execPath, [bin, '--version'], {
      env: { XDG_CACHE_HOME: xdg, TMPDIR: tmp, NODE_DISABLE_COMPILE_CACHE: undefined },
      reject: false,
    });
    expect(viaXdg.exitCode, viaXdg.stderr).toBe(0);
    expect(readdirSync(xdg)).toEqual([]);
    expect(readdirSync(tmp)).toEqual([]);

    // HOME kept (su without -): neither ~/.cache nor ~/.cache/ccm is made, root-owned, in it.
    const home = othersFolder('ccm-cc-user-home-');
    const viaHome = await execa(process.execPath, [bin, '--version'], {
      env: { HOME: home, XDG_CACHE_HOME: undefined, TMPDIR: tmp, NODE_DISABLE_COMPILE_CACHE: undefined },
      reject: false,
    });
    expect(viaHome.exitCode, viaHome.stderr).toBe(0);
    expect(readdirSync(home)).toEqual([]);

    // The caller's ~/.cache exists: no root-owned ccm folder in it either.
    mkdirSync(join(home, '.cache'), { mode: 0o755 });
    chownSync(join(home, '.cache'), 65534, 65534);
    const withCache = await execa(process.execPath, [bin, '--version'], {
      env: { HOME: home, XDG_CACHE_HOME: undefined, TMPDIR: tmp, NODE_DISABLE_COMPILE_CACHE: undefined },
      reject: false,
    });
    expect(withCache.exitCode, withCache.stderr).toBe(0);
    expect(readdirSync(join(home, '.cache'))).toEqual([]);
  },
);
