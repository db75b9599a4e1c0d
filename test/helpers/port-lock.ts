/**
 * A port that the README and docs/ name, which test files bind as a reader would: 10258, `ccm run`'s
 * default, which quickstart.test.ts and docs-commands.test.ts both start `ccm run` on. Two such files
 * running at once (six files run side by side) take turns through a lock folder in the temp folder;
 * the folder names its holder's pid, so that a holder that died keeps nobody waiting.
 */
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Whether the lock at `dir` is left by a process that is gone (or was never finished being taken). */
function abandoned(dir: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(join(dir, 'pid'), 'utf8'));
  } catch {
    // Taken a moment ago, its pid not written yet; or taken by a process killed in between.
    try {
      return Date.now() - statSync(dir).mtimeMs > 10_000;
    } catch {
      return true;
    }
  }
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** Waits for the port's turn (at most `timeoutMs`); returns the release. */
export async function holdPort(port: number, timeoutMs = 300_000): Promise<() => void> {
  const dir = join(tmpdir(), `ccm-test-port-${port}.lock`);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      mkdirSync(dir);
      writeFileSync(join(dir, 'pid'), String(process.pid));
      const release = () => rmSync(dir, { recursive: true, force: true });
      process.once('exit', release);
      return () => {
        process.removeListener('exit', release);
        release();
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (abandoned(dir)) {
        rmSync(dir, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline)
        throw new Error(`port ${port}: still held by another test after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
