import { readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import sshpk from 'sshpk';
import { connectAgent } from '../ssh-agent.js';

/** A key a person can pick: a private key file in ~/.ssh, or a key an ssh-agent holds. */
export interface SshKeyChoice {
  /** SHA256:… fingerprint, as `ssh-keygen -l` prints it. */
  fingerprint: string;
  type: string;
  comment: string;
  /** The private key file (absent for a key only the agent holds). */
  path?: string;
  encrypted: boolean;
  inAgent: boolean;
}

const PRIVATE_KEY_HEADER = /-----BEGIN (OPENSSH|RSA|EC|DSA|ENCRYPTED)? ?PRIVATE KEY-----/;

/** Private keys in `dir` (default ~/.ssh) and the keys of the agent at `agentSocket`, merged by fingerprint. */
export async function findSshKeys(
  options: { dir?: string; agentSocket?: string } = {},
): Promise<SshKeyChoice[]> {
  const dir = options.dir ?? join(homedir(), '.ssh');
  const found = new Map<string, SshKeyChoice>();
  let names: string[] = [];
  try {
    names = readdirSync(dir).sort();
  } catch {
    // no ~/.ssh: only the agent's keys
  }
  for (const name of names) {
    if (name.endsWith('.pub')) continue;
    const path = join(dir, name);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      continue;
    }
    if (!PRIVATE_KEY_HEADER.test(text)) continue;
    const key = describePrivateKey(text, path);
    if (key) found.set(key.fingerprint, key);
  }
  if (options.agentSocket) {
    for (const key of await agentKeys(options.agentSocket)) {
      const fingerprint = key.fingerprint('sha256').toString();
      const known = found.get(fingerprint);
      if (known) known.inAgent = true;
      else
        found.set(fingerprint, {
          fingerprint,
          type: key.type,
          comment: key.comment ?? '',
          encrypted: false,
          inAgent: true,
        });
    }
  }
  return [...found.values()];
}

function describePrivateKey(text: string, path: string): SshKeyChoice | undefined {
  try {
    const key = sshpk.parsePrivateKey(text, 'auto');
    return {
      fingerprint: key.fingerprint('sha256').toString(),
      type: key.type,
      comment: key.comment ?? '',
      path,
      encrypted: false,
      inAgent: false,
    };
  } catch (err) {
    if ((err as Error).name !== 'KeyEncryptedError') return undefined;
    // Encrypted: the fingerprint comes from the public half beside it.
    try {
      const pub = sshpk.parseKey(readFileSync(`${path}.pub`, 'utf8'), 'ssh');
      return {
        fingerprint: pub.fingerprint('sha256').toString(),
        type: pub.type,
        comment: pub.comment ?? '',
        path,
        encrypted: true,
        inAgent: false,
      };
    } catch {
      return {
        fingerprint: `(encrypted, no ${path}.pub)`,
        type: '?',
        comment: '',
        path,
        encrypted: true,
        inAgent: false,
      };
    }
  }
}

/** The agent's keys; none when it cannot be reached or does not answer in 2 s. */
async function agentKeys(socketPath: string): Promise<sshpk.Key[]> {
  try {
    const agent = await connectAgent(socketPath, 2000);
    return await agent.listKeys();
  } catch {
    return [];
  }
}

/** Throws with one line when `passphrase` does not open the key. */
export function checkPassphrase(text: string, passphrase: string): void {
  try {
    sshpk.parsePrivateKey(text, 'auto', { passphrase });
  } catch {
    throw new Error('that passphrase does not open the key; try again');
  }
}

export function isEncryptedKey(text: string): boolean {
  try {
    sshpk.parsePrivateKey(text, 'auto');
    return false;
  } catch (err) {
    return (err as Error).name === 'KeyEncryptedError';
  }
}

/** PEM or OpenSSH private key text, encrypted or not (a public key, YAML or anything else is not). */
export function isPrivateKey(text: string): boolean {
  try {
    sshpk.parsePrivateKey(text, 'auto');
    return true;
  } catch (err) {
    return (err as Error).name === 'KeyEncryptedError';
  }
}
