import sshpk from 'sshpk';
import { nodeCrypto, nodeHttps } from '../../node-modules.js';
import { printableLine } from '../../printable.js';
import { InvalidConfigError, RetryableError, UnauthorizedError, UnreachableError } from '../errors.js';
import { cmonPort } from './cmon-url.js';
import type { KeySigner } from './signer.js';

/**
 * Triton's Container Monitor (CMON) client certificate, made as `triton profile cmon-certgen` makes
 * it (joyent/node-triton lib/do_profile/profilecommon.js profileCmonCertgen: generateAndSignCert), and
 * checked as CMON checks it (TritonDataCenter/triton-cmon lib/common.js authenticationHandler):
 * - a fresh ECDSA P-256 key for TLS ("CMON has severe performance issues with RSA at load");
 * - subject CN=<account login>: CMON looks the account up by it;
 * - issuer CN=<MD5 fingerprint of the signing SSH key, sshpk's "MD5:<base64>" form>: for a certificate
 *   with the joyentCmon purpose CMON takes the account's key named by it and checks the signature;
 * - purposes signature, identity, clientAuth, joyentCmon (with the joyentCmon purpose CMON also
 *   checks the expiry), plus what sshpk's createCertificate adds for a host-like subject (serverAuth,
 *   keyAgreement), as cmon-certgen's certificate has them;
 * - signed by the account's SSH key, from the key file or through the ssh-agent (cmon-certgen asks
 *   the agent: sshpk-agent createCertificate, whose x509 signAsync path this takes too);
 * - valid for a lifetime in days (3650 by default, node-triton's DEFAULT_CERT_LIFETIME) from now, and
 *   from 5 minutes before now against clock skew (cmon-certgen's starts at its now);
 * This file is the product's own generator; test/clouds/triton/cmon-cert.ts is the tests' separate one.
 */

/** The Secret `ccm secret create --cmon` writes by default (namespace kube-system, as the credentials'). */
export const CMON_SECRET_NAME = 'triton-cmon';
/** node-triton's DEFAULT_CERT_LIFETIME, in days. */
export const DEFAULT_CMON_LIFETIME_DAYS = 3650;
const PURPOSES = ['signature', 'identity', 'clientAuth', 'joyentCmon'];
const SECONDS_PER_DAY = 86_400;
const CLOCK_SKEW_MS = 300_000;
/** The x509 signature algorithms sshpk writes (formats/x509.js SIGN_ALGS). */
const X509_ALGORITHMS = new Set([
  'rsa-sha256',
  'rsa-sha384',
  'rsa-sha512',
  'ecdsa-sha256',
  'ecdsa-sha384',
  'ecdsa-sha512',
  'ed25519-sha512',
  'dsa-sha1',
  'dsa-sha256',
]);

export interface CmonCertificate {
  /** PEM of the certificate (tls.crt). */
  cert: string;
  /** PEM of its private key (tls.key): a secret, never shown. */
  key: string;
  validFrom: Date;
  validUntil: Date;
  /** MD5 fingerprint (aa:bb:…) of the SSH key that signed it. */
  signedBy: string;
}

export interface CmonCertificateOptions {
  /** The account login: the subject. */
  account: string;
  signer: KeySigner;
  lifetimeDays?: number;
  /** Now (tests move it). */
  now?: Date;
}

