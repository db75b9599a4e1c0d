import { setFlagsFromString } from 'node:v8';

/**
 * Keeps V8's heap small for a pass over many Nodes and for `ccm run`; both are V8 flags it honours
 * when set after start-up, so no wrapper or `NODE_OPTIONS` is needed (docs/performance.md):
 * - `--semi-space-growth-factor=1`: V8 doubles the young generation (up to 64 MB on a big machine)
 *   each time many objects survive a scavenge, as the Nodes and plans of a pass do; kept at its
 *   initial size, a 5,000-Node pass peaks ~50 MB lower and is no slower.
 * - `--optimize-for-size`: the old generation grows by smaller steps and is collected sooner, so
 *   the garbage of a burst (5,000 Nodes initialised at once) is not left to accumulate: `ccm run`
 *   at 5,000 Nodes peaked ~20 MiB lower.
 * Set by the commands that read every Node, not at start-up, where the extra scavenges cost `--help`
 * 7 ms (docs/benchmarks.md, Start-up).
 */
export function keepYoungGenerationSmall(): void {
  setFlagsFromString('--semi-space-growth-factor=1');
  setFlagsFromString('--optimize-for-size');
}
