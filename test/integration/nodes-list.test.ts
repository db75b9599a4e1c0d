/**
 * `ccm nodes list` against a real kube-apiserver with a Cloudlycke inventory as the cloud: each Node
 * beside its instance, and the verdict of `nodes init --dry-run` (the same plan) for each Node.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createNodes } from '../controlplane/fixtures.js';
import { ccm } from '../helpers/cli.js';
import { CLOUDLYCKE_DEFAULTS, useCloudWorld } from '../helpers/cloud-world.js';
import { Terminal } from '../helpers/terminal.js';
import { tempDir } from '../helpers/tmp.js';

// The tests read one cluster, set up once.
const world = useCloudWorld('cloudlycke', { keep: true });

interface Row {
  name: string;
  providerID: string;
  instance?: { name: string; state: string; type: string; zone: string };
  initialized: boolean;
  taintAgeSeconds?: number;
  status: string;
  reason?: string;
  fix?: string;
}

beforeAll(async () => {
  world.sim.path = world.sim.write(
    [
      { id: 'ok-1', addresses: [{ type: 'InternalIP', address: '192.168.56.11' }] },
      { id: 'new-1', addresses: [{ type: 'InternalIP', address: '192.168.56.12' }] },
      { id: 'spare-1', state: 'stopped', addresses: [{ type: 'InternalIP', address: '192.168.56.13' }] },
    ],
    { ...CLOUDLYCKE_DEFAULTS, zone: 'zone-a' },
  );
  // ok-1: initialised, as `nodes init` leaves it; then three Nodes registered after that pass.
  await createNodes(world.api, [{ name: 'ok-1' }]);
  expect((await list(['nodes', 'init'])).exitCode).toBe(0);
  await createNodes(world.api, [
    { name: 'new-1' },
    { name: 'lost-1' },
    { name: 'aws-1', providerID: 'aws:///eu-west-1a/i-0123', tainted: false },
  ]);
});

/** The CLI against the world, without reading the audit log around it (as `world.ccm` does). */
const list = (args: string[]) => ccm(world.args(args));

describe('ccm nodes list', () => {
  it('shows each Node beside its instance, with the reason and the fix of each one not as it should be', async () => {
    const run = await world.ccm(['nodes', 'list', '--json', '--show-orphans']);
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    const report = JSON.parse(run.stdout) as {
      nodes: Row[];
      orphans: { name: string; state: string }[];
      kubeReads: number;
      cloudInstances: number;
    };
    const byName = new Map(report.nodes.map((n) => [n.name, n]));
    expect(byName.get('ok-1')).toMatchObject({
      providerID: 'cloudlycke://ok-1',
      instance: { name: 'ok-1', state: 'running', type: 'vbox.vm.1g.2cpu', zone: 'zone-a' },
      initialized: true,
      status: 'ok',
    });
    expect(byName.get('ok-1')?.reason).toBeUndefined();
    const fresh = byName.get('new-1');
    expect(fresh).toMatchObject({ initialized: false, status: 'pending', instance: { name: 'new-1' } });
    expect(fresh?.taintAgeSeconds).toBeGreaterThanOrEqual(0);
    expect(fresh?.reason).toContain('would set providerID cloudlycke://new-1');
    expect(fresh?.fix).toContain('ccm doctor');
    expect(byName.get('lost-1')).toMatchObject({
      initialized: false,
      status: 'failed',
      reason: 'no cloud instance is named lost-1',
      fix: "name the instance like the Node or set the kubelet's --provider-id",
    });
    expect(byName.get('aws-1')).toMatchObject({ status: 'skipped', initialized: true });
    expect(byName.get('aws-1')?.instance).toBeUndefined();
    expect(report.orphans.map((o) => `${o.name}:${o.state}`)).toEqual(['spare-1:stopped']);
    // One Node listing (one page) and nothing written.
    expect(report.kubeReads).toBe(1);
    expect(run.writes).toEqual([]);
  });

  it('agrees with `nodes init --dry-run` on which Nodes fail and why', async () => {
    const dry = JSON.parse((await list(['nodes', 'init', '--dry-run', '--json'])).stdout) as {
      nodes: { name: string; result: string; reason?: string }[];
    };
    const listed = JSON.parse((await list(['nodes', 'list', '-o', 'json'])).stdout) as { nodes: Row[] };
    const failedByInit = dry.nodes.filter((n) => n.result === 'failed').map((n) => [n.name, n.reason]);
    const failedByList = listed.nodes
      .filter((n) => n.status === 'failed')
      .map((n) => [n.name, `${n.reason}; ${n.fix}`]);
    expect(failedByList).toEqual(failedByInit);
    expect(failedByList.length).toBeGreaterThan(0);
  });

  it('prints a table (wide adds provider ID, type and zone), and yaml', async () => {
    const table = await list(['nodes', 'list', '-o', 'table']);
    expect(table.stdout.split('\n')[1]).toMatch(
      /^NODE\s+INSTANCE\s+STATE\s+INITIALISED\s+TAINTED FOR\s+STATUS\s+REASON\s+FIX$/,
    );
    expect(table.stdout).toMatch(
      /\nlost-1\s+<none>\s+-\s+no\s+\d+s\s+failed\s+no cloud instance is named lost-1/,
    );
    const wide = await list(['nodes', 'list', '-o', 'wide']);
    expect(wide.stdout).toMatch(
      /\nok-1\s+cloudlycke:\/\/ok-1\s+ok-1\s+running\s+vbox\.vm\.1g\.2cpu\s+zone-a\s+yes\s+-\s+ok/,
    );
    const yaml = parse((await list(['nodes', 'list', '-o', 'yaml'])).stdout) as { nodes: Row[] };
    expect(yaml.nodes.map((n) => n.name).sort()).toEqual(['aws-1', 'lost-1', 'new-1', 'ok-1']);
  });
});

