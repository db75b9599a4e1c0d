// Bundles the CLI for start-up (README, Start-up): oclif and what commands load at their start in
// a few files, instead of ~170 modules resolved and read one by one. ccm's modules that a command
// imports when it runs become chunks loaded at that point, as in dist/. Run by `npm run build` after
// tsc has checked the types; bin/run.js starts dist/bundle/entry.js.
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

const pjson = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
// In the bundle: oclif, what the commands print with (diff, chalk), what `ccm run` starts with (pino,
// prom-client), small parsers. Left in node_modules: what is loaded only when used (undici,
// client-node, execa, @inquirer, listr2, sshpk, selfsigned), and yaml: a CommonJS package that is
// also imported with import(), which in a bundle would yield only its default export.
const bundled = new Set([
  '@oclif/core',
  'chalk',
  'diff',
  'ini',
  'ipaddr.js',
  'js-yaml',
  'pino',
  'prom-client',
]);
const external = Object.keys({ ...pjson.dependencies, ...pjson.devDependencies }).filter(
  (p) => !bundled.has(p),
);

// An import() of a bundled CommonJS package yields only its default export: refuse one.
for (const file of readdirSync('src', { recursive: true })) {
  if (!String(file).endsWith('.ts')) continue;
  for (const [, pkg] of readFileSync(join('src', String(file)), 'utf8').matchAll(
    /import\('([^.'][^']*)'\)/g,
  )) {
    if (bundled.has(pkg))
      throw new Error(
        `src/${file}: import('${pkg}') of a bundled package; import it statically or leave it out of the bundle`,
      );
  }
}

// Chunk names carry a hash: the chunks of an earlier build would stay beside the new ones.
rmSync('dist/bundle', { recursive: true, force: true });
await build({
  entryPoints: ['src/cli/entry.ts'],
  outdir: 'dist/bundle',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  external,
  sourcemap: true,
  // oclif is CommonJS: its require() of Node's own modules needs a require in the ES module.
  banner: {
    js: "import { createRequire as __ccmCreateRequire } from 'node:module'; const require = __ccmCreateRequire(import.meta.url);",
  },
  logLevel: 'warning',
});
