/**
 * What a CLI process traced by test/fixtures/trace-imports.mjs loaded: the module URLs, the sources
 * inside the files of the bundle (dist/bundle, build/bundle.mjs), which esbuild marks with a
 * `// src/…` or `// node_modules/…` comment each, and Node's own modules (`child_process`).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export function loadedModules(traceFile: string): { urls: string[]; sources: string[]; builtins: string[] } {
  const lines = readFileSync(traceFile, 'utf8').split('\n').filter(Boolean);
  const urls = lines.filter((l) => !l.startsWith('builtin:'));
  const builtins = lines.filter((l) => l.startsWith('builtin:')).map((l) => l.slice('builtin:'.length));
  const sources = new Set<string>();
  for (const url of urls) {
    if (!url.startsWith('file:') || !url.includes('/dist/bundle/')) continue;
    for (const m of readFileSync(fileURLToPath(url), 'utf8').matchAll(/^\/\/ ((?:src|node_modules)\/\S+)$/gm))
      sources.add(m[1] as string);
  }
  return { urls, sources: [...sources], builtins };
}
