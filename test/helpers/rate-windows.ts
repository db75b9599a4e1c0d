/** The most of `times` (ms, ascending) that fall in any window of `windowMs`: what a sliding-window limit counts. */
export function mostInAnyWindow(times: readonly number[], windowMs: number): number {
  let most = 0;
  let start = 0;
  for (let end = 0; end < times.length; end++) {
    while ((times[end] as number) - (times[start] as number) >= windowMs) start++;
    most = Math.max(most, end - start + 1);
  }
  return most;
}
