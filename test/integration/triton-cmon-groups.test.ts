/**
 * CMON groups (issue 46, item 1): with --cmon-groups, the `triton.cmon.groups` tag of every managed
 * Node's machine carries the cluster's group (and one per role), merged with the groups others set.
 * Against a real kube-apiserver and the CloudAPI simulator, whose tag writes are validated with
 * triton-tags as sdc-vmapi validates them.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SimMachine } from '../clouds/triton/server.js';
import { createNodes } from '../controlplane/fixtures.js';
import { ccm as cli } from '../helpers/cli.js';
import { tritonWorker } from '../helpers/cloud-nodes.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { adminRequest } from '../helpers/kube-admin.js';
import { type InProcess, TEST_CONTROLLER_OPTIONS, until } from '../helpers/run.js';

const GROUPS = 'triton.cmon.groups';
const OWNER = 'ccm.cmon.groups';
const CONTROL_PLANE = 'node-role.kubernetes.io/control-plane';

const world = useCloudWorld('triton');
let cluster: string;
beforeAll(async () => {
  const uid = (await world.api.readNamespace({ name: 'kube-system' })).metadata?.uid ?? '';
  cluster = `k8s-${uid.replace(/-/g, '').slice(0, 16)}`;
});
let ccm: InProcess | undefined;
afterEach(() => {
  ccm = undefined;
});

const groupsOf = (m: SimMachine) => m.tags[GROUPS];
/** The simulator's requests that change a machine's tags. */
const tagWrites = () =>
  world.sim.requests.filter((r) => r.method !== 'GET' && r.method !== 'HEAD' && /\/tags/.test(r.path));

/** The Node becomes a control-plane Node (its role label, as kubeadm sets it). */
const labelControlPlane = (name: string) =>
  adminRequest(world.cp, 'PUT', `/api/v1/nodes/${name}`, (node) => {
    const metadata = node.metadata as { labels?: Record<string, string> };
    metadata.labels = { ...metadata.labels, [CONTROL_PLANE]: '' };
    return node;
  });

function machines() {
  const w1 = world.sim.addMachine(tritonWorker('w1', { [GROUPS]: 'team-a', role: 'web' }));
  const cp1 = world.sim.addMachine({ name: 'cp1', ips: ['10.10.0.21'] });
  // A machine of the account that is no Node: never touched.
  const db = world.sim.addMachine({ name: 'db', ips: ['10.10.0.31'], tags: { [GROUPS]: 'db' } });
  return { w1, cp1, db };
}

