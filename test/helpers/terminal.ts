/**
 * The built CLI in a real terminal (a detached tmux session): wait for text on the screen, type, read
 * the exit status and the screen back.
 *
 * Every wait is for a condition, with a margin of minutes: on a quiet machine the CLI shows its first
 * screen within a second, but on a loaded one (two busy processes per core, `npm run test:stress`) a
 * Node start alone can take tens of seconds.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
  /** A program and its first arguments to run instead of the built CLI (`node bin/run.js`). */
  program?: string[];
  /**
   * Record every byte the CLI writes to the terminal (tmux pipe-pane, set before the CLI starts), for
   * `raw()`: the screen tmux shows has already acted on escape sequences, these bytes have not.
   */
  raw?: boolean;
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
    // With `raw`, the CLI waits for the pipe to be in place (the file `go`), so its first byte is kept.
    const go = join(dir, 'go');
    const wait = options.raw ? `until [ -e ${quote(go)} ]; do sleep 0.05; done; ` : '';
    const program = options.program ? options.program.map(quote).join(' ') : `${node} ${quote(bin)}`;
    const command = `trap true INT; ${wait}env ${envArgs.join(' ')} ${program} ${args.map(quote).join(' ')}; echo $? > ${quote(status)}; sleep 3600`;
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
    if (options.raw) {
      await tmux(dir, ['pipe-pane', '-o', '-t', session, `cat >> ${quote(join(dir, 'raw'))}`]);
      writeFileSync(go, '');
    }
    return new Terminal(session, dir);
  }

  /** Every byte the CLI wrote to the terminal so far, as UTF-8 text (open with `raw: true`). */
  raw(): string {
    const file = join(this.dir, 'raw');
    return existsSync(file) ? readFileSync(file, 'utf8') : '';
  }

  /** The terminal's title, as an escape sequence may have set it. */
  async title(): Promise<string> {
    return (await tmux(this.dir, ['display-message', '-p', '-t', this.session, '#{pane_title}'])).stdout;
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
      // `--` before a literal: text that starts with `-` (`--provider=o`) is no option of tmux's.
      await tmux(this.dir, ['send-keys', '-t', this.session, ...(literal ? ['-l', '--', key] : [key])]);
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

/**
 * What in a terminal's raw bytes could only have come from hostile data: any BEL, an OSC (a title
 * set), a screen clear, a C1 control (8-bit CSI, NEL), a line or paragraph separator, or the
 * terminal's title changed. ccm's own colours and listr2's or inquirer's cursor moves (ESC [ … m,
 * ESC [ 1A, ESC [ 2K) are not among them. Returns what was found, each with its context.
 */
export function hostileBytes(raw: string, title?: string): string[] {
  const found: string[] = [];
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  const pattern = /\u0007|\u001b\]|\u001b\[2J|\u001b\[3J|\u001bc|[\u0080-\u009f\u2028\u2029]/g;
  for (const m of raw.matchAll(pattern)) {
    const code = m[0].codePointAt(0)?.toString(16).padStart(4, '0');
    found.push(
      `U+${code} at ${m.index}: ${JSON.stringify(raw.slice(Math.max(0, m.index - 30), m.index + 20))}`,
    );
  }
  if (title?.includes('PWNED')) found.push(`title set to ${JSON.stringify(title)}`);
  return found;
}
