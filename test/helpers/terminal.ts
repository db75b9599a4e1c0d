/**
 * The built CLI in a real terminal (a detached tmux session): wait for text on the screen, type, read
 * the exit status and the screen back.
 *
 * Every wait is for a condition, with a margin of minutes: on a quiet machine the CLI shows its first
 * screen within a second, but on a loaded one (two busy processes per core, `npm run test:stress`) a
 * Node start alone can take tens of seconds.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';

const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));
const MARGIN_MS = 180_000;

export interface TerminalRun {
  code: number;
  /** Every line the terminal shows or scrolled past, trailing blank lines dropped. */
  screen: string;
  /** The same with the terminal's colour escapes. */
  coloured: string;
}

export interface TerminalOptions {
  width: number;
  height: number;
  /** Set (a string) or removed (undefined) in the CLI's environment. */
  env?: Record<string, string | undefined>;
  /** The Node that runs bin/run.js; default this one. */
  node?: string;
}

const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

export class Terminal {
  private constructor(
    private readonly session: string,
    private readonly dir: string,
  ) {}

  private get status(): string {
    return join(this.dir, 'exit-status');
  }

  static async open(args: string[], options: TerminalOptions): Promise<Terminal> {
    const dir = mkdtempSync(join(tmpdir(), 'ccm-tty-'));
    const status = join(dir, 'exit-status');
    const session = `ccm-tty-${process.pid}-${Math.random().toString(16).slice(2, 8)}`;
    // A person's terminal: CI runs set CI=true, which makes chalk drop colour even on a TTY.
    const env = { CI: undefined, ...options.env };
    // env(1) takes its -u options before the first NAME=VALUE.
    const envArgs = [
      ...Object.entries(env).flatMap(([k, v]) => (v === undefined ? [`-u ${k}`] : [])),
      ...Object.entries(env).flatMap(([k, v]) => (v === undefined ? [] : [`${k}=${quote(v)}`])),
    ];
    // The shell outlives a Ctrl-C typed into the terminal (its trap), to write the CLI's exit status.
    const node = quote(options.node ?? process.execPath);
    const command = `trap true INT; env ${envArgs.join(' ')} ${node} ${quote(bin)} ${args.map(quote).join(' ')}; echo $? > ${quote(status)}; sleep 3600`;
    await tmux(dir, [
      'new-session',
      '-d',
      '-s',
      session,
      '-x',
      String(options.width),
      '-y',
      String(options.height),
      command,
    ]);
    return new Terminal(session, dir);
  }

  /** The screen and what scrolled past; `joined` reads a wrapped line as one, as the person saw it. */
  async screen(flags: { joined?: boolean; coloured?: boolean } = {}): Promise<string> {
    const extra = [...(flags.joined ? ['-J'] : []), ...(flags.coloured ? ['-e'] : [])];
    const { stdout } = await tmux(this.dir, ['capture-pane', '-p', ...extra, '-t', this.session, '-S', '-']);
    return stdout.replace(/\n+$/, '');
  }

  /** Waits until `text` is on the screen (`times` times: a question asked again); returns the screen (joined). */
  async waitFor(text: string, timeoutMs = MARGIN_MS, times = 1): Promise<string> {
    return poll(timeoutMs, async () => {
      const now = await this.screen({ joined: true });
      return now.split(text).length > times ? now : undefined;
    }).catch(async () => {
      throw new Error(
        `timed out waiting for "${text}"${times > 1 ? ` (${times} times)` : ''}; the screen:\n${await this.screen({ joined: true })}`,
      );
    });
  }

  /** Types each key: names such as Enter or Down as keys, anything else literally. */
  async type(...keys: string[]): Promise<void> {
    for (const key of keys) {
      const literal = !(key.length > 1 && /^[A-Z]/.test(key));
      await tmux(this.dir, ['send-keys', '-t', this.session, ...(literal ? ['-l', key] : [key])]);
    }
  }

  /** Waits for the CLI to exit; returns its exit status. */
  async exit(timeoutMs = MARGIN_MS): Promise<number> {
    const read = () => (existsSync(this.status) ? readFileSync(this.status, 'utf8').trim() : '');
    return poll(timeoutMs, async () => (read() !== '' ? Number(read()) : undefined)).catch(async () => {
      throw new Error(`the CLI did not exit; the screen:\n${await this.screen({ joined: true })}`);
    });
  }

  async close(): Promise<void> {
    await tmux(this.dir, ['kill-server'], { reject: false });
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * Each terminal is its own tmux server, its socket in the terminal's temp folder: on the one default
 * server, a session started while another test's last session ended met a server that was exiting
 * ("server exited unexpectedly"), with six test files at a time.
 */
function tmux(dir: string, args: string[], options: { reject?: boolean } = {}) {
  return execa('tmux', ['-S', join(dir, 'tmux.sock'), ...args], options);
}

/** Runs the CLI to its end in a terminal of this size and reads the screen back. */
export async function runInTerminal(
  args: string[],
  size: { width: number; height: number },
  timeoutMs = MARGIN_MS,
): Promise<TerminalRun> {
  const terminal = await Terminal.open(args, size);
  try {
    const code = await terminal.exit(timeoutMs);
    return { code, screen: await terminal.screen(), coloured: await terminal.screen({ coloured: true }) };
  } finally {
    await terminal.close();
  }
}

async function poll<T>(timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 200));
  }
}
