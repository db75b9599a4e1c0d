/**
 * Ends the process with `code` once its work is done, by letting the event loop run dry rather than
 * by `process.exit()`.
 *
 * Why: `process.exit()` joins Node's platform threads before V8 is torn down. A V8 background thread
 * (a concurrent Sparkplug or Maglev compile, a concurrent allocation) that is waiting for the main
 * thread to collect garbage at that moment waits forever, and so does the join: the process never
 * ends (nodejs/node#54918 and #64274, open for Node 24 and 26). `ccm run` hung that way after SIGTERM
 * in this project's test suite. A natural exit tears V8 down first, which releases such a waiter.
 * Measured with V8's `--stress-concurrent-allocation` (test/unit/cli/end-process.test.ts).
 *
 * `graceMs` is the backstop for a handle that keeps the loop alive after all: then `process.exit()`.
 */
export function endProcess(code: number, graceMs = 1000): void {
  process.exitCode = code;
  setTimeout(() => process.exit(code), graceMs).unref();
}
