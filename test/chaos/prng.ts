/**
 * The chaos run's randomness: mulberry32 (Tommy Ettinger's 32-bit generator, public domain), small,
 * fast and good enough to draw a fault schedule; no dependency of the project has a seedable PRNG.
 * The same seed gives the same sequence on every machine, so a seed repeats a run's schedule.
 */
export interface Random {
  /** A float in [0, 1). */
  next(): number;
  /** A float in [min, max). */
  between(min: number, max: number): number;
  /** A whole number in [min, max]. */
  int(min: number, max: number): number;
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** `n` distinct items (all of them when there are fewer). */
  sample<T>(items: readonly T[], n: number): T[];
  /** An independent generator derived from this one (one stream per concern: faults, churn). */
  fork(): Random;
}

export function mulberry32(seed: number): Random {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const random: Random = {
    next,
    between: (min, max) => min + next() * (max - min),
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    chance: (p) => next() < p,
    pick: (items) => {
      if (items.length === 0) throw new Error('pick from nothing');
      return items[Math.floor(next() * items.length)] as (typeof items)[number];
    },
    sample: (items, n) => {
      const pool = [...items];
      const out: (typeof items)[number][] = [];
      while (out.length < n && pool.length > 0)
        out.push(pool.splice(Math.floor(next() * pool.length), 1)[0] as never);
      return out;
    },
    fork: () => mulberry32(Math.floor(next() * 4294967296)),
  };
  return random;
}
