/**
 * Starts a real OpenSSH server (Debian's openssh-server, /usr/sbin/sshd) on a free loopback port for
 * the `cluster prepare --ssh` tests, with a generated host key, a generated client key authorised for
 * the current user, and everything (config, keys, pid file) in one temp folder that stop() removes.
 * sshd runs under test/controlplane/watchdog.sh, so it also goes away when the test process dies.
 *
 * Nothing is installed here: .ci/run installs openssh-server when /usr/sbin/sshd is missing.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './harness.js';

export const SSHD = '/usr/sbin/sshd';
const here = fileURLToPath(new URL('.', import.meta.url));

export interface Sshd {
  port: number;
  /** "user@127.0.0.1" for the user running the tests (root in CI). */
  target: string;
  /** Client arguments: port, identity, no host key checking, quiet. */
  sshArgs: string[];
  dir: string;
  stop(): Promise<void>;
}

export { freePort };

function keygen(file: string): void {
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'ccm-test', '-f', file], {
    stdio: 'ignore',
  });
}

/**
 * `addresses`: loopback addresses to listen on (default 127.0.0.1); several let one sshd stand for
 * several nodes, e.g. root@127.0.0.1 and root@127.0.0.2.
 */
export async function startSshd(addresses: string[] = ['127.0.0.1']): Promise<Sshd> {
  if (!existsSync(SSHD)) {
    throw new Error(
      `${SSHD} is missing: install Debian's openssh-server (apt-get install -y openssh-server openssh-client; .ci/run does this)`,
    );
  }
  const dir = mkdtempSync(join(tmpdir(), 'ccm-sshd-'));
  let child: ChildProcess | undefined;
  const stop = async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child?.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child?.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    keygen(join(dir, 'host_ed25519'));
    keygen(join(dir, 'client_ed25519'));
    copyFileSync(join(dir, 'client_ed25519.pub'), join(dir, 'authorized_keys'));
    // Debian's sshd refuses to start without its privilege separation folder (systemd usually makes it).
    if (process.getuid?.() === 0) mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });

    const port = await freePort();
    const config = join(dir, 'sshd_config');
    writeFileSync(
      config,
      [
        `Port ${port}`,
        ...addresses.map((a) => `ListenAddress ${a}`),
        `HostKey ${join(dir, 'host_ed25519')}`,
        `PidFile ${join(dir, 'sshd.pid')}`,
        `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
        'PermitRootLogin prohibit-password',
        'PubkeyAuthentication yes',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'StrictModes no',
        'UsePAM no',
        'PrintMotd no',
        'PrintLastLog no',
        'AcceptEnv none',
        'MaxStartups 100:30:200',
        'MaxSessions 50',
        'LogLevel ERROR',
        '',
      ].join('\n'),
    );

    child = spawn('bash', [join(here, 'watchdog.sh'), String(process.pid), SSHD, '-D', '-e', '-f', config], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.unref();
    let log = '';
    child.stderr?.on('data', (c: Buffer) => {
      log = (log + c.toString()).slice(-4000);
    });

    const target = `${userInfo().username}@${addresses[0]}`;
    const sshArgs = [
      '-p',
      String(port),
      '-i',
      join(dir, 'client_ed25519'),
      '-o',
      'IdentitiesOnly=yes',
      '-o',
      'StrictHostKeyChecking=no',
      '-o',
      'UserKnownHostsFile=/dev/null',
      '-o',
      'LogLevel=ERROR',
    ];

    // Ready when a real login works (the listener alone says nothing about keys and config).
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`sshd exited with ${child.exitCode}: ${log}`);
      try {
        execFileSync('ssh', [...sshArgs, '-o', 'BatchMode=yes', '-o', 'ConnectTimeout=2', target, 'true'], {
          stdio: 'ignore',
        });
        break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`sshd not ready after 20s: ${log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return { port, target, sshArgs, dir, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
