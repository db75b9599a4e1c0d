/**
 * A write interrupted mid-way (the writing process SIGKILLed) leaves the target either old or new,
 * never partial: a child process rewrites a multi-megabyte file with the compiled localHost, alternating
 * two known contents, and is killed at random moments. At most dot-temp files remain beside the target
 * (the kubelet ignores dot-files in /etc/kubernetes/manifests).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { isTempFile } from '../../src/cluster/host.js';

const writer = fileURLToPath(new URL('../fixtures/cluster/atomic-writer.mjs', import.meta.url));
const compiled = fileURLToPath(new URL('../../dist/cluster/host.js', import.meta.url));
const source = fileURLToPath(new URL('../../src/cluster/host.ts', import.meta.url));

const ROUNDS = 30;
let dir: string;
let a: Buffer;
let b: Buffer;

beforeAll(() => {
  let stale = true;
  try {
    stale = statSync(compiled).mtimeMs < statSync(source).mtimeMs;
  } catch {
    // not built
  }
  if (stale) throw new Error(`${compiled} is missing or older than its source: run "npm run build" first`);
  dir = mkdtempSync(join(tmpdir(), 'ccm-atomic-'));
  // Two contents of different sizes, both with CRLF and NUL bytes, that share no prefix.
  a = Buffer.concat([Buffer.from('A\r\n\0'), randomBytes(8 * 1024 * 1024)]);
  b = Buffer.concat([Buffer.from('B\r\n\0'), randomBytes(13 * 1024 * 1024)]);
  writeFileSync(join(dir, 'content-a'), a);
  writeFileSync(join(dir, 'content-b'), b);
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function startWriter(target: string): { child: ChildProcess; ready: Promise<void>; writes: () => number } {
  const child = spawn(process.execPath, [writer, target, join(dir, 'content-a'), join(dir, 'content-b')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (c: Buffer) => {
    out += c.toString();
  });
  child.stderr?.on('data', (c: Buffer) => {
    err += c.toString();
  });
  const ready = new Promise<void>((resolve, reject) => {
    const check = () => {
      if (out.startsWith('ready\n')) resolve();
    };
    child.stdout?.on('data', check);
    child.once('exit', (code, signal) => reject(new Error(`writer exited (${code ?? signal}): ${err}`)));
  });
  return { child, ready, writes: () => out.split('\n').filter((l) => l.startsWith('wrote ')).length };
}

it(`a SIGKILLed writer leaves the file old or new, never partial (${ROUNDS} rounds)`, async () => {
  const folder = join(dir, 'etc/kubernetes/manifests');
  mkdirSync(folder, { recursive: true });
  const target = join(folder, 'kube-apiserver.yaml');
  writeFileSync(target, a, { mode: 0o600 });

  let midWrite = 0;
  let completed = 0;
  const seen = new Set<string>();
  for (let round = 0; round < ROUNDS; round++) {
    const w = startWriter(target);
    await w.ready;
    const exited = new Promise((resolve) => w.child.once('exit', resolve));
    await new Promise((r) => setTimeout(r, 5 + Math.random() * 250));
    w.child.kill('SIGKILL');
    await exited;

    const now = readFileSync(target);
    const which = now.equals(a) ? 'a' : now.equals(b) ? 'b' : undefined;
    expect(which, `round ${round}: target is neither content (${now.length} bytes)`).toBeDefined();
    seen.add(which ?? '');
    expect(statSync(target).mode & 0o777).toBe(0o600);

    const others = readdirSync(folder).filter((n) => n !== 'kube-apiserver.yaml');
    for (const n of others) {
      expect(n.startsWith('.'), `round ${round}: ${n} is not a dot-file`).toBe(true);
      expect(isTempFile(n, 'kube-apiserver.yaml'), `round ${round}: unexpected ${n}`).toBe(true);
      rmSync(join(folder, n));
    }
    if (others.length > 0) midWrite++;
    completed += w.writes();
  }
  // The kills really landed in the middle of writes, and writes really completed in between.
  expect(midWrite).toBeGreaterThan(0);
  expect(completed).toBeGreaterThan(0);
  expect(seen).toEqual(new Set(['a', 'b']));
}, 180_000);
