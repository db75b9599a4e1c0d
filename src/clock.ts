/**
 * Milliseconds on a monotonic clock, as `performance.now()` counts them but from another origin.
 * The global `performance` loads perf_hooks on first use (~4 ms of a one-pass command's start).
 */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
