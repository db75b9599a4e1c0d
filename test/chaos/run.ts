/**
 * One chaos run: the world, a steady churn of Nodes and Services, the seed's fault schedule for
 * `minutes` less the quiet period, then a quiet period (faults healed, churn off), the invariants
 * checked all along and once more at the end, and the report.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { ChaosCloudName } from './clouds.js';
import { applyFault, currentLeader, drawSchedule, healAll, type ScheduledFault } from './faults.js';
import { Invariants } from './invariants.js';
import { judgeMemory } from './memory.js';
import { mulberry32, type Random } from './prng.js';
import { holdOf, roleOf } from './replicas.js';
import { type ChaosReport, formatSchedule, report } from './report.js';
import { startWorld, type World } from './world.js';

export interface ChaosOptions {
  cloud: ChaosCloudName;
  seed: number;
  minutes: number;
  /** The quiet period at the end (faults off, churn off), within `minutes`. */
  quietMs: number;
  log?: (line: string) => void;
  /** Keep the run's folder (logs, chaos-report.json) even when every invariant held. */
  keepDir?: boolean;
  /** Open the schedule with every fault kind once (faults.ts `drawSchedule`). */
  everyKindFirst?: boolean;
}

/**
 * CI's run (`npm test`): a fixed seed, 4 minutes of which 1 is quiet, every fault kind met in the
 * first 2 (at 2.5 minutes and random draws, seed 45 met 6 of the 14 kinds).
 */
export const CI_RUN = { seed: 45, minutes: 4, quietMs: 60_000, everyKindFirst: true };

/**
 * How long after the quiet period the settled state may take: a Service that failed through the
 * faults waits out its backoff, which doubles to 300 s (upstream's service controller), plus a sync.
 */
const SETTLE_BOUND_MS = 330_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export interface Churn {
  nodesAdded: number;
  nodesRemoved: number;
  servicesCreated: number;
  servicesDeleted: number;
  failed: number;
}

/** One step of what the cluster's users and autoscaler do: sizes kept between bounds. */
async function churnStep(world: World, random: Random, churn: Churn): Promise<void> {
  const live = [...world.instances.values()].filter((i) => !i.goneAt);
  const services = [...world.services.values()].filter((s) => !s.deletedAt);
  if (random.chance(0.5)) {
    if (live.length < 6 || (live.length < 12 && random.chance(0.5))) {
      await world.addNode();
      churn.nodesAdded++;
    } else {
      await world.removeInstance(random.pick(live));
      churn.nodesRemoved++;
    }
  } else if (services.length < 2 || (services.length < 6 && random.chance(0.5))) {
    await world.addService();
    churn.servicesCreated++;
  } else {
    await world.deleteService(random.pick(services));
    churn.servicesDeleted++;
  }
}

export interface BrakeFigures {
  holds: string[];
  released: string[];
  leftHeld: { id: string; why: string }[];
}

/**
 * The operator: a hold that the leader reports is looked at after a while; when every held Node's
 * instance is really gone, the hold is released with the Secret's annotation, as docs/nodes.md says.
 */
async function operatorStep(world: World, brake: BrakeFigures, seen: Map<string, number>): Promise<void> {
  if (world.apiserverDown) return;
  const leader = await currentLeader(world);
  const id = leader && (await holdOf(leader));
  if (!id || brake.released.includes(id)) return;
  if (!seen.has(id)) {
    seen.set(id, Date.now());
    brake.holds.push(id);
    return;
  }
  if (Date.now() - (seen.get(id) ?? 0) < 10_000) return;
  const events = (
    await world.api.listNamespacedEvent({ namespace: 'default', fieldSelector: 'reason=NodeDeletionHeld' })
  ).items;
  const held = events
    .filter((e) => e.metadata?.annotations?.['ccm.io/deletion-hold'] === id)
    .map((e) => e.involvedObject?.name ?? '');
  const present = held.filter((n) => !world.instances.get(n)?.goneAt);
  if (held.length === 0) return; // its Events are not written yet
  if (present.length > 0) {
    if (!brake.leftHeld.some((h) => h.id === id))
      brake.leftHeld.push({ id, why: `instances of ${present.join(', ')} exist` });
    return;
  }
  await world.api.patchNamespacedSecret(
    {
      name: world.cloud.secret.name,
      namespace: world.cloud.secret.namespace,
      body: { metadata: { annotations: { 'ccm.io/allow-mass-deletion': id } } },
    },
    MERGE_PATCH,
  );
  brake.released.push(id);
}

/** Runs `fn` every `ms` until `stop()`; errors (an API server that is down) are counted, not thrown. */
function every(ms: number, fn: () => Promise<void> | void, errors: { count: number; last?: string }) {
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  const loop = async () => {
    while (!stopped) {
      running = (async () => fn())().catch((err) => {
        errors.count++;
        errors.last = String((err as Error).message ?? err).slice(0, 200);
      });
      await running;
      await sleep(ms);
    }
  };
  void loop();
  return async () => {
    stopped = true;
    await running;
  };
}

