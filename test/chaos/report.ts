/** The chaos run's figures and its fault schedule as text (printed with every failure). */

import { FAULT_KINDS, type ScheduledFault } from './faults.js';
import type { Invariants, Violation } from './invariants.js';
import type { MemoryVerdict } from './memory.js';
import type { BrakeFigures, ChaosOptions, Churn } from './run.js';
import type { World } from './world.js';

export interface ChaosReport {
  cloud: string;
  seed: number;
  minutes: number;
  figures: {
    faultsByKind: Record<string, { fired: number; skipped: number }>;
    invariantChecks: Record<string, number>;
    churn: Churn;
    nodeDeletionsByCcm: number;
    leaderChanges: number;
    replicasStarted: number;
    cloudCallsByReplica: Record<string, number>;
    cloudWritesByReplica: Record<string, number>;
    maxRssMiB: Record<string, number>;
    memoryGrowthMiBPerMin: Record<string, number | undefined>;
    deletionBrake: BrakeFigures;
    /** Seconds after the quiet period until the settled state held (the bound when it never did). */
    settledAfterS: number;
    harnessErrors: { count: number; last?: string };
  };
  violations: Violation[];
  schedule: ScheduledFault[];
}

export function formatSchedule(schedule: ScheduledFault[]): string {
  return schedule
    .map(
      (f) =>
        `  +${(f.at / 1000).toFixed(1)}s ${f.kind} for ${(f.durationMs / 1000).toFixed(1)}s → ${f.skipped ? `skipped: ${f.skipped}` : (f.target ?? '(not fired)')}`,
    )
    .join('\n');
}

export function report(input: {
  options: ChaosOptions;
  world: World;
  schedule: ScheduledFault[];
  invariants: Invariants;
  churn: Churn;
  brake: BrakeFigures;
  memory: MemoryVerdict[];
  harnessErrors: { count: number; last?: string };
}): ChaosReport {
  const { world, schedule, invariants } = input;
  const faultsByKind: ChaosReport['figures']['faultsByKind'] = {};
  for (const kind of FAULT_KINDS) {
    const of = schedule.filter((f) => f.kind === kind);
    faultsByKind[kind] = {
      fired: of.filter((f) => f.firedAt && !f.skipped).length,
      skipped: of.filter((f) => f.skipped).length,
    };
  }
  let leaderChanges = 0;
  let holder: string | undefined;
  for (const w of invariants.leaseWrites) {
    if (w.holder && w.holder !== holder) {
      if (holder !== undefined) leaderChanges++;
      holder = w.holder;
    }
  }
  const calls: Record<string, number> = {};
  const writes: Record<string, number> = {};
  for (const r of world.proxy.log) {
    calls[r.replica] = (calls[r.replica] ?? 0) + 1;
    if (r.method !== 'GET' && !world.cloud.isReadOnly(r.method, r.path))
      writes[r.replica] = (writes[r.replica] ?? 0) + 1;
  }
  return {
    cloud: input.options.cloud,
    seed: input.options.seed,
    minutes: input.options.minutes,
    figures: {
      faultsByKind,
      invariantChecks: { ...invariants.checks },
      churn: input.churn,
      nodeDeletionsByCcm: invariants.nodeDeletions,
      leaderChanges,
      replicasStarted: world.replicas.length,
      cloudCallsByReplica: calls,
      cloudWritesByReplica: writes,
      maxRssMiB: Object.fromEntries(input.memory.map((m) => [m.replica, m.maxRssMiB])),
      memoryGrowthMiBPerMin: Object.fromEntries(input.memory.map((m) => [m.replica, m.growthMiBPerMin])),
      deletionBrake: input.brake,
      settledAfterS: Math.round(invariants.settledAfterMs / 1000),
      harnessErrors: input.harnessErrors,
    },
    violations: invariants.violations,
    schedule,
  };
}
