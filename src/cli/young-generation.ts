import { setFlagsFromString } from 'node:v8';

/**
 * Keeps V8's young generation at its initial size for a pass over many Nodes. V8 doubles it (up to
 * 64 MB on a big machine) each time many objects survive a scavenge, as the Nodes and plans of a pass
 * do; kept at 2 MB, a 5,000-Node pass peaks ~50 MB lower and is no slower (docs/benchmarks.md). The
 * only flag of its kind V8 reads after start-up. Set by the commands that read every Node, not at
 * start-up, where the extra scavenges cost `--help` 7 ms (docs/benchmarks.md, Start-up).
 */
export function keepYoungGenerationSmall(): void {
  setFlagsFromString('--semi-space-growth-factor=1');
}
