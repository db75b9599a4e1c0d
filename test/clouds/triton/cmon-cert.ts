/**
 * A CMON client certificate made as `triton profile cmon-certgen` makes one (joyent/node-triton
 * lib/do_profile/profilecommon.js profileCmonCertgen, generateAndSignCert):
 * - a fresh ECDSA key for TLS ("CMON has severe performance issues with RSA at load");
 * - subject CN=<account login>, issuer CN=<the signing SSH key's MD5 fingerprint, sshpk's base64
 *   form "MD5:…">;
 * - purposes signature, identity, clientAuth and joyentCmon (the last one is what makes
 *   triton-cmon lib/common.js authenticationHandler treat it as a "new-style" certificate: expiry
 *   checked, issuer looked up by that fingerprint);
 * - lifetime in days, 3650 by default (DEFAULT_CERT_LIFETIME);
 * - signed by the account's SSH key (node-triton asks ssh-agent to sign; here the private key is at
 *   hand, and sshpk, the library both node-triton and CMON use, signs it directly).
 *
 * A test helper until the product has its own generator (issue 46, item 2); tests use its options
 * to make the certificates CMON refuses (expired, foreign signer) or accepts the old way.
 */
import sshpk from 'sshpk';

export interface CmonCert {
  /** PEM of the certificate. */
  cert: string;
  /** PEM of the TLS private key (SEC1 "EC PRIVATE KEY", as node-triton writes cmon-<account>-key.pem). */
  key: string;
  validUntil: Date;
}

export interface CmonCertOptions {
  /** The account login, the subject's CN. */
  account: string;
  /** The SSH private key (any format sshpk reads) that signs the certificate. */
  signer: string;
  /** Days from now (node-triton's --lifetime); default 3650. */
  lifetimeDays?: number;
  /** An explicit validity window instead, e.g. one already past. */
  validFrom?: Date;
  validUntil?: Date;
  /** Default node-triton's; without joyentCmon the certificate is an "old-style" one to CMON. */
  purposes?: string[];
  /**
   * Self-signed by `signer` (subject key = the SSH key itself, issuer = subject): the "old-style"
   * certificate CMON still accepts, with the SSH key as the TLS key.
   */
  selfSigned?: boolean;
}

const CERTGEN_PURPOSES = ['signature', 'identity', 'clientAuth', 'joyentCmon'];
const SECONDS_PER_DAY = 86_400;

export function cmonCertificate(options: CmonCertOptions): CmonCert {
  const signKey = sshpk.parsePrivateKey(options.signer, 'auto');
  const subject = sshpk.identityFromDN(`CN=${options.account}`);
  const certOptions = {
    lifetime: SECONDS_PER_DAY * (options.lifetimeDays ?? 3650),
    purposes: [...(options.purposes ?? CERTGEN_PURPOSES)],
    ...(options.validFrom ? { validFrom: options.validFrom } : {}),
    ...(options.validUntil ? { validUntil: options.validUntil } : {}),
  };
  if (options.selfSigned) {
    const cert = sshpk.createSelfSignedCertificate(subject, signKey, certOptions);
    return { cert: cert.toString('pem'), key: signKey.toString('pem'), validUntil: cert.validUntil };
  }
  const issuer = sshpk.identityFromDN(`CN=${signKey.fingerprint('md5').toString('base64')}`);
  const tlsKey = sshpk.generatePrivateKey('ecdsa');
  const cert = sshpk.createCertificate(subject, tlsKey, issuer, signKey, certOptions);
  return { cert: cert.toString('pem'), key: tlsKey.toString('pem'), validUntil: cert.validUntil };
}