export async function chaosRun(options: ChaosOptions): Promise<ChaosReport> {
  const log = options.log ?? ((line: string) => console.log(line));
  const random = mulberry32(options.seed);
  const faultRandom = random.fork();
  const churnRandom = random.fork();
  const chaosMs = Math.max(10_000, options.minutes * 60_000 - options.quietMs);
  const schedule = drawSchedule(faultRandom, chaosMs, { everyKindFirst: options.everyKindFirst });
  const world = await startWorld(options.cloud);
  const invariants = new Invariants(world);
  const churn: Churn = { nodesAdded: 0, nodesRemoved: 0, servicesCreated: 0, servicesDeleted: 0, failed: 0 };
  const brake: BrakeFigures = { holds: [], released: [], leftHeld: [] };
  const errors = { count: 0, last: undefined as string | undefined };
  const header = `chaos run: CHAOS_CLOUD=${options.cloud} CHAOS_SEED=${options.seed} CHAOS_MINUTES=${options.minutes}${options.everyKindFirst ? ' CHAOS_EVERY_KIND=1' : ''} (quiet ${options.quietMs / 1000} s); folder ${world.dir}`;
  log(header);
  const stops: (() => Promise<void>)[] = [];
  let result: ChaosReport | undefined;
  try {
    stops.push(every(2000, () => world.sampleMemory(), errors));
    await waitFor(
      'a replica leads',
      async () => (await Promise.all(world.replicas.map(roleOf))).includes('leading'),
      90_000,
    );
    for (let i = 0; i < 6; i++) await world.addNode();
    for (let i = 0; i < 2; i++) await world.addService();
    churn.nodesAdded += 6;
    churn.servicesCreated += 2;
    stops.push(every(3000, () => world.kubelets(), errors));
    let told = 0;
    stops.push(
      every(
        5000,
        () => {
          invariants.checkContinuously();
          // Said when found, so that a long run's log shows it beside the fault that caused it.
          for (const v of invariants.violations.slice(told))
            log(`VIOLATION ${new Date(v.at).toISOString()} [${v.invariant}] ${v.what}`);
          told = invariants.violations.length;
        },
        errors,
      ),
    );
    const seen = new Map<string, number>();
    const stopOperator = every(3000, () => operatorStep(world, brake, seen), errors);
    const stopChurn = every(
      0,
      async () => {
        await sleep(churnRandom.between(3000, 8000));
        await churnStep(world, churnRandom, churn).catch(() => {
          churn.failed++;
        });
      },
      errors,
    );

    const start = Date.now();
    const inFlight = schedule.map(async (fault) => {
      await sleep(fault.at);
      log(`+${Math.round((Date.now() - start) / 1000)}s ${fault.kind} (${fault.durationMs} ms)`);
      await applyFault(world, fault, () => undefined).catch((err) => {
        fault.skipped = `failed: ${String((err as Error).message ?? err).slice(0, 200)}`;
      });
    });
    await sleep(chaosMs);
    await Promise.all(inFlight);
    await stopChurn();
    await healAll(world);
    log(`+${Math.round((Date.now() - start) / 1000)}s quiet period: faults healed, churn stopped`);
    await sleep(options.quietMs);
    await stopOperator();
    for (const stop of stops.splice(0)) await stop();
    invariants.checkContinuously(0);
    await invariants.checkSettled(SETTLE_BOUND_MS);
    log(`settled ${Math.round(invariants.settledAfterMs / 1000)} s after the quiet period`);
    invariants.finish();
    const memory = world.replicas.map(judgeMemory);
    for (const m of memory) {
      invariants.checks['memory-flat']++;
      if (m.problem)
        invariants.violations.push({
          at: Date.now(),
          invariant: 'memory-flat',
          what: `${m.replica}: ${m.problem}`,
        });
    }
    result = report({ options, world, schedule, invariants, churn, brake, memory, harnessErrors: errors });
    writeFileSync(join(world.dir, 'chaos-report.json'), `${JSON.stringify(result, null, 2)}\n`);
    log(`figures: ${join(world.dir, 'chaos-report.json')}`);
    log(JSON.stringify(result.figures, null, 1));
    if (invariants.violations.length > 0) {
      log(
        `${header}\nVIOLATIONS:\n${invariants.violations.map((v) => `  ${new Date(v.at).toISOString()} [${v.invariant}] ${v.what}`).join('\n')}`,
      );
      log(
        `fault schedule (repeat with CHAOS_CLOUD=${options.cloud} CHAOS_SEED=${options.seed} CHAOS_MINUTES=${options.minutes}${options.everyKindFirst ? ' CHAOS_EVERY_KIND=1' : ''}):\n${formatSchedule(schedule)}`,
      );
    }
    return result;
  } catch (err) {
    log(`${header}\nthe run failed: ${(err as Error).stack}\nfault schedule:\n${formatSchedule(schedule)}`);
    throw err;
  } finally {
    for (const stop of stops) await stop().catch(() => undefined);
    await world.stop();
    if (!options.keepDir && result && result.violations.length === 0)
      rmSync(world.dir, { recursive: true, force: true });
  }
}

async function waitFor(what: string, fn: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await fn().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(500);
  }
}

export type { ScheduledFault };
