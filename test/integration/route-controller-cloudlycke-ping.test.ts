/**
 * Cloudlycke's routes end to end, with packets: a "host" network namespace with a bridge plays the
 * Vagrant host, and "VM" namespaces hang off it by veth pairs, each with a Pod address (on its
 * loopback, inside its Pod CIDR) and a default route via the host. ccm's route controller runs in
 * this process against a real kube-apiserver (on loopback, outside the namespaces), its `ip` commands
 * run in the host namespace (`ip -n`), and every VM pings every other VM's Pod address from its own
 * Pod address, so both directions need ccm's routes. Run with a table of ccm's own (100), with 254
 * given by number (iproute2 prints it as `main`), with `main`, and with a table known by a name
 * (rt_tables bind-mounted in a mount namespace of `ip`'s own; the host's /etc is not changed).
 *
 * Packets go only to addresses inside the namespaces this test makes; all of them are removed in
 * afterAll, whatever the outcome.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CoreV1Api, V1Node } from '@kubernetes/client-node';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostRoutes, type IpRunner } from '../../src/providers/cloudlycke/routes.js';
import type { Provider } from '../../src/providers/types.js';
import { fixtureApi, nodeObject } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { writeInventory } from '../helpers/inventory.js';
import {
  type InProcess,
  moreRoutePasses,
  routeControllerInput,
  runInput,
  startInProcess,
  until,
} from '../helpers/run.js';
import { tempDir } from '../helpers/tmp.js';

// Unique on a machine shared with other sessions' tests: the pid alone may repeat.
const PREFIX = `ccm-ping-${process.pid}-${randomBytes(3).toString('hex')}`;
const HOST = `${PREFIX}-host`;
const CLUSTER = 'lab';
const VMS = [1, 2, 3, 4, 5, 6, 7, 8, 9];
/** A VM whose Node claims the upper half of vm1's Pod CIDR: a packet it got for vm1's Pod is lost. */
const EVIL = 66;
const vmNamespace = (n: number) => `${PREFIX}-vm${n}`;
const vmAddress = (n: number) => `192.168.56.${10 + n}`;
/** In the upper half of the /24, the half the nested CIDR would take. */
const podAddress = (n: number) => `10.244.${n}.200`;
const made: string[] = [];

let cp: ControlPlane;
let api: CoreV1Api;
let ccm: InProcess | undefined;
/** A folder for an rt_tables naming table 100 `ccmpods`, mounted over iproute2's in `ip`'s own mount namespace. */
let rtTables: { dir: string; over: string } | undefined;

const inHost = async (...args: string[]) => String((await execa('ip', ['-n', HOST, ...args])).stdout);

async function namespace(name: string): Promise<void> {
  await execa('ip', ['netns', 'add', name]);
  made.push(name);
  await execa('ip', ['-n', name, 'link', 'set', 'lo', 'up']);
}

