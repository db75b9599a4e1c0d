/**
 * A cloud's test world in one call: the real kube-apiserver + etcd, the cloud's simulator (for
 * Cloudlycke, an inventory file), the CLI and `ccm run` pointed at both, and cleanup.
 *
 *   const world = await cloudWorld('brightbox', { instances: 500 });   // a benchmark
 *   const world = useCloudWorld('triton');                              // a vitest file: hooks included
 *
 * What one cloud needs (how its simulator starts and resets, its CLI flags and env, the Secret
 * `ccm run` reads, how N instances are seeded) is one entry of `ADAPTERS` below; a new cloud adds one.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CoreV1Api, PatchStrategy, setHeaderOptions, type V1Secret } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { parse, stringify } from 'yaml';
import type { RunDeps, RunInput } from '../../src/cli/run.js';
import { loadKubeConfig } from '../../src/kube/config.js';
import { KubeTransport } from '../../src/kube/transport.js';
import { parseProviderID } from '../../src/providers/provider-id.js';
import { credentials as tritonCredentials } from '../../src/providers/triton/credentials.js';
import { TRITON_REQUEST_BUDGET } from '../../src/providers/triton/index.js';
import { BrightboxSimulator, SIM_CLIENT } from '../clouds/brightbox/simulator.js';
import { DigitalOceanSimulator } from '../clouds/digitalocean/server.js';
import { OpenStackSimulator } from '../clouds/openstack/simulator.js';
import { KeyFolder, type KeyOptions, type TestKey } from '../clouds/triton/keys.js';
import { TritonSim } from '../clouds/triton/server.js';
import { deleteAllNodes, fixtureApi, forgetNodeDeletions, type NodeSpec } from '../controlplane/fixtures.js';
import {
  type AuditEvent,
  CCM_USER,
  type ControlPlane,
  type StartOptions,
  startControlPlane,
} from '../controlplane/harness.js';
import { type CliResult, ccm as cli } from './cli.js';
import { type InventoryInstance, writeInventory } from './inventory.js';
import { expectTwoReadyReplicas, type InProcess, runInput, startInProcess } from './run.js';
import { removeServices } from './services.js';

/** Instance type, region and zone of every Cloudlycke machine the tests make. */
export const CLOUDLYCKE_DEFAULTS = { type: 'vbox.vm.1g.2cpu', region: 'virtualbox', zone: 'virtualbox' };

/** The well-known labels (GA and beta) ccm gives the Node of a machine of CLOUDLYCKE_DEFAULTS. */
export const CLOUDLYCKE_LABELS = {
  'node.kubernetes.io/instance-type': 'vbox.vm.1g.2cpu',
  'beta.kubernetes.io/instance-type': 'vbox.vm.1g.2cpu',
  'topology.kubernetes.io/zone': 'virtualbox',
  'failure-domain.beta.kubernetes.io/zone': 'virtualbox',
  'topology.kubernetes.io/region': 'virtualbox',
  'failure-domain.beta.kubernetes.io/region': 'virtualbox',
};

/** Cloudlycke's "simulator": its inventory file, which tests rewrite as Vagrant would. */
export class CloudlyckeInventory {
  path = '';
  /** What `seed` wrote at `path`, for `vanish` to rewrite. */
  instances: InventoryInstance[] = [];
  /** Writes a new inventory file (with CLOUDLYCKE_DEFAULTS) and returns its path. */
  write(instances: InventoryInstance[], defaults: Record<string, string> = CLOUDLYCKE_DEFAULTS): string {
    return writeInventory(instances, defaults);
  }
  /** Rewrites the file at `path` in place, as a running `vagrant up` would. */
  rewrite(path: string, instances: InventoryInstance[]): void {
    writeFileSync(path, stringify({ defaults: CLOUDLYCKE_DEFAULTS, instances }));
  }
}

