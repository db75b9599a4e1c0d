/**
 * A CMON simulator for a vitest file (test/clouds/triton/cmon.ts) on two CloudAPI simulators of one
 * data centre, the accounts `demo` and `other`, each with an RSA key registered, plus a `foreign`
 * key no account has; and `cmonGet`, a plain HTTPS request to it as a client of the real CMON
 * makes one (by name, with a client certificate or without).
 */
import { request } from 'node:https';
import { afterAll, beforeAll } from 'vitest';
import { CmonSim, type CmonSimOptions } from '../clouds/triton/cmon.js';
import type { CmonCert } from '../clouds/triton/cmon-cert.js';
import { KeyFolder, type TestKey } from '../clouds/triton/keys.js';
import { TritonSim } from '../clouds/triton/server.js';

/** The environment of a `ccm` child in a CMON test: nothing of the machine running the tests leaks in. */
export const CLEAN_ENV: Record<string, string | undefined> = {
  KUBECONFIG: undefined,
  CCM_PROVIDER: undefined,
  SSH_AUTH_SOCK: undefined,
  TRITON_CMON_URL: undefined,
  TRITON_CMON_CA: undefined,
  ...Object.fromEntries(
    ['URL', 'ACCOUNT', 'USER', 'KEY_ID', 'KEY_MATERIAL', 'KEY_PASSPHRASE'].flatMap((k) => [
      [`TRITON_${k}`, undefined],
      [`SDC_${k}`, undefined],
    ]),
  ),
};

export interface CmonWorld {
  cmon: CmonSim;
  demo: TritonSim;
  other: TritonSim;
  keys: { demo: TestKey; other: TestKey; foreign: TestKey };
}

export function useCmon(options: CmonSimOptions = {}): CmonWorld {
  const world = {} as CmonWorld;
  const folder = new KeyFolder();
  beforeAll(async () => {
    world.keys = {
      demo: folder.make({ type: 'rsa', bits: 2048 }),
      other: folder.make({ type: 'ecdsa', bits: 256 }),
      foreign: folder.make({ type: 'rsa', bits: 2048 }),
    };
    world.demo = await new TritonSim({ login: 'demo', datacenter: 'us-test-1' }).start();
    world.other = await new TritonSim({ login: 'other', datacenter: 'us-test-1' }).start();
    world.demo.addKey(world.keys.demo.publicKey);
    world.other.addKey(world.keys.other.publicKey);
    world.cmon = await new CmonSim([world.demo, world.other], options).start();
  });
  afterAll(async () => {
    await world.cmon?.stop();
    await world.demo?.stop();
    await world.other?.stop();
    folder.remove();
  });
  return world;
}

export interface CmonAnswer {
  status: number;
  contentType: string;
  body: string;
}

/**
 * GET https://<host>:<port><path> from 127.0.0.1, with SNI and Host set to `host` (default CMON's
 * own name) and CMON's certificate as the only CA; a fresh connection each time, so that no TLS
 * session of another certificate is reused.
 */
export function cmonGet(
  cmon: CmonSim,
  path: string,
  { host = cmon.host, cert, method = 'GET' }: { host?: string; cert?: CmonCert; method?: string } = {},
): Promise<CmonAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: cmon.port,
        path,
        method,
        servername: host.toLowerCase(),
        headers: { host },
        ca: cmon.ca,
        ...(cert ? { cert: cert.cert, key: cert.key } : {}),
        agent: false,
        timeout: 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            contentType: String(res.headers['content-type'] ?? ''),
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('CMON did not answer in 10 s')));
    req.end();
  });
}
