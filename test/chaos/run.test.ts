/**
 * `npm run test:chaos`: one chaos run as long as CHAOS_MINUTES says (default 10), on CHAOS_CLOUD
 * (default digitalocean), from CHAOS_SEED (default a random one, printed). Its folder, with each
 * replica's log and chaos-report.json, is kept. CHAOS_EVERY_KIND=1 opens the schedule with every
 * fault kind once, as CI's run does.
 */
import { expect, it } from 'vitest';
import type { ChaosCloudName } from './clouds.js';
import { chaosRun } from './run.js';

const minutes = Number(process.env.CHAOS_MINUTES ?? 10);
const cloud = (process.env.CHAOS_CLOUD ?? 'digitalocean') as ChaosCloudName;
const seed = process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : Math.floor(Math.random() * 2 ** 31);
const everyKindFirst = process.env.CHAOS_EVERY_KIND === '1';
if (!(minutes >= 2))
  throw new Error(
    `CHAOS_MINUTES: expected a number of minutes, 2 or more, got "${process.env.CHAOS_MINUTES}"`,
  );
if (!['digitalocean', 'openstack'].includes(cloud))
  throw new Error(`CHAOS_CLOUD: expected digitalocean or openstack, got "${cloud}"`);
if (!Number.isInteger(seed) || seed < 0)
  throw new Error(`CHAOS_SEED: expected a whole number, 0 or more, got "${process.env.CHAOS_SEED}"`);

it(`chaos run: ${cloud}, seed ${seed}, ${minutes} minutes`, {
  timeout: (minutes + 10) * 60_000,
}, async () => {
  const result = await chaosRun({ cloud, seed, minutes, quietMs: 90_000, keepDir: true, everyKindFirst });
  expect(result.violations).toEqual([]);
});
