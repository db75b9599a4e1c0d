/**
 * Temp folders that remove themselves: every test removes what it made. `tempDir` called inside a
 * test is removed when that test ends; called elsewhere (beforeAll, a describe body), when the test
 * file ends (test/helpers/cleanup.ts, a setup file, removes those).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';

const leftovers = new Set<string>();

export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  try {
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  } catch {
    leftovers.add(dir);
  }
  return dir;
}

/** Removes the folders made outside a test; called once per test file, after its last test. */
export function removeLeftovers(): void {
  for (const dir of leftovers) rmSync(dir, { recursive: true, force: true });
  leftovers.clear();
}
