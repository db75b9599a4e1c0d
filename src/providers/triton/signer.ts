import { homedir } from 'node:os';
import sshpk from 'sshpk';
import { connectAgent, type SshAgent } from '../../ssh-agent.js';
import { FileNotRead, readConfigFile } from '../config-files.js';
import { InvalidConfigError } from '../errors.js';

/**
 * HTTP Signature authentication for CloudAPI: the `Date` header signed with the account's SSH key.
 * Keys are parsed and signed by sshpk, or signed by an ssh-agent (src/ssh-agent.ts); nothing here
 * does cryptography itself.
 */
export interface Signature {
  /** e.g. `rsa-sha256`, `ecdsa-sha256`. */
  algorithm: string;
  /** Base64, as the http-signature scheme wants it. */
  signature: string;
}

export interface RequestSigner {
  /** `/<account>/keys/<md5>` or `/<account>/users/<user>/keys/<md5>`. */
  readonly keyId: string;
  /** MD5 fingerprint, aa:bb:…, the form CloudAPI names keys by. */
  readonly fingerprint: string;
  sign(text: string): Promise<Signature>;
}

export interface SignerOptions {
  account: string;
  user?: string;
  /** TRITON_KEY_ID: a fingerprint in MD5 (aa:bb:…, optionally MD5:) or SHA256:… form. */
  keyId?: string;
  /** The private key itself, or the path of its file. */
  keyMaterial?: string;
  passphrase?: string;
  /** ssh-agent socket, used when no key material is given. */
  agentSocket?: string;
}

/**
 * Key types CloudAPI verifies (sdc-cloudapi lib/auth.js SIGN_ALGOS): Ed25519 since TRITON-2417
 * (December 2023); an older CloudAPI refuses it with its own 400, which ccm shows as it is.
 */
const ACCEPTED_TYPES = new Set(['rsa', 'ecdsa', 'dsa', 'ed25519']);

export function createSigner(options: SignerOptions): RequestSigner {
  if (options.keyMaterial?.trim()) return keySigner(options, loadPrivateKey(options));
  return agentSigner(options);
}

export function keyIdFor(account: string, user: string | undefined, fingerprint: string): string {
  return user ? `/${account}/users/${user}/keys/${fingerprint}` : `/${account}/keys/${fingerprint}`;
}

function loadPrivateKey(options: SignerOptions): sshpk.PrivateKey {
  const material = readMaterial(options.keyMaterial ?? '');
  let key: sshpk.PrivateKey;
  try {
    key = sshpk.parsePrivateKey(
      material,
      'auto',
      options.passphrase ? { passphrase: options.passphrase } : undefined,
    );
  } catch (err) {
    const name = (err as Error).name;
    if (name === 'KeyEncryptedError') {
      throw new InvalidConfigError(
        'the private key is encrypted; set its passphrase (TRITON_KEY_PASSPHRASE or the Secret key key-passphrase)',
      );
    }
    if (options.passphrase && /decrypt|passphrase|bad/i.test((err as Error).message)) {
      throw new InvalidConfigError(
        'the passphrase does not decrypt the private key; check TRITON_KEY_PASSPHRASE',
      );
    }
    // sshpk's own message may quote the input: never shown.
    throw new InvalidConfigError(
      'the private key could not be read; give an unencrypted or passphrase-protected RSA, ECDSA or Ed25519 key in PEM or OpenSSH format',
    );
  }
  checkType(key.type);
  if (options.keyId && !fingerprintMatches(options.keyId, key)) {
    throw new InvalidConfigError(
      `the key id ${options.keyId} is not the fingerprint of the given private key (${md5(key)}); fix TRITON_KEY_ID or leave it unset`,
    );
  }
  return key;
}

/** PEM or OpenSSH text as it is; anything else is the path of a key file. */
function readMaterial(value: string): string {
  if (value.includes('-----BEGIN')) return value;
  const path = value.trim().replace(/^~(?=\/)/, homedir());
  try {
    return readConfigFile(path);
  } catch (err) {
    if (err instanceof FileNotRead) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new InvalidConfigError(
      `the private key is neither PEM/OpenSSH text nor a readable file (${code}); set TRITON_KEY_MATERIAL to the key or its path`,
    );
  }
}

function checkType(type: string): void {
  if (ACCEPTED_TYPES.has(type)) return;
  throw new InvalidConfigError(
    `CloudAPI does not accept ${type} signatures (only RSA, ECDSA, Ed25519 and DSA keys); use such a key registered on the account`,
  );
}

function md5(key: sshpk.Key | sshpk.PrivateKey): string {
  return key.fingerprint('md5').toString('hex');
}

function fingerprintMatches(keyId: string, key: sshpk.Key | sshpk.PrivateKey): boolean {
  try {
    const text = keyId.trim().replace(/^MD5:/i, '');
    return sshpk.parseFingerprint(text).matches(key);
  } catch {
    throw new InvalidConfigError(
      `the key id "${keyId}" is not a key fingerprint; use the MD5 (aa:bb:…) or SHA256:… form that ssh-keygen -l prints`,
    );
  }
}

