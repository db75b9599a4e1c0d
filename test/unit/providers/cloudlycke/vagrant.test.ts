import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { cloudlycke } from '../../../../src/providers/cloudlycke/index.js';
import { vagrantInstances } from '../../../../src/providers/cloudlycke/instances.js';
import {
  GUEST_NETWORK_SCRIPT,
  guestIPs,
  internalIPFromSsh,
  mapVagrantState,
  parseGuestNetwork,
  parseMachineReadable,
  parseSshConfig,
  Vagrant,
} from '../../../../src/providers/cloudlycke/vagrant.js';
import { InvalidConfigError, isNotFound, RetryableError } from '../../../../src/providers/errors.js';
import { rejection } from '../../../helpers/rejection.js';
import { hostname, internalIPs } from '../../helpers/addresses.js';

/** The folder holding the stand-in `vagrant` script and its scenarios of canned output. */
const STANDIN = fileURLToPath(new URL('../../../fixtures/cloudlycke/vagrant-standin', import.meta.url));

describe('parsing vagrant output', () => {
  it('splits machine-readable lines and unescapes commas and newlines', () => {
    const lines = parseMachineReadable(readFileSync(join(STANDIN, 'mixed', 'status.out'), 'utf8'));
    expect(lines[0]).toEqual({
      timestamp: '1732230000',
      target: 'cp-1',
      type: 'metadata',
      data: ['provider', 'virtualbox'],
    });
    const long = lines.find((l) => l.target === 'worker-1' && l.type === 'state-human-long');
    expect(long?.data).toEqual(['The VM is powered off. To restart the VM, simply run `vagrant up`']);
    const ui = lines.find((l) => l.type === 'ui');
    expect(ui?.target).toBe('');
    expect(ui?.data[0]).toBe('info');
    expect(ui?.data[1]).toContain('Current machine states:\n\ncp-1 ');
    expect(ui?.data[1]).toContain('VM, run `vagrant status NAME`.');
  });

  it('skips lines that are not machine-readable (warnings, blank lines)', () => {
    const text = 'Vagrant is upgrading some plugins...\n\n1732230000,m,state,running\n';
    expect(parseMachineReadable(text)).toEqual([
      { timestamp: '1732230000', target: 'm', type: 'state', data: ['running'] },
    ]);
  });

  it('parses ssh-config blocks, keys case-insensitive', () => {
    const hosts = parseSshConfig(
      `${readFileSync(join(STANDIN, 'libvirt', 'ssh-config', 'k8s-cp'), 'utf8')}${readFileSync(join(STANDIN, 'libvirt', 'ssh-config', 'k8s-node'), 'utf8')}`,
    );
    expect([...hosts.keys()]).toEqual(['k8s-cp', 'k8s-node']);
    expect(hosts.get('k8s-node')).toMatchObject({ hostname: '192.168.121.87', user: 'vagrant', port: '22' });
    expect(parseSshConfig('Host a\n  IdentityFile "/path with space/key"\n').get('a')?.identityfile).toBe(
      '/path with space/key',
    );
  });

  it('uses HostName as InternalIP only when it is a non-loopback IP', () => {
    expect(internalIPFromSsh({ hostname: '192.168.56.10' })).toBe('192.168.56.10');
    expect(internalIPFromSsh({ hostname: 'fd00::10' })).toBe('fd00::10');
    expect(internalIPFromSsh({ hostname: '127.0.0.1' })).toBeUndefined();
    expect(internalIPFromSsh({ hostname: '127.0.1.1' })).toBeUndefined();
    expect(internalIPFromSsh({ hostname: '::1' })).toBeUndefined();
    expect(internalIPFromSsh({ hostname: 'localhost' })).toBeUndefined();
    expect(internalIPFromSsh({})).toBeUndefined();
    expect(internalIPFromSsh(undefined)).toBeUndefined();
  });

  it('reads the guest network: physical adapters only, without the NAT adapter when vagrant goes through a loopback forward', () => {
    const network = parseGuestNetwork(readFileSync(join(STANDIN, 'mixed', 'ssh-cp-1.out'), 'utf8'));
    expect([...network.nics]).toEqual(['eth0', 'eth1']);
    expect(network.defaultDevice).toBe('eth0');
    expect(guestIPs(network, true)).toEqual(['192.168.56.10', 'fd00:56::10']);
    expect(guestIPs(network, false)).toEqual(['10.0.2.15', '192.168.56.10', 'fd00:56::10']);
    expect(guestIPs(undefined, true)).toEqual([]);
    expect(parseGuestNetwork('garbage\r\n\r\n').addresses).toEqual([]);
  });

  it('maps vagrant states, and never guesses "gone"', () => {
    expect(mapVagrantState('running')).toBe('running');
    for (const state of [
      'poweroff',
      'saved',
      'aborted',
      'paused',
      'suspended',
      'shutoff',
      'inaccessible',
      'gurumeditation',
      'frozen',
    ]) {
      expect(mapVagrantState(state)).toBe('stopped');
    }
    // not_created is no instance, and not a positive "gone" (issue 6, item 4)
    expect(mapVagrantState('not_created')).toBeUndefined();
    expect(mapVagrantState('preparing')).toBe('stopped');
    expect(mapVagrantState('')).toBe('stopped');
  });
});