export async function makeCmonCertificate(options: CmonCertificateOptions): Promise<CmonCertificate> {
  const signKey = await options.signer.publicKey();
  const subject = sshpk.identityFromDN(`CN=${options.account}`);
  const issuer = sshpk.identityFromDN(`CN=${signKey.fingerprint('md5').toString('base64')}`);
  const tlsKey = sshpk.generatePrivateKey('ecdsa', { curve: 'nistp256' });
  // X.509 times are whole seconds. Valid from 5 minutes ago (CloudAPI's own allowance for clock skew),
  // so that a CMON whose clock is a little behind this machine's takes it at once; cmon-certgen
  // starts it at its own now, and a CMON behind that refuses it as not yet valid.
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000) * 1000;
  const validFrom = new Date(now - CLOCK_SKEW_MS);
  const validUntil = new Date(
    now + (options.lifetimeDays ?? DEFAULT_CMON_LIFETIME_DAYS) * SECONDS_PER_DAY * 1000,
  );
  // The purposes sshpk's createCertificate gives a host-like subject (CN only): cmon-certgen's.
  const purposes = [...PURPOSES];
  for (const extra of subject.type === 'host' ? ['serverAuth', 'keyAgreement'] : ['keyAgreement'])
    if (!purposes.includes(extra)) purposes.push(extra);
  // A positive 64-bit serial of its own (cmon-certgen's are all 1; CMON reads none).
  const serial = nodeCrypto().randomBytes(8);
  serial[0] = ((serial[0] as number) & 0x7f) | 0x01;
  const cert = new sshpk.Certificate({
    subjects: [subject],
    issuer,
    subjectKey: tlsKey.toPublic(),
    issuerKey: signKey,
    signatures: {} as sshpk.CertificateOptions['signatures'],
    serial,
    validFrom,
    validUntil,
    purposes,
  });
  // The signature algorithm is part of what is signed, so it is known first: a test signature says
  // which hash this key (or the agent, for RSA) uses, as sshpk-agent's signCertificate asks.
  const probe = await options.signer.sign(Buffer.from('test'));
  const algo = `${signKey.type}-${probe.hashAlgorithm}`;
  if (algo === 'rsa-sha1') {
    // X.509 could carry it (sshpk formats/x509.js SIGN_ALGS has rsa-sha1, and CMON would verify it):
    // ccm will not sign a certificate with SHA-1, whose collisions are practical.
    throw new InvalidConfigError(
      "the ssh-agent signs with the RSA key in rsa-sha1 (SHA-1), and ccm refuses SHA-1 signatures for the certificate because they are weak (SHA-1 collisions are practical): it asked for rsa-sha2-256, which this agent ignores; use an agent that honours it (OpenSSH's ssh-agent 7.2 or later), give the key file instead (TRITON_KEY_MATERIAL, --from-file key-material=…), or an ECDSA or Ed25519 key of the account",
    );
  }
  if (!X509_ALGORITHMS.has(algo)) {
    throw new InvalidConfigError(
      `the key signs ${algo}, which ccm does not put in an X.509 certificate; use an RSA, ECDSA or Ed25519 key of the account`,
    );
  }
  cert.signatures.x509 = { algo } as sshpk.Format.x509Signature;
  await new Promise<void>((resolve, reject) => {
    (sshpk.Certificate.formats.x509 as unknown as sshpk.Format.x509).signAsync(
      cert,
      (blob, done) => {
        options.signer.sign(blob).then(
          (sig) => done(undefined, sig),
          (err: Error) => done(err, undefined as unknown as sshpk.Signature),
        );
      },
      (err) => (err ? reject(err) : resolve()),
    );
  });
  if (`${signKey.type}-${cert.signatures.x509?.signature?.hashAlgorithm}` !== algo) {
    throw new InvalidConfigError('the ssh-agent changed the hash of its signatures between two requests');
  }
  // What CMON will do: the certificate verifies with the key it names.
  const written = sshpk.parseCertificate(cert.toBuffer('pem'), 'pem');
  if (!written.isSignedByKey(signKey))
    throw new InvalidConfigError('the CMON certificate does not verify with the key that signed it');
  return {
    cert: written.toString('pem'),
    key: tlsKey.toString('pem'),
    validFrom,
    validUntil,
    signedBy: signKey.fingerprint('md5').toString('hex'),
  };
}

/** What a certificate says of itself (for doctor and for the report). */
export interface CmonCertificateInfo {
  account: string;
  /** The issuer's CN: the MD5 fingerprint of the signing key, as the certificate names it. */
  issuer: string;
  validFrom: Date;
  validUntil: Date;
}

