import { readFileSync } from 'node:fs';

/**
 * Files a provider reads while it is built (cloud.conf, clouds.yaml, a CA or client certificate, a
 * key file), with what it read: `ccm run` compares them on every reload, so that rotating one is
 * noticed, and one that changed while the provider was being built is too.
 */
let reading: Map<string, string> | undefined;

/** readFileSync(path, 'utf8'), noted for the build in progress. */
export function readConfigFile(path: string): string {
  const text = readFileSync(path, 'utf8');
  reading?.set(path, text);
  return text;
}

/** Builds something (synchronously) and says which files it read with readConfigFile, and what. */
export function filesReadBy<T>(build: () => T): { value: T; files: ReadonlyMap<string, string> } {
  const outer = reading;
  const files = new Map<string, string>();
  reading = files;
  try {
    return { value: build(), files };
  } finally {
    reading = outer;
  }
}
