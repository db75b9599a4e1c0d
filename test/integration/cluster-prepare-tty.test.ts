/**
 * The confirmation prompt of `ccm cluster prepare`, answered by a person in a real terminal (tmux).
 */
import { cpSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/tmp.js';

const fixture = fileURLToPath(new URL('../fixtures/cluster/kubeadm-v1.36.3', import.meta.url));
const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));
const KCM = 'etc/kubernetes/manifests/kube-controller-manager.yaml';

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Runs `cluster prepare` in a tmux terminal, answers the prompt with `answer`, returns exit status and screen. */
async function answerPrompt(answer: string) {
  const root = tempDir('ccm-tty-root-');
  cpSync(fixture, root, { recursive: true });
  const status = join(root, 'exit-status');
  const session = `ccm-tty-${process.pid}-${Math.random().toString(16).slice(2, 8)}`;
  const command = `'${process.execPath}' '${bin}' cluster prepare --root '${root}' --no-restart; echo $? > '${status}'; sleep 60`;
  await execa('tmux', ['new-session', '-d', '-s', session, '-x', '160', '-y', '60', command]);
  const screen = async () =>
    (await execa('tmux', ['capture-pane', '-p', '-t', session, '-S', '-200'])).stdout;
  try {
    await waitFor('the prompt', async () =>
      (await screen()).includes('Apply these changes?') ? true : undefined,
    );
    await execa('tmux', ['send-keys', '-t', session, answer, 'Enter']);
    const code = await waitFor('the exit status', async () =>
      existsSync(status) && readFileSync(status, 'utf8').trim() !== ''
        ? Number(readFileSync(status, 'utf8'))
        : undefined,
    );
    return { code, screen: await screen(), root };
  } finally {
    await execa('tmux', ['kill-session', '-t', session], { reject: false });
  }
}

describe('confirming in a terminal', () => {
  it('applies when the person answers yes', async () => {
    const { code, screen, root } = await answerPrompt('y');
    expect(screen).toContain('+    - --cloud-provider=external');
    expect(code).toBe(0);
    expect(readFileSync(join(root, KCM), 'utf8')).toContain('    - --cloud-provider=external\n');
  });

  it('writes nothing when the person answers no, and exits 2', async () => {
    const { code, screen, root } = await answerPrompt('n');
    expect(code).toBe(2);
    expect(screen).toContain('ccm: nothing changed: the changes were not confirmed');
    expect(readFileSync(join(root, KCM))).toEqual(readFileSync(join(fixture, KCM)));
  });
});
