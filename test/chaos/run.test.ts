/**
 * `npm run test:chaos`: one chaos run as long as CHAOS_MINUTES says (default 10), on CHAOS_CLOUD
 * (default digitalocean), from CHAOS_SEED (default a random one, printed). Its folder, with each
 * replica's log and chaos-report.json, is kept.
 */
import { expect, it } from 'vitest';
import type { ChaosCloudName } from './clouds.js';
import { chaosRun } from './run.js';

const minutes = Number(process.env.CHAOS_MINUTES ?? 10);
const cloud = (process.env.CHAOS_CLOUD ?? 'digitalocean') as ChaosCloudName;
const seed = process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : Math.floor(Math.random() * 2 ** 31);

it(`chaos run: ${cloud}, seed ${seed}, ${minutes} minutes`, {
  timeout: (minutes + 10) * 60_000,
}, async () => {
  const result = await chaosRun({ cloud, seed, minutes, quietMs: 90_000, keepDir: true });
  expect(result.violations).toEqual([]);
});
