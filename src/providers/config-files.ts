import { readFileSync } from 'node:fs';

/**
 * Files a provider reads while it is built (clouds.yaml, a CA or client certificate, a key file):
 * `ccm run` hashes them on every reload, as it does `--cloud-config`, so that rotating one is noticed.
 */
let reading: Set<string> | undefined;

/** readFileSync(path, 'utf8'), noted for the build in progress. */
export function readConfigFile(path: string): string {
  const text = readFileSync(path, 'utf8');
  reading?.add(path);
  return text;
}

/** Builds something (synchronously) and says which files it read with readConfigFile. */
export function filesReadBy<T>(build: () => T): { value: T; files: string[] } {
  const outer = reading;
  const files = new Set<string>();
  reading = files;
  try {
    return { value: build(), files: [...files].sort() };
  } finally {
    reading = outer;
  }
}
