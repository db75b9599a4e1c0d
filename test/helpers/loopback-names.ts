/**
 * Names that resolve to 127.0.0.1 in this test's process, looked up by no DNS server, with each lookup
 * of them recorded: a target named so is not loopback to Go's proxy rule (which never proxies
 * loopback), yet reached on this machine when it is reached directly. Node's net looks names up with
 * node:dns's `lookup`, replaced here until `restore()`. For the built CLI, test/fixtures/loopback-names.mjs
 * does the same through NODE_OPTIONS (`loopbackNamesEnv`).
 */
import type { LookupAddress } from 'node:dns';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

type Lookup = (hostname: string, options: unknown, callback?: unknown) => void;

export function resolveToLoopback(names: string[]): { lookups: string[]; restore(): void } {
  const dns = createRequire(import.meta.url)('node:dns') as { lookup: Lookup };
  const wanted = new Set(names.map((n) => n.toLowerCase()));
  const lookups: string[] = [];
  const original = dns.lookup;
  dns.lookup = function (this: unknown, hostname, options, callback) {
    if (!wanted.has(hostname.toLowerCase())) return original.call(this, hostname, options, callback);
    lookups.push(hostname);
    const cb = (typeof options === 'function' ? options : callback) as (
      err: null,
      address: string | LookupAddress[],
      family?: number,
    ) => void;
    const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all;
    if (all) process.nextTick(cb, null, [{ address: '127.0.0.1', family: 4 }]);
    else process.nextTick(cb, null, '127.0.0.1', 4);
  };
  return {
    lookups,
    restore() {
      dns.lookup = original;
    },
  };
}

/** The environment of a built-CLI run in which `names` resolve to 127.0.0.1, each lookup written to `log`. */
export function loopbackNamesEnv(names: string[], log: string): Record<string, string> {
  const preload = fileURLToPath(new URL('../fixtures/loopback-names.mjs', import.meta.url));
  return { NODE_OPTIONS: `--import=${preload}`, LOOPBACK_NAMES: names.join(','), LOOKUP_LOG: log };
}
