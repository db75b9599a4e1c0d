/** Runs the built CLI in a real terminal (a detached tmux session) and reads the screen back. */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';

const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));

export interface TerminalRun {
  code: number;
  /** Every line the terminal shows or scrolled past, trailing blank lines dropped. */
  screen: string;
  /** The same with the terminal's colour escapes. */
  coloured: string;
}

export async function runInTerminal(
  args: string[],
  size: { width: number; height: number },
  timeoutMs = 90_000,
): Promise<TerminalRun> {
  const dir = mkdtempSync(join(tmpdir(), 'ccm-tty-'));
  const status = join(dir, 'exit-status');
  const session = `ccm-tty-${process.pid}-${Math.random().toString(16).slice(2, 8)}`;
  const quoted = args.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  // A person's terminal: CI runs set CI=true, which makes chalk drop colour even on a TTY.
  const command = `env -u CI '${process.execPath}' '${bin}' ${quoted}; echo $? > '${status}'; sleep 600`;
  await execa('tmux', [
    'new-session',
    '-d',
    '-s',
    session,
    '-x',
    String(size.width),
    '-y',
    String(size.height),
    command,
  ]);
  try {
    const deadline = Date.now() + timeoutMs;
    while (!(existsSync(status) && readFileSync(status, 'utf8').trim() !== '')) {
      if (Date.now() > deadline) throw new Error(`ccm ${args.join(' ')} did not finish in the terminal`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const capture = async (...flags: string[]) =>
      (await execa('tmux', ['capture-pane', '-p', ...flags, '-t', session, '-S', '-'])).stdout.replace(
        /\n+$/,
        '',
      );
    return {
      code: Number(readFileSync(status, 'utf8')),
      screen: await capture(),
      coloured: await capture('-e'),
    };
  } finally {
    await execa('tmux', ['kill-session', '-t', session], { reject: false });
    rmSync(dir, { recursive: true, force: true });
  }
}
