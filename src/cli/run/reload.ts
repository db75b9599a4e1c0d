import type { Logger } from 'pino';
import { readSecret, type SecretData, sameValues } from '../../kube/secrets.js';
import type { KubeTransport } from '../../kube/transport.js';
import { FileNotRead, type FilesRead, filesReadBy, readConfigFileNow } from '../../providers/config-files.js';
import type { Cloud } from './cloud.js';
import type { ProviderConfig } from './provider.js';

/** How long one re-read of the credentials and the files the provider read may take. */
const RELOAD_DEADLINE_MS = 10_000;
/** Reads of the provider's files a reload may have out at once (see `readNow`). */
const MAX_RELOAD_READS = 2;

export interface Reloads {
  /** One re-read, as the timer does it (a no-op while one is still running). */
  reloadNow(): Promise<void>;
  stop(): void;
}

/**
 * The reload stage of `ccm run`: the credentials Secret and the files the provider read, re-read every
 * period; on a change, a provider built from them replaces the current one and the cloud is listed
 * again. A re-read that fails keeps the current provider, and says so once.
 */
export function watchProviderConfig({
  config,
  cloud,
  transport,
  log,
  periodMs,
}: {
  config: ProviderConfig;
  cloud: Pick<Cloud, 'holder' | 'cache'> & Partial<Pick<Cloud, 'reloaded'>>;
  transport: KubeTransport;
  log: Logger;
  periodMs: number;
}): Reloads {
  const { secretRef } = config;
  let secret: SecretData | undefined = config.credentials.secret;
  let providerFiles: FilesRead = config.first.files;
  let reloadFailure: string | undefined;
  let reloading = false;
  // A read that hangs (a dead mount) holds one of libuv's 4 threads, which DNS lookups and every
  // other file read share: never more than two of them for reloads.
  let readsOut = 0;
  const readNow = async (path: string): Promise<string | Error> => {
    if (readsOut >= MAX_RELOAD_READS) return new Error(`earlier reads have not returned (a hung mount?)`);
    readsOut++;
    try {
      return await readConfigFileNow(path);
    } catch (err) {
      return err as Error;
    } finally {
      readsOut--;
    }
  };
  /** What changed, and a provider built from it; nothing is applied here. */
  const check = async (deadline: AbortSignal) => {
    const fresh = secretRef
      ? await readSecret(transport, secretRef.namespace, secretRef.name, deadline)
      : undefined;
    const changed: string[] = [];
    // The data, not the resourceVersion: a label or annotation written on the Secret changes nothing.
    if (secretRef && !sameValues(fresh, secret)) {
      changed.push(`credentials from Secret ${secretRef.namespace}/${secretRef.name}`);
    }
    // What the provider read when it was built, against the files now; one gone, or one that was
    // missing and is there now, counts as changed.
    const files = new Map<string, string | Error>();
    const changedFiles: string[] = [];
    for (const [path, was] of providerFiles) {
      const now = await readNow(path);
      files.set(path, now);
      if ((typeof now === 'string' ? now : null) !== was) changedFiles.push(path);
    }
    if (changedFiles.length > 0) changed.push(changedFiles.join(', '));
    if (changed.length === 0) return undefined;
    // Built from files read here, never synchronously: one the new config names is read, then the
    // build is tried again.
    for (let tries = 1; ; tries++) {
      try {
        return { changed, fresh, built: filesReadBy(() => config.build((fresh ?? secret)?.data), files) };
      } catch (err) {
        if (!(err instanceof FileNotRead) || tries >= 16) throw err;
        files.set(err.path, await readNow(err.path));
      }
    }
  };
  const reload = async () => {
    // One at a time: a slow read answered after a newer one would bring old credentials back. Each
    // has a deadline, so one that hangs does not stop the next, and its result is never applied.
    if (reloading) return;
    reloading = true;
    const deadline = AbortSignal.timeout(RELOAD_DEADLINE_MS);
    try {
      const late = new Promise<never>((_, reject) =>
        deadline.addEventListener(
          'abort',
          () => reject(new Error(`they could not be read within ${RELOAD_DEADLINE_MS / 1000} s`)),
          { once: true },
        ),
      );
      const outcome = await Promise.race([check(deadline), late]);
      // Taken as seen only now, once a provider is built from it: a file unreadable or a Secret
      // without its token is tried again at the next reload, and warned about until then.
      if (outcome) {
        secret = outcome.fresh ?? secret;
        cloud.holder.current = outcome.built.value;
        providerFiles = outcome.built.files;
        const what = outcome.changed.join(' and ');
        log.info(`${what} changed; using them from now on`);
        // Nothing listed with the old ones (maybe another account) may initialise or keep a Node.
        // Once the cloud is listed with the new ones, the controllers retry what waits out a backoff:
        // the failure may have been what the new ones fix (a 401).
        void cloud.cache
          .invalidate(`${what} changed; listing the cloud again with them`)
          .then(() => cloud.reloaded?.());
      }
      if (reloadFailure !== undefined) log.info('credentials and cloud config readable again');
      reloadFailure = undefined;
    } catch (err) {
      const message = (err as Error).message;
      if (message !== reloadFailure)
        log.warn(`re-reading credentials or cloud config failed: ${message}; keeping the current ones`);
      reloadFailure = message;
    } finally {
      reloading = false;
    }
  };
  const timer = setInterval(() => void reload(), periodMs);
  return { reloadNow: reload, stop: () => clearInterval(timer) };
}
