// Bundles the CLI for start-up (docs/benchmarks.md, Start-up): oclif and what commands load at their start in
// a few files, instead of ~170 modules resolved and read one by one. ccm's modules that a command
// imports when it runs become chunks loaded at that point, as in dist/. Run by `npm run build` after
// tsc has checked the types; bin/run.js starts dist/bundle/entry.js.
import { existsSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, resolve } from 'node:path';
import { build } from 'esbuild';
import { buildCommit } from './commit.mjs';

const pjson = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
// In the bundle: oclif, what the commands print with (diff, chalk, yaml), what `ccm run` starts with
// (pino, prom-client), small parsers. Left in node_modules: what is loaded only when used
// (client-node, execa, @inquirer, listr2, sshpk, selfsigned).
const bundled = new Set([
  '@oclif/core',
  'chalk',
  'diff',
  'ini',
  'ipaddr.js',
  // What text.ts measures terminal cells with; @oclif/core keeps its own older copy, bundled with it.
  'string-width',
  'js-yaml',
  'pino',
  'prom-client',
  'yaml',
]);
const external = Object.keys({ ...pjson.dependencies, ...pjson.devDependencies }).filter(
  (p) => !bundled.has(p),
);
// oclif's packages for what ccm does not do (find commands by glob, read rc files, draw spinners)
// stay in node_modules, required if it ever does: a third of the entry's size, ~5 ms of every start.
// They must be the copies oclif itself would get.
const oclifRarelyUsed = ['tinyglobby', 'minimatch', 'cli-spinners', 'lilconfig'];
const requireFromRoot = createRequire(new URL('../package.json', import.meta.url));
const requireFromOclif = createRequire(requireFromRoot.resolve('@oclif/core/package.json'));
for (const p of oclifRarelyUsed) {
  if (requireFromRoot.resolve(p) !== requireFromOclif.resolve(p))
    throw new Error(`${p}: node_modules/${p} is not the copy @oclif/core uses; bundle it again`);
}
external.push(...oclifRarelyUsed);

// An import() of a bundled CommonJS package yields only its default export: refuse one.
for (const file of readdirSync('src', { recursive: true })) {
  if (!String(file).endsWith('.ts')) continue;
  for (const [, pkg] of readFileSync(join('src', String(file)), 'utf8').matchAll(
    /(?<!typeof )import\('([^.'][^']*)'\)/g,
  )) {
    if (bundled.has(pkg))
      throw new Error(
        `src/${file}: import('${pkg}') of a bundled package; import it statically or leave it out of the bundle`,
      );
  }
}

