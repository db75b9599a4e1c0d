const MAX_TYPED = 64;

/** The candidate at the smallest edit distance, if it is close enough to be a typo of it. */
export function closest(typed: string, commands: readonly string[]): string | undefined {
  // The distance costs length × length: nothing longer than a name is worth a suggestion.
  if (typed.length > MAX_TYPED) return undefined;
  let best: { command: string; distance: number } | undefined;
  for (const command of commands) {
    const distance = editDistance(typed, command);
    if (!best || distance < best.distance) best = { command, distance };
  }
  return best && best.distance <= Math.max(2, Math.floor(typed.length / 3)) ? best.command : undefined;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours. */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) (d[0] as number[])[j] = j;
  for (let i = 1; i <= a.length; i++) {
    const row = d[i] as number[];
    const above = d[i - 1] as number[];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min(
        (above[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (above[j - 1] as number) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        row[j] = Math.min(row[j] as number, ((d[i - 2] as number[])[j - 2] as number) + 1);
    }
  }
  return (d[a.length] as number[])[b.length] as number;
}