export function readCmonCertificate(pem: string): CmonCertificateInfo {
  let cert: sshpk.Certificate;
  try {
    cert = sshpk.parseCertificate(pem, 'pem');
  } catch {
    throw new InvalidConfigError('tls.crt is no PEM X.509 certificate');
  }
  // sshpk 1.18 reads an X.509 time into a Date of the moment it parses, and leaves that moment's
  // milliseconds in it (formats/x509.js utcTimeToDate): the time itself has whole seconds.
  const whole = (d: Date) => new Date(Math.floor(d.getTime() / 1000) * 1000);
  return {
    account: String(cert.subjects[0]?.get('cn') ?? ''),
    issuer: String(cert.issuer.get('cn') ?? ''),
    validFrom: whole(cert.validFrom),
    validUntil: whole(cert.validUntil),
  };
}

/**
 * Where CMON is reached, and by which name. `service` is CloudAPI's ListServices `cmon` entry (what
 * cmon-certgen reads); `override` an operator's URL (a tunnel, a test). CMON answers by the Host
 * header (triton-cmon lib/common.js enforceHostHandler: its first label must be "cmon") and its
 * certificate names cmon.<dc>.<suffix>: an override that is an IP address is where to connect, while
 * Host, SNI and the certificate check keep the service's name.
 */
export interface CmonEndpoint {
  /** Where the connection goes (its hostname; not its port, which WHATWG URL drops when 443). */
  url: URL;
  /** The port written in the URL, else CMON's 9163 (cmon-url.ts). */
  port: number;
  /** https://<host>:<port>, for messages. */
  origin: string;
  /** The name sent as Host and SNI, and checked in CMON's certificate. */
  name: string;
}

export function cmonEndpoint(service: string | undefined, override?: string): CmonEndpoint {
  const parse = (value: string, what: string) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new InvalidConfigError(
        `${what} "${printableLine(value)}" is not a URL; e.g. https://cmon.us-east-1.triton.zone:9163`,
      );
    }
    if (url.protocol !== 'https:') throw new InvalidConfigError(`${what} ${url.origin} must use https`);
    const port = cmonPort(value);
    if ('error' in port) throw new InvalidConfigError(`${what} ${printableLine(value)}: ${port.error}`);
    return { url, port: port.port, origin: `https://${url.hostname}:${port.port}` };
  };
  const known = service ? parse(service, "CloudAPI's cmon service") : undefined;
  const chosen = override ? parse(override, '--cmon-url') : known;
  if (!chosen) throw noCmon();
  const name = isAddress(chosen.url.hostname) && known ? known.url.hostname : chosen.url.hostname;
  return { ...chosen, name };
}

/** --cmon-url (TRITON_CMON_URL) checked before anything is asked or called: a URL, https, a port. */
export function checkCmonUrl(override: string): void {
  cmonEndpoint(undefined, override);
}

/** CloudAPI lists no CMON: `triton profile cmon-certgen` stops there too ("no "cmon" service on this datacenter"). */
export function noCmon(): InvalidConfigError {
  return new InvalidConfigError(
    'this data centre has no CMON: CloudAPI ListServices lists no "cmon" service (as `triton profile cmon-certgen` checks)',
  );
}

/** Whether an override needs CloudAPI's cmon entry for CMON's name: none given, or an IP address. */
export function needsServiceName(override: string | undefined): boolean {
  if (!override || !URL.canParse(override)) return true;
  return isAddress(new URL(override).hostname);
}

