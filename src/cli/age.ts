/** "45s", "12m", "3h", "2d": the AGE column of kubectl. */
export function age(seconds: number): string {
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 2 * 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 2 * 86400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}d`;
}