describe('ccm nodes init --cmon-groups', () => {
  it('dry run shows the change and writes nothing; the pass adds the groups, keeps the others, and takes only its own off a Node that left', async () => {
    const { w1, cp1, db } = machines();
    await createNodes(world.api, [
      // Initialised by this very pass: tagged with the provider ID it is given.
      { name: 'w1', providedNodeIP: '10.10.0.11' },
      { name: 'cp1', providerID: `triton://${cp1.id}`, tainted: false, labels: { [CONTROL_PLANE]: '' } },
    ]);
    const worker = [cluster, `${cluster}_worker`];
    const controlPlane = [cluster, `${cluster}_control-plane`];

    const dry = await world.ccm([
      'nodes',
      'init',
      '--cmon-groups',
      'cluster,role',
      '--dry-run',
      '-o',
      'json',
    ]);
    expect(dry.stderr).toBe('');
    expect(dry.exitCode).toBe(0);
    const planned = JSON.parse(dry.stdout);
    const changesOf = (report: { nodes: { name: string; changes: string[] }[] }, name: string) =>
      report.nodes.find((n) => n.name === name)?.changes ?? [];
    expect(changesOf(planned, 'w1')).toContain(`tag ${GROUPS}: add ${worker.join(', ')}`);
    expect(changesOf(planned, 'cp1')).toContain(`tag ${GROUPS}: add ${controlPlane.join(', ')}`);
    expect(planned.nodes.find((n: { name: string }) => n.name === 'cp1').result).toBe('updated');
    expect(tagWrites()).toEqual([]);
    expect(dry.writes).toEqual([]);
    expect(groupsOf(w1)).toBe('team-a');

    const text = await world.ccm([
      'nodes',
      'init',
      '--cmon-groups',
      'cluster,role',
      '--dry-run',
      '-o',
      'wide',
    ]);
    expect(text.exitCode).toBe(0);
    expect(text.stdout).toContain(`would tag ${GROUPS}: add ${controlPlane.join(', ')}`);

    const run = await world.ccm(['nodes', 'init', '--cmon-groups', 'cluster,role', '-o', 'json']);
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    expect(groupsOf(w1)).toBe(['team-a', ...worker].join(','));
    expect(groupsOf(cp1)).toBe(controlPlane.join(','));
    expect(JSON.parse(String(w1.tags[OWNER]))).toEqual({ cluster, groups: worker });
    expect(w1.tags.role).toBe('web');
    expect(db.tags).toEqual({ [GROUPS]: 'db' });

    // Done: a second pass writes nothing to the cloud.
    const writesBefore = tagWrites().length;
    const again = await world.ccm(['nodes', 'init', '--cmon-groups', 'cluster,role', '-o', 'json']);
    expect(again.exitCode).toBe(0);
    expect(tagWrites().length).toBe(writesBefore);

    // The Node leaves: its machine keeps the groups of others, loses ccm's and ccm's record.
    await world.api.deleteNode({ name: 'w1' });
    const leaving = await world.ccm([
      'nodes',
      'init',
      '--cmon-groups',
      'cluster,role',
      '--dry-run',
      '-o',
      'json',
    ]);
    expect(JSON.parse(leaving.stdout).instanceGroups).toEqual([
      { providerID: `triton://${w1.id}`, change: `tag ${GROUPS}: remove ${worker.join(', ')}` },
    ]);
    expect(groupsOf(w1)).toBe(['team-a', ...worker].join(','));
    const left = await world.ccm(['nodes', 'init', '--cmon-groups', 'cluster,role']);
    expect(left.exitCode).toBe(0);
    expect(left.stdout).toContain(
      `instance triton://${w1.id} (no Node): tag ${GROUPS}: remove ${worker.join(', ')}`,
    );
    expect(w1.tags).toEqual({ [GROUPS]: 'team-a', role: 'web' });
    expect(groupsOf(cp1)).toBe(controlPlane.join(','));
    expect(db.tags).toEqual({ [GROUPS]: 'db' });

    // none: ccm takes off what it added, and its record; the tag goes when nothing is left in it.
    const none = await world.ccm(['nodes', 'init', '--cmon-groups', 'none']);
    expect(none.exitCode).toBe(0);
    expect(cp1.tags).toEqual({});
  }, 60_000);

  it('cluster=NAME and --cluster-name; another cluster’s record is left alone and said', async () => {
    const { w1, cp1 } = machines();
    cp1.tags = { [GROUPS]: 'other', [OWNER]: JSON.stringify({ cluster: 'blue', groups: ['other'] }) };
    await createNodes(world.api, [
      { name: 'w1', providerID: `triton://${w1.id}`, tainted: false },
      { name: 'cp1', providerID: `triton://${cp1.id}`, tainted: false },
    ]);
    const run = await world.ccm([
      'nodes',
      'init',
      '--cmon-groups',
      'cluster=prod',
      '--cluster-name',
      'green',
      '-o',
      'json',
    ]);
    expect(run.exitCode).toBe(1);
    expect(groupsOf(w1)).toBe('team-a,prod');
    expect(JSON.parse(String(w1.tags[OWNER]))).toEqual({ cluster: 'green', groups: ['prod'] });
    expect(cp1.tags[GROUPS]).toBe('other');
    const report = JSON.parse(run.stdout);
    expect(report.nodes.find((n: { name: string }) => n.name === 'cp1')).toMatchObject({
      result: 'failed',
      reason: `machine ${cp1.id} carries ${OWNER} of cluster "blue", not this cluster ("green"); ccm leaves its CMON groups alone (remove the tag, or give the same --cluster-name as that cluster's ccm)`,
    });
  });

  it.each([
    [
      ['--cmon-groups', 'clsuter'],
      'ccm: --cmon-groups: expected cluster, cluster=NAME and/or role, comma-separated (e.g. cluster,role), or none, got "clsuter"',
    ],
    [
      ['--cmon-groups', 'cluster=prod.eu'],
      'ccm: --cmon-groups: expected cluster=NAME, NAME a CMON group of letters, digits and - (1 to 100 characters; _ is for role groups), got "cluster=prod.eu"',
    ],
    [
      ['--cmon-groups', 'cluster', '--cluster-name', 'prod eu'],
      'ccm: --cmon-groups: the cluster identity "prod eu" (--cluster-name) is no CMON cluster group name (letters, digits and -, at most 100 characters; _ is for role groups); name the group with cluster=NAME',
    ],
  ])('refuses %j in one line, exit 2, nothing written', async (flags, line) => {
    const { w1 } = machines();
    await createNodes(world.api, [{ name: 'w1', providerID: `triton://${w1.id}`, tainted: false }]);
    const run = await world.ccm(['nodes', 'init', ...flags]);
    expect(run.stderr).toBe(line);
    expect(run.exitCode).toBe(2);
    expect(tagWrites()).toEqual([]);
  });

  it('the key in the environment (TRITON_CMON_GROUPS) is read, and a bad one named', async () => {
    const { w1 } = machines();
    await createNodes(world.api, [{ name: 'w1', providerID: `triton://${w1.id}`, tainted: false }]);
    const bad = await world.ccm(['nodes', 'init'], { env: { TRITON_CMON_GROUPS: 'roles' } });
    expect(bad.stderr).toBe(
      'ccm: TRITON_CMON_GROUPS: expected cluster, cluster=NAME and/or role, comma-separated (e.g. cluster,role), or none, got "roles" (Secret kube-system/triton does not exist either)',
    );
    expect(bad.exitCode).toBe(2);
    const good = await world.ccm(['nodes', 'init'], { env: { TRITON_CMON_GROUPS: 'cluster' } });
    expect(good.exitCode).toBe(0);
    expect(groupsOf(w1)).toBe(`team-a,${cluster}`);
  });

  it('ccm run refuses a bad value at once: one line, exit 2', async () => {
    const run = await cli(['run', '--provider', 'triton', '--cmon-groups', 'cluster,cluster']);
    expect(run.stderr).toBe(
      'ccm: --cmon-groups: expected cluster, cluster=NAME and/or role, comma-separated (e.g. cluster,role), or none, got "cluster,cluster"',
    );
    expect(run.exitCode).toBe(2);
  });

  it('another provider refuses the flag', async () => {
    const run = await cli(
      [
        'nodes',
        'init',
        '--provider',
        'digitalocean',
        '--kubeconfig',
        world.kubeconfig,
        '--cmon-groups',
        'cluster',
      ],
      { DIGITALOCEAN_ACCESS_TOKEN: 'unused' },
    );
    expect(run.stderr).toMatch(/^ccm: --cmon-groups: the digitalocean provider has no CMON groups/);
    expect(run.stderr.split('\n')).toHaveLength(1);
    expect(run.exitCode).toBe(2);
  });
});

