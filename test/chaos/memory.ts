/**
 * Whether a replica's memory stays flat, from its RSS samples (every 2 s).
 *
 * RSS of a Node process moves by tens of MB with the garbage collector, and steps once when a replica
 * becomes leader and fills its caches. A leak is a slope that goes on. So: the first 2 minutes of a
 * replica's life are its warm-up and are not judged; after that, the median of its first minute is
 * compared with the median of its last minute, and the growth per minute between the two must stay
 * under 2 MiB. Judged only when the two minutes are at least 5 minutes apart: over 5 minutes a
 * one-off step of 10 MiB (a new leader's caches) reads as 2 MiB a minute, while a leak of a few MiB a
 * minute breaks it on any long run. Every replica, however short its life, must also stay under
 * 300 MiB (ccm run holds tens of Nodes here; the design measured 63 MiB at 100 Nodes).
 */
import type { Replica } from './replicas.js';

const MIB = 1024 * 1024;
export const WARM_UP_MS = 120_000;
export const MAX_GROWTH_MIB_PER_MIN = 2;
export const MIN_SPAN_MS = 5 * 60_000;
export const MAX_RSS_MIB = 300;

export interface MemoryVerdict {
  replica: string;
  maxRssMiB: number;
  /** MiB a minute between the first and last judged minute; undefined when not judged. */
  growthMiBPerMin?: number;
  problem?: string;
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

export function judgeMemory(replica: Replica): MemoryVerdict {
  const maxRssMiB = Math.round(Math.max(0, ...replica.rss.map(([, b]) => b)) / MIB);
  const verdict: MemoryVerdict = { replica: replica.name, maxRssMiB };
  if (maxRssMiB > MAX_RSS_MIB) verdict.problem = `RSS reached ${maxRssMiB} MiB (limit ${MAX_RSS_MIB})`;
  const judged = replica.rss.filter(([t]) => t >= replica.startedAt + WARM_UP_MS);
  if (judged.length === 0) return verdict;
  const first = judged[0]?.[0] ?? 0;
  const last = judged[judged.length - 1]?.[0] ?? 0;
  if (last - first < MIN_SPAN_MS + 60_000) return verdict;
  const head = judged.filter(([t]) => t < first + 60_000).map(([, b]) => b);
  const tail = judged.filter(([t]) => t > last - 60_000).map(([, b]) => b);
  const minutes = (last - first - 60_000) / 60_000;
  verdict.growthMiBPerMin = Math.round(((median(tail) - median(head)) / MIB / minutes) * 100) / 100;
  if (verdict.growthMiBPerMin > MAX_GROWTH_MIB_PER_MIN)
    verdict.problem = `RSS grew ${verdict.growthMiBPerMin} MiB a minute after its warm-up (limit ${MAX_GROWTH_MIB_PER_MIN})`;
  return verdict;
}
