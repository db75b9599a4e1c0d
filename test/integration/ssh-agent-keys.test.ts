/**
 * The SSH keys `secret create` offers (Triton): the private keys of ~/.ssh and the keys a running
 * ssh-agent holds, merged by fingerprint, against a real OpenSSH ssh-agent.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { findSshKeys } from '../../src/secrets/ssh-keys.js';
import { until } from '../helpers/run.js';
import { tempDir } from '../helpers/tmp.js';

let agent: ChildProcess | undefined;
afterEach(() => {
  agent?.kill();
  agent = undefined;
});

async function startAgent(dir: string): Promise<string> {
  const socket = join(dir, 'agent.sock');
  agent = spawn('ssh-agent', ['-D', '-a', socket], { stdio: 'ignore' });
  // The socket can exist a moment before the agent answers on it (seen at load 12): wait until
  // `ssh-add -l` reaches it (exit 2 is "cannot connect"; 1 is "no identities").
  await until(
    'the agent answering',
    async () =>
      existsSync(socket) &&
      (await execa('ssh-add', ['-l'], { env: { SSH_AUTH_SOCK: socket }, reject: false })).exitCode !== 2,
  );
  return socket;
}

async function keygen(path: string, type: string, comment: string, passphrase = ''): Promise<string> {
  await execa('ssh-keygen', ['-q', '-t', type, '-N', passphrase, '-C', comment, '-f', path]);
  return (await execa('ssh-keygen', ['-l', '-f', `${path}.pub`])).stdout.split(' ')[1] as string;
}

describe('the SSH keys offered for a Triton Secret', () => {
  it("lists ~/.ssh's keys and the agent's, marks the ones in both, and a key only the agent has no file", async () => {
    const home = tempDir('ccm-agent-home-');
    const ssh = join(home, '.ssh');
    mkdirSync(ssh, { mode: 0o700 });
    const elsewhere = tempDir('ccm-agent-keys-');
    const both = await keygen(join(ssh, 'id_ed25519'), 'ed25519', 'in-both');
    const fileOnly = await keygen(join(ssh, 'id_rsa'), 'rsa', 'file-only', 'a passphrase');
    const agentOnly = await keygen(join(elsewhere, 'deploy'), 'ecdsa', 'agent-only');
    const socket = await startAgent(elsewhere);
    const env = { SSH_AUTH_SOCK: socket };
    await execa('ssh-add', ['-q', join(ssh, 'id_ed25519')], { env });
    await execa('ssh-add', ['-q', join(elsewhere, 'deploy')], { env });

    const keys = await findSshKeys({ dir: ssh, agentSocket: socket });
    const byFingerprint = Object.fromEntries(keys.map((k) => [k.fingerprint, k]));
    expect(Object.keys(byFingerprint).sort()).toEqual([both, fileOnly, agentOnly].sort());
    expect(byFingerprint[both]).toMatchObject({
      type: 'ed25519',
      comment: 'in-both',
      path: join(ssh, 'id_ed25519'),
      inAgent: true,
      encrypted: false,
    });
    expect(byFingerprint[fileOnly]).toMatchObject({
      type: 'rsa',
      comment: 'file-only',
      path: join(ssh, 'id_rsa'),
      inAgent: false,
      encrypted: true,
    });
    expect(byFingerprint[agentOnly]).toMatchObject({ type: 'ecdsa', comment: 'agent-only', inAgent: true });
    expect(byFingerprint[agentOnly]?.path).toBeUndefined();
  });

  it('an agent socket nobody listens on: the files alone, at once', async () => {
    const home = tempDir('ccm-agent-home-');
    const fingerprint = await keygen(join(home, 'id_ed25519'), 'ed25519', 'alone');
    const started = Date.now();
    const keys = await findSshKeys({ dir: home, agentSocket: join(home, 'no-agent.sock') });
    expect(keys.map((k) => k.fingerprint)).toEqual([fingerprint]);
    // Not a speed test: a hang (no timeout anywhere on this path) would end the test at 60 s instead.
    expect(Date.now() - started).toBeLessThan(30_000);
  });
});
