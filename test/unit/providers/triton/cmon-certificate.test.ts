/**
 * The CMON certificate's signer (review 46, finding 10): an ssh-agent that ignores the rsa-sha2-256
 * flag signs SHA-1, which X.509 can carry (sshpk formats/x509.js SIGN_ALGS has rsa-sha1) and ccm
 * refuses as weak; the line says that, and how to get rsa-sha2-256. And /v1/discover's one deadline.
 */
import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:net';
import sshpk from 'sshpk';
import { describe, expect, it } from 'vitest';
import {
  cmonDiscover,
  cmonEndpoint,
  makeCmonCertificate,
} from '../../../../src/providers/triton/cmon-certificate.js';
import type { KeySigner } from '../../../../src/providers/triton/signer.js';

/** A signer of an RSA key that signs with `hash`, as an agent ignoring the flag would. */
function rsaSigner(hash: 'sha1' | 'sha256'): KeySigner {
  const pem = generateKeyPairSync('rsa', { modulusLength: 2048 })
    .privateKey.export({ type: 'pkcs1', format: 'pem' })
    .toString();
  const key = sshpk.parsePrivateKey(pem, 'pem');
  return {
    publicKey: async () => key.toPublic(),
    sign: async (data) => {
      const signer = key.createSign(hash);
      signer.update(data);
      return signer.sign();
    },
  };
}

describe('makeCmonCertificate and SHA-1', () => {
  it('refuses an rsa-sha1 signature because SHA-1 is weak, and says how to get rsa-sha2-256', async () => {
    const made = makeCmonCertificate({ account: 'demo', signer: rsaSigner('sha1') });
    await expect(made).rejects.toThrow(
      /ccm refuses SHA-1 signatures for the certificate because they are weak/,
    );
    await expect(made).rejects.toThrow(
      /rsa-sha2-256, which this agent ignores; use an agent that honours it/,
    );
    await expect(made).rejects.not.toThrow(/cannot carry/);
  });

  it('signs with rsa-sha256', async () => {
    const made = await makeCmonCertificate({ account: 'demo', signer: rsaSigner('sha256') });
    expect(sshpk.parseCertificate(made.cert, 'pem').signatures.x509?.algo).toBe('rsa-sha256');
  });
});

describe('cmonDiscover against a CMON that accepts TCP and never answers TLS', () => {
  it('gives up after its timeout once, not twice (the socket idle timeout was postponed while the request was queued)', async () => {
    const server = createServer(() => undefined);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      const endpoint = cmonEndpoint('https://cmon.us-test-1.triton.test', `https://127.0.0.1:${port}`);
      const started = Date.now();
      await expect(cmonDiscover({ endpoint, cert: '', key: '', timeoutMs: 4000 })).rejects.toThrow(
        /could not be reached: no answer in 4 s/,
      );
      // Twice the timeout would be 8 s or more; the margin below it is for a loaded machine.
      const took = Date.now() - started;
      expect(took).toBeGreaterThanOrEqual(3900);
      expect(took).toBeLessThan(7500);
    } finally {
      server.close();
    }
  });
});
