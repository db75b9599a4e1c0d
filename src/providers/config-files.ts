import { readFileSync } from 'node:fs';

/**
 * Files a provider reads while it is built (cloud.conf, clouds.yaml, a CA or client certificate, a
 * key file), with what each held (null: it could not be read). `ccm run` compares them with the
 * files on every reload, so that rotating one, or creating one that was missing, is noticed.
 */
export type FilesRead = ReadonlyMap<string, string | null>;

/** A build asked for a file that `given` does not hold: read it, add it, build again. */
export class FileNotRead extends Error {
  constructor(readonly path: string) {
    super(`${path} has not been read yet`);
  }
}

let reading: { files: Map<string, string | null>; given?: ReadonlyMap<string, string | Error> } | undefined;

/** readFileSync(path, 'utf8'), noted for the build in progress (or taken from what it was given). */
export function readConfigFile(path: string): string {
  const build = reading;
  if (build?.given) {
    const known = build.given.get(path);
    if (known === undefined) throw new FileNotRead(path);
    build.files.set(path, typeof known === 'string' ? known : null);
    if (typeof known !== 'string') throw known;
    return known;
  }
  try {
    const text = readFileSync(path, 'utf8');
    build?.files.set(path, text);
    return text;
  } catch (err) {
    build?.files.set(path, null);
    throw err;
  }
}

/**
 * Builds something (synchronously) and says which files it read with readConfigFile, and what they
 * held. With `given`, files come only from there: a reload reads them beforehand, asynchronously and
 * within its deadline, so that a hung mount cannot block the process.
 */
export function filesReadBy<T>(
  build: () => T,
  given?: ReadonlyMap<string, string | Error>,
): { value: T; files: FilesRead } {
  const outer = reading;
  const files = new Map<string, string | null>();
  reading = { files, given };
  try {
    return { value: build(), files };
  } finally {
    reading = outer;
  }
}
