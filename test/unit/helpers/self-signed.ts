import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * A self-signed certificate and its key, `<name>.pem` and `<name>.key` in `dir` (openssl, one day), e.g.
 * a test server's own certificate or a test CA; `san` as openssl's subjectAltName (`IP:127.0.0.1`).
 */
export function selfSigned(dir: string, name: string, cn: string, san?: string): void {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      `/CN=${cn}`,
      ...(san ? ['-addext', `subjectAltName=${san}`] : []),
      '-keyout',
      join(dir, `${name}.key`),
      '-out',
      join(dir, `${name}.pem`),
    ],
    { stdio: 'ignore' },
  );
}
