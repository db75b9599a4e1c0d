/**
 * localHost on temp roots, and the sshHost remote scripts run by the local POSIX sh (the same text
 * ssh sends to a node), including the fallback for nodes without GNU `chmod --reference`.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  isTempFile,
  localHost,
  parseProcessLines,
  REMOTE_SCRIPTS,
  resolveUnder,
  shQuote,
} from '../../../src/cluster/host.js';
import { tempDir } from '../../helpers/tmp.js';

let root: string;
beforeEach(() => {
  root = tempDir('ccm-host-');
});

const BINARY = Buffer.from([...Array.from({ length: 256 }, (_, i) => i), 13, 10, 13, 10, 0]);
const CRLF = Buffer.from('apiVersion: v1\r\nkind: Pod\r\n\r\n  - --flag=a b\r\n');

function mode(path: string): number {
  return statSync(path).mode & 0o7777;
}

describe('resolveUnder / shQuote', () => {
  it('keeps paths under the root, even with ..', () => {
    expect(resolveUnder('/srv/r', '/etc/kubernetes/x.yaml')).toBe('/srv/r/etc/kubernetes/x.yaml');
    expect(resolveUnder('/srv/r', '/../../etc/passwd')).toBe('/srv/r/etc/passwd');
    expect(resolveUnder('/', '/etc//a/../b')).toBe('/etc/b');
    expect(() => resolveUnder('/', 'etc/b')).toThrow(/absolute/);
  });

  it('quotes every byte sequence for sh', () => {
    for (const word of ["it's", 'a "b" $c `d` \\e', '', "'", "''\n'x", '-n', '*?[a]']) {
      const out = execFileSync('sh', ['-c', `printf %s ${shQuote(word)}`]).toString();
      expect(out).toBe(word);
    }
  });
});

/**
 * A /proc under the root: processes as the kernel shows them (comm cut to 15 bytes, cmdline
 * NUL-terminated words), and a pid whose comm the stand-in does not write.
 */
function fakeProc(): void {
  const proc = (pid: number, cmdline: string, comm?: string) => {
    mkdirSync(join(root, 'proc', String(pid)), { recursive: true });
    writeFileSync(join(root, 'proc', String(pid), 'cmdline'), cmdline);
    if (comm !== undefined) writeFileSync(join(root, 'proc', String(pid), 'comm'), `${comm}\n`);
  };
  proc(1, '/sbin/init\0', 'init');
  proc(2, '', 'kthreadd');
  proc(101, 'kube-controller-manager\0--cloud-provider=external\0--a=b c\0', 'kube-controller');
  proc(102, 'bash\0-c\0kubelet\0', 'bash');
  proc(103, '/usr/bin/kubelet\0--node-ip=10.0.0.1\0\0--v=2\0');
  proc(104, 'kubelet-helper\0', 'kubelet-helper');
  proc(105, 'kubelet\0', 'kubelet');
  writeFileSync(join(root, 'proc', 'uptime'), '1 1\n');
}

const PROCESSES = [
  { pid: 101, argv: ['kube-controller-manager', '--cloud-provider=external', '--a=b c'] },
  { pid: 103, argv: ['/usr/bin/kubelet', '--node-ip=10.0.0.1', '', '--v=2'] },
  { pid: 105, argv: ['kubelet'] },
];

