/**
 * endProcess (src/cli/end-process.ts) against the Node bug it avoids: process.exit() joins the
 * platform's threads while a V8 background thread waits for a garbage collection, and the process
 * never ends (nodejs/node#54918, #64274). V8's --stress-concurrent-allocation keeps background threads
 * allocating, which makes that wait frequent: on Node 24.21, 10 of 150 such processes ended by
 * process.exit() hung, 0 of 150 ended by their loop running dry (docs/performance.md).
 */
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';

// The built module (`npm test` builds first): a TypeScript loader would add a thread of its own.
const endProcessUrl = new URL('../../../dist/cli/end-process.js', import.meta.url).href;

/** A process that allocates on every tick, then ends with status 3 after 50–250 ms. */
function script(keepAlive: boolean): string {
  return `
    const { endProcess } = await import(${JSON.stringify(endProcessUrl)});
    const keep = [];
    const timer = setInterval(() => {
      for (let i = 0; i < 20000; i++) keep.push({ i, s: 'x' + i });
      if (keep.length > 300000) keep.length = 0;
    }, 1);
    setTimeout(() => {
      if (!${keepAlive}) clearInterval(timer);
      endProcess(3, 500);
    }, 50 + Math.random() * 200);
  `;
}

function run(keepAlive: boolean) {
  return execa(
    process.execPath,
    [
      // Not for the backstop's case: that one ends by process.exit(), which this flag can hang.
      ...(keepAlive ? [] : ['--stress-concurrent-allocation']),
      '--trace-exit',
      '--input-type=module',
      '-e',
      script(keepAlive),
    ],
    { reject: false, timeout: 10_000, killSignal: 'SIGKILL' },
  );
}

describe('endProcess', () => {
  it('ends every process with its status while V8 threads allocate in the background (none hangs)', async () => {
    const results = [];
    for (let i = 0; i < 20; i++) results.push(...(await Promise.all([run(false), run(false)])));
    const hung = results.filter((r) => r.timedOut).length;
    expect(hung).toBe(0);
    expect(results.map((r) => r.exitCode)).toEqual(results.map(() => 3));
    // Its loop ran dry: Node's --trace-exit warns whenever process.exit() ends a process.
    expect(results.filter((r) => r.stderr.includes('Exited the environment'))).toEqual([]);
  }, 120_000);

  it('still ends a process whose loop something keeps alive, after the grace period', async () => {
    const result = await run(true);
    expect(result.timedOut).toBe(false);
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toContain('Exited the environment with code 3');
  }, 30_000);
});
