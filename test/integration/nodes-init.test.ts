/**
 * `ccm nodes init` end to end: the built CLI against a real kube-apiserver + etcd, with a Cloudlycke
 * inventory as the cloud. Writes are counted from the API server's audit log.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { createNodes, UNINITIALIZED } from '../controlplane/fixtures.js';
import { CLOUDLYCKE_LABELS, CLOUDLYCKE_DEFAULTS as DEFAULTS, useCloudWorld } from '../helpers/cloud-world.js';
import { writeInventory } from '../helpers/inventory.js';

const standin = fileURLToPath(new URL('../fixtures/cloudlycke/vagrant-standin', import.meta.url));

const world = useCloudWorld('cloudlycke');

const nodesInit = (inventory: string, ...extra: string[]) =>
  world.ccm(['nodes', 'init', ...extra], { cloudFlags: ['--cloud-config', inventory] });

/** `ccm nodes init` against Vagrant itself (the stand-in, in `scenario`), without an inventory file. */
const vagrantNodesInit = (scenario: string, ...extra: string[]) =>
  world.ccm(['nodes', 'init', ...extra], {
    env: {
      PATH: `${standin}:${process.env.PATH}`,
      STANDIN_SCENARIO: scenario,
      CLOUDLYCKE_VAGRANT_DIR: tmpdir(),
    },
  });

async function node(name: string): Promise<V1Node> {
  return world.api.readNode({ name });
}

/** Taints other than the not-ready one the TaintNodesByCondition admission plugin adds to every new Node. */
function taints(n: V1Node) {
  return (n.spec?.taints ?? [])
    .filter((t) => t.key !== 'node.kubernetes.io/not-ready')
    .map((t) => ({ ...t }));
}

async function nodeExists(name: string): Promise<boolean> {
  return (await world.api.listNode({ fieldSelector: `metadata.name=${name}` })).items.length === 1;
}

async function eventsFor(name: string) {
  return (
    await world.api.listNamespacedEvent({
      namespace: 'default',
      fieldSelector: `involvedObject.name=${name}`,
    })
  ).items;
}

