/**
 * node:http, node:https, node:tls, node:crypto and node:child_process through require(), each
 * loaded on first use.
 *
 * An ESM `import … from 'node:http'` makes Node build a facade that reads every export, and the
 * getter of `http.WebSocket` loads Node's bundled undici: 35 ms of start-up on Node 24 for a
 * command that may fail on its first flag (README, Start-up). require() reads only what is used,
 * and https/tls (another ~15 ms) wait until the first request or server needs them; crypto (~5 ms)
 * until the first hash or random name; child_process (~5 ms, with net and dgram) until a kubeconfig's
 * credential plugin runs.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

let http: typeof import('node:http') | undefined;
let https: typeof import('node:https') | undefined;
let tls: typeof import('node:tls') | undefined;
let crypto: typeof import('node:crypto') | undefined;
let childProcess: typeof import('node:child_process') | undefined;

export const nodeHttp = (): typeof import('node:http') => {
  http ??= require('node:http') as typeof import('node:http');
  return http;
};
export const nodeHttps = (): typeof import('node:https') => {
  https ??= require('node:https') as typeof import('node:https');
  return https;
};
export const nodeTls = (): typeof import('node:tls') => {
  tls ??= require('node:tls') as typeof import('node:tls');
  return tls;
};
export const nodeCrypto = (): typeof import('node:crypto') => {
  crypto ??= require('node:crypto') as typeof import('node:crypto');
  return crypto;
};
export const nodeChildProcess = (): typeof import('node:child_process') => {
  childProcess ??= require('node:child_process') as typeof import('node:child_process');
  return childProcess;
};
