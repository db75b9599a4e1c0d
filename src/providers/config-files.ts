import { closeSync, constants, openSync, readSync } from 'node:fs';
import { open } from 'node:fs/promises';

/**
 * Files a provider reads while it is built (cloud.conf, clouds.yaml, a CA or client certificate, a
 * key file), with what each held (null: it could not be read). `ccm run` compares them with the
 * files on every reload, so that rotating one, or creating one that was missing, is noticed.
 */
export type FilesRead = ReadonlyMap<string, string | null>;

/** Larger than any cloud.conf, clouds.yaml, CA bundle or key: /dev/zero named as one is refused. */
export const MAX_CONFIG_FILE_BYTES = 4 * 1024 * 1024;

const tooLarge = (path: string) =>
  Object.assign(new Error(`${path} is larger than ${MAX_CONFIG_FILE_BYTES / 1048576} MiB`), {
    code: 'EFBIG',
  });

/** A file's bytes as they are read, refused past the cap. */
function collector(path: string) {
  const chunks: Buffer[] = [];
  let total = 0;
  return {
    buf: Buffer.allocUnsafe(64 * 1024),
    /** Takes `n` bytes from `buf`; false at the end of the file. */
    add(n: number): boolean {
      if (n === 0) return false;
      total += n;
      if (total > MAX_CONFIG_FILE_BYTES) throw tooLarge(path);
      chunks.push(Buffer.from(this.buf.subarray(0, n)));
      return true;
    },
    text: () => Buffer.concat(chunks).toString('utf8'),
  };
}

function readCappedSync(path: string): string {
  const fd = openSync(path, constants.O_RDONLY);
  try {
    const c = collector(path);
    while (c.add(readSync(fd, c.buf, 0, c.buf.length, null)));
    return c.text();
  } finally {
    closeSync(fd);
  }
}

/**
 * The same, asynchronously and without blocking (a FIFO or socket in a file's place answers at
 * once instead of waiting for a writer): what a reload reads before it builds.
 */
export async function readConfigFileNow(path: string): Promise<string> {
  const file = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const c = collector(path);
    while (c.add((await file.read(c.buf, 0, c.buf.length, null)).bytesRead));
    return c.text();
  } finally {
    await file.close();
  }
}

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
    const text = readCappedSync(path);
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
