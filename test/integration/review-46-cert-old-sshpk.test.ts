/**
 * Review 46: the certificate `secret create --cmon` makes (makeCmonCertificate, the product's code),
 * for account keys of every type ccm accepts, checked the way the real CMON checks it: triton-cmon
 * lib/common.js authenticationHandler, line for line, with the sshpk version triton-cmon's
 * package.json pins (1.14.2), not the 1.18 the repository (and the CMON simulator) uses.
 * That version is a dev dependency of its own name, `sshpk-1.14.2` (an npm alias).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import sshpk from 'sshpk';
import { describe, expect, it } from 'vitest';
import { makeCmonCertificate } from '../../src/providers/triton/cmon-certificate.js';
import { createKeySigner } from '../../src/providers/triton/signer.js';
import { tempDir } from '../helpers/tmp.js';

const require = createRequire(import.meta.url);
// biome-ignore lint/suspicious/noExplicitAny: sshpk 1.14.2 has no types here
const old: any = require('sshpk-1.14.2');

/** triton-cmon lib/common.js authenticationHandler, with sshpk 1.14.2; the account has `accountKey`. */
function cmonAuthenticates(certDer: Buffer, login: string, accountKeyText: string, now = new Date()): string {
  const cert = old.parseCertificate(certDer, 'x509');
  let keyId = cert.subjectKey.fingerprint('md5').toString('hex');
  if (cert.purposes && cert.purposes.indexOf('joyentCmon') !== -1) {
    if (cert.isExpired(now)) return 'expired';
    if (!cert.subjects[0].equals(cert.issuer)) {
      let fingerprint: { algorithm: string; toString(f: string): string } | undefined;
      try {
        fingerprint = old.parseFingerprint(cert.issuer.cn);
        if (fingerprint?.algorithm === 'md5') keyId = fingerprint.toString('hex');
        else fingerprint = undefined;
      } catch {
        fingerprint = undefined;
      }
      if (fingerprint === undefined) return 'issuer invalid';
    }
  }
  const cn = cert.subjects[0].cn;
  if (cn !== login) return `no account ${cn}`;
  const accountKey = old.parseKey(accountKeyText);
  const keys: Record<string, string> = { [accountKey.fingerprint('md5').toString('hex')]: accountKeyText };
  if (!keys[keyId]) return 'key not present on account';
  return cert.isSignedByKey(old.parseKey(keys[keyId])) ? 'ok' : 'not signed by key';
}

function keyFile(dir: string, name: string, args: string[]): { path: string; pub: string } {
  const path = join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-N', '', '-C', name, '-f', path, ...args]);
  return { path, pub: readFileSync(`${path}.pub`, 'utf8') };
}

describe('the CMON certificate, as triton-cmon (sshpk 1.14.2) checks it', () => {
  const dir = tempDir('r46-keys-');
  it.each([
    ['rsa 2048', ['-t', 'rsa', '-b', '2048']],
    ['rsa 4096', ['-t', 'rsa', '-b', '4096']],
    ['ecdsa p256', ['-t', 'ecdsa', '-b', '256']],
    ['ecdsa p384', ['-t', 'ecdsa', '-b', '384']],
    ['ecdsa p521', ['-t', 'ecdsa', '-b', '521']],
    ['ed25519', ['-t', 'ed25519']],
    ['rsa 2048, PEM', ['-t', 'rsa', '-b', '2048', '-m', 'PEM']],
  ])('key %s from a file: accepted', async (name, args) => {
    const key = keyFile(dir, name.replace(/\W/g, '_'), args);
    const made = await makeCmonCertificate({
      account: 'demo',
      signer: createKeySigner({ account: 'demo', keyMaterial: key.path }),
    });
    const der = sshpk.parseCertificate(made.cert, 'pem').toBuffer('x509');
    // What the repository's sshpk (and so the simulator) says
    expect(sshpk.parseCertificate(made.cert, 'pem').isSignedByKey(sshpk.parseKey(key.pub))).toBe(true);
    // What the real CMON says
    expect(cmonAuthenticates(der, 'demo', key.pub)).toBe('ok');
  });

  it('an account key with a passphrase: accepted', async () => {
    const path = join(dir, 'enc');
    execFileSync('ssh-keygen', ['-q', '-N', 'sekrit', '-t', 'ecdsa', '-b', '384', '-f', path]);
    const made = await makeCmonCertificate({
      account: 'demo',
      signer: createKeySigner({ account: 'demo', keyMaterial: path, passphrase: 'sekrit' }),
    });
    const der = sshpk.parseCertificate(made.cert, 'pem').toBuffer('x509');
    expect(cmonAuthenticates(der, 'demo', readFileSync(`${path}.pub`, 'utf8'))).toBe('ok');
  });

  it('the certificate is valid to CMON over its whole lifetime and not after (5-minute backdating included)', async () => {
    const key = keyFile(dir, 'life', ['-t', 'ecdsa', '-b', '256']);
    const now = new Date();
    const made = await makeCmonCertificate({
      account: 'demo',
      signer: createKeySigner({ account: 'demo', keyMaterial: key.path }),
      lifetimeDays: 1,
      now,
    });
    const der = sshpk.parseCertificate(made.cert, 'pem').toBuffer('x509');
    expect(cmonAuthenticates(der, 'demo', key.pub, new Date(now.getTime() - 240_000))).toBe('ok');
    expect(cmonAuthenticates(der, 'demo', key.pub, new Date(now.getTime() + 86_400_000 - 2000))).toBe('ok');
    expect(cmonAuthenticates(der, 'demo', key.pub, new Date(now.getTime() + 86_400_000 + 2000))).toBe(
      'expired',
    );
  });
});
