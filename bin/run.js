#!/usr/bin/env node
import { setFlagsFromString } from 'node:v8';

// V8 doubles its young generation (up to 64 MB on a big machine) each time many objects survive a
// scavenge, as the Nodes and plans of a pass do; kept at its initial 2 MB, a 5,000-Node pass peaks
// ~50 MB lower and is no slower (README, Benchmarks). The only flag of its kind V8 reads after start-up.
setFlagsFromString('--semi-space-growth-factor=1');

const { execute } = await import('@oclif/core');
await execute({ dir: import.meta.url });
