import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cloudlycke } from '../../../../src/providers/cloudlycke/index.js';
import { inventoryInstances } from '../../../../src/providers/cloudlycke/instances.js';
import { parseInventory, readInventory } from '../../../../src/providers/cloudlycke/inventory.js';
import { InvalidConfigError, NotFoundError } from '../../../../src/providers/errors.js';
import { rejection } from '../../../helpers/rejection.js';
import { invalidConfigMessage } from '../../helpers/invalid-config.js';

const FIXTURE = fileURLToPath(new URL('../../../fixtures/cloudlycke/inventory.yaml', import.meta.url));
const FILE = '/x/inv.yaml';

/** An instance of the sample inventory (test/fixtures/cloudlycke/inventory.yaml) as read, its defaults applied. */
function sampleFields(name: string, internalIP: string, externalIP?: string) {
  return {
    name,
    state: 'running',
    type: 'vbox.vm.1g.2cpu',
    region: 'virtualbox',
    zone: 'virtualbox',
    addresses: [
      { type: 'InternalIP', address: internalIP },
      ...(externalIP ? [{ type: 'ExternalIP', address: externalIP }] : []),
      { type: 'Hostname', address: name },
    ],
    labels: {},
  };
}

/** The one-line InvalidConfigError message that parsing `yaml` produces. */
const problem = (yaml: string) => invalidConfigMessage(() => parseInventory(yaml, FILE), 'the inventory');