describe('vagrant mode against a stand-in vagrant', () => {
  let work: string;
  let log: string;

  beforeAll(() => chmodSync(join(STANDIN, 'vagrant'), 0o755));
  beforeEach(() => {
    work = mkdtempSync(join(tmpdir(), 'cloudlycke-vagrant-'));
    log = join(work, 'argv.log');
  });
  afterEach(() => {
    vi.unstubAllEnvs();
    rmSync(work, { recursive: true, force: true });
  });

  /** The stand-in's record: one entry per invocation, [cwd, ...argv]. */
  function invocations(): string[][] {
    if (!existsSync(log)) return [];
    return readFileSync(log, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split('\t'));
  }

  function instancesFor(scenario: string, options: { timeoutMs?: number; calls?: string[] } = {}) {
    const vagrant = new Vagrant({
      cwd: work,
      env: {
        PATH: `${STANDIN}${delimiter}${process.env.PATH ?? ''}`,
        STANDIN_SCENARIO: scenario,
        STANDIN_LOG: log,
      },
      ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
      ...(options.calls ? { onCall: (what: string) => options.calls?.push(what) } : {}),
    });
    return vagrantInstances(vagrant);
  }

  it('lists the created machines (running, poweroff; not the not_created one), asking the running guest for its addresses', async () => {
    const calls: string[] = [];
    const instances = await instancesFor('mixed', { calls }).list();
    expect(instances).toEqual([
      {
        providerID: 'cloudlycke://cp-1',
        name: 'cp-1',
        state: 'running',
        type: 'vbox.vm',
        region: 'virtualbox',
        zone: 'virtualbox',
        // ssh-config says HostName 127.0.0.1 (VirtualBox NAT): the addresses come from the guest, its
        // private network adapter only (not the NAT adapter 10.0.2.15, nor cni0, flannel.1, docker0).
        addresses: [...internalIPs('192.168.56.10', 'fd00:56::10'), hostname('cp-1')],
        labels: {},
      },
      {
        providerID: 'cloudlycke://worker-1',
        name: 'worker-1',
        state: 'stopped',
        type: 'vbox.vm',
        region: 'virtualbox',
        zone: 'virtualbox',
        addresses: [],
        labels: {},
      },
    ]);
    expect(invocations()).toEqual([
      [work, 'status', '--machine-readable'],
      [work, 'ssh-config', 'cp-1'],
      [work, 'ssh', 'cp-1', '--no-tty', '-c', GUEST_NETWORK_SCRIPT],
    ]);
    expect(calls).toEqual(['vagrant status', 'vagrant ssh-config', 'vagrant ssh']);
  });

  it('takes InternalIP from a private-network HostName plus the guest adapters; a guest that cannot be asked keeps the HostName', async () => {
    const instances = await instancesFor('libvirt').list();
    expect(instances.map((i) => [i.providerID, i.state, i.type, i.region, i.zone, i.addresses])).toEqual([
      [
        'cloudlycke://k8s-cp',
        'running',
        'vagrant.libvirt',
        'libvirt',
        'libvirt',
        [...internalIPs('192.168.121.23', '192.168.56.20'), hostname('k8s-cp')],
      ],
      [
        'cloudlycke://k8s-node',
        'running',
        'vagrant.libvirt',
        'libvirt',
        'libvirt',
        [...internalIPs('192.168.121.87'), hostname('k8s-node')],
      ],
    ]);
    expect(invocations().slice(0, 2)).toEqual([
      [work, 'status', '--machine-readable'],
      [work, 'ssh-config', 'k8s-cp', 'k8s-node'],
    ]);
    expect(
      invocations()
        .slice(2)
        .map((argv) => argv.slice(1, 3))
        .sort(),
    ).toEqual([
      ['ssh', 'k8s-cp'],
      ['ssh', 'k8s-node'],
    ]);
  });

  it('gets a running machine: status of that machine, its ssh-config, then its guest', async () => {
    const instance = await instancesFor('libvirt').get('cloudlycke://k8s-node');
    expect(instance.state).toBe('running');
    expect(instance.addresses).toEqual([...internalIPs('192.168.121.87'), hostname('k8s-node')]);
    expect(invocations()).toEqual([
      [work, 'status', 'k8s-node', '--machine-readable'],
      [work, 'ssh-config', 'k8s-node'],
      [work, 'ssh', 'k8s-node', '--no-tty', '-c', GUEST_NETWORK_SCRIPT],
    ]);
  });

  it('gets a powered-off machine as stopped without asking ssh-config', async () => {
    const instance = await instancesFor('mixed').get('cloudlycke://worker-1');
    expect(instance).toMatchObject({
      providerID: 'cloudlycke://worker-1',
      state: 'stopped',
      type: 'vbox.vm',
    });
    expect(invocations()).toEqual([[work, 'status', 'worker-1', '--machine-readable']]);
  });

  it('never answers NotFound for a machine that is not created: vagrant cannot tell destroyed from never created here (issue 6, item 4)', async () => {
    const err = await rejection(instancesFor('mixed').get('cloudlycke://worker-2'));
    expect(isNotFound(err)).toBe(false);
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(err.message).toMatch(/^vagrant machine "worker-2" in .* is not created, but .* not read as gone/);
    expect(invocations()).toHaveLength(1);
  });

  it('never answers NotFound when vagrant says MachineNotFound: the Vagrantfile here just does not define it (issue 6, item 4)', async () => {
    const calls: string[] = [];
    const err = await rejection(instancesFor('mixed', { calls }).get('cloudlycke://ghost'));
    expect(isNotFound(err)).toBe(false);
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(err.message).toMatch(
      /^vagrant in .* does not define machine "ghost", so it cannot tell whether that VM exists; /,
    );
    expect(invocations()).toEqual([[work, 'status', 'ghost', '--machine-readable']]);
    expect(calls).toEqual(['vagrant status']);
  });

  it('never answers NotFound when vagrant fails with another error', async () => {
    const get = await rejection(instancesFor('broken').get('cloudlycke://cp-1'));
    expect(isNotFound(get)).toBe(false);
    expect(get).toBeInstanceOf(RetryableError);
    expect(get.message).toMatch(
      /^vagrant status in .* failed \(exit 1\): There was an error while executing `VBoxManage`, a CLI used by Vagrant for controlling VirtualBox\. /,
    );
    expect(get.message).not.toMatch(/[\r\n]/);

    const list = await rejection(instancesFor('broken').list());
    expect(list).toBeInstanceOf(RetryableError);
    // list() throws rather than returning a partial listing; it never got to ssh-config.
    expect(invocations().map((argv) => argv[1])).toEqual(['status', 'status']);
  });

  it('never answers NotFound when vagrant crashes without machine-readable output', async () => {
    const err = await rejection(instancesFor('crash').get('cloudlycke://cp-1'));
    expect(err).toBeInstanceOf(RetryableError);
    expect(err.message).toMatch(/^vagrant status in .* failed \(exit 1\): \/opt\/vagrant\/.*NoMethodError/);
    expect(err.message).not.toMatch(/[\r\n]/);
  });

  it('reports a folder without a Vagrantfile as InvalidConfig', async () => {
    // One at a time: a second call started at once could reject before anything awaits it.
    for (const call of [
      () => instancesFor('no-vagrantfile').list(),
      () => instancesFor('no-vagrantfile').get('cloudlycke://cp-1'),
    ]) {
      const err = await rejection(call());
      expect(err).toBeInstanceOf(InvalidConfigError);
      expect(err.message).toBe(
        `vagrant status in ${work} failed: A Vagrant environment or target machine is required to run this command. Run \`vagrant init\` to create a new Vagrant environment. Or, get an ID of a target machine from \`vagrant global-status\` to run this command on. A final option is to change to a directory with a Vagrantfile and to try again; set CLOUDLYCKE_VAGRANT_DIR to the folder holding the Vagrantfile`,
      );
    }
  });

  it('gives up on a hung vagrant with a RetryableError', async () => {
    const err = await rejection(instancesFor('hang', { timeoutMs: 300 }).list());
    expect(err).toBeInstanceOf(RetryableError);
    expect(err.message).toBe(`vagrant status in ${work} did not finish within 300ms; is VirtualBox hung?`);
  });

  it('refuses a provider ID of another scheme without running vagrant', async () => {
    const err = await rejection(instancesFor('mixed').get('openstack:///0b6c1f9e'));
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(invocations()).toEqual([]);
  });

  it('refuses a provider ID that would reach vagrant as a flag', async () => {
    const err = await rejection(instancesFor('mixed').get('cloudlycke://--help'));
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(invocations()).toEqual([]);
  });

  it('reports vagrant missing from PATH as InvalidConfig, never NotFound', async () => {
    const vagrant = new Vagrant({ cwd: work, env: { PATH: join(work, 'empty-bin') } });
    for (const call of [
      () => vagrantInstances(vagrant).list(),
      () => vagrantInstances(vagrant).get('cloudlycke://cp-1'),
    ]) {
      const err = await rejection(call());
      expect(err).toBeInstanceOf(InvalidConfigError);
      expect(err.message).toBe(
        'vagrant not found on PATH; install it or pass --cloud-config <inventory.yaml>',
      );
    }
  });

  it('reports a vagrant folder that does not exist as InvalidConfig', async () => {
    const missing = join(work, 'no-such-folder');
    const vagrant = new Vagrant({ cwd: missing, env: { PATH: STANDIN, STANDIN_SCENARIO: 'mixed' } });
    const err = await rejection(vagrantInstances(vagrant).list());
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(err.message).toBe(
      `vagrant folder ${missing} does not exist or is not a folder; set CLOUDLYCKE_VAGRANT_DIR to the folder holding the Vagrantfile`,
    );
  });

  it('stops when the signal is aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('shutting down'));
    const err = await rejection(instancesFor('mixed').list(controller.signal));
    expect(err.message).toBe('shutting down');
    expect(invocations()).toEqual([]);
  });

  describe('through cloudlycke.create (the test sets PATH; the provider never reads process.env)', () => {
    it('runs the vagrant found on PATH in values.vagrantDir', async () => {
      vi.stubEnv('PATH', `${STANDIN}${delimiter}${process.env.PATH ?? ''}`);
      vi.stubEnv('STANDIN_SCENARIO', 'mixed');
      vi.stubEnv('STANDIN_LOG', log);
      const calls: string[] = [];
      const provider = cloudlycke.create({ vagrantDir: work }, { onCloudCall: (w) => calls.push(w) });
      expect((await provider.instances.list()).map((i) => `${i.providerID} ${i.state}`)).toEqual([
        'cloudlycke://cp-1 running',
        'cloudlycke://worker-1 stopped',
      ]);
      await expect(provider.instances.get('cloudlycke://ghost')).rejects.toBeInstanceOf(InvalidConfigError);
      expect(calls).toEqual(['vagrant status', 'vagrant ssh-config', 'vagrant ssh', 'vagrant status']);
      expect(invocations().map((argv) => argv[0])).toEqual([work, work, work, work]);
    });

    it('inherits the working directory when vagrantDir is unset or empty', async () => {
      vi.stubEnv('PATH', `${STANDIN}${delimiter}${process.env.PATH ?? ''}`);
      vi.stubEnv('STANDIN_SCENARIO', 'mixed');
      vi.stubEnv('STANDIN_LOG', log);
      await cloudlycke.create({}, {}).instances.get('cloudlycke://worker-1');
      await cloudlycke.create({ vagrantDir: '', inventory: '' }, {}).instances.get('cloudlycke://worker-1');
      expect(invocations().map((argv) => argv[0])).toEqual([process.cwd(), process.cwd()]);
    });

    it('says vagrant is missing when it is not on PATH', async () => {
      vi.stubEnv('PATH', join(work, 'empty-bin'));
      const err = await rejection(cloudlycke.create({ vagrantDir: work }, {}).instances.list());
      expect(err).toBeInstanceOf(InvalidConfigError);
      expect(err.message).toBe(
        'vagrant not found on PATH; install it or pass --cloud-config <inventory.yaml>',
      );
    });
  });
});

describe('the cloudlycke definition', () => {
  it('declares its scheme, the --cloud-config field and a secret-less credential schema', () => {
    expect(cloudlycke.name).toBe('cloudlycke');
    expect(cloudlycke.providerIdScheme).toBe('cloudlycke');
    expect(cloudlycke.configFileField).toBe('inventory');
    expect(cloudlycke.credentials.secretName).toBeUndefined();
    expect(cloudlycke.credentials.fields.map((f) => [f.key, f.secret, f.required, f.prompt, f.env])).toEqual([
      ['inventory', false, false, 'file', ['CLOUDLYCKE_INVENTORY']],
      ['vagrantDir', false, false, 'input', ['CLOUDLYCKE_VAGRANT_DIR', 'VAGRANT_CWD']],
      ['loadBalancerPool', false, false, 'input', ['CLOUDLYCKE_LOAD_BALANCER_POOL']],
      ['routeTable', false, false, 'input', ['CLOUDLYCKE_ROUTE_TABLE']],
    ]);
    expect(cloudlycke.credentials.fields.find((f) => f.key === 'routeTable')?.flag).toBe(
      'cloudlycke-route-table',
    );
  });
});