describe('initialising tainted Nodes', () => {
  it('sets provider ID, both label pairs and addresses, removes only the uninitialized taint, records Synced', async () => {
    const inventory = writeInventory(
      [
        {
          id: 'w1',
          addresses: [
            { type: 'InternalIP', address: '192.168.56.11' },
            { type: 'ExternalIP', address: '203.0.113.11' },
          ],
          labels: { 'cloudlycke.example.com/pool': 'blue' },
        },
        { id: 'w2', type: 'vbox.vm.2g.4cpu', addresses: [{ type: 'InternalIP', address: '192.168.56.12' }] },
      ],
      DEFAULTS,
    );
    await createNodes(world.api, [
      {
        name: 'w1',
        providedNodeIP: '192.168.56.11',
        taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }],
        labels: { 'cloudlycke.example.com/pool': 'set-by-admin' },
      },
      { name: 'w2', providerID: 'cloudlycke://w2' },
    ]);

    const run = await nodesInit(inventory);
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);

    const w1 = await node('w1');
    expect(w1.spec?.providerID).toBe('cloudlycke://w1');
    expect(w1.metadata?.labels).toMatchObject({
      ...CLOUDLYCKE_LABELS,
      // additional labels never overwrite existing keys
      'cloudlycke.example.com/pool': 'set-by-admin',
    });
    expect(taints(w1)).toEqual([{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }]);
    // provided-node-ip first, other addresses of its type dropped, kubelet's Hostname kept
    expect(w1.status?.addresses).toEqual([
      { type: 'InternalIP', address: '192.168.56.11' },
      { type: 'ExternalIP', address: '203.0.113.11' },
      { type: 'Hostname', address: 'w1' },
    ]);

    const w2 = await node('w2');
    expect(w2.spec?.providerID).toBe('cloudlycke://w2');
    expect(w2.metadata?.labels?.['node.kubernetes.io/instance-type']).toBe('vbox.vm.2g.4cpu');
    expect(taints(w2)).toEqual([]);

    for (const name of ['w1', 'w2']) {
      const events = await eventsFor(name);
      expect(events.map((e) => [e.type, e.reason, e.source?.component])).toEqual([
        ['Normal', 'Synced', 'cloud-node-controller'],
      ]);
    }
    // per Node: one patch of the Node, one of nodes/status, one Event
    expect(
      run.writes.map((w) => `${w.verb} ${w.objectRef?.resource}/${w.objectRef?.subresource ?? ''}`).sort(),
    ).toEqual([
      'create events/',
      'create events/',
      'patch nodes/',
      'patch nodes/',
      'patch nodes/status',
      'patch nodes/status',
    ]);
  });

  it('writes nothing on a second pass over an unchanged cluster', async () => {
    const inventory = writeInventory(
      [1, 2, 3].map((i) => ({
        id: `n${i}`,
        addresses: [{ type: 'InternalIP', address: `192.168.56.${i}` }],
      })),
      DEFAULTS,
    );
    await createNodes(
      world.api,
      [1, 2, 3].map((i) => ({ name: `n${i}`, providedNodeIP: `192.168.56.${i}` })),
    );
    const first = await nodesInit(inventory);
    expect(first.exitCode).toBe(0);
    expect(first.writes.length).toBe(9);

    const second = await nodesInit(inventory, '--json');
    expect(second.exitCode).toBe(0);
    expect(second.writes).toEqual([]);
    const report = JSON.parse(second.stdout);
    expect(report.summary).toMatchObject({ total: 3, unchanged: 3, failed: 0 });
    expect(report.kubeWrites).toBe(0);
    expect(report.cloudCalls).toBe(1);
  });

  it('keeps the taint and reports the Node when its provided node IP is not a cloud address', async () => {
    const inventory = writeInventory(
      [{ id: 'bad', addresses: [{ type: 'InternalIP', address: '192.168.56.20' }] }],
      DEFAULTS,
    );
    await createNodes(world.api, [{ name: 'bad', providedNodeIP: '10.9.9.9' }]);
    const run = await nodesInit(inventory, '--json');
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toBe('');
    const report = JSON.parse(run.stdout);
    expect(report.nodes).toEqual([
      expect.objectContaining({ name: 'bad', result: 'failed', reason: expect.stringContaining('10.9.9.9') }),
    ]);
    expect(run.writes).toEqual([]);
    const bad = await node('bad');
    expect(taints(bad)).toEqual([UNINITIALIZED]);
    expect(bad.spec?.providerID).toBeUndefined();
  });

  it('dry run prints the plan and writes nothing', async () => {
    const inventory = writeInventory(
      [{ id: 'd1', addresses: [{ type: 'InternalIP', address: '192.168.56.30' }] }],
      DEFAULTS,
    );
    await createNodes(world.api, [{ name: 'd1' }]);
    const run = await nodesInit(inventory, '--dry-run', '-o', 'wide');
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain('would set providerID cloudlycke://d1');
    expect(run.writes).toEqual([]);
    expect(taints(await node('d1'))).toEqual([UNINITIALIZED]);
  });
});

