/**
 * The scrape job `ccm manifests --provider triton --cmon` prints, run by Prometheus' own code
 * (test/prometheus-sd -job: config.LoadFile, discovery/triton, model/relabel) against the CMON
 * simulator: its targets are exactly the machines of the Nodes registered in a real kube-apiserver,
 * each labelled node=<Node name> and instance=<machine UUID>; machines of another cluster group,
 * untagged ones and another account's are not targets. The same printed job follows Nodes that come
 * and go (what --cmon-groups keeps on their machines), with no new job.
 *
 * The only edits made to what ccm prints are what a Pod gives Prometheus: the Secret's mount folder is
 * a temporary folder holding the certificate (as a volume mount would), and the simulator's CA is
 * trusted (as a system trust store trusts CMON's public one).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { type CmonCert, cmonCertificate } from '../clouds/triton/cmon-cert.js';
import { createNodes, fixtureApi, listNodes } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { ccm } from '../helpers/cli.js';
import { buildTritonSd, runPrometheusJob } from '../helpers/prometheus-sd.js';
import { tempDir } from '../helpers/tmp.js';
import { useCmon } from '../helpers/use-cmon.js';

const world = useCmon();
const MOUNT = '/etc/prometheus/secrets/triton-cmon';
const GROUPS = 'triton.cmon.groups';
let cp: ControlPlane;
let api: CoreV1Api;
let bin: string;
let cert: CmonCert;
/** The cluster's CMON group: ccm's cluster identity, k8s- and 16 hex digits of kube-system's UID. */
let group: string;

beforeAll(async () => {
  [cp, bin] = await Promise.all([startControlPlane(), buildTritonSd()]);
  api = fixtureApi(cp.kubeconfigPath);
  const uid = (await api.readNamespace({ name: 'kube-system' })).metadata?.uid ?? '';
  group = `k8s-${uid.replace(/-/g, '').slice(0, 16)}`;
  cert = cmonCertificate({ account: 'demo', signer: world.keys.demo.privateKey });
}, 900_000);
afterAll(async () => {
  await cp?.stop();
});

/** What `ccm manifests --provider triton --cmon` prints (exit 0 checked), for this cluster's group. */
async function printedJob(extra: string[] = []): Promise<string> {
  const printed = await ccm([
    'manifests',
    '--provider',
    'triton',
    '--cmon',
    '--cmon-url',
    world.cmon.url,
    '--cmon-account',
    'demo',
    '--cmon-group',
    group,
    ...extra,
  ]);
  expect(printed.stderr).toBe('');
  expect(printed.exitCode).toBe(0);
  return printed.stdout;
}

/** Runs `yml` in Prometheus' code with the Secret "mounted" (its files in a folder) and CMON's CA trusted. */
async function prometheus(yml: string, scrape = false) {
  const dir = tempDir('ccm-cmon-job-');
  writeFileSync(join(dir, 'tls.crt'), cert.cert);
  writeFileSync(join(dir, 'tls.key'), cert.key);
  writeFileSync(join(dir, 'ca.pem'), world.cmon.ca);
  expect(yml).toContain(MOUNT);
  const run = await runPrometheusJob(bin, dir, yml.replaceAll(MOUNT, dir), {
    ca: join(dir, 'ca.pem'),
    scrape,
  });
  expect(run.error).toBeUndefined();
  expect(run.exitCode).toBe(0);
  return run;
}