describe('localHost', () => {
  it('finds processes by their program (argv[0] basename) in /proc under the root', async () => {
    const host = localHost(root);
    expect(await host.processes(['kubelet'])).toEqual([]);
    fakeProc();
    const found = await host.processes(['kubelet', 'kube-controller-manager']);
    expect(found.sort((a, b) => a.pid - b.pid)).toEqual(PROCESSES);
  });

  it('reads bytes, and undefined for a missing file or folder', async () => {
    const host = localHost(root);
    mkdirSync(join(root, 'etc'));
    writeFileSync(join(root, 'etc/a'), BINARY);
    expect((await host.read('/etc/a'))?.equals(BINARY)).toBe(true);
    expect(await host.read('/etc/missing')).toBeUndefined();
    expect(await host.read('/nope/missing')).toBeUndefined();
    expect(await host.read('/etc/a/under-a-file')).toBeUndefined();
    await expect(host.read('/etc')).rejects.toThrow(/EISDIR/);
  });

  it('replaces a file atomically, keeping its mode, and leaves no temp file', async () => {
    const host = localHost(root);
    const dir = join(root, 'etc/kubernetes/manifests');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'kube-apiserver.yaml'), 'old');
    chmodSync(join(dir, 'kube-apiserver.yaml'), 0o640);
    await host.writeAtomic('/etc/kubernetes/manifests/kube-apiserver.yaml', CRLF, 0o600);
    expect(readFileSync(join(dir, 'kube-apiserver.yaml')).equals(CRLF)).toBe(true);
    expect(mode(join(dir, 'kube-apiserver.yaml'))).toBe(0o640);
    expect(readdirSync(dir)).toEqual(['kube-apiserver.yaml']);
  });

  it('creates a new file with its parents and the given mode (0644 by default)', async () => {
    const host = localHost(root);
    await host.writeAtomic('/var/lib/kubelet/kubeadm-flags.env', BINARY, 0o600);
    await host.writeAtomic('/etc/default/kubelet', Buffer.from('KUBELET_EXTRA_ARGS=\n'));
    expect(readFileSync(join(root, 'var/lib/kubelet/kubeadm-flags.env')).equals(BINARY)).toBe(true);
    expect(mode(join(root, 'var/lib/kubelet/kubeadm-flags.env'))).toBe(0o600);
    expect(mode(join(root, 'etc/default/kubelet'))).toBe(0o644);
    expect(await host.list('/var/lib/kubelet')).toEqual(['kubeadm-flags.env']);
  });

  it('writes an empty file', async () => {
    const host = localHost(root);
    await host.writeAtomic('/e', Buffer.alloc(0));
    expect((await host.read('/e'))?.length).toBe(0);
  });

  it('removes the temp file when the write fails', async () => {
    const host = localHost(root);
    mkdirSync(join(root, 'etc'));
    // Data that cannot be written fails after the temp file was created.
    await expect(host.writeAtomic('/etc/new', 42 as unknown as Buffer)).rejects.toThrow();
    writeFileSync(join(root, 'etc/old'), 'old');
    await expect(host.writeAtomic('/etc/old', { length: 1 } as unknown as Buffer)).rejects.toThrow();
    expect(readFileSync(join(root, 'etc/old'), 'utf8')).toBe('old');
    rmSync(join(root, 'etc/old'));
    expect(readdirSync(join(root, 'etc'))).toEqual([]);
    // A folder is not replaced by a file.
    mkdirSync(join(root, 'etc/dir'));
    await expect(host.writeAtomic('/etc/dir', BINARY)).rejects.toThrow(/not a regular file/);
    expect(readdirSync(join(root, 'etc'))).toEqual(['dir']);
  });

  it('does not follow symlinks on a fake root', async () => {
    const host = localHost(root);
    execFileSync('ln', ['-s', '/etc/hostname', join(root, 'link')]);
    await expect(host.writeAtomic('/link', BINARY)).rejects.toThrow(/symbolic link/);
  });

  it('lists names (dot-files too) and [] for a missing folder; removes files', async () => {
    const host = localHost(root);
    mkdirSync(join(root, 'd'));
    writeFileSync(join(root, 'd/b'), '');
    writeFileSync(join(root, 'd/.a'), '');
    expect(await host.list('/d')).toEqual(['.a', 'b']);
    expect(await host.list('/missing')).toEqual([]);
    await host.remove('/d/b');
    await host.remove('/d/b');
    await host.remove('/missing/b');
    expect(await host.list('/d')).toEqual(['.a']);
  });

  it('runs programs without throwing for a non-zero exit', async () => {
    const host = localHost(root);
    expect(await host.run(['sh', '-c', 'printf "a b\\n"; echo e >&2; exit 3'])).toEqual({
      exitCode: 3,
      stdout: 'a b\n',
      stderr: 'e\n',
    });
    expect((await host.run(['ccm-no-such-program'])).exitCode).toBe(127);
  });

  it('recognises its own temp files', () => {
    expect(isTempFile('.kube-apiserver.yaml.ccm-tmp-0a1b2c3d4e5f', 'kube-apiserver.yaml')).toBe(true);
    expect(isTempFile('.kube-apiserver.yaml.ccm-tmp-0a1b2c3d4e5f')).toBe(true);
    expect(isTempFile('kube-apiserver.yaml')).toBe(false);
  });
});

