import { readFileSync } from 'node:fs';

/**
 * Peak resident memory of this process. Linux keeps getrusage's maxrss across fork and exec, so a
 * child of a big parent would report the parent's peak; VmHWM belongs to this process's own memory.
 */
export function peakRssBytes(): number {
  try {
    const kb = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    if (kb) return Number(kb) * 1024;
  } catch {
    // not Linux
  }
  return process.resourceUsage().maxRSS * 1024;
}
