/**
 * What a CLI process traced by test/fixtures/trace-imports.mjs loaded: the module URLs, and the
 * sources inside the files of the bundle (dist/bundle, build/bundle.mjs), which esbuild marks with a
 * `// src/…` or `// node_modules/…` comment each.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export function loadedModules(traceFile: string): { urls: string[]; sources: string[] } {
  const urls = readFileSync(traceFile, 'utf8').split('\n').filter(Boolean);
  const sources = new Set<string>();
  for (const url of urls) {
    if (!url.startsWith('file:') || !url.includes('/dist/bundle/')) continue;
    for (const m of readFileSync(fileURLToPath(url), 'utf8').matchAll(/^\/\/ ((?:src|node_modules)\/\S+)$/gm))
      sources.add(m[1] as string);
  }
  return { urls, sources: [...sources] };
}
