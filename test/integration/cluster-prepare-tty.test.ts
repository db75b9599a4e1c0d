/**
 * The confirmation prompt of `ccm cluster prepare`, answered by a person in a real terminal (tmux).
 */
import { cpSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Terminal } from '../helpers/terminal.js';
import { tempDir } from '../helpers/tmp.js';

const fixture = fileURLToPath(new URL('../fixtures/cluster/kubeadm-v1.36.3', import.meta.url));
const KCM = 'etc/kubernetes/manifests/kube-controller-manager.yaml';

/**
 * Runs `cluster prepare` on a copy of the fixture in a terminal; once it asks, `atPrompt` answers
 * (the terminal is closed after).
 */
async function atPrompt<T>(rootPrefix: string, answer: (terminal: Terminal, root: string) => Promise<T>) {
  const root = tempDir(rootPrefix);
  cpSync(fixture, root, { recursive: true });
  const terminal = await Terminal.open(['cluster', 'prepare', '--root', root, '--no-restart'], {
    width: 160,
    height: 60,
  });
  try {
    await terminal.waitFor('Apply these changes?');
    return await answer(terminal, root);
  } finally {
    await terminal.close();
  }
}

/** Answers the prompt with `answer`; returns the exit status, the screen and the root. */
const answerPrompt = (answer: string) =>
  atPrompt('ccm-tty-root-', async (terminal, root) => {
    await terminal.type(answer, 'Enter');
    const code = await terminal.exit();
    return { code, screen: await terminal.screen(), root };
  });

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

  it('Ctrl-C at the prompt: one line, exit 130, nothing written', async () => {
    const { code, screen, root } = await answerPrompt('C-c');
    expect(code).toBe(130);
    expect(screen).toContain('ccm: cancelled at the prompt (Ctrl-C); nothing was written');
    expect(screen).not.toContain('force closed');
    expect(readFileSync(join(root, KCM))).toEqual(readFileSync(join(fixture, KCM)));
  });

  it('holds its credentials with core dumps off: RLIMIT_CORE 0, soft and hard', async () => {
    await atPrompt('ccm-tty-core-', async (terminal, root) => {
      // The Node process whose arguments name this root (not the shell that started it).
      const pid = readdirSync('/proc').find((p) => {
        if (!/^\d+$/.test(p)) return false;
        let argv: string[];
        try {
          argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
        } catch {
          return false; // a process that ended while /proc was read
        }
        return argv[0] === process.execPath && argv.includes(root);
      });
      expect(pid).toBeDefined();
      const limits = readFileSync(`/proc/${pid}/limits`, 'utf8');
      expect(limits).toMatch(/^Max core file size\s+0\s+0\s+bytes\s*$/m);
      await terminal.type('n', 'Enter');
      expect(await terminal.exit()).toBe(2);
    });
  });
});