/** rsa-sha256; ECDSA with the hash its curve calls for, within what CloudAPI and http-signature share. */
function hashFor(key: { type: string; size: number }): 'sha1' | 'sha256' | 'sha512' {
  if (key.type === 'ed25519') return 'sha512';
  if (key.type === 'ecdsa') return key.size <= 256 ? 'sha256' : 'sha512';
  if (key.type === 'dsa') return 'sha1';
  return 'sha256';
}

function keySigner(options: SignerOptions, key: sshpk.PrivateKey): RequestSigner {
  const fingerprint = md5(key);
  const hash = hashFor(key);
  return {
    keyId: keyIdFor(options.account, options.user, fingerprint),
    fingerprint,
    async sign(text) {
      const signer = key.createSign(hash);
      signer.update(text);
      return { algorithm: `${key.type}-${hash}`, signature: signer.sign().toString() };
    },
  };
}

/**
 * The account's key as a signer of raw bytes (a certificate's to-be-signed part, CMON's client
 * certificate): from the key file, or through the ssh-agent, chosen exactly as createSigner chooses.
 */
export interface KeySigner {
  /** The public key that signs; through the ssh-agent, the agent is asked for it. */
  publicKey(): Promise<sshpk.Key>;
  sign(data: Buffer): Promise<sshpk.Signature>;
}

export function createKeySigner(options: SignerOptions): KeySigner {
  if (options.keyMaterial?.trim()) {
    const key = loadPrivateKey(options);
    const hash = hashFor(key);
    return {
      publicKey: async () => key.toPublic(),
      async sign(data) {
        const signer = key.createSign(hash);
        signer.update(data);
        return signer.sign();
      },
    };
  }
  const chosen = agentKey(options);
  return {
    publicKey: async () => (await chosen.get()).key,
    sign: (data) => chosen.sign(data),
  };
}

/** The agent's key whose fingerprint is the configured one, asked for once and again after a failure. */
function agentKey(options: SignerOptions) {
  const socket = options.agentSocket?.trim();
  const keyId = options.keyId?.trim();
  if (!socket) {
    throw new InvalidConfigError(
      'no private key and no ssh-agent: set TRITON_KEY_MATERIAL (the key or its path), or run an ssh-agent (SSH_AUTH_SOCK) holding the key',
    );
  }
  if (!keyId) {
    throw new InvalidConfigError(
      'signing through the ssh-agent needs the key fingerprint: set TRITON_KEY_ID (ssh-keygen -l -E md5 -f key.pub)',
    );
  }
  // Checked once here, so a malformed id is a configuration error before any request.
  const wanted = parseFingerprint(keyId);
  let chosen: Promise<{ agent: SshAgent; key: sshpk.Key; fingerprint: string }> | undefined;
  const choose = async () => {
    const agent = await connectAgent(socket);
    const keys = await agent.listKeys().catch((err: Error) => {
      throw new InvalidConfigError(
        `the ssh-agent at ${socket} did not answer (${err.message.split('\n')[0]}); start it or set TRITON_KEY_MATERIAL`,
      );
    });
    const key = keys.find((k) => wanted.matches(k as unknown as sshpk.Key));
    if (!key) {
      throw new InvalidConfigError(
        `the ssh-agent holds no key with fingerprint ${keyId}; ssh-add it or set TRITON_KEY_MATERIAL`,
      );
    }
    checkType(key.type);
    return { agent, key, fingerprint: key.fingerprint('md5').toString('hex') };
  };
  const get = async () => {
    chosen ??= choose();
    return chosen.catch((err) => {
      chosen = undefined;
      throw err;
    });
  };
  return {
    keyId,
    get,
    async sign(data: Buffer): Promise<sshpk.Signature> {
      const { agent, key } = await get();
      return agent.sign(key, data).catch((err: Error) => {
        // The agent may have gone away: the next request connects again.
        chosen = undefined;
        throw new InvalidConfigError(`the ssh-agent refused to sign (${err.message.split('\n')[0]})`);
      });
    },
  };
}

function agentSigner(options: SignerOptions): RequestSigner {
  const chosen = agentKey(options);
  const keyId = chosen.keyId;
  const signer: RequestSigner = {
    // Until the agent is asked, the id is the one configured; CloudAPI names keys by MD5.
    keyId: keyIdFor(options.account, options.user, keyId.replace(/^MD5:/i, '')),
    fingerprint: keyId.replace(/^MD5:/i, ''),
    async sign(text) {
      const { key, fingerprint } = await chosen.get();
      Object.assign(signer, { fingerprint, keyId: keyIdFor(options.account, options.user, fingerprint) });
      const sig = await chosen.sign(Buffer.from(text));
      return { algorithm: `${key.type}-${sig.hashAlgorithm}`, signature: sig.toString() };
    },
  };
  return signer;
}

function parseFingerprint(keyId: string): sshpk.Fingerprint {
  try {
    return sshpk.parseFingerprint(keyId.trim().replace(/^MD5:/i, ''));
  } catch {
    throw new InvalidConfigError(
      `the key id "${keyId}" is not a key fingerprint; use the MD5 (aa:bb:…) or SHA256:… form that ssh-keygen -l prints`,
    );
  }
}
