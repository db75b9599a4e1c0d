/**
 * .ci/node installs the pinned Node 24 from the npm registry only when the binary's sha256 is the one
 * recorded in .ci/node.sha256 (the image and CI both take their Node from it). Runs where the machine's
 * node is older than 22, as on these machines: that is when .ci/node installs anything.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { expect, it } from 'vitest';
import { tempDir } from '../helpers/tmp.js';

const ci = fileURLToPath(new URL('../../.ci/', import.meta.url));

/** PATH without the Node 24 that the tests run under, so `node` is the machine's own. */
function machinePath(): string {
  return (process.env.PATH ?? '')
    .split(delimiter)
    .filter((d) => !d.includes('ccm-tools'))
    .join(delimiter);
}

it('refuses a Node whose sha256 is not the recorded one, and links nothing', async () => {
  const machineNode = execFileSync('sh', ['-c', 'command -v node'], {
    env: { PATH: machinePath() },
    encoding: 'utf8',
  }).trim();
  const major = Number(
    execFileSync(machineNode, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }),
  );
  expect(major, `the machine's node (${machineNode}) must be older than 22 for this test`).toBeLessThan(22);

  const copy = tempDir('ccm-ci-node-');
  mkdirSync(join(copy, '.ci'));
  copyFileSync(join(ci, 'node'), join(copy, '.ci', 'node'));
  const recorded = readFileSync(join(ci, 'node.sha256'), 'utf8');
  // The right file, one digit changed: what a tampered registry package would look like to .ci/node.
  writeFileSync(
    join(copy, '.ci', 'node.sha256'),
    recorded.replace(/^[0-9a-f]/m, (c) => (c === '0' ? '1' : '0')),
  );
  const tools = tempDir('ccm-ci-tools-');
  const run = await execa('bash', [join(copy, '.ci', 'node'), '-p', '1'], {
    env: { PATH: machinePath(), CCM_TOOLS_DIR: tools },
    reject: false,
    timeout: 300_000,
  });
  expect(run.exitCode).toBe(1);
  expect(run.stderr).toMatch(
    /\.ci\/node: node-linux-\S+@24\.21\.0 from the npm registry has sha256 [0-9a-f]{64}, not [0-9a-f]{64} as \.ci\/node\.sha256 records; not used$/,
  );
  expect(existsSync(join(tools, 'node24', 'bin', 'node'))).toBe(false);
  expect(existsSync(join(tools, 'node24', 'node-24.21.0'))).toBe(false);
  expect(dirname(machineNode)).not.toContain('ccm-tools');
}, 300_000);