describe('parseInventory', () => {
  it('reads loadBalancerPool as one entry or a list, and refuses a non-string entry', () => {
    expect(parseInventory('loadBalancerPool: 10.0.0.0/28\ninstances: []\n', 'f').loadBalancerPool).toEqual([
      '10.0.0.0/28',
    ]);
    expect(
      parseInventory('loadBalancerPool: [10.0.0.0/28, 10.1.0.1-10.1.0.9]\ninstances: []\n', 'f')
        .loadBalancerPool,
    ).toEqual(['10.0.0.0/28', '10.1.0.1-10.1.0.9']);
    expect(parseInventory('instances: []\n', 'f').loadBalancerPool).toBeUndefined();
    expect(() => parseInventory('loadBalancerPool: [12]\ninstances: []\n', 'f')).toThrow(
      'inventory f: loadBalancerPool[0] must be a string, got 12 (a number); quote it',
    );
  });

  it('reads the sample inventory with defaults applied', () => {
    const inventory = parseInventory(readFileSync(FIXTURE, 'utf8'), FIXTURE);
    expect(inventory.instances).toEqual([
      {
        id: 'cp-1',
        ...sampleFields('cp-1', '192.168.56.10'),
        labels: { 'cloudlycke.example.com/role': 'control-plane' },
      },
      { id: 'worker-1', ...sampleFields('worker-1', '192.168.56.11') },
      { id: 'worker-2', ...sampleFields('worker-2', '192.168.56.12', '203.0.113.12') },
    ]);
  });

  it('lets an instance override the defaults and leaves unset fields empty without defaults', () => {
    const inventory = parseInventory(
      [
        'defaults: { type: small, region: r1 }',
        'instances:',
        '  - { id: a, type: large, zone: z9, state: stopped }',
        '  - { id: b, name: node-b }',
      ].join('\n'),
      FILE,
    );
    expect(
      inventory.instances.map(({ id, name, state, type, region, zone }) => ({
        id,
        name,
        state,
        type,
        region,
        zone,
      })),
    ).toEqual([
      { id: 'a', name: 'a', state: 'stopped', type: 'large', region: 'r1', zone: 'z9' },
      { id: 'b', name: 'node-b', state: 'running', type: 'small', region: 'r1', zone: '' },
    ]);
    expect(parseInventory('instances: [{ id: a }]', FILE).instances[0]).toMatchObject({
      type: '',
      region: '',
      zone: '',
    });
  });

  it('adds a Hostname address equal to the name only when none is given', () => {
    const inventory = parseInventory(
      [
        'instances:',
        '  - { id: a, name: node-a }',
        '  - id: b',
        '    addresses: [{ type: Hostname, address: b.lab }, { type: InternalIP, address: "fd00::b" }]',
      ].join('\n'),
      FILE,
    );
    expect(inventory.instances[0]?.addresses).toEqual([{ type: 'Hostname', address: 'node-a' }]);
    expect(inventory.instances[1]?.addresses).toEqual([
      { type: 'Hostname', address: 'b.lab' },
      { type: 'InternalIP', address: 'fd00::b' },
    ]);
  });

  it('accepts an explicitly empty cloud', () => {
    expect(parseInventory('instances: []', FILE).instances).toEqual([]);
  });

  it.each([
    [
      'a YAML syntax error, with its line',
      'instances:\n  - id: a\n    b: c\n   d: e\n',
      /^inventory \/x\/inv\.yaml: YAML syntax error at line 4, column \d+: .+; fix the YAML$/,
    ],
    [
      'a duplicate YAML key',
      'instances:\n  - id: a\n    id: b\n',
      'inventory /x/inv.yaml: YAML syntax error at line 3, column 5: Map keys must be unique; fix the YAML',
    ],
    [
      'an unresolved alias',
      'instances: *nope\n',
      'inventory /x/inv.yaml: YAML error: Unresolved alias (the anchor must be set before the alias): nope; fix the YAML',
    ],
  ])('refuses %s', (_what, yaml, expected) => {
    const message = problem(yaml);
    if (typeof expected === 'string') expect(message).toBe(expected);
    else expect(message).toMatch(expected);
  });

  it.each([
    ['an empty file', '', 'the file is empty; it must be a mapping with an "instances" list'],
    [
      'a list at the top',
      '- id: a\n',
      'the top level must be a mapping with an "instances" list, got a list',
    ],
    [
      'a scalar at the top',
      'hello\n',
      'the top level must be a mapping with an "instances" list, got "hello"',
    ],
    [
      'an unknown top-level key',
      'instance: []\n',
      'the top level has unknown key "instance"; allowed keys: defaults, loadBalancerPool, instances',
    ],
    [
      'a missing instances list',
      'defaults: { type: t }\n',
      'missing "instances" list; add "instances:" with one entry per machine',
    ],
    [
      'an empty instances key',
      'instances:\n',
      'instances is empty; list the machines under it, or write "instances: []" for an empty cloud',
    ],
    ['instances that are not a list', 'instances: { id: a }\n', 'instances must be a list, got a mapping'],
    [
      'defaults that are not a mapping',
      'defaults: [a]\ninstances: []\n',
      'defaults must be a mapping with type, region and zone, got a list',
    ],
    [
      'an unknown defaults key',
      'defaults: { size: big }\ninstances: []\n',
      'defaults has unknown key "size"; allowed keys: type, region, zone',
    ],
    [
      'a defaults value that is not a string',
      'defaults: { zone: 3 }\ninstances: []\n',
      'defaults.zone must be a string, got 3 (a number); quote it',
    ],
    [
      'an instance that is not a mapping',
      'instances: [worker-1]\n',
      'instances[0] must be a mapping with at least an id, got "worker-1"',
    ],
    [
      'an unknown instance key (a typo)',
      'instances:\n  - { id: a, adresses: [] }\n',
      'instances[0] has unknown key "adresses"; allowed keys: id, name, state, type, region, zone, addresses, labels',
    ],
    [
      'a missing id',
      'instances:\n  - name: a\n',
      'instances[0].id is missing; give every instance a unique id',
    ],
    [
      'an id that is not a string',
      'instances:\n  - id: 12\n',
      'instances[0].id must be a string, got 12 (a number); quote it',
    ],
    ['an empty id', 'instances:\n  - id: ""\n', 'instances[0].id must not be empty'],
    [
      'an id with "/"',
      'instances:\n  - id: rack/a\n',
      'instances[0].id "rack/a" must not contain "/" (it becomes the provider ID cloudlycke://<id>)',
    ],
    [
      'an id with whitespace',
      'instances:\n  - id: "a b"\n',
      'instances[0].id "a b" must not contain whitespace',
    ],
    [
      'a duplicate id',
      'instances:\n  - id: a\n  - id: b\n  - id: a\n',
      'instances[2].id "a" is already used by instances[0]; ids must be unique',
    ],
    [
      'a duplicate name',
      'instances:\n  - id: a\n  - { id: b, name: a }\n',
      'instances[1].name "a" is already used by instances[0]; names must be unique',
    ],
    [
      'a name that is not a string',
      'instances:\n  - { id: a, name: [x] }\n',
      'instances[0].name must be a string, got a list; quote it',
    ],
    [
      'a bad state',
      'instances:\n  - id: a\n  - id: b\n  - { id: c, state: foo }\n',
      'instances[2].state must be "running" or "stopped", got "foo"',
    ],
    [
      'the state gone',
      'instances:\n  - { id: a, state: gone }\n',
      'instances[0].state must be "running" or "stopped", got "gone"',
    ],
    [
      'addresses that are not a list',
      'instances:\n  - { id: a, addresses: { type: InternalIP } }\n',
      'instances[0].addresses must be a list of {type, address}, got a mapping',
    ],
    [
      'an address that is not a mapping',
      'instances:\n  - { id: a, addresses: [10.0.0.1] }\n',
      'instances[0].addresses[0] must be a mapping {type, address}, got "10.0.0.1"',
    ],
    [
      'a bad address type',
      'instances:\n  - id: a\n    addresses: [{ type: PrivateIP, address: 10.0.0.1 }]\n',
      'instances[0].addresses[0].type must be one of Hostname, InternalIP, ExternalIP, InternalDNS, ExternalDNS, got "PrivateIP"',
    ],
    [
      'a missing address',
      'instances:\n  - id: a\n    addresses: [{ type: InternalIP }]\n',
      'instances[0].addresses[0].address is missing',
    ],
    [
      'an InternalIP that is not an IP',
      'instances:\n  - id: a\n    addresses: [{ type: InternalIP, address: 10.0.0.1 }, { type: InternalIP, address: node-a.lab }]\n',
      'instances[0].addresses[1].address must be an IPv4 or IPv6 address for type InternalIP, got "node-a.lab"',
    ],
    [
      'an ExternalIP that is not an IP',
      'instances:\n  - id: a\n    addresses: [{ type: ExternalIP, address: 300.1.1.1 }]\n',
      'instances[0].addresses[0].address must be an IPv4 or IPv6 address for type ExternalIP, got "300.1.1.1"',
    ],
    [
      'labels that are not a mapping',
      'instances:\n  - { id: a, labels: [x] }\n',
      'instances[0].labels must be a mapping of label keys to string values, got a list',
    ],
    [
      'a label value that is not a string',
      'instances:\n  - { id: a, labels: { example.com/gpu: true } }\n',
      'instances[0].labels["example.com/gpu"] must be a string, got true (a boolean); quote it',
    ],
    [
      'a label in the kubernetes.io domain',
      'instances:\n  - { id: a, labels: { node.kubernetes.io/instance-type: big } }\n',
      'instances[0].labels["node.kubernetes.io/instance-type"]: the kubernetes.io and k8s.io domains are reserved for Kubernetes; use a prefix of your own, e.g. example.com/instance-type',
    ],
    [
      'a label in the k8s.io domain',
      'instances:\n  - { id: a, labels: { k8s.io/role: x } }\n',
      'instances[0].labels["k8s.io/role"]: the kubernetes.io and k8s.io domains are reserved for Kubernetes; use a prefix of your own, e.g. example.com/role',
    ],
    [
      'a label key that is not valid',
      'instances:\n  - { id: a, labels: { "bad key": x } }\n',
      'instances[0].labels["bad key"]: not a valid label key; the name part takes at most 63 letters, digits, "-", "_", "." starting and ending with a letter or digit',
    ],
    [
      'a label value that is not valid',
      'instances:\n  - { id: a, labels: { example.com/x: "a b" } }\n',
      'instances[0].labels["example.com/x"] value "a b" is not a valid label value (at most 63 letters, digits, "-", "_", "." starting and ending with a letter or digit)',
    ],
  ])('refuses %s', (_what, yaml, expected) => {
    expect(problem(yaml)).toBe(`inventory ${FILE}: ${expected}`);
  });

  it('keeps labels outside the reserved domains, e.g. notkubernetes.io', () => {
    const inventory = parseInventory(
      'instances:\n  - { id: a, labels: { notkubernetes.io/x: "1", plain: "" } }\n',
      FILE,
    );
    expect(inventory.instances[0]?.labels).toEqual({ 'notkubernetes.io/x': '1', plain: '' });
  });
});