function isAddress(hostname: string): boolean {
  return /^[\d.]+$|^\[/.test(hostname);
}

export interface DiscoverOptions {
  endpoint: CmonEndpoint;
  cert: string;
  key: string;
  /** PEM of the CAs that CMON's certificate is checked against (default: the system's). */
  ca?: string;
  /**
   * Only the instances with any of these groups (lib/endpoints/discover.js: `groups`, split on ","),
   * as Prometheus' Triton discovery asks with the job's `groups`; absent: every one of the account.
   */
  groups?: readonly string[];
  /** The sub-user whose key signed the certificate, if one did (for the reason of a refusal). */
  user?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
}

export interface Discovered {
  /** The instances CMON lists for the account (its vm_uuid and vm_alias, and the groups CMON read). */
  containers: { vm_uuid: string; vm_alias?: string; vm_owner_uuid?: string; groups?: string[] }[];
  /**
   * Why Prometheus will refuse CMON's own certificate while Node accepted it, in one line: a name (CMON's,
   * or `<uuid>.<CMON's>` the instances are scraped at) that only its CN gives. Node still falls back
   * to the CN when a certificate has no DNS subjectAltName; Go's TLS does not ("x509: certificate
   * relies on legacy Common Name field, use SANs instead"). CMON makes such a certificate for itself
   * until its operator installs one (triton-cmon boot/setup.sh setup_tls_certificate).
   */
  serverNameProblem?: string;
}

/** The fix a scrape job needs for such a certificate. */
export const CMON_SKIP_VERIFY_FIX =
  "print the job with `ccm manifests --cmon --cmon-insecure-skip-verify` until CMON's operator installs a certificate with them";

/** What Go's TLS would say of CMON's certificate for `name` and `<uuid>.name`, or undefined when fine. */
export function serverNameProblem(raw: Buffer | undefined, name: string): string | undefined {
  if (!raw || raw.length === 0 || isAddress(name)) return undefined;
  let cert: import('node:crypto').X509Certificate;
  try {
    cert = new (nodeCrypto().X509Certificate)(raw);
  } catch {
    return undefined;
  }
  const instance = `00000000-0000-0000-0000-000000000000.${name}`;
  const missing = [name, `*.${name}`].filter(
    (_, i) => cert.checkHost(i === 0 ? name : instance, { subject: 'never' }) === undefined,
  );
  if (missing.length === 0) return undefined;
  const how = cert.subjectAltName
    ? `its subjectAltName lacks ${missing.join(' and ')}`
    : 'it has no subjectAltName';
  return `CMON's certificate (${cert.subject.replace(/\n/g, ', ')}) will be refused by Prometheus: ${how}, and Go's TLS ignores the CN (x509: certificate relies on legacy Common Name field); ${CMON_SKIP_VERIFY_FIX}`;
}

/**
 * GET /v1/discover with the certificate (triton-cmon lib/endpoints/discover.js): 200 and the
 * account's instances when CMON accepts it. Prometheus' Triton discovery ignores this status, so a
 * refused certificate is visible only here: 401/403 is an UnauthorizedError, no answer an
 * UnreachableError, 5xx a RetryableError, anything else an InvalidConfigError.
 */
export function cmonDiscover(options: DiscoverOptions): Promise<Discovered> {
  const { endpoint } = options;
  const where = `CMON at ${endpoint.origin}${endpoint.name !== endpoint.url.hostname ? ` (as ${endpoint.name})` : ''}`;
  const timeoutMs = options.timeoutMs ?? 30_000;
  return new Promise((resolveOnce, rejectOnce) => {
    // One deadline for the whole request: https.request's `timeout` is the socket's idle time, and
    // Node postpones its first expiry while a write is queued (net.js Socket._onTimeout), which the
    // request is, behind a TLS handshake that a CMON accepting TCP never answers: it fired after
    // twice its time (doctor waited 60 s for a 30 s timeout).
    let deadline: NodeJS.Timeout | undefined;
    const resolve = (found: Discovered) => {
      clearTimeout(deadline);
      resolveOnce(found);
    };
    const reject = (err: unknown) => {
      clearTimeout(deadline);
      rejectOnce(err);
    };
    const req = nodeHttps().request(
      {
        host: endpoint.url.hostname.replace(/^\[|\]$/g, ''),
        port: endpoint.port,
        path: `/v1/discover${options.groups?.length ? `?${new URLSearchParams({ groups: options.groups.join(',') })}` : ''}`,
        method: 'GET',
        // SNI carries a name only (RFC 6066): an address is sent none.
        ...(isAddress(endpoint.name) ? {} : { servername: endpoint.name }),
        headers: { host: `${endpoint.name}:${endpoint.port}`, accept: 'application/json' },
        cert: options.cert,
        key: options.key,
        ...(options.ca ? { ca: options.ca } : {}),
        agent: false,
        ...(options.signal ? { signal: options.signal } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > 16 * 1024 * 1024) req.destroy(new Error('the answer is larger than 16 MiB'));
          else chunks.push(c);
        });
        res.on('error', (err) => reject(new UnreachableError(`${where}: ${err.message}`)));
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          const text = Buffer.concat(chunks).toString('utf8');
          const said = cmonMessage(text);
          if (status === 401 || status === 403) {
            reject(
              new UnauthorizedError(
                `${where} refused the certificate (${status}${said}): ${refusedWhy(options.user)}`,
              ),
            );
            return;
          }
          if (status >= 500) {
            reject(new RetryableError(`${where} failed for the moment (${status}${said})`));
            return;
          }
          if (status !== 200) {
            reject(new InvalidConfigError(`${where} answered GET /v1/discover with ${status}${said}`));
            return;
          }
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch {
            body = undefined;
          }
          const containers = (body as { containers?: unknown } | undefined)?.containers;
          if (!Array.isArray(containers)) {
            reject(
              new InvalidConfigError(
                `${where} answered GET /v1/discover with 200 but no {"containers": […]}: is it CMON?`,
              ),
            );
            return;
          }
          const peer = (res.socket as import('node:tls').TLSSocket).getPeerCertificate?.();
          const problem = serverNameProblem(peer?.raw, endpoint.name);
          resolve({
            containers: containers as Discovered['containers'],
            ...(problem ? { serverNameProblem: problem } : {}),
          });
        });
      },
    );
    deadline = setTimeout(
      () => req.destroy(new Error(`no answer in ${Math.round(timeoutMs / 1000)} s`)),
      timeoutMs,
    );
    req.on('error', (err) => {
      if (options.signal?.aborted) reject(options.signal.reason);
      else reject(new UnreachableError(`${where} could not be reached: ${printableLine(err.message)}`));
    });
    req.end();
  });
}

