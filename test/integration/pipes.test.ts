/**
 * ccm in shell pipelines: it leaves its stdin alone (another program may share it) and ends quietly
 * when the reader of its output stops reading.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/tmp.js';

const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));
const node = process.execPath;
const dir = tempDir('ccm-pipes-');

const O_NONBLOCK = 0o4000;

/** The flags of fd 0's file description as ccm leaves it at exit, before Node restores them. */
async function stdinFlagsAtExit(args: string[]): Promise<number> {
  const out = join(dir, `flags-${args.join('-')}`);
  const hook = join(dir, 'stdin-flags.mjs');
  writeFileSync(
    hook,
    `import { readFileSync, writeFileSync } from 'node:fs';
process.on('exit', () => {
  const flags = /^flags:\\s*(\\d+)/m.exec(readFileSync('/proc/self/fdinfo/0', 'utf8'))[1];
  writeFileSync(${JSON.stringify(out)}, flags);
});`,
  );
  await execa(node, ['--import', hook, bin, ...args], { input: 'kept for the next reader\n', reject: false });
  return Number.parseInt(readFileSync(out, 'utf8'), 8);
}

describe('ccm in a pipeline', () => {
  it.each([
    ['run', '--help'],
    ['nodes', 'list', '--help'],
    ['help', 'run'],
    ['doctor', '--help'],
  ])('ccm %s %s leaves a shared stdin blocking', async (...args) => {
    expect((await stdinFlagsAtExit(args)) & O_NONBLOCK).toBe(0);
  });

  it('`ccm help run | diff - <(ccm run --help)` is clean, every time', async () => {
    const script = `"${node}" "${bin}" help run | diff - <("${node}" "${bin}" run --help)`;
    for (let round = 0; round < 4; round++) {
      const r = await execa('bash', ['-c', script], { reject: false });
      expect({ exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr }).toEqual({
        exitCode: 0,
        stdout: '',
        stderr: '',
      });
    }
  });

  it('a reader that stops reading ends ccm quietly, with the status of a SIGPIPE', async () => {
    const r = await execa(
      'bash',
      ['-c', `"${node}" "${bin}" help run | head -c 10 >/dev/null; echo \${PIPESTATUS[0]}`],
      {
        reject: false,
      },
    );
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('141');
  });
});
