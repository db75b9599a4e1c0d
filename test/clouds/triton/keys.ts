/**
 * SSH keys for the Triton tests, made by ssh-keygen in a temporary folder (no private key is ever
 * committed). Each: the private key text, its path, the OpenSSH public key, the MD5 fingerprint.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestKey {
  path: string;
  privateKey: string;
  publicKey: string;
  fingerprint: string;
  passphrase?: string;
}

export interface KeyOptions {
  type: 'rsa' | 'ecdsa' | 'ed25519';
  bits?: number;
  /** PEM (PKCS#1 / SEC1) instead of the OpenSSH format. */
  pem?: boolean;
  passphrase?: string;
}

export class KeyFolder {
  readonly dir = mkdtempSync(join(tmpdir(), 'ccm-triton-keys-'));
  private n = 0;

  make(options: KeyOptions): TestKey {
    const path = join(this.dir, `key-${this.n++}`);
    const args = ['-q', '-t', options.type, '-N', options.passphrase ?? '', '-C', 'ccm-test', '-f', path];
    if (options.bits) args.push('-b', String(options.bits));
    if (options.pem) args.push('-m', 'PEM');
    execFileSync('ssh-keygen', args, { stdio: 'ignore' });
    const publicKey = readFileSync(`${path}.pub`, 'utf8');
    const fingerprint = execFileSync('ssh-keygen', ['-l', '-E', 'md5', '-f', `${path}.pub`], {
      encoding: 'utf8',
    })
      .split(' ')[1]
      ?.replace(/^MD5:/, '');
    return {
      path,
      privateKey: readFileSync(path, 'utf8'),
      publicKey,
      fingerprint: fingerprint ?? '',
      ...(options.passphrase ? { passphrase: options.passphrase } : {}),
    };
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
