/**
 * The JSON payloads an official Go SDK's tests serve, read from its source in the Go module cache at
 * test time (never copied here): Go raw string literals (`...`), by the variable they are assigned to
 * or in the order they appear inside one test function.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { goModuleDir } from './go-sdk.js';

export interface GoSource {
  /** The raw string assigned to `name` (`var name = \`…\`` or `name = []byte(\`…\`)`). */
  variable(name: string): string;
  /** The raw strings inside `func <test>(`, in order. */
  inFunction(test: string): string[];
}

export async function goSource(module: string, version: string, file: string): Promise<GoSource> {
  const text = readFileSync(join(await goModuleDir(module, version), file), 'utf8');
  return {
    variable(name) {
      const found = new RegExp(String.raw`\b${name}\s*=\s*(?:\[\]byte\()?\x60([^\x60]*)\x60`).exec(text);
      if (!found?.[1]) throw new Error(`${module}@${version} ${file}: no raw string assigned to ${name}`);
      return found[1];
    },
    inFunction(test) {
      const start = text.indexOf(`func ${test}(`);
      if (start < 0) throw new Error(`${module}@${version} ${file}: no func ${test}`);
      const end = text.indexOf('\nfunc ', start + 1);
      const body = text.slice(start, end < 0 ? undefined : end);
      return [...body.matchAll(/\x60([^\x60]*)\x60/g)].map((m) => m[1] ?? '');
    },
  };
}