describe('ccm run --cmon-groups', () => {
  it('keeps the groups on every managed Node: added, role groups follow a role label, taken off when the Node goes; each write counted in the cloud budget', async () => {
    const { w1, cp1, db } = machines();
    await createNodes(world.api, [
      { name: 'w1', providerID: `triton://${w1.id}`, tainted: false },
      { name: 'cp1', providerID: `triton://${cp1.id}`, tainted: false, labels: { [CONTROL_PLANE]: '' } },
    ]);
    ccm = await world.run({ 'cmon-groups': 'cluster,role' });
    await until(
      'groups on both machines',
      async () => groupsOf(cp1) === `${cluster},${cluster}_control-plane`,
    );
    await until('w1', async () => groupsOf(w1) === `team-a,${cluster},${cluster}_worker`);

    // w1 becomes a control-plane Node: its worker group goes, the control-plane group comes.
    await labelControlPlane('w1');
    await until(
      'w1 follows its role',
      async () => groupsOf(w1) === `team-a,${cluster},${cluster}_control-plane`,
    );

    // Deleted: ccm's groups and record go, the others' stay.
    await world.api.deleteNode({ name: 'w1' });
    await until('w1 loses ccm groups', async () => w1.tags[OWNER] === undefined && groupsOf(w1) === 'team-a');
    expect(w1.tags).toEqual({ [GROUPS]: 'team-a', role: 'web' });
    expect(db.tags).toEqual({ [GROUPS]: 'db' });
    expect(ccm.logs.join('\n')).toContain(
      `Node cp1: tag ${GROUPS}: add ${cluster}, ${cluster}_control-plane`,
    );

    // Every change went through the shared budget and is counted there: once its read-back is over,
    // a moment after the simulator holds the write (seen at load 13).
    let metrics = '';
    const applied = () =>
      Number(
        metrics.match(
          /^ccm_cloud_requests_total\{provider="triton",operation="instance_groups_apply",code="ok"\} (\d+)$/m,
        )?.[1],
      );
    await until('the four changes counted', async () => {
      metrics = await (await fetch(`${ccm?.url}/metrics`)).text();
      return applied() >= 4;
    });
    expect(metrics).toMatch(
      /^ccm_cloud_requests_total\{provider="triton",operation="instance_groups_plan",code="ok"\} \d+$/m,
    );
  }, 60_000);

  it('a standby replica writes nothing; once it leads, it keeps the groups', async () => {
    const { w1 } = machines();
    const lease = 'ccm-cmon-standby';
    const leases = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases';
    await adminRequest(world.cp, 'POST', leases, () => ({
      metadata: { name: lease },
      spec: {
        holderIdentity: 'thief',
        leaseDurationSeconds: 3600,
        renewTime: new Date().toISOString().replace('Z', '000Z'),
      },
    }));
    await createNodes(world.api, [{ name: 'w1', providerID: `triton://${w1.id}`, tainted: false }]);
    ccm = await world.run({
      'cmon-groups': 'cluster,role',
      leaderElect: true,
      lease: {
        durationMs: 3000,
        renewDeadlineMs: 2000,
        retryPeriodMs: 300,
        name: lease,
        namespace: 'kube-system',
      },
    });
    const verbose = async () => (await fetch(`${ccm?.url}/readyz?verbose`)).text();
    await until('standing by', async () => (await verbose()).includes('standby (leader: thief)'));
    await labelControlPlane('w1');
    await sleep(2000);
    expect(tagWrites()).toEqual([]);
    expect(w1.tags).toEqual({ [GROUPS]: 'team-a', role: 'web' });

    await adminRequest(world.cp, 'DELETE', `${leases}/${lease}`);
    await until(
      'leading, groups kept',
      async () => groupsOf(w1) === `team-a,${cluster},${cluster}_control-plane`,
      15_000,
    );
  }, 60_000);
});