describe('readInventory and the inventory Instances', () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cloudlycke-inv-'));
    file = join(dir, 'inventory.yaml');
    copyFileSync(FIXTURE, file);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('names a missing file', async () => {
    const err = await rejection(readInventory(join(dir, 'nope.yaml')));
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(err.message).toBe(
      `inventory ${join(dir, 'nope.yaml')}: file not found; create it or point --cloud-config or CLOUDLYCKE_INVENTORY at the inventory YAML file`,
    );
  });

  it('names a folder given instead of a file', async () => {
    mkdirSync(join(dir, 'sub'));
    const err = await rejection(readInventory(join(dir, 'sub')));
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(err.message).toBe(
      `inventory ${join(dir, 'sub')}: is a folder, not a file; point --cloud-config or CLOUDLYCKE_INVENTORY at the inventory YAML file`,
    );
  });

  it('lists the instances with cloudlycke:// provider IDs', async () => {
    const instances = await inventoryInstances(file).list();
    expect(instances.map((i) => [i.providerID, i.name, i.state, i.type, i.region, i.zone])).toEqual([
      ['cloudlycke://cp-1', 'cp-1', 'running', 'vbox.vm.1g.2cpu', 'virtualbox', 'virtualbox'],
      ['cloudlycke://worker-1', 'worker-1', 'running', 'vbox.vm.1g.2cpu', 'virtualbox', 'virtualbox'],
      ['cloudlycke://worker-2', 'worker-2', 'running', 'vbox.vm.1g.2cpu', 'virtualbox', 'virtualbox'],
    ]);
  });

  it('gets one instance by provider ID', async () => {
    const instance = await inventoryInstances(file).get('cloudlycke://worker-2');
    expect(instance).toEqual({
      providerID: 'cloudlycke://worker-2',
      ...sampleFields('worker-2', '192.168.56.12', '203.0.113.12'),
    });
  });

  it('answers NotFound only for an instance absent from a readable, valid file', async () => {
    const err = await rejection(inventoryInstances(file).get('cloudlycke://worker-9'));
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err.message).toBe(`instance "worker-9" is not in inventory ${file}`);
  });

  it.each([
    ['another scheme', 'digitalocean://12345'],
    ['bare metal without a scheme', 'worker-1'],
    ['a location part', 'cloudlycke://rack/worker-1'],
    ['an empty value', ''],
  ])(
    'refuses a provider ID of %s with InvalidConfig, without reading the file',
    async (_what, providerID) => {
      const calls: string[] = [];
      const err = await rejection(
        inventoryInstances(file, { onCloudCall: (w) => calls.push(w) }).get(providerID),
      );
      expect(err).toBeInstanceOf(InvalidConfigError);
      expect(err.message).toBe(
        `provider ID ${JSON.stringify(providerID)} is not a Cloudlycke provider ID (cloudlycke://<id>)`,
      );
      expect(calls).toEqual([]);
    },
  );

  it('never answers NotFound when the file is missing or broken', async () => {
    rmSync(file);
    const missing = await rejection(inventoryInstances(file).get('cloudlycke://worker-9'));
    expect(missing).toBeInstanceOf(InvalidConfigError);
    writeFileSync(file, 'instances: [\n');
    const broken = await rejection(inventoryInstances(file).get('cloudlycke://worker-9'));
    expect(broken).toBeInstanceOf(InvalidConfigError);
    expect(broken.message).toMatch(
      /^inventory .*: YAML syntax error at line \d+, column \d+: .*; fix the YAML$/,
    );
  });

  it('re-reads the file on every call and reports each read once', async () => {
    const calls: string[] = [];
    const instances = inventoryInstances(file, { onCloudCall: (w) => calls.push(w) });
    expect(await instances.list()).toHaveLength(3);
    expect((await instances.get('cloudlycke://worker-1')).state).toBe('running');

    writeFileSync(
      file,
      'instances:\n  - { id: worker-1, state: stopped }\n  - { id: worker-3, addresses: [{ type: InternalIP, address: 192.168.56.13 }] }\n',
    );
    expect((await instances.list()).map((i) => i.name)).toEqual(['worker-1', 'worker-3']);
    expect((await instances.get('cloudlycke://worker-1')).state).toBe('stopped');
    await expect(instances.get('cloudlycke://cp-1')).rejects.toBeInstanceOf(NotFoundError);
    expect(calls).toEqual([
      'inventory read',
      'inventory read',
      'inventory read',
      'inventory read',
      'inventory read',
    ]);
  });

  it('is what cloudlycke.create builds when values.inventory is set', async () => {
    const calls: string[] = [];
    const provider = cloudlycke.create(
      { inventory: file, vagrantDir: '/does/not/matter' },
      { onCloudCall: (w) => calls.push(w) },
    );
    expect(provider.providerIdScheme).toBe('cloudlycke');
    expect((await provider.instances.list()).map((i) => i.providerID)).toEqual([
      'cloudlycke://cp-1',
      'cloudlycke://worker-1',
      'cloudlycke://worker-2',
    ]);
    expect(calls).toEqual(['inventory read']);
  });
});
