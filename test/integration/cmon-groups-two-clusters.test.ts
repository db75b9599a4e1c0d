/**
 * Two clusters in one Triton account never see each other's Nodes (review 46, finding 2): cluster
 * "prod" with `--cmon-groups cluster,role` and cluster "prod-worker" with `--cmon-groups cluster`.
 * Role groups are <cluster group>_<role> and a cluster group has no "_", so prod's role group
 * (prod_worker) is no cluster's group. Each cluster's job `ccm manifests --cmon` prints, run by
 * Prometheus' own discovery and relabelling against the CMON simulator, finds exactly its own Nodes;
 * and a cluster name that could be a role group ("prod_worker") is refused.
 *
 * Also (finding 7, not fixed): two machines of one cluster whose aliases differ only in case get the
 * same `node` label; Prometheus keeps both targets. The test records that behaviour.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { groupsFor } from '../../src/providers/triton/cmon.js';
import { cmonCertificate } from '../clouds/triton/cmon-cert.js';
import { ccm } from '../helpers/cli.js';
import { buildTritonSd, runPrometheusJob } from '../helpers/prometheus-sd.js';
import { tempDir } from '../helpers/tmp.js';
import { useCmon } from '../helpers/use-cmon.js';

const world = useCmon();
const MOUNT = '/etc/prometheus/secrets/triton-cmon';
const GROUPS = 'triton.cmon.groups';
let bin: string;

beforeAll(async () => {
  bin = await buildTritonSd();
}, 900_000);
afterAll(() => undefined);

async function job(cluster: string, extra: string[] = []): Promise<string> {
  const printed = await ccm([
    'manifests',
    '--provider',
    'triton',
    '--cmon',
    '--cmon-url',
    world.cmon.url,
    '--cmon-account',
    'demo',
    '--cluster-name',
    cluster,
    ...extra,
  ]);
  expect(printed.stderr).toBe('');
  expect(printed.exitCode).toBe(0);
  return printed.stdout;
}

async function prometheus(yml: string) {
  const cert = cmonCertificate({ account: 'demo', signer: world.keys.demo.privateKey });
  const dir = tempDir('r46-cmon-job-');
  writeFileSync(join(dir, 'tls.crt'), cert.cert);
  writeFileSync(join(dir, 'tls.key'), cert.key);
  writeFileSync(join(dir, 'ca.pem'), world.cmon.ca);
  const run = await runPrometheusJob(bin, dir, yml.replaceAll(MOUNT, dir), { ca: join(dir, 'ca.pem') });
  expect(run.error).toBeUndefined();
  expect(run.exitCode).toBe(0);
  return run;
}

describe('CMON groups of two clusters in one account', () => {
  it('cluster prod (cluster,role) and cluster prod-worker (cluster): each job finds only its own Nodes', async () => {
    world.demo.machines.clear();
    // What ccm run / nodes init keeps on each machine (groupsFor is what CmonGroups.plan writes).
    const prodGroups = groupsFor({ cluster: true, role: true }, 'prod', ['worker']);
    const prodCp = groupsFor({ cluster: true, role: true }, 'prod', ['control-plane']);
    const otherGroups = groupsFor({ cluster: true, role: false }, 'prod-worker', ['worker']);
    expect(prodGroups).toEqual(['prod', 'prod_worker']);
    expect(otherGroups).toEqual(['prod-worker']);
    const prodWorker = world.demo.addMachine({ name: 'prod-w1', tags: { [GROUPS]: prodGroups.join(',') } });
    const prodControl = world.demo.addMachine({ name: 'prod-cp1', tags: { [GROUPS]: prodCp.join(',') } });
    const theirs = world.demo.addMachine({ name: 'pw-node-1', tags: { [GROUPS]: otherGroups.join(',') } });

    const other = await prometheus(await job('prod-worker'));
    expect(other.targets.map((t) => `${t.node}=${t.instance}`)).toEqual([`pw-node-1=${theirs.id}`]);
    const prod = await prometheus(await job('prod'));
    expect(prod.targets.map((t) => `${t.node}=${t.instance}`).sort()).toEqual(
      [`prod-w1=${prodWorker.id}`, `prod-cp1=${prodControl.id}`].sort(),
    );
    // prod's role group is a job of its own: only prod's workers.
    const workers = await prometheus(await job('prod', ['--cmon-group', 'prod_worker']));
    expect(workers.targets.map((t) => t.instance)).toEqual([prodWorker.id]);
  });

  it('a cluster group with "_" (what a role group looks like) is refused, in one line, exit 2', async () => {
    expect(() => groupsFor({ cluster: true, role: false }, 'prod_worker', ['worker'])).toThrow(
      /no CMON cluster group name/,
    );
    const printed = await ccm([
      'manifests',
      '--provider',
      'triton',
      '--cmon',
      '--cmon-url',
      world.cmon.url,
      '--cmon-account',
      'demo',
      '--cluster-name',
      'prod_x',
    ]);
    expect(printed.exitCode).toBe(2);
    expect(printed.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('two machines of the cluster whose aliases differ in case: one node label, two targets', async () => {
    world.demo.machines.clear();
    const g = groupsFor({ cluster: true, role: false }, 'prod', ['worker']).join(',');
    const a = world.demo.addMachine({ name: 'worker-1', tags: { [GROUPS]: g } });
    const b = world.demo.addMachine({ name: 'Worker-1', tags: { [GROUPS]: g } });
    const run = await prometheus(await job('prod'));
    expect(run.targets.map((t) => `${t.node}=${t.instance}`).sort()).toEqual(
      [`worker-1=${a.id}`, `worker-1=${b.id}`].sort(),
    );
  });
});