interface Simulators {
  cloudlycke: CloudlyckeInventory;
  digitalocean: DigitalOceanSimulator;
  openstack: OpenStackSimulator;
  brightbox: BrightboxSimulator;
  triton: TritonSim;
}
export type CloudName = keyof Simulators;

export interface WorldOptions {
  /** Instances the cloud holds from the start; `world.nodes` are the Nodes their kubelets register. */
  instances?: number;
  /** Triton: the key requests are signed with (default ECDSA P-256 with a passphrase). */
  key?: KeyOptions;
  /** kube-apiserver options (extra flags: an admission plugin). */
  controlPlane?: StartOptions;
}

export interface CliRun extends CliResult {
  /** What the call wrote to Kubernetes (the API server's audit log, user ccm-operator). */
  writes: AuditEvent[];
  /** Wall time of the CLI process alone (not the audit log reads around it). */
  seconds: number;
}

export interface CliOptions {
  /** Merged over the cloud's credentials env (a key set to undefined removes it). */
  env?: Record<string, string | undefined>;
  /** Replaces the cloud's flags (--cloud-api-url / --cloud-config …) after --provider and --kubeconfig. */
  cloudFlags?: string[];
  timeoutMs?: number;
}

export interface CloudWorld<C extends CloudName = CloudName> {
  cloud: C;
  cp: ControlPlane;
  api: CoreV1Api;
  kubeconfig: string;
  /** A folder of this world's files (cloud.conf …), removed by cleanup. */
  dir: string;
  sim: Simulators[C];
  /** Triton: the signing key the sim knows, and the folder for more. */
  keys: KeyFolder;
  key: TestKey;
  /** The Nodes of `options.instances`, as their kubelets register them (tainted). */
  nodes: NodeSpec[];
  /** The cloud's env for the CLI (credentials, endpoint). */
  env(): Record<string, string | undefined>;
  /** ccm's own Kubernetes transport on this world's kubeconfig: made on first use, closed by cleanup. */
  transport(): KubeTransport;
  /** `args` + --provider, --kubeconfig and the cloud's flags (or `cloudFlags`): a CLI call on this world. */
  args(args: string[], cloudFlags?: string[]): string[];
  /** The built CLI on `args(args)`, with the cloud's env and the writes it made. */
  ccm(args: string[], options?: CliOptions): Promise<CliRun>;
  /** `ccm run`'s cloud part (provider, credentials Secret, env); creates the Secret on first use. */
  runProvider(): Promise<Partial<RunInput>>;
  /**
   * Two replicas of `ccm run` on this world, one Lease: both Ready within 10 s, the standby (which
   * never lists) too (test/helpers/run.ts expectTwoReadyReplicas).
   */
  expectTwoReadyReplicas(): Promise<void>;
  /** Adds n instances (as `options.instances` does) and returns the Nodes their kubelets register. */
  seed(n: number): NodeSpec[];
  /** The instance of this provider ID is deleted behind ccm's back. */
  vanish(providerID: string): void;
  /**
   * Another account of the same cloud, with an instance of its own and none of this world's: its
   * every lookup of this world's instances is a genuine "not found". Stopped by cleanup.
   */
  otherAccount(): Promise<OtherAccount>;
  /** `ccm run` in this process against this world; stopped by `stopRuns` (after each test). */
  run(overrides?: Partial<RunInput>, deps?: RunDeps): Promise<InProcess>;
  stopRuns(): Promise<void>;
  /**
   * Between tests: every Node deleted, and their Events (the deletion brake counts the deletions of
   * the last 10 minutes from them: the previous test's would count towards this one's), the simulator
   * emptied (or restarted with `fresh`).
   */
  reset(options?: { fresh?: boolean }): Promise<void>;
  cleanup(): Promise<void>;
}

export interface OtherAccount {
  /** The CLI's cloud flags and env for this account (what `world.ccm` takes as `cloudFlags` and `env`). */
  cli: { flags: string[]; env: Record<string, string | undefined> };
  /** Points what `ccm run` reads (its credentials Secret; Cloudlycke: its inventory file) at this account. */
  rotate(): Promise<void>;
  stop(): Promise<void>;
}

