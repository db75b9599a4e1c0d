/**
 * oclif would load "user" and "link" plugins listed in $XDG_DATA_HOME/ccm/package.json at every start:
 * code anyone who can write that file gets to run, as root under sudo. ccm has no plugins.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { expect, it } from 'vitest';
import { tempDir } from '../helpers/tmp.js';

const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));

it('loads no plugin from $XDG_DATA_HOME/ccm/package.json, user or linked', async () => {
  const data = tempDir('ccm-plugins-data-');
  const marker = join(data, 'plugin-ran');
  const plugin = join(data, 'evil');
  mkdirSync(plugin);
  writeFileSync(
    join(plugin, 'package.json'),
    JSON.stringify({
      name: 'evil',
      version: '1.0.0',
      type: 'module',
      oclif: { hooks: { init: './hook.js' } },
    }),
  );
  writeFileSync(
    join(plugin, 'hook.js'),
    `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(marker)}, 'ran');\nexport default async function () {}\n`,
  );
  mkdirSync(join(data, 'ccm'));
  writeFileSync(
    join(data, 'ccm', 'package.json'),
    JSON.stringify({ oclif: { plugins: [{ type: 'link', name: 'evil', root: plugin }] }, dependencies: {} }),
  );
  const run = await execa(process.execPath, [bin, '--help'], { env: { XDG_DATA_HOME: data }, reject: false });
  expect(run.exitCode).toBe(0);
  expect(existsSync(marker)).toBe(false);
});