describe('deleting Nodes only when the cloud positively says the instance is gone', () => {
  const gone = { ready: false, tainted: false } as const;
  const alive = { name: 'alive', providerID: 'cloudlycke://alive', tainted: false } as const;

  it('deletes the Node of an instance the cloud no longer has, with a DeletingNode event', async () => {
    const inventory = writeInventory([{ id: 'alive' }], DEFAULTS);
    await createNodes(world.api, [
      { name: 'alive', providerID: 'cloudlycke://alive', tainted: false },
      { name: 'vanished', providerID: 'cloudlycke://vanished', ...gone },
    ]);
    const run = await nodesInit(inventory, '--deletion-grace-period', '0s', '--json');
    expect(run.exitCode).toBe(0);
    expect(JSON.parse(run.stdout).summary).toMatchObject({ deleted: 1 });
    expect(await nodeExists('vanished')).toBe(false);
    expect(await nodeExists('alive')).toBe(true);
    const events = await eventsFor('vanished');
    expect(events.map((e) => [e.reason, e.source?.component])).toEqual([
      ['DeletingNode', 'cloud-node-lifecycle-controller'],
    ]);
  });

  it('deletes nothing when the cloud listing fails (vagrant errors), exit 1', async () => {
    await createNodes(world.api, [{ name: 'cp-1', providerID: 'cloudlycke://cp-1', ...gone }]);
    const run = await vagrantNodesInit('broken', '--deletion-grace-period', '0s', '--json');
    expect(run.exitCode).toBe(1);
    expect(JSON.parse(run.stdout).listingError).toMatch(/^cloud listing failed: /);
    expect(run.writes).toEqual([]);
    expect(await nodeExists('cp-1')).toBe(true);
  });

  it('deletes and writes nothing when the inventory is malformed: one line, exit 2', async () => {
    const inventory = writeInventory([{ id: 'x' }], DEFAULTS);
    writeFileSync(inventory, 'instances:\n  - id: [unclosed\n');
    await createNodes(world.api, [{ name: 'y', providerID: 'cloudlycke://y', ...gone }]);
    const run = await nodesInit(inventory, '--deletion-grace-period', '0s');
    expect(run.exitCode).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^ccm: inventory .*inventory\.yaml/);
    expect(run.writes).toEqual([]);
    expect(await nodeExists('y')).toBe(true);
  });

  it('never deletes a Node with another cloud’s provider ID or with none, and leaves them untouched', async () => {
    const inventory = writeInventory([{ id: 'other' }], DEFAULTS);
    await createNodes(world.api, [
      { name: 'droplet', providerID: 'digitalocean://12345', ...gone },
      { name: 'metal', providerID: 'baremetal-7', ...gone },
      { name: 'no-id', ...gone },
    ]);
    const run = await nodesInit(inventory, '--deletion-grace-period', '0s', '--json');
    expect(run.exitCode).toBe(0);
    for (const name of ['droplet', 'metal', 'no-id']) expect(await nodeExists(name)).toBe(true);
    expect(run.writes).toEqual([]);
    const report = JSON.parse(run.stdout);
    expect(report.nodes.find((n: { name: string }) => n.name === 'droplet')).toMatchObject({
      result: 'skipped',
    });
  });

  it.each([
    {
      title: 'deletes nothing on an empty listing',
      instances: [],
      says: 'no Node is deleted on an empty listing',
    },
    {
      title:
        'deletes nothing when the listing holds none of the cluster’s instances (wrong project or Vagrantfile)',
      instances: [{ id: 'someone-elses-1' }, { id: 'someone-elses-2' }],
      says: "holds none of this cluster's instances",
    },
  ])('$title', async ({ instances, says }) => {
    const inventory = writeInventory(instances, DEFAULTS);
    await createNodes(world.api, [
      { name: 'a', providerID: 'cloudlycke://a', ...gone },
      { name: 'b', providerID: 'cloudlycke://b', ...gone },
    ]);
    const run = await nodesInit(inventory, '--deletion-grace-period', '0s');
    expect(run.exitCode).toBe(0);
    expect(await nodeExists('a')).toBe(true);
    expect(await nodeExists('b')).toBe(true);
    expect(run.writes.filter((w) => w.verb === 'delete')).toEqual([]);
    expect(run.writes).toEqual([]);
    expect(run.stdout).toContain(says);
  });

  it('does not delete a Node inside its grace period', async () => {
    const inventory = writeInventory([{ id: 'alive' }], DEFAULTS);
    await createNodes(world.api, [alive, { name: 'young', providerID: 'cloudlycke://young', ...gone }]);
    const run = await nodesInit(inventory);
    expect(run.exitCode).toBe(0);
    expect(await nodeExists('young')).toBe(true);
    expect(run.stdout).toContain('grace period');
  });

  it('does not delete a Node that carries the exclusion label (but does delete its unlabelled twin)', async () => {
    const inventory = writeInventory([{ id: 'alive' }], DEFAULTS);
    await createNodes(world.api, [
      alive,
      {
        name: 'pet',
        providerID: 'cloudlycke://pet',
        labels: { 'ccm.io/exclude-from-lifecycle': 'true' },
        ...gone,
      },
      { name: 'cattle', providerID: 'cloudlycke://cattle', ...gone },
    ]);
    const run = await nodesInit(inventory, '--deletion-grace-period', '0s');
    expect(run.exitCode).toBe(0);
    expect(await nodeExists('pet')).toBe(true);
    expect(await nodeExists('cattle')).toBe(false);
  });

  it('does not delete a Ready Node even when its instance is missing', async () => {
    const inventory = writeInventory([{ id: 'alive' }], DEFAULTS);
    await createNodes(world.api, [
      alive,
      { name: 'ready', providerID: 'cloudlycke://ready', tainted: false },
    ]);
    const run = await nodesInit(inventory, '--deletion-grace-period', '0s');
    expect(run.exitCode).toBe(0);
    expect(await nodeExists('ready')).toBe(true);
  });
});