// oclif's modules require each other and their packages at the top, so starting it evaluated nearly
// all of it (child_process, minimatch, tinyglobby, spinners...) whatever a start used. In oclif's
// compiled CommonJS, a top-level `const x = require("y")` becomes a proxy that requires "y" when first
// used, and an index's `exports.X = __importStar(require("y"))` a getter (Meta's "inline requires").
const lazyRequireLine =
  /^(?:const|var|let) (\w+) = ((?:__importDefault|__importStar)\(require\("[^"]+"\)\)|require\("[^"]+"\));$/gm;
const lazyExportLine = /^exports\.(\w+) = (__importStar\(require\("[^"]+"\)\));$/gm;
const getter =
  'Object.defineProperty(exports, "$1", { enumerable: true, configurable: true, get: () => $2 });';

// Single edits of packages' start, each measured (docs/benchmarks.md, Start-up). An edit whose text is no longer
// in the package fails the build, so that an update is looked at rather than silently slower.
const edits = [
  {
    // The first localeCompare makes ICU's collator: ~8 ms of every start, to sort the command IDs.
    // For IDs of lowercase letters with '-' and either ':' or digits, code-unit order is the
    // collator's order; other IDs still go to localeCompare.
    file: '@oclif/core/lib/config/plugin.js',
    from: '.sort((a, b) => a.id.localeCompare(b.id));',
    to: '.sort((a, b) => (/^(?:[a-z:-]*|[a-z0-9-]*)$/.test(a.id + b.id) ? (a.id < b.id ? -1 : a.id > b.id ? 1 : 0) : a.id.localeCompare(b.id)));',
  },
  {
    // oclif asks wsl-utils whether this is WSL through an import() of another chunk, and wsl-utils
    // starts by loading child_process, net and stream (~8 ms). is-wsl gives the same answer (it is
    // what wsl-utils exports as isWsl) from inside the bundle.
    file: '@oclif/core/lib/util/os.js',
    from: "(await import('wsl-utils')).isWsl",
    to: "require('is-wsl').default",
  },
  {
    // prom-client's index requires all of it, the Pushgateway with https, tls and crypto among it
    // (27 ms of `ccm run`'s start): its exports become getters.
    file: 'prom-client/index.js',
    from: /^exports\.(\w+) =\s+(require\('[^']+'\)(?:\.\w+)?);$/gm,
    to: getter,
  },
  {
    // pino requires worker_threads and its transports (thread-stream) to start, ~4 ms of
    // `ccm run`'s; ccm gives pino its own destination and no transport. Each is required when used.
    file: 'pino/lib/tools.js',
    from: "const { isMainThread } = require('worker_threads')\n",
    to: '',
  },
  {
    file: 'pino/lib/tools.js',
    from: '!opts.sync && isMainThread',
    to: "!opts.sync && require('worker_threads').isMainThread",
  },
  {
    file: 'pino/lib/tools.js',
    from: "const transport = require('./transport')",
    to: "const transport = (...args) => require('./transport')(...args)",
  },
  {
    file: 'pino/pino.js',
    from: "module.exports.transport = require('./lib/transport')",
    to: "Object.defineProperty(module.exports, 'transport', { enumerable: true, get: () => require('./lib/transport') })",
  },
];
const editedFiles = new Set(edits.map((e) => e.file));
const packageFile = (path) => path.replaceAll('\\', '/').split('/node_modules/').at(-1);

const startupEdits = {
  name: 'startup-edits',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/].*\.js$/ }, ({ path }) => {
      const file = packageFile(path);
      const oclif = file.startsWith('@oclif/core/lib/');
      if (!oclif && !editedFiles.has(file)) return undefined;
      let source = readFileSync(path, 'utf8');
      for (const edit of edits.filter((e) => e.file === file)) {
        const found = typeof edit.from === 'string' ? source.includes(edit.from) : edit.from.test(source);
        if (!found)
          throw new Error(`${file} no longer holds ${edit.from}: look at build/bundle.mjs's edit again`);
        if (typeof edit.from !== 'string') edit.from.lastIndex = 0;
        source = source.replace(edit.from, edit.to);
      }
      if (oclif)
        source = source
          .replace(lazyRequireLine, 'const $1 = __ccmLazy(() => $2);')
          .replace(lazyExportLine, getter);
      return { contents: source, loader: 'js' };
    });
  },
};
// An ES import of node:process makes Node build its module facade, which reads every property of
// process, process.stdin among them: that opens fd 0 as a stream and sets its file description
// non-blocking, shared with whoever else reads it. In `ccm help run | diff - <(ccm run --help)`,
// ccm's stdin is diff's, and diff failed with EAGAIN (#30). Bundled packages (chalk, is-wsl) get
// the global process instead, for an ES import (its default) and a require() (yaml's) alike.
const processGlobal = {
  name: 'process-global',
  setup(b) {
    b.onResolve({ filter: /^(node:)?process$/ }, () => ({ path: 'process', namespace: 'process-global' }));
    b.onLoad({ filter: /.*/, namespace: 'process-global' }, () => ({
      contents: 'module.exports = globalThis.process;',
      loader: 'js',
    }));
  },
};
const lazyHelper = `function __ccmLazy(load) {
  let m;
  const get = () => (m ??= load());
  return new Proxy({}, {
    get: (_, k) => get()[k],
    set: (_, k, v) => ((get()[k] = v), true),
    has: (_, k) => k in get(),
    ownKeys: () => Reflect.ownKeys(get()),
    getOwnPropertyDescriptor: (_, k) => {
      const d = Reflect.getOwnPropertyDescriptor(get(), k);
      return d && { ...d, configurable: true };
    },
  });
}`;