describe('kubectl reflexes', () => {
  it('--no-headers prints the rows alone; --provider takes any case; -h is --help; ccm version', async () => {
    const rows = await list(['nodes', 'list', '-o', 'table', '--no-headers']);
    expect(rows.exitCode).toBe(0);
    const lines = rows.stdout.trim().split('\n');
    expect(lines.map((l) => l.split(/\s+/)[0]).sort()).toEqual(['aws-1', 'lost-1', 'new-1', 'ok-1']);
    const mixedCase = await ccm(
      world.args(['nodes', 'list', '-o', 'name']).map((a) => (a === 'cloudlycke' ? 'CloudLycke' : a)),
    );
    expect(mixedCase.exitCode, mixedCase.stderr).toBe(0);
    expect(mixedCase.stdout).toContain('node/ok-1');
    const help = await ccm(['nodes', 'list', '-h']);
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toMatch(/^List every Node beside its cloud instance/);
    const version = await ccm(['version']);
    expect(version.stdout).toMatch(/^ccm \d+\.\d+\.\d+ \(commit [^,]+, Node\.js v\d+/);
    expect(JSON.parse((await ccm(['version', '-o', 'json'])).stdout)).toMatchObject({
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      node: process.version,
    });
  });
});

describe('-o wide in a 120-column terminal', () => {
  it('wraps no line: the reason and the fix go under their row, as nodes init -o wide does', async () => {
    const terminal = await Terminal.open(world.args(['nodes', 'list', '-o', 'wide']), {
      width: 120,
      height: 40,
      env: world.env(),
    });
    try {
      expect(await terminal.exit()).toBe(0);
      const joined = (await terminal.screen({ joined: true })).split('\n');
      const lines = (await terminal.screen()).split('\n');
      expect(lines.length).toBe(joined.length);
      const at = joined.findIndex((l) => l.startsWith('lost-1 '));
      expect(joined[at + 1]).toBe('    reason: no cloud instance is named lost-1');
      expect(joined[at + 2]).toMatch(/^ {4}fix: name the instance like the Node/);
    } finally {
      await terminal.close();
    }
  });
});

describe("kubectl's templates", () => {
  it('-o jsonpath= (paths, range, filters) and -o custom-columns= over the report, refused before running when malformed', async () => {
    const names = await list(['nodes', 'list', '-o', 'jsonpath={.nodes[*].name}']);
    expect(names.stdout.trim().split(' ').sort()).toEqual(['aws-1', 'lost-1', 'new-1', 'ok-1']);
    const ranged = await list([
      'nodes',
      'list',
      '-o',
      // As a shell passes it: a backslash and a letter, read as kubectl reads them.
      'jsonpath={range .nodes[?(@.status=="failed")]}{.name}{"\\t"}{.reason}{"\\n"}{end}',
    ]);
    expect(ranged.stdout.trimEnd(), ranged.stderr).toBe('lost-1\tno cloud instance is named lost-1');
    const columns = await list(['nodes', 'list', '-o', 'custom-columns=NODE:.name,TYPE:.instance.type']);
    const rows = columns.stdout.trim().split('\n');
    expect(rows[0]).toMatch(/^NODE\s+TYPE$/);
    expect(rows).toContainEqual(expect.stringMatching(/^ok-1\s+vbox\.vm\.1g\.2cpu$/));
    expect(rows).toContainEqual(expect.stringMatching(/^aws-1\s+<none>$/));
    const bare = await list(['nodes', 'list', '-o', 'custom-columns=NODE:.name', '--no-headers']);
    expect(bare.stdout.trim().split('\n').sort()).toEqual(['aws-1', 'lost-1', 'new-1', 'ok-1']);
    for (const [value, said] of [
      ['jsonpath={.nodes[', 'has a { without its }'],
      ['jsonpath={range .nodes[*]}{.name}', 'has a {range} without its {end}'],
      ['custom-columns=NAME', 'is not HEADER:.path'],
    ]) {
      const refused = await list(['nodes', 'list', '-o', value as string]);
      expect(refused.exitCode).toBe(2);
      expect(refused.stderr).toContain(said as string);
      expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    }
  });
});

describe("kubectl's --allow-missing-template-keys (review 44, finding 8)", () => {
  // kubectl 1.36's own default (k8s.io/cli-runtime genericclioptions.NewKubeTemplatePrintFlags:
  // allowMissingKeys true) prints nothing for a field no object has; =false is client-go jsonpath's
  // "<field> is not found", exit 1, while a path to an empty list still prints nothing, exit 0.
  it('a misspelt field prints nothing by default, as kubectl; =false makes it an error, exit 1', async () => {
    const lenient = await list(['nodes', 'list', '-o', 'jsonpath={.nodes[*].nmae}']);
    expect({ code: lenient.exitCode, out: lenient.stdout, err: lenient.stderr }).toEqual({
      code: 0,
      out: '',
      err: '',
    });
    const strict = await list([
      'nodes',
      'list',
      '-o',
      'jsonpath={.nodes[*].nmae}',
      '--allow-missing-template-keys=false',
    ]);
    expect({ code: strict.exitCode, out: strict.stdout, err: strict.stderr.trim() }).toEqual({
      code: 1,
      out: '',
      err: 'ccm: error executing jsonpath "{.nodes[*].nmae}": nmae is not found',
    });
    const none = await list([
      'nodes',
      'list',
      '-o',
      'jsonpath={.nodes[?(@.status=="no-such-status")].name}',
      '--allow-missing-template-keys=false',
    ]);
    expect({ code: none.exitCode, out: none.stdout.trim(), err: none.stderr }).toEqual({
      code: 0,
      out: '',
      err: '',
    });
  });
});

describe('ccm nodes list, a Node whose instance the listing lacks', () => {
  it('is stale at once, Ready and inside the grace period too (it showed ok)', async () => {
    await createNodes(world.api, [{ name: 'gone-1', providerID: 'cloudlycke://gone-1', tainted: false }]);
    try {
      const report = JSON.parse((await list(['nodes', 'list', '-o', 'json'])).stdout) as { nodes: Row[] };
      expect(report.nodes.find((n) => n.name === 'gone-1')).toMatchObject({
        status: 'stale',
        reason: 'instance cloudlycke://gone-1 is not in the cloud listing',
      });
      expect(report.nodes.find((n) => n.name === 'ok-1')?.status).toBe('ok');
    } finally {
      await world.api.deleteNode({ name: 'gone-1' });
    }
  });

  it('is unknown, as every Node is, when the listing failed (it said failed)', async () => {
    // Vagrant itself, without an inventory file: a `vagrant` on PATH that fails.
    const bin = tempDir('ccm-list-broken-');
    writeFileSync(join(bin, 'vagrant'), '#!/bin/sh\necho "vagrant exploded" >&2\nexit 1\n', { mode: 0o755 });
    const run = await ccm(
      ['nodes', 'list', '-o', 'json', '--provider', 'cloudlycke', '--kubeconfig', world.kubeconfig],
      {
        PATH: `${bin}:${process.env.PATH}`,
        CLOUDLYCKE_VAGRANT_DIR: tempDir('ccm-list-vagrant-'),
      },
    );
    const report = JSON.parse(run.stdout) as { nodes: Row[]; listingError: string };
    expect(run.exitCode, run.stderr).toBe(1);
    expect(report.listingError).toMatch(/^cloud listing failed: /);
    const statuses = new Map(report.nodes.map((n) => [n.name, n.status]));
    expect(statuses.get('ok-1')).toBe('unknown');
    expect(statuses.get('aws-1')).toBe('skipped');
  });

  it('nodes init calls the same Nodes unknown, in the same words, where it said failed (review 44, item 13)', async () => {
    const bin = tempDir('ccm-list-broken-');
    writeFileSync(join(bin, 'vagrant'), '#!/bin/sh\necho "vagrant exploded" >&2\nexit 1\n', { mode: 0o755 });
    const env = { PATH: `${bin}:${process.env.PATH}`, CLOUDLYCKE_VAGRANT_DIR: tempDir('ccm-list-vagrant-') };
    const args = ['-o', 'json', '--provider', 'cloudlycke', '--kubeconfig', world.kubeconfig];
    const [list, init] = await Promise.all([
      ccm(['nodes', 'list', ...args], env),
      ccm(['nodes', 'init', '--dry-run', ...args], env),
    ]);
    expect([list.exitCode, init.exitCode]).toEqual([1, 1]);
    const listed = (JSON.parse(list.stdout) as { nodes: Row[] }).nodes;
    const passed = (JSON.parse(init.stdout) as { nodes: { name: string; result: string; reason?: string }[] })
      .nodes;
    const unknownInList = listed.filter((n) => n.status === 'unknown');
    expect(unknownInList.map((n) => n.name)).toContain('new-1');
    for (const row of unknownInList) {
      expect(
        passed.find((n) => n.name === row.name),
        row.name,
      ).toMatchObject({
        result: 'unknown',
        reason: row.reason,
      });
    }
    expect(passed.filter((n) => n.result === 'failed')).toEqual([]);
    expect(JSON.parse(init.stdout).listingError).toBe(JSON.parse(list.stdout).listingError);
  });
});

describe('ccm nodes list against a server that is not Kubernetes', () => {
  it('says so in one line and exits 2', async () => {
    const server = createServer((_req, res) =>
      res.writeHead(404, { 'content-type': 'text/plain' }).end('404 page not found'),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const kubeconfig = join(tempDir('ccm-not-kube-'), 'kubeconfig');
      writeFileSync(
        kubeconfig,
        readFileSync(world.kubeconfig, 'utf8')
          .replace(world.cp.server, url)
          .replace(/certificate-authority-data: .*\n/g, ''),
      );
      const run = await ccm([
        'nodes',
        'list',
        '--provider',
        'cloudlycke',
        '--kubeconfig',
        kubeconfig,
        '--cloud-config',
        world.sim.path,
      ]);
      expect(run.exitCode).toBe(2);
      expect(run.stderr.trim()).toBe(
        `ccm: ${url} answered 404 to GET /api/v1/nodes: it is not a Kubernetes API server; check --kubeconfig and --context`,
      );
    } finally {
      server.close();
    }
  });
});
