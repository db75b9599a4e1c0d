// Bundles the CLI for start-up (README, Start-up): oclif and what commands load at their start in
// a few files, instead of ~170 modules resolved and read one by one. ccm's modules that a command
// imports when it runs become chunks loaded at that point, as in dist/. Run by `npm run build` after
// tsc has checked the types; bin/run.js starts dist/bundle/entry.js.
import { readFileSync } from 'node:fs';
import { build } from 'esbuild';

const pjson = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
// In the bundle: oclif, what the commands print with (yaml, diff, chalk), what `ccm run` starts with
// (pino, prom-client), small parsers. Left in node_modules: what is loaded only when used (undici,
// client-node, execa, @inquirer, listr2, sshpk, selfsigned).
const bundled = new Set([
  '@oclif/core',
  'chalk',
  'diff',
  'ini',
  'ipaddr.js',
  'js-yaml',
  'pino',
  'prom-client',
  'yaml',
]);
const external = Object.keys({ ...pjson.dependencies, ...pjson.devDependencies }).filter(
  (p) => !bundled.has(p),
);

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