const options = {
  entryPoints: ['src/cli/entry.ts'],
  outdir: 'dist/bundle',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  external,
  sourcemap: true,
  // The commit `ccm version` names (src/cli/build-info.ts), recorded now: the image and a package
  // carry the bundle, not the repository.
  define: { __CCM_COMMIT__: JSON.stringify(buildCommit(process.cwd())) },
  // oclif is CommonJS: its require() of Node's own modules needs a require in the ES module.
  banner: {
    js:
      "import { createRequire as __ccmCreateRequire } from 'node:module'; const require = __ccmCreateRequire(import.meta.url);\n" +
      lazyHelper,
  },
  logLevel: 'warning',
};

// esbuild makes one chunk for each set of entry points (the entry and every import() target) that
// share a module, so the small modules most commands use (errors, clock, well-known keys, provider
// IDs...) came as ~20 files of a few hundred bytes each, one more module for a start to load
// (~0.2 ms each: `ccm nodes init` loaded 30). A first build finds the modules of the small chunks;
// in the second, every import() target outside the entry's own imports imports them all, which
// gives them one set of entry points, so one chunk (nodes init: 9 modules).
const SMALL_CHUNK = 6 * 1024;
const first = await build({
  ...options,
  plugins: [startupEdits, processGlobal],
  write: false,
  metafile: true,
  sourcemap: false,
});
// What every start loads: the entry and its static imports. Those stay as they are.
const atStart = new Set();
const pending = ['src/cli/entry.ts'];
while (pending.length > 0) {
  const file = pending.pop();
  if (atStart.has(file)) continue;
  atStart.add(file);
  for (const i of first.metafile.inputs[file]?.imports ?? [])
    if (i.kind !== 'dynamic-import') pending.push(i.path);
}
const dynamicTargets = new Set();
for (const input of Object.values(first.metafile.inputs))
  for (const i of input.imports)
    if (i.kind === 'dynamic-import' && i.path.startsWith('src/') && !atStart.has(i.path))
      dynamicTargets.add(i.path);
const smallShared = new Set();
for (const [file, out] of Object.entries(first.metafile.outputs)) {
  if (out.entryPoint || !file.endsWith('.js') || out.bytes > SMALL_CHUNK) continue;
  for (const input of Object.keys(out.inputs))
    if (input.startsWith('src/') && !dynamicTargets.has(input)) smallShared.add(input);
}
// On the first line, so that the source map's lines stay right.
const importSmallShared = [...smallShared].map((f) => `import ${JSON.stringify(resolve(f))};`).join(' ');
const sharedSmallModules = {
  name: 'shared-small-modules',
  setup(b) {
    b.onLoad({ filter: /[\\/]src[\\/].*\.ts$/ }, ({ path }) => {
      if (!dynamicTargets.has(relative(process.cwd(), path).replaceAll('\\', '/'))) return undefined;
      return { contents: `${importSmallShared} ${readFileSync(path, 'utf8')}`, loader: 'ts' };
    });
  },
};

// Chunk names carry a hash: the chunks of an earlier build would stay beside the new ones. The new
// bundle is written beside the old one and swapped in, so a ccm started during a build (the image is
// built while other tests run the CLI) never finds the entry without its chunks.
rmSync('dist/bundle.next', { recursive: true, force: true });
await build({
  ...options,
  outdir: 'dist/bundle.next',
  plugins: [startupEdits, processGlobal, sharedSmallModules],
});
rmSync('dist/bundle.old', { recursive: true, force: true });
if (existsSync('dist/bundle')) renameSync('dist/bundle', 'dist/bundle.old');
renameSync('dist/bundle.next', 'dist/bundle');
rmSync('dist/bundle.old', { recursive: true, force: true });
