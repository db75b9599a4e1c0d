/**
 * An API server that accepts connections and never answers: `--request-timeout` (kubectl's flag)
 * bounds each request, and on a terminal `nodes list` and `doctor` say what they are waiting for.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { ccm } from '../helpers/cli.js';
import { Terminal } from '../helpers/terminal.js';
import { tempDir } from '../helpers/tmp.js';

let cp: ControlPlane;
let silent: Server;
let kubeconfig: string;
let url: string;
const sockets = new Set<Socket>();

beforeAll(async () => {
  cp = await startControlPlane();
  silent = createServer((socket) => {
    sockets.add(socket); // accepted, never answered
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const { port } = silent.address() as { port: number };
  url = `https://127.0.0.1:${port}`;
  kubeconfig = join(tempDir('ccm-silent-'), 'kubeconfig');
  writeFileSync(kubeconfig, readFileSync(cp.kubeconfigPath, 'utf8').replace(cp.server, url));
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => silent?.close(r));
  await cp?.stop();
});

const list = ['nodes', 'list', '--provider', 'cloudlycke', '--cloud-config', '/dev/null'];

describe('--request-timeout', () => {
  it('ends a request the server never answers after that long, with one line naming the flag', async () => {
    const started = Date.now();
    const run = await ccm([...list, '--kubeconfig', kubeconfig, '--request-timeout', '2s']);
    const took = Date.now() - started;
    expect(run.exitCode).not.toBe(0);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain(
      `cannot reach the Kubernetes API server at ${url} (no answer within 2s, the --request-timeout)`,
    );
    expect(took).toBeLessThan(20_000);
  });

  it("without the flag, ends after ccm's own 30 s, as docs/secrets.md says (it took 60 s)", async () => {
    const started = Date.now();
    const run = await ccm([...list, '--kubeconfig', kubeconfig]);
    const took = Date.now() - started;
    expect(run.exitCode).not.toBe(0);
    expect(run.stderr).toContain(`cannot reach the Kubernetes API server at ${url} (no answer within 30s)`);
    expect(took).toBeGreaterThanOrEqual(30_000);
    expect(took).toBeLessThan(40_000);
  }, 70_000);

  it.each([['abc'], ['-1s'], ['5x']])('refuses %s with one line, exit 2', async (value) => {
    const run = await ccm([...list, '--kubeconfig', kubeconfig, '--request-timeout', value]);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toMatch(/--request-timeout.*expected a duration such as 30s or 2m, or 0 for no limit/);
  });

  it('takes a whole number as seconds, as kubectl does', async () => {
    const run = await ccm([...list, '--kubeconfig', kubeconfig, '--request-timeout', '1']);
    expect(run.stderr).toContain('no answer within 1s');
  });
});

describe('on a terminal', () => {
  it.each([
    ['nodes list', list, 'no answer within 6s'],
    ['doctor', ['doctor'], '1 failed'],
  ])('%s says what it is waiting for, then ends at the request timeout', async (_name, args, end) => {
    const terminal = await Terminal.open([...args, '--kubeconfig', kubeconfig, '--request-timeout', '6s'], {
      width: 120,
      height: 30,
    });
    try {
      await terminal.waitFor(`waiting for the Kubernetes API server at ${url}`);
      expect(await terminal.exit()).not.toBe(0);
      const screen = await terminal.screen({ joined: true });
      expect(screen).toContain(end);
      expect(screen).not.toContain('waiting for the Kubernetes API server');
    } finally {
      await terminal.close();
    }
  });
});