const uuidOf = (providerID: string | undefined) => String(providerID).replace(/^triton:\/\//, '');

/** {node, instance} of every Node the API server has, sorted: what the targets must be. */
async function nodesInApiServer() {
  return (await listNodes(api))
    .map((n) => ({ node: n.metadata?.name ?? '', instance: uuidOf(n.spec?.providerID) }))
    .sort((a, b) => a.node.localeCompare(b.node));
}

const pairs = (targets: Record<string, string>[]) =>
  targets
    .map((t) => ({ node: t.node ?? '', instance: t.instance ?? '' }))
    .sort((a, b) => a.node.localeCompare(b.node));

/** A machine of the cluster: in the simulator, tagged with the group, and its Node in the API server. */
async function joinCluster(name: string, alias = name) {
  const machine = world.demo.addMachine({ name: alias, tags: { [GROUPS]: `${group},${group}_worker` } });
  await createNodes(api, [{ name, providerID: `triton://${machine.id}`, tainted: false }]);
  return machine;
}

describe('ccm manifests --provider triton --cmon, run by Prometheus against CMON', () => {
  it("targets exactly the cluster's Nodes, each labelled with its Node name and machine UUID", async () => {
    world.demo.machines.clear();
    world.other.machines.clear();
    await api.deleteCollectionNode({});
    await joinCluster('cp-1');
    await joinCluster('worker-1');
    // The kubelet lowercases its hostname; the machine keeps the case it was given.
    await joinCluster('worker-2', 'Worker-2');
    // A machine without an alias: its Node is named after its UUID (ccm matches it so too).
    const bare = world.demo.addMachine({ name: '', tags: { [GROUPS]: group } });
    await createNodes(api, [{ name: bare.id, providerID: `triton://${bare.id}`, tainted: false }]);
    // Not the cluster's: another cluster's group, no group, a group merely starting like it, and the
    // same group on another account's machine (CMON lists only the certificate's account).
    world.demo.addMachine({ name: 'db-1', tags: { [GROUPS]: 'k8s-0000000000000000' } });
    world.demo.addMachine({ name: 'bastion' });
    world.demo.addMachine({ name: 'lookalike', tags: { [GROUPS]: `${group}x` } });
    world.other.addMachine({ name: 'their-node', tags: { [GROUPS]: group } });

    const run = await prometheus(await printedJob(), true);
    expect(run.job).toBe(`triton-cmon-${group}`);
    const expected = await nodesInApiServer();
    expect(expected.map((n) => n.node)).toEqual(['cp-1', bare.id, 'worker-1', 'worker-2'].sort());
    expect(pairs(run.targets)).toEqual(expected);
    expect(run.dropped).toEqual([]);
    for (const t of run.targets) {
      expect(t).toMatchObject({
        job: `triton-cmon-${group}`,
        __scheme__: 'https',
        __address__: `${t.instance}.${world.cmon.host}:${world.cmon.port}`,
      });
      // Only the labels the job means every series to carry (meta labels are gone after relabelling).
      expect(
        Object.keys(t)
          .filter((k) => !k.startsWith('__'))
          .sort(),
      ).toEqual(['instance', 'job', 'node']);
    }
    // The job's certificate reaches every target's /metrics through CMON.
    expect(run.scrapes.map((s) => s.status)).toEqual(run.targets.map(() => 200));
  });

  it('follows Nodes that come and go, with the same printed job', async () => {
    world.demo.machines.clear();
    await api.deleteCollectionNode({});
    await joinCluster('worker-1');
    const leaving = await joinCluster('worker-2');
    const job = await printedJob();
    expect(pairs((await prometheus(job)).targets).map((p) => p.node)).toEqual(['worker-1', 'worker-2']);

    // worker-2 leaves (its Node deleted, ccm's groups taken off its machine), worker-3 joins.
    await api.deleteNode({ name: 'worker-2' });
    world.demo.machine(leaving.id).tags = {};
    await joinCluster('worker-3');
    const run = await prometheus(job);
    expect(pairs(run.targets)).toEqual(await nodesInApiServer());
    expect(pairs(run.targets).map((p) => p.node)).toEqual(['worker-1', 'worker-3']);
  });

  it("keeps only the cluster's group by relabelling too, for a CMON that lists more", async () => {
    world.demo.machines.clear();
    await api.deleteCollectionNode({});
    const node = await joinCluster('worker-1');
    const db = world.demo.addMachine({ name: 'db-1', tags: { [GROUPS]: `other,${group}x` } });
    const bastion = world.demo.addMachine({ name: 'bastion' });
    // Without the discovery's groups, CMON lists every machine of the account: the keep rule is then
    // what leaves the others out.
    const yml = await printedJob();
    const withoutGroups = yml.replace(/^ {8}groups:\n {10}- .*\n/m, '');
    expect(withoutGroups).not.toContain('groups:\n');
    const run = await prometheus(withoutGroups);
    expect(run.discovered).toHaveLength(3);
    expect(run.dropped.sort()).toEqual([db.id, bastion.id].sort());
    expect(pairs(run.targets)).toEqual([{ node: 'worker-1', instance: node.id }]);
  });

  it('prints, for the Prometheus Operator, a Secret whose job Prometheus loads and runs alike', async () => {
    world.demo.machines.clear();
    await api.deleteCollectionNode({});
    await joinCluster('worker-1');
    const printed = await printedJob(['--cmon-format', 'additional-scrape-configs']);
    const docs = parseAllDocuments(printed).map((d) => d.toJS());
    expect(docs).toHaveLength(1);
    expect(docs[0]).toMatchObject({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'triton-cmon-scrape', namespace: 'kube-system' },
    });
    // The API server takes it as it is printed (what `kubectl apply` sends).
    const stored = await api.createNamespacedSecret({ namespace: 'kube-system', body: docs[0] });
    expect(stored.type).toBe('Opaque');
    await api.deleteNamespacedSecret({ namespace: 'kube-system', name: 'triton-cmon-scrape' });
    const jobs = docs[0].stringData['triton-cmon.yaml'];
    // additionalScrapeConfigs holds a list of scrape jobs: the very job of --cmon-format job.
    expect(parse(jobs)).toEqual(parse(await printedJob()).scrape_configs);
    const run = await prometheus(`scrape_configs:\n${jobs}`);
    expect(pairs(run.targets)).toEqual(await nodesInApiServer());
  });

  it("is loaded by Prometheus' own config loader, which refuses a job it would refuse at start", async () => {
    const dir = tempDir('ccm-cmon-job-');
    const yml = await printedJob();
    // The job above passed config.LoadFile; the same loader stops at a key Prometheus does not know.
    const typo = await runPrometheusJob(bin, dir, yml.replace('    scheme: https', '    schema: https'));
    expect(typo.exitCode).toBe(1);
    expect(typo.error).toMatch(/field schema not found in type config.ScrapeConfig/);
  });
});