describe('shutdown taint', () => {
  it('taints a NotReady Node whose instance is stopped, and untaints it once Ready', async () => {
    const inventory = writeInventory([{ id: 'sleepy', state: 'stopped' }], DEFAULTS);
    await createNodes(world.api, [
      { name: 'sleepy', providerID: 'cloudlycke://sleepy', tainted: false, ready: false },
    ]);
    expect((await nodesInit(inventory)).exitCode).toBe(0);
    expect(taints(await node('sleepy'))).toEqual([
      { key: 'node.cloudprovider.kubernetes.io/shutdown', effect: 'NoSchedule' },
    ]);
    expect((await nodesInit(inventory)).writes).toEqual([]);

    const current = await node('sleepy');
    await world.api.replaceNodeStatus({
      name: 'sleepy',
      body: {
        ...current,
        status: {
          ...current.status,
          conditions: [
            {
              type: 'Ready',
              status: 'True',
              reason: 'KubeletReady',
              lastHeartbeatTime: new Date(),
              lastTransitionTime: new Date(),
            },
          ],
        },
      },
    });
    expect((await nodesInit(inventory)).exitCode).toBe(0);
    expect(taints(await node('sleepy'))).toEqual([]);
  });
});

describe('the Vagrant seed: kubelets with --node-ip on the private network (issue 6, items 4 and 5)', () => {
  const vagrantInit = (...extra: string[]) => vagrantNodesInit('mixed', '--json', ...extra);

  it('initialises a running machine by its guest address, keeps the taint where no address confirms --node-ip', async () => {
    await createNodes(world.api, [
      // cp-1 runs; vagrant ssh-config only knows 127.0.0.1, the guest reports eth1 192.168.56.10
      { name: 'cp-1', providedNodeIP: '192.168.56.10' },
      // worker-1 is powered off: no addresses, so nothing confirms its --node-ip
      { name: 'worker-1', providedNodeIP: '192.168.56.11' },
    ]);
    const run = await vagrantInit();
    expect(run.exitCode).toBe(1);
    const report = JSON.parse(run.stdout);
    expect(report.nodes.find((n: { name: string }) => n.name === 'cp-1').result).toBe('initialized');
    const worker = report.nodes.find((n: { name: string }) => n.name === 'worker-1');
    expect(worker.result).toBe('failed');
    expect(worker.reason).toContain('192.168.56.11');

    const cp1 = await node('cp-1');
    expect(cp1.spec?.providerID).toBe('cloudlycke://cp-1');
    expect(taints(cp1)).toEqual([]);
    expect(cp1.status?.addresses?.[0]).toEqual({ type: 'InternalIP', address: '192.168.56.10' });
    expect(taints(await node('worker-1')).map((t) => t.key)).toEqual([UNINITIALIZED.key]);
  });

  it('never deletes the Node of a machine vagrant reports not_created or does not define', async () => {
    await createNodes(world.api, [
      { name: 'cp-1', providerID: 'cloudlycke://cp-1', tainted: false },
      { name: 'worker-2', providerID: 'cloudlycke://worker-2', tainted: false, ready: false },
      { name: 'ghost', providerID: 'cloudlycke://ghost', tainted: false, ready: false },
    ]);
    // Two of three missing would be held by the deletion brake before any lookup: the lookups are
    // what this test is about.
    const run = await vagrantInit('--deletion-grace-period', '0s', '--max-deletion-ratio', '0.9');
    const report = JSON.parse(run.stdout);
    expect(report.summary.deleted).toBe(0);
    expect(await nodeExists('worker-2')).toBe(true);
    expect(await nodeExists('ghost')).toBe(true);
    const reason = (name: string) =>
      report.nodes.find((n: { name: string; reason?: string }) => n.name === name)?.reason;
    expect(reason('worker-2')).toMatch(/not deleted: .*not created.*not read as gone/);
    expect(reason('ghost')).toMatch(/not deleted: .*does not define machine "ghost"/);
  });
});