describe("the Node names Prometheus' CMON job will give (review 46, finding 7)", () => {
  /** web-1 and web-1b are on machines named web-1 and Web-1; api.example.com on one named api. */
  async function misnamed() {
    const a = world.sim.addMachine({ name: 'web-1', ips: ['10.10.0.41'] });
    const b = world.sim.addMachine({ name: 'Web-1', ips: ['10.10.0.42'] });
    const c = world.sim.addMachine({ name: 'api', ips: ['10.10.0.43'] });
    const d = world.sim.addMachine({ name: 'Db-1', ips: ['10.10.0.44'] });
    await createNodes(world.api, [
      { name: 'web-1', providerID: `triton://${a.id}`, tainted: false },
      { name: 'web-1b', providerID: `triton://${b.id}`, tainted: false },
      { name: 'api.example.com', providerID: `triton://${c.id}`, tainted: false },
      { name: 'db-1', providerID: `triton://${d.id}`, tainted: false },
    ]);
    return { a, b, c };
  }

  it('nodes init --cmon-groups says it with each Node: another name than its own, or the same as another Node', async () => {
    const { a, b, c } = await misnamed();
    const run = await world.ccm(['nodes', 'init', '--cmon-groups', 'cluster', '--dry-run', '-o', 'json']);
    expect(run.exitCode).toBe(0);
    const report = JSON.parse(run.stdout) as { nodes: { name: string; notes?: string[] }[] };
    const notesOf = (name: string) => report.nodes.find((n) => n.name === name)?.notes ?? [];
    expect(notesOf('api.example.com')).toContain(
      `its machine ${c.id} is named "api": Prometheus' CMON job labels its series node="api", not the Node's name (the job takes the machine's name, lowercased, else its UUID; rename the machine to the Node's name)`,
    );
    expect(notesOf('web-1')).toContainEqual(
      expect.stringContaining(`is also machine ${b.id} ("Web-1", Node web-1b)'s, case aside`),
    );
    expect(notesOf('web-1b')).toContainEqual(
      expect.stringContaining(`is also machine ${a.id} ("web-1", Node web-1)'s, case aside`),
    );
    // A machine named as its Node but for case is no problem: the job lowercases it.
    expect(notesOf('db-1')).toEqual([]);
    const text = await world.ccm(['nodes', 'init', '--cmon-groups', 'cluster', '--dry-run']);
    expect(text.stdout).toContain(`note: api.example.com: its machine ${c.id} is named "api"`);
  });

  it('ccm run --cmon-groups warns once per Node, not at every sweep', async () => {
    await misnamed();
    ccm = await world.run({
      'cmon-groups': 'cluster',
      controllerOptions: { ...TEST_CONTROLLER_OPTIONS, nodeStatusUpdateFrequencyMs: 200 },
    });
    const told = (name: string) =>
      (ccm?.logs ?? []).filter((l) => l.includes(`Node ${name}: its machine`)).length;
    await until('the warning', async () => told('api.example.com') === 1);
    // Sweeps every 200 ms: a second, third … sweep (each a plan, counted) says nothing new.
    await sleep(2000);
    const metrics = await (await fetch(`${ccm.url}/metrics`)).text();
    const plans = metrics.match(
      /^ccm_cloud_requests_total\{provider="triton",operation="instance_groups_plan",code="ok"\} (\d+)$/m,
    );
    expect(Number(plans?.[1])).toBeGreaterThanOrEqual(3);
    expect(told('api.example.com')).toBe(1);
    expect(told('web-1')).toBe(1);
    expect(told('web-1b')).toBe(1);
    expect(told('db-1')).toBe(0);
    expect((ccm?.logs ?? []).find((l) => l.includes('Node api.example.com: its machine'))).toMatch(
      /"level":"?(warn|40)/,
    );
  }, 60_000);
});