/**
 * Why CMON answers 401, which is the same for every cause (triton-cmon lib/common.js
 * authenticationHandler). A key that is not on the account is looked for among the keys of the
 * members of the account's `administrator` role (mahi `/roles?account=…&role=administrator`), and
 * nowhere else: a sub-user's key is accepted only when the sub-user is in that role, whatever
 * CloudAPI lets the sub-user do.
 */
export function refusedWhy(user: string | undefined): string {
  const subUser =
    "a sub-user's key only when the sub-user is a member of the account's administrator role (triton-cmon lib/common.js)";
  return user
    ? `it is signed by sub-user ${user}'s key, which CMON accepts only when ${user} is a member of the account's administrator role (triton-cmon lib/common.js); else it is expired, not yet valid, or for another account`
    : `it is expired, not yet valid, for another account, or signed by a key the account does not have (CMON accepts ${subUser})`;
}

/** restify's {code, message}, as ` Unauthorized: …`, when CMON sent one. */
function cmonMessage(text: string): string {
  try {
    const { code, message } = JSON.parse(text) as { code?: unknown; message?: unknown };
    const parts = [code, message].filter((p): p is string => typeof p === 'string' && p !== '');
    return parts.length ? ` ${printableLine(parts.join(': ')).slice(0, 200)}` : '';
  } catch {
    return '';
  }
}