/** A VM: its end of a veth on the host's bridge, its address, a Pod address, and the host as its router. */
async function vm(n: number, pod: boolean): Promise<void> {
  const ns = vmNamespace(n);
  await namespace(ns);
  await inHost('link', 'add', `vm${n}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns);
  await inHost('link', 'set', `vm${n}`, 'master', 'br0', 'up');
  const inVm = (...args: string[]) => execa('ip', ['-n', ns, ...args]);
  await inVm('addr', 'add', `${vmAddress(n)}/24`, 'dev', 'eth0');
  await inVm('link', 'set', 'eth0', 'up');
  if (pod) await inVm('addr', 'add', `${podAddress(n)}/32`, 'dev', 'lo');
  await inVm('route', 'add', 'default', 'via', '192.168.56.1');
}

beforeAll(async () => {
  if ((await execa('ping', ['-V'], { reject: false })).exitCode !== 0)
    throw new Error('ping is missing: test/setup.sh installs it (iputils-ping)');
  await namespace(HOST);
  await inHost('link', 'add', 'br0', 'type', 'bridge');
  await inHost('addr', 'add', '192.168.56.1/24', 'dev', 'br0');
  await inHost('link', 'set', 'br0', 'up');
  // The host routes between its VMs, without ICMP redirects telling them to go straight to each other.
  await execa('ip', [
    'netns',
    'exec',
    HOST,
    'sysctl',
    '-qw',
    'net.ipv4.ip_forward=1',
    'net.ipv4.conf.all.send_redirects=0',
    'net.ipv4.conf.default.send_redirects=0',
    'net.ipv4.conf.br0.send_redirects=0',
  ]);
  await Promise.all([...VMS.map((n) => vm(n, true)), vm(EVIL, false)]);
  const over = ['/etc/iproute2', '/usr/share/iproute2'].find((d) => existsSync(d));
  if (over) {
    const dir = tempDir('ccm-rt-tables-');
    writeFileSync(join(dir, 'rt_tables'), '255\tlocal\n254\tmain\n253\tdefault\n0\tunspec\n100\tccmpods\n');
    rtTables = { dir, over };
  }
  cp = await startControlPlane();
  api = fixtureApi(cp.kubeconfigPath);
}, 120_000);

afterAll(async () => {
  try {
    await ccm?.stop();
  } finally {
    for (const ns of made.reverse()) await execa('ip', ['netns', 'del', ns], { reject: false });
    await cp?.stop();
  }
});

/** `ip -n <host>`, and with `named` in a mount namespace whose iproute2 folder holds the test's rt_tables. */
function hostIp(named: boolean): IpRunner {
  return async (args, signal) => {
    const cmd = named
      ? [
          'unshare',
          '--mount',
          '--propagation',
          'private',
          '--',
          'sh',
          '-c',
          'mount --bind "$1" "$2" && shift 2 && exec ip "$@"',
          'sh',
          rtTables?.dir ?? '',
          rtTables?.over ?? '',
          '-n',
          HOST,
          ...args,
        ]
      : ['ip', '-n', HOST, ...args];
    const r = await execa(cmd[0] as string, cmd.slice(1), {
      reject: false,
      ...(signal ? { cancelSignal: signal } : {}),
    });
    if (r.exitCode !== 0) throw new Error(String(r.stderr));
    return String(r.stdout);
  };
}

async function startCcm(table: string, named: boolean): Promise<InProcess> {
  const input = runInput(
    cp.kubeconfigPath,
    writeInventory([]),
    routeControllerInput(CLUSTER, '10.244.0.0/16'),
  );
  const inHostNamespace = (p: Provider): Provider => ({ ...p, routes: new HostRoutes(table, hostIp(named)) });
  ccm = await startInProcess(input, { wrapProvider: inHostNamespace });
  return ccm;
}

async function node(name: string, address: string, podCIDR: string): Promise<void> {
  await api.createNode({
    body: nodeObject({ name, tainted: false, addresses: [{ type: 'InternalIP', address }], podCIDR }),
  });
}
const network = (n: V1Node) => n.status?.conditions?.find((c) => c.type === 'NetworkUnavailable')?.reason;
const reasonOf = async (name: string) => network(await api.readNode({ name }));
const allRouteCreated = async () =>
  (await api.listNode()).items.filter((n) => network(n) === 'RouteCreated').length === VMS.length;

/** Every VM pings every other VM's Pod address from its own: "vmA→vmB ttl=63", or why not. */
async function pingAll(): Promise<string[]> {
  const pairs = VMS.flatMap((from) => VMS.filter((to) => to !== from).map((to) => [from, to] as const));
  return Promise.all(
    pairs.map(async ([from, to]) => {
      const r = await execa(
        'ip',
        ['netns', 'exec', vmNamespace(from), 'ping', '-c1', '-W1', '-I', podAddress(from), podAddress(to)],
        { reject: false },
      );
      const ttl = /ttl=(\d+)/.exec(String(r.stdout))?.[1];
      return `vm${from}→vm${to} ${r.exitCode === 0 ? `ttl=${ttl}` : 'lost'}`;
    }),
  );
}
const everyPingThroughTheHost = () =>
  VMS.flatMap((from) => VMS.filter((to) => to !== from).map((to) => `vm${from}→vm${to} ttl=63`));

const operations = async (c: InProcess) =>
  Object.fromEntries(
    (await c.handle.metrics.routeOperations.get()).values.map((v) => [
      `${v.labels.operation} ${v.labels.result}`,
      v.value,
    ]),
  );
/** ccm's log lines at info (pino level 30) whose message matches. */
const infoLines = (c: InProcess, pattern: RegExp) =>
  c.logs.filter((l) => {
    const line = JSON.parse(l) as { level: number; msg: string };
    return line.level === 30 && pattern.test(line.msg);
  });
const logLines = (c: InProcess, pattern: RegExp) =>
  c.logs.filter((l) => pattern.test((JSON.parse(l) as { msg: string }).msg));

/** The rules of the host namespace that look up table 100, whatever rt_tables calls it. */
const rulesOf100 = async () => JSON.parse(await inHost('-json', 'rule', 'show', 'table', '100')) as unknown[];

async function reset(): Promise<void> {
  await ccm?.stop();
  ccm = undefined;
  await api.deleteCollectionNode({});
  await until('no Nodes', async () => (await api.listNode()).items.length === 0);
  await inHost('route', 'flush', 'proto', 'static');
  await execa('ip', ['-n', HOST, 'route', 'flush', 'table', '100'], { reject: false });
  while ((await rulesOf100()).length) await inHost('rule', 'del', 'table', '100');
}

const TABLES = [
  { table: '100', named: false, what: "a table of ccm's own (100)" },
  { table: '254', named: false, what: '254, given by number (iproute2 prints it as main)' },
  { table: 'main', named: false, what: 'main' },
  { table: '100', named: true, what: '100, given by number, which rt_tables names ccmpods' },
  { table: 'ccmpods', named: true, what: 'ccmpods, a name from rt_tables' },
];

describe("Cloudlycke routes end to end: VMs in network namespaces ping each other's Pods through the host", () => {
  it.each(TABLES)(
    '$what: every Pod reachable from every VM after one pass; a nested Pod CIDR and a copied address change nothing',
    async ({ table, named }) => {
      if (named && !rtTables) return expect.fail('no iproute2 folder to mount an rt_tables over');
      await reset();
      for (const n of VMS) await node(`vm${n}`, vmAddress(n), `10.244.${n}.0/24`);

      const started = Date.now();
      const c = await startCcm(table, named);
      await until(`${VMS.length} Nodes RouteCreated`, allRouteCreated);
      const converged = Date.now() - started;
      // Every create at once succeeded: no FailedToCreateRoute, no Node NoRouteCreated on the way.
      expect(await operations(c)).toEqual({ 'create success': VMS.length });
      const ownTable = table === '100' || table === 'ccmpods';
      expect((await rulesOf100()).length).toBe(ownTable ? 1 : 0);
      // Nothing but the kernel's three rules where the table is main.
      if (!ownTable) expect(JSON.parse(await inHost('-json', 'rule', 'show'))).toHaveLength(3);
      expect(await pingAll()).toEqual(everyPingThroughTheHost());

      // A Node claiming half of vm1's Pod CIDR, and one reporting vm2's address as its own.
      await node('evil', vmAddress(EVIL), '10.244.1.128/25');
      await node('copycat', vmAddress(2), '10.244.99.0/24');
      await moreRoutePasses(c, 4);
      expect(await operations(c)).toEqual({ 'create success': VMS.length });
      const routed = await inHost('-json', 'route', 'show', 'table', table === 'ccmpods' ? '100' : table);
      const destinations = (JSON.parse(routed) as { dst: string }[]).map((r) => r.dst);
      expect(destinations).not.toContain('10.244.1.128/25');
      expect(destinations).not.toContain('10.244.99.0/24');
      expect(await reasonOf('evil')).toBe('NoRouteCreated');
      expect(await reasonOf('vm2')).toBe('RouteCreated');
      expect(await reasonOf('copycat')).toBeUndefined();
      expect(await pingAll()).toEqual(everyPingThroughTheHost());
      // Said once, though every pass sees it.
      expect(logLines(c, /all report the address 192\.168\.56\.12/)).toHaveLength(1);
      const ambiguity = await until('the AmbiguousNodeAddress events', async () => {
        const uids = new Set((await api.listNode()).items.map((n) => n.metadata?.uid));
        const events = (await api.listNamespacedEvent({ namespace: 'default' })).items.filter(
          (e) => e.reason === 'AmbiguousNodeAddress' && uids.has(e.involvedObject.uid),
        );
        return events.length >= 2 && events;
      });
      expect(ambiguity.map((e) => e.involvedObject.name).sort()).toEqual(['copycat', 'vm2']);

      await api.deleteNode({ name: 'copycat' });
      await until(
        'the ambiguity over',
        async () => logLines(c, /no longer reported by several/).length === 1,
      );
      const deleted = Date.now();
      await api.deleteNode({ name: 'vm3' });
      await until(
        'the route of vm3 gone',
        async () =>
          !(await inHost('route', 'show', 'table', table === 'ccmpods' ? '100' : table)).includes(
            '10.244.3.0/24',
          ),
      );
      const gone = Date.now() - deleted;
      // Counted once `ip route del` has returned, which can be a moment after the kernel dropped the
      // route (seen under test:stress at load 15).
      await until('the delete counted', async () => (await operations(c))['delete success'] === 1);
      expect(await operations(c)).toEqual({ 'create success': VMS.length, 'delete success': 1 });

      // Each create and the delete logged once, at info.
      for (const n of VMS)
        expect(
          infoLines(c, new RegExp(`^created route 10\\.244\\.${n}\\.0/24 for node vm${n}$`)),
        ).toHaveLength(1);
      expect(infoLines(c, /^deleted route 10\.244\.3\.0\/24 via 192\.168\.56\.13$/)).toHaveLength(1);
      console.log(
        `[routes end to end] table ${table}${named ? ' (rt_tables in a mount namespace)' : ''}: ${VMS.length} Nodes RouteCreated ${converged} ms after start; a deleted Node's route gone in ${gone} ms`,
      );
    },
    60_000,
  );
});