/** Runs one remote script the way a node does: `sh -c SCRIPT sh ARGS...`. */
function script(name: keyof typeof REMOTE_SCRIPTS, args: string[], input?: Buffer, env?: NodeJS.ProcessEnv) {
  const r = spawnSync('sh', ['-c', REMOTE_SCRIPTS[name], 'sh', ...args], {
    input: input ?? Buffer.alloc(0),
    env: env ?? process.env,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr.toString() };
}

describe('remote scripts on the local sh', () => {
  it('write refuses a short stream: the target stays as it was, no temp file remains', () => {
    const target = join(root, 'kubelet.env');
    writeFileSync(target, 'old');
    const r = script('write', [target, '0644', 'abc', String(BINARY.length + 1), 'no-follow'], BINARY);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/received 261 of 262 bytes/);
    expect(readFileSync(target, 'utf8')).toBe('old');
    expect(readdirSync(root)).toEqual(['kubelet.env']);
  });

  it('write keeps the mode through the cp -p fallback when chmod has no --reference', () => {
    const bin = join(root, 'bin');
    mkdirSync(bin);
    // A chmod like BusyBox's: no --reference.
    writeFileSync(
      join(bin, 'chmod'),
      '#!/bin/sh\ncase "$1" in --reference=*) echo "chmod: unrecognized option" >&2; exit 1;; esac\nexec /bin/chmod "$@"\n',
      { mode: 0o755 },
    );
    const target = join(root, 'unit.service');
    writeFileSync(target, 'old contents, longer than the new ones');
    chmodSync(target, 0o604);
    const env = { ...process.env, PATH: `${bin}:${process.env.PATH}` };
    const r = script('write', [target, '0644', 'abc', String(CRLF.length), 'no-follow'], CRLF, env);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(readFileSync(target).equals(CRLF)).toBe(true);
    expect(mode(target)).toBe(0o604);
    expect(readdirSync(root).sort()).toEqual(['bin', 'unit.service']);
  });

  it('read tells a missing file from an unreadable one', () => {
    expect(script('read', [join(root, 'nope/x')]).status).toBe(3);
    mkdirSync(join(root, 'd'));
    expect(script('read', [join(root, 'd')]).status).toBe(1);
  });

  it("processes prints the candidates' command lines, which parse to the same processes as localHost finds", () => {
    expect(script('processes', [join(root, 'proc'), 'kubelet']).stdout.toString()).toBe('');
    fakeProc();
    const r = script('processes', [join(root, 'proc'), 'kubelet', 'kube-controller-manager']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const found = parseProcessLines(r.stdout.toString(), ['kubelet', 'kube-controller-manager']);
    expect(found.sort((a, b) => a.pid - b.pid)).toEqual(PROCESSES);
  });

  it('list prints every name NUL-terminated, even odd ones', () => {
    const names = ['a b', "it's", '.hidden', '..dots', 'new\nline', '-n'];
    for (const n of names) writeFileSync(join(root, n), '');
    const r = script('list', [root]);
    expect(r.status).toBe(0);
    expect(r.stdout.toString().split('\0').filter(Boolean).sort()).toEqual([...names].sort());
    expect(script('list', [join(root, 'missing')]).status).toBe(3);
    expect(script('list', [join(root, 'a b')]).status).toBe(1);
  });
});