interface Adapter<S> {
  start(world: CloudWorld): Promise<S>;
  stop(sim: S): Promise<void>;
  /** Empties the simulator in place. */
  clear(sim: S): void;
  cli(sim: S, world: CloudWorld): { flags: string[]; env: Record<string, string | undefined> };
  /** Creates the Secret `ccm run` reads and returns the run input's cloud part. */
  runProvider(sim: S, world: CloudWorld): Promise<Partial<RunInput>>;
  /** Adds n instances and returns the Nodes their kubelets register. */
  seed(sim: S, n: number): NodeSpec[];
  vanish(sim: S, id: string): void;
  otherAccount(sim: S, world: CloudWorld): Promise<OtherAccount>;
}

/** A merge patch of the Secret `ccm run` reads (kubectl patch secret … --type merge). */
async function patchSecret(world: CloudWorld, name: string, stringData: Record<string, string>) {
  await world.api.patchNamespacedSecret(
    { name, namespace: 'kube-system', body: { stringData } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

const fixture = (path: string) =>
  readFileSync(fileURLToPath(new URL(`../fixtures/${path}`, import.meta.url)), 'utf8');

/** The address of the i-th instance `options.instances` seeds (DigitalOcean's private one). */
export function instanceIp(i: number): string {
  return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
}

const padded = (i: number) => `node-${String(i).padStart(5, '0')}`;
const registered = (names: string[]): NodeSpec[] => names.map((name) => ({ name, addresses: [] }));

/** DigitalOcean's getting-started Secret, with its placeholder replaced by `token`. */
export function digitalOceanSecret(token: string, name = 'digitalocean'): V1Secret {
  const doc = parse(fixture('digitalocean/secret.yaml')) as V1Secret;
  return {
    ...doc,
    metadata: { ...doc.metadata, name },
    stringData: { ...doc.stringData, 'access-token': token },
  };
}

/** An official example cloud.conf, unchanged but for its auth-url, which names the simulator. */
export function openStackCloudConf(sim: OpenStackSimulator, name = 'occm-cloud-config'): string {
  return sim.cloudConf(name);
}

/** The Secret ccm's Triton credential schema describes, with its own keys. */
export function tritonSecret(values: Record<string, string>) {
  const stringData: Record<string, string> = {};
  for (const field of tritonCredentials.fields) {
    const value = values[field.key];
    if (value !== undefined && field.secretKey) stringData[field.secretKey] = value;
  }
  return { metadata: { name: tritonCredentials.secretName, namespace: 'kube-system' }, stringData };
}

async function createSecretOnce(api: CoreV1Api, body: V1Secret): Promise<void> {
  const name = body.metadata?.name ?? '';
  const found = await api.listNamespacedSecret({
    namespace: 'kube-system',
    fieldSelector: `metadata.name=${name}`,
  });
  if (found.items.length === 0) await api.createNamespacedSecret({ namespace: 'kube-system', body });
}

const ADAPTERS: { [C in CloudName]: Adapter<Simulators[C]> } = {
  cloudlycke: {
    start: async () => new CloudlyckeInventory(),
    stop: async () => {},
    clear: (sim) => {
      sim.path = '';
    },
    cli: (sim) => ({ flags: sim.path ? ['--cloud-config', sim.path] : [], env: {} }),
    runProvider: async (sim) => ({ provider: 'cloudlycke', 'cloud-config': sim.path }),
    seed: (sim, n) => {
      const ids = Array.from({ length: n }, (_, i) => padded(i));
      sim.instances = ids.map((id, i) => ({
        id,
        addresses: [{ type: 'InternalIP', address: instanceIp(i) }],
      }));
      sim.path = sim.write(sim.instances);
      return registered(ids);
    },
    vanish: (sim, id) => {
      sim.instances = sim.instances.filter((i) => i.id !== id);
      sim.rewrite(sim.path, sim.instances);
    },
    otherAccount: async (sim) => {
      const theirs = [{ id: 'someone-elses-1' }, { id: 'someone-elses-2' }];
      const path = sim.write(theirs);
      return {
        cli: { flags: ['--cloud-config', path], env: {} },
        rotate: async () => sim.rewrite(sim.path, theirs),
        stop: async () => {},
      };
    },
  },
  digitalocean: {
    start: () => DigitalOceanSimulator.start(),
    stop: (sim) => sim.stop(),
    clear: (sim) => sim.reset(),
    cli: (sim) => ({
      flags: ['--cloud-api-url', sim.url],
      env: { DO_ACCESS_TOKEN: sim.token, DO_OVERRIDE_URL: undefined },
    }),
    runProvider: async (sim, world) => {
      await createSecretOnce(world.api, digitalOceanSecret(sim.token));
      // The official controller's env name for the API base URL; the token comes from the Secret only.
      return { credentialsSecret: 'kube-system/digitalocean', env: { DO_OVERRIDE_URL: sim.url } };
    },
    seed: (sim, n) => {
      const names = Array.from({ length: n }, (_, i) => padded(i));
      sim.addDroplets(
        ...names.map((name, i) => ({
          name,
          privateIP: instanceIp(i),
          publicIP: `198.51.${(i >> 8) & 255}.${i & 255}`,
        })),
      );
      return registered(names);
    },
    vanish: (sim, id) => sim.removeDroplet(Number(id)),
    otherAccount: async (sim, world) => {
      const other = sim.addAccount('dop_v1_anotheraccount0123456789abcd');
      other.addDroplets({ id: 900_001, name: 'someone-elses-1', privateIP: '10.200.0.1' });
      return {
        cli: { flags: ['--cloud-api-url', sim.url], env: { DO_ACCESS_TOKEN: other.token } },
        rotate: () => patchSecret(world, 'digitalocean', { 'access-token': other.token }),
        stop: async () => {},
      };
    },
  },
  openstack: {
    start: () => new OpenStackSimulator().start(),
    stop: (sim) => sim.stop(),
    clear: (sim) => {
      sim.servers.clear();
      sim.requests.length = 0;
      sim.clearFaults();
    },
    cli: (sim, world) => {
      const path = join(world.dir, 'cloud.conf');
      writeFileSync(path, openStackCloudConf(sim), { mode: 0o600 });
      return { flags: ['--cloud-config', path], env: {} };
    },
    runProvider: async (sim, world) => {
      // The Secret of the official docs (name, namespace, key cloud.conf).
      const doc = parse(fixture('openstack/occm-cloud-config-secret.yaml')) as V1Secret;
      const data = { 'cloud.conf': Buffer.from(openStackCloudConf(sim)).toString('base64') };
      await createSecretOnce(world.api, { ...doc, data });
      return { credentialsSecret: 'kube-system/cloud-config' };
    },
    seed: (sim, n) => {
      const names = Array.from({ length: n }, (_, i) => padded(i));
      names.forEach((name, i) => {
        sim.addServer({ name, addresses: { private: [{ addr: instanceIp(i) }] } });
      });
      return registered(names);
    },
    vanish: (sim, id) => {
      sim.servers.delete(id);
    },
    otherAccount: async (_, world) => {
      // Another cloud (its own Keystone), named by the cloud.conf in the Secret.
      const other = await new OpenStackSimulator().start();
      other.addServer({ name: 'someone-elses-1', addresses: { private: [{ addr: '10.200.0.1' }] } });
      const path = join(world.dir, 'other-cloud.conf');
      writeFileSync(path, openStackCloudConf(other), { mode: 0o600 });
      return {
        cli: { flags: ['--cloud-config', path], env: {} },
        rotate: () => patchSecret(world, 'cloud-config', { 'cloud.conf': openStackCloudConf(other) }),
        stop: () => other.stop(),
      };
    },
  },
  brightbox: {
    start: () => new BrightboxSimulator().start(),
    stop: (sim) => sim.close(),
    clear: (sim) => sim.reset(),
    cli: (sim) => ({
      flags: ['--cloud-api-url', sim.url],
      env: { BRIGHTBOX_CLIENT: SIM_CLIENT.id, BRIGHTBOX_CLIENT_SECRET: SIM_CLIENT.secret },
    }),
    runProvider: async (sim, world) => {
      // The official controller's Secret: its name and keys.
      await createSecretOnce(world.api, {
        metadata: { name: 'brightbox-credentials', namespace: 'kube-system' },
        type: 'Opaque',
        stringData: {
          'controller-client': SIM_CLIENT.id,
          'controller-client-secret': SIM_CLIENT.secret,
          apiurl: sim.url,
        },
      });
      return { credentialsSecret: 'kube-system/brightbox-credentials' };
    },
    seed: (sim, n) => {
      // Named after the server id, with the address the kubelet was given (--node-ip).
      const brightboxIp = (i: number) => `10.${240 + ((i >> 16) & 7)}.${(i >> 8) & 255}.${i & 255}`;
      const ids = Array.from({ length: n }, (_, i) => `srv-${i.toString(36).padStart(5, '0')}`);
      ids.forEach((id, i) => {
        sim.addServer({ id, name: `worker-${i}`, zone: i % 2 ? 'gb1-b' : 'gb1-a', ipv4: brightboxIp(i) });
      });
      return ids.map((name, i) => ({
        name,
        providedNodeIP: brightboxIp(i),
        addresses: [
          { type: 'ExternalIP', address: brightboxIp(i) },
          { type: 'Hostname', address: name },
        ],
      }));
    },
    vanish: (sim, id) => {
      sim.servers.delete(id);
    },
    otherAccount: async (_, world) => {
      // Another account's API (the Secret's apiurl), with the same client's credentials.
      const other = await new BrightboxSimulator().start();
      other.addServer({ id: 'srv-zzzzz', name: 'someone-elses-1', zone: 'gb1-a', ipv4: '10.250.0.1' });
      return {
        cli: {
          flags: ['--cloud-api-url', other.url],
          env: { BRIGHTBOX_CLIENT: SIM_CLIENT.id, BRIGHTBOX_CLIENT_SECRET: SIM_CLIENT.secret },
        },
        rotate: () => patchSecret(world, 'brightbox-credentials', { apiurl: other.url }),
        stop: () => other.close(),
      };
    },
  },
  triton: {
    start: async (world) => {
      const sim = await new TritonSim({ login: 'demo' }).start();
      sim.addKey(world.key.publicKey);
      return sim;
    },
    stop: (sim) => sim.stop(),
    clear: (sim) => {
      sim.machines.clear();
      sim.requests.length = 0;
      sim.faults.length = 0;
      sim.clearThrottle();
    },
    cli: (sim, world) => ({
      flags: [],
      env: {
        TRITON_URL: sim.url,
        TRITON_ACCOUNT: 'demo',
        TRITON_KEY_MATERIAL: world.key.privateKey,
        TRITON_KEY_PASSPHRASE: world.key.passphrase,
        // nothing of the machine running the tests leaks in
        SSH_AUTH_SOCK: undefined,
        TRITON_KEY_ID: undefined,
        TRITON_USER: undefined,
        TRITON_DATACENTER: undefined,
        SDC_URL: undefined,
        SDC_ACCOUNT: undefined,
        SDC_KEY_ID: undefined,
        SDC_USER: undefined,
      },
    }),
    runProvider: async (sim, world) => {
      const values: Record<string, string> = {
        url: sim.url,
        account: 'demo',
        keyMaterial: world.key.privateKey,
      };
      if (world.key.passphrase) values.keyPassphrase = world.key.passphrase;
      await createSecretOnce(world.api, tritonSecret(values));
      // Triton's own default budget, not the tests' 100 a second: the simulator throttles as CloudAPI
      // does (10 a second, bursts of 30), and ccm's default stays under it.
      return {
        credentialsSecret: `kube-system/${tritonCredentials.secretName}`,
        cloudQps: TRITON_REQUEST_BUDGET.qps,
        cloudBurst: TRITON_REQUEST_BUDGET.burst,
      };
    },
    seed: (sim, n) => {
      const names = Array.from({ length: n }, (_, i) => padded(i));
      names.forEach((name, i) => {
        sim.addMachine({ name, ips: [instanceIp(i)], primaryIp: instanceIp(i) });
      });
      return registered(names);
    },
    vanish: (sim, id) => {
      sim.machines.delete(id);
    },
    otherAccount: async (sim, world) => {
      // Another datacenter's CloudAPI (the Secret's url), which knows the same key.
      const other = await new TritonSim({ login: 'demo' }).start();
      other.addKey(world.key.publicKey);
      other.addMachine({ name: 'someone-elses-1', ips: ['10.200.0.1'], primaryIp: '10.200.0.1' });
      const own = ADAPTERS.triton.cli(sim, world);
      return {
        cli: { flags: own.flags, env: { ...own.env, TRITON_URL: other.url } },
        rotate: () =>
          patchSecret(
            world,
            tritonCredentials.secretName as string,
            tritonSecret({ url: other.url }).stringData as Record<string, string>,
          ),
        stop: () => other.stop(),
      };
    },
  },
};

/** Starts a cloud's world; `cleanup()` stops all of it. */
export async function cloudWorld<C extends CloudName>(
  cloud: C,
  options: WorldOptions = {},
): Promise<CloudWorld<C>> {
  const adapter = ADAPTERS[cloud] as unknown as Adapter<Simulators[C]>;
  const runs = new Set<InProcess>();
  const others: OtherAccount[] = [];
  let transport: KubeTransport | undefined;
  const keys = new KeyFolder();
  const world: CloudWorld<C> = {
    cloud,
    cp: undefined as unknown as ControlPlane,
    api: undefined as unknown as CoreV1Api,
    kubeconfig: '',
    dir: mkdtempSync(join(tmpdir(), `ccm-${cloud}-`)),
    sim: undefined as unknown as Simulators[C],
    keys,
    key: undefined as unknown as TestKey,
    nodes: [],
    env: () => adapter.cli(world.sim, world).env,
    transport: () => {
      transport ??= new KubeTransport(loadKubeConfig({ kubeconfig: world.kubeconfig, env: {} }));
      return transport;
    },
    args: (args, cloudFlags) => [
      ...args,
      '--provider',
      cloud,
      '--kubeconfig',
      world.kubeconfig,
      ...(cloudFlags ?? adapter.cli(world.sim, world).flags),
    ],
    async ccm(args, opts = {}) {
      const own = adapter.cli(world.sim, world);
      const before = (await world.cp.writes(CCM_USER)).length;
      const started = performance.now();
      const result = await cli(
        world.args(args, opts.cloudFlags ?? own.flags),
        { ...own.env, ...opts.env },
        opts.timeoutMs,
      );
      const seconds = (performance.now() - started) / 1000;
      return { ...result, seconds, writes: (await world.cp.writes(CCM_USER)).slice(before) };
    },
    seed: (n) => adapter.seed(world.sim, n),
    vanish: (providerID) => {
      const parsed = parseProviderID(providerID);
      if (!parsed) throw new Error(`vanish: ${providerID} is no provider ID`);
      adapter.vanish(world.sim, parsed.id);
    },
    async otherAccount() {
      const other = await adapter.otherAccount(world.sim, world as CloudWorld);
      others.push(other);
      return other;
    },
    async runProvider() {
      return { provider: cloud, 'cloud-config': undefined, ...(await adapter.runProvider(world.sim, world)) };
    },
    async expectTwoReadyReplicas() {
      await expectTwoReadyReplicas(world.kubeconfig, await world.runProvider());
    },
    async run(overrides = {}, deps = {}) {
      const provider = await world.runProvider();
      const input = runInput(world.kubeconfig, '', {
        ...provider,
        ...overrides,
        env: { ...provider.env, ...overrides.env },
      });
      const started = await startInProcess(input, deps);
      // Stopped once, whether by the test or after it.
      let stopped: Promise<number> | undefined;
      const stop = started.stop;
      started.stop = () => {
        stopped ??= stop();
        return stopped;
      };
      runs.add(started);
      return started;
    },
    async stopRuns() {
      const all = [...runs];
      runs.clear();
      await Promise.all(all.map((r) => r.stop()));
    },
    async reset({ fresh = false } = {}) {
      await world.stopRuns();
      if (fresh) {
        await adapter.stop(world.sim);
        world.sim = await adapter.start(world as CloudWorld);
      } else adapter.clear(world.sim);
      await deleteAllNodes(world.api);
      await forgetNodeDeletions(world.api);
    },
    async cleanup() {
      await world.stopRuns();
      await Promise.all(others.splice(0).map((o) => o.stop()));
      await transport?.close();
      await Promise.all([world.cp?.stop(), world.sim && adapter.stop(world.sim)]);
      keys.remove();
      rmSync(world.dir, { recursive: true, force: true });
    },
  };
  try {
    if (cloud === 'triton') {
      world.key = keys.make(
        options.key ?? { type: 'ecdsa', bits: 256, passphrase: 'a passphrase nobody may see' },
      );
    }
    const [cp, sim] = await Promise.all([
      startControlPlane(options.controlPlane),
      adapter.start(world as CloudWorld),
    ]);
    world.cp = cp;
    world.sim = sim;
    world.kubeconfig = cp.kubeconfigPath;
    world.api = fixtureApi(cp.kubeconfigPath);
    if (options.instances) world.nodes = adapter.seed(sim, options.instances);
  } catch (err) {
    await world.cleanup().catch(() => {});
    throw err;
  }
  return world;
}

/**
 * A vitest file's world: started before its first test, reset before each (`fresh`: a new simulator
 * each time; `keep`: none), runs stopped after each (then its Services removed with `services`, then
 * `afterEachTest`), all stopped after the last. Its fields
 * are read through the returned object, which is filled in by beforeAll.
 */
export function useCloudWorld<C extends CloudName>(
  cloud: C,
  options: WorldOptions & {
    fresh?: boolean;
    /**
     * The file's tests build on one state: no reset between them (Nodes, simulator and its files
     * stay as the previous test left them); runs are still stopped after each.
     */
    keep?: boolean;
    /** After each test (its runs stopped): every Service of namespace `default` removed. */
    services?: boolean;
    afterEachTest?: (world: CloudWorld<C>) => Promise<void> | void;
  } = {},
): CloudWorld<C> {
  let current: CloudWorld<C> | undefined;
  beforeAll(async () => {
    current = await cloudWorld(cloud, options);
  });
  afterAll(async () => {
    await current?.cleanup();
  });
  beforeEach(async () => {
    if (!options.keep) await current?.reset({ fresh: options.fresh });
  });
  afterEach(async () => {
    await current?.stopRuns();
    if (current && options.services) await removeServices(current.api, 'default');
    if (current) await options.afterEachTest?.(current);
  });
  return new Proxy({} as CloudWorld<C>, {
    get(_, key) {
      if (!current) throw new Error(`the ${cloud} world is used before beforeAll started it`);
      return current[key as keyof CloudWorld<C>];
    },
    set(_, key, value) {
      if (!current) throw new Error(`the ${cloud} world is used before beforeAll started it`);
      (current as unknown as Record<string | symbol, unknown>)[key] = value;
      return true;
    },
  });
}
