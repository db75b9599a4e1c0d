/**
 * node:http, node:https, node:tls, node:zlib, node:crypto, node:child_process and node:util through
 * require(), each loaded on first use.
 *
 * An ESM `import … from 'node:http'` makes Node build a facade that reads every export, and the
 * getter of `http.WebSocket` loads Node's bundled undici: 35 ms of start-up on Node 24 for a
 * command that may fail on its first flag (docs/benchmarks.md, Start-up). require() reads only what is used,
 * and https/tls (another ~15 ms) wait until the first request or server needs them; crypto (~5 ms)
 * until the first hash or random name; child_process (~5 ms, with net and dgram) until a kubeconfig's
 * credential plugin runs.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The module, required on the first call. */
function onFirstUse<T>(id: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= require(id) as T;
    return loaded;
  };
}

export const nodeHttp = onFirstUse<typeof import('node:http')>('node:http');
export const nodeHttps = onFirstUse<typeof import('node:https')>('node:https');
export const nodeTls = onFirstUse<typeof import('node:tls')>('node:tls');
export const nodeZlib = onFirstUse<typeof import('node:zlib')>('node:zlib');
export const nodeCrypto = onFirstUse<typeof import('node:crypto')>('node:crypto');
export const nodeChildProcess = onFirstUse<typeof import('node:child_process')>('node:child_process');
/** Its ESM facade would load worker_threads at start. */
export const nodeUtil = onFirstUse<typeof import('node:util')>('node:util');
