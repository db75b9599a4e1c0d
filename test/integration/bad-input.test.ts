/**
 * Bad input: one line on stderr naming the problem and the fix, exit 2, no stack trace, and nothing
 * written to the (real) API server.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { beforeAll, describe, expect, it } from 'vitest';
import { createNodes } from '../controlplane/fixtures.js';
import { CCM_USER } from '../controlplane/harness.js';
import { ccm } from '../helpers/cli.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { writeInventory } from '../helpers/inventory.js';
import { loadedModules } from '../helpers/loaded-modules.js';
import { tempDir } from '../helpers/tmp.js';

// Bad input changes nothing: one Node and one inventory serve every test.
const world = useCloudWorld('cloudlycke', { keep: true });
let inventory: string;
let dir: string;

beforeAll(async () => {
  dir = tempDir('ccm-bad-input-');
  await createNodes(world.api, [{ name: 'n1' }]);
  await world.api.createNamespacedSecret({
    namespace: 'kube-system',
    body: { metadata: { name: 'without-token' }, stringData: { token: 'in the wrong key' } },
  });
  inventory = writeInventory([{ id: 'n1', addresses: [{ type: 'InternalIP', address: '192.168.56.5' }] }]);
});

async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => resolve(typeof address === 'object' && address ? address.port : 1));
    });
  });
}

/** A copy of the world's kubeconfig (file `name`) whose server is `port`, closed, on this machine. */
async function unreachableKubeconfig(name: string): Promise<{ kubeconfig: string; port: number }> {
  const port = await closedPort();
  const kubeconfig = join(dir, name);
  writeFileSync(
    kubeconfig,
    readFileSync(world.kubeconfig, 'utf8').replace(world.cp.server, `https://127.0.0.1:${port}`),
  );
  return { kubeconfig, port };
}

/** `ccm args` refused in one line that matches `pattern`, and nothing written to Kubernetes. */
async function expectRefusedWritingNothing(args: string[], pattern: RegExp) {
  const before = (await world.cp.writes(CCM_USER)).length;
  // HOME without ~/.kube/config, so only the flags decide which kubeconfig is used
  const run = await ccm(args, { HOME: dir });
  expectOneLine(run, pattern);
  expect((await world.cp.writes(CCM_USER)).length).toBe(before);
}

function expectOneLine(
  run: { exitCode: number; stdout: string; stderr: string },
  pattern: RegExp,
  exitCode = 2,
) {
  expect(run.exitCode).toBe(exitCode);
  const lines = run.stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^ccm: /);
  expect(lines[0]).toMatch(pattern);
  expect(run.stderr).not.toMatch(/\n\s+at /);
  expect(run.stdout).toBe('');
}

describe('bad input gets one line, exit 2, nothing written', () => {
  const init = ['nodes', 'init', '--provider', 'cloudlycke'];

  it.each([
    [
      'a missing kubeconfig',
      () => [...init, '--kubeconfig', join(dir, 'nope'), '--cloud-config', inventory],
      /does not exist; pass an existing file to --kubeconfig/,
    ],
    [
      'no kubeconfig at all',
      () => [...init, '--cloud-config', inventory],
      /no kubeconfig found; pass --kubeconfig, set KUBECONFIG/,
    ],
    [
      'an unreadable (malformed) kubeconfig',
      () => {
        writeFileSync(join(dir, 'garbage'), 'clusters: [this is: not: yaml');
        return [...init, '--kubeconfig', join(dir, 'garbage'), '--cloud-config', inventory];
      },
      /is not a valid kubeconfig/,
    ],
    [
      'an unknown context',
      () => [...init, '--kubeconfig', world.kubeconfig, '--context', 'prod', '--cloud-config', inventory],
      /context "prod" is not in the kubeconfig; use one of: ccm, fixtures/,
    ],
    [
      'a --credentials-secret naming a Secret that does not exist (the CronJob fails fast on exit 2)',
      () => [
        'nodes',
        'init',
        '--provider',
        'digitalocean',
        '--cloud-api-url',
        'http://127.0.0.1:9',
        '--kubeconfig',
        world.kubeconfig,
        '--credentials-secret',
        'kube-system/missing',
      ],
      /^ccm: Secret kube-system\/missing does not exist; create it \(ccm secret create\) or fix --credentials-secret$/,
    ],
    [
      'a --credentials-secret without the key the provider needs names that Secret, not the default one',
      () => [
        'nodes',
        'list',
        '--provider',
        'digitalocean',
        '--kubeconfig',
        world.kubeconfig,
        '--credentials-secret',
        'kube-system/without-token',
      ],
      /^ccm: Secret kube-system\/without-token has no key access-token; add it, or name the Secret `ccm secret create` wrote with --credentials-secret$/,
    ],
    [
      '`ccm migrate` names the --credentials-secret without the key too, not the default Secret (review 44, finding 7)',
      () => [
        'migrate',
        '--provider',
        'digitalocean',
        '--cloud-api-url',
        'http://127.0.0.1:9',
        '--kubeconfig',
        world.kubeconfig,
        '--credentials-secret',
        'kube-system/without-token',
      ],
      /^ccm: Secret kube-system\/without-token has no key access-token; add it, or name the Secret `ccm secret create` wrote with --credentials-secret$/,
    ],
    [
      'a cloud.conf with an unknown key names the key and its line, and looks for no Secret instead',
      () => {
        const conf = join(dir, 'bogus.conf');
        writeFileSync(
          conf,
          '[Global]\nauth-url=https://127.0.0.1:9/v3\nusername=u\npassword=p\nbogus-key = 1\n',
        );
        return [
          'nodes',
          'list',
          '--provider',
          'openstack',
          '--kubeconfig',
          world.kubeconfig,
          '--cloud-config',
          conf,
        ];
      },
      /^ccm: \S+bogus\.conf line 5: \[Global\] key bogus-key is not one ccm knows; the keys of \[Global\] are auth-url, .*; write each as key = value$/,
    ],
    [
      'a misspelt flag names the closest one',
      () => [...init, '--kubeconfig', world.kubeconfig, '--cloud-config', inventory, '--dryrun'],
      /^ccm: unknown flag --dryrun; did you mean --dry-run\?$/,
    ],
    [
      'an unknown flag names the command whose help lists them',
      () => [...init, '--kubeconfig', world.kubeconfig, '--cloud-config', inventory, '--zzz'],
      /^ccm: unknown flag --zzz; `ccm nodes init --help` lists the flags$/,
    ],
    [
      'an unexpected argument says so',
      () => [...init, '--kubeconfig', world.kubeconfig, '--cloud-config', inventory, 'node-1'],
      /^ccm: unexpected argument "node-1"; ccm nodes init takes no arguments, only flags$/,
    ],
    [
      'an -o format ccm does not print, in the flag style of every other bad value',
      () => [
        ...init,
        '--kubeconfig',
        world.kubeconfig,
        '--cloud-config',
        inventory,
        '-o',
        'go-template={{.x}}',
      ],
      /^ccm: --output: expected one of table, wide, json, yaml, name, jsonpath=TEMPLATE or custom-columns=HEADER:\.path,…, got "go-template=\{\{\.x\}\}"$/,
    ],
    [
      'an unknown controller given to `ccm manifests`',
      () => [
        'manifests',
        '--provider',
        'digitalocean',
        '--image',
        'registry.example.com/ccm:0.1.0',
        '--controllers',
        'bogus',
      ],
      /^ccm: --controllers: expected a list of cloud-node, .*, got "bogus"$/,
    ],
    [
      'a concurrency out of range (issue 6, item 11)',
      () => [...init, '--kubeconfig', world.kubeconfig, '--cloud-config', inventory, '--concurrency', '0'],
      /^ccm: --concurrency: expected a whole number from 1 to 256, got "0"$/,
    ],
    [
      'an unknown provider',
      () => ['nodes', 'init', '--provider', 'aws', '--kubeconfig', world.kubeconfig],
      /^ccm: --provider: expected one of brightbox, cloudlycke, digitalocean, openstack, triton, got "aws"$/,
    ],
    [
      'no provider',
      () => ['nodes', 'init', '--kubeconfig', world.kubeconfig],
      /no provider given; pass --provider/,
    ],
    [
      'ccm migrate from a cloud without an official controller with load balancers (Triton)',
      () => ['migrate', '--provider', 'triton', '--kubeconfig', world.kubeconfig],
      /^ccm: triton has no official controller with load balancers to migrate from: Joyent publishes none/,
    ],
    [
      'ccm migrate --dry-run and --yes at once',
      () => ['migrate', '--provider', 'digitalocean', '--yes', '--dry-run', '--kubeconfig', world.kubeconfig],
      /^ccm: --dry-run and --yes exclude each other; pass one \(no flag: a plan, confirmed on a terminal\)$/,
    ],
    [
      'ccm migrate --from naming no official controller of the cloud',
      () => ['migrate', '--provider', 'openstack', '--from', 'occm', '--kubeconfig', world.kubeconfig],
      /^ccm: --from: expected one of openstack-cloud-controller-manager \(the official controllers of openstack\), got "occm"$/,
    ],
    [
      'a malformed inventory',
      () => {
        writeFileSync(join(dir, 'inv.yaml'), 'instances:\n  - id: a\n    state: exploded\n');
        return [...init, '--kubeconfig', world.kubeconfig, '--cloud-config', join(dir, 'inv.yaml')];
      },
      /instances\[0\]\.state must be "running" or "stopped", got "exploded"/,
    ],
    [
      'a missing inventory',
      () => [...init, '--kubeconfig', world.kubeconfig, '--cloud-config', join(dir, 'none.yaml')],
      /file not found/,
    ],
    [
      'a bad duration',
      () => [
        ...init,
        '--kubeconfig',
        world.kubeconfig,
        '--cloud-config',
        inventory,
        '--deletion-grace-period',
        'soon',
      ],
      /^ccm: --deletion-grace-period: expected a duration such as 90s, 5m or 1h, got "/,
    ],
    [
      'a kubeconfig with a socks5 proxy-url (http and https ones are used: test/integration/proxy.test.ts)',
      () => {
        const text = readFileSync(world.kubeconfig, 'utf8').replace(
          /(server: https:\/\/127\.0\.0\.1:\d+)/,
          '$1\n      proxy-url: socks5://127.0.0.1:1080',
        );
        writeFileSync(join(dir, 'proxied'), text);
        return [...init, '--kubeconfig', join(dir, 'proxied'), '--cloud-config', inventory];
      },
      /^ccm: the proxy-url of cluster \S+ in the kubeconfig names a socks5 proxy \(socks5:\/\/127\.0\.0\.1:1080\), which ccm does not support; use an http:\/\/ or https:\/\/ proxy$/,
    ],
    [
      'an unknown flag',
      () => [...init, '--kubeconfig', world.kubeconfig, '--frobnicate'],
      /^ccm: unknown flag --frobnicate; `ccm nodes init --help` lists the flags$/,
    ],
  ])('%s', async (_what, args, pattern) => {
    await expectRefusedWritingNothing(args(), pattern);
  });

  it('KUBECONFIG naming only files that do not exist (one missing among others is skipped, as kubectl does)', async () => {
    const missing = [join(dir, 'gone-1'), join(dir, 'gone-2')];
    const none = await ccm([...init, '--cloud-config', inventory], { KUBECONFIG: missing.join(':') });
    expectOneLine(
      none,
      /KUBECONFIG names .*gone-1, .*gone-2, which cannot be read; fix KUBECONFIG or pass --kubeconfig/,
    );
    const some = await ccm([...init, '--cloud-config', inventory, '--dry-run'], {
      KUBECONFIG: [missing[0], world.kubeconfig].join(':'),
    });
    expect(some.exitCode, some.stderr).toBe(0);
  });

  it('-q prints only failures and keeps the exit status', async () => {
    const { kubeconfig } = await unreachableKubeconfig('unreachable-q');
    const loud = await ccm([...init, '--kubeconfig', kubeconfig, '--cloud-config', inventory]);
    const quiet = await ccm([...init, '--kubeconfig', kubeconfig, '--cloud-config', inventory, '-q']);
    expect(quiet.exitCode).toBe(loud.exitCode);
    expect(quiet.exitCode).toBe(1);
    const fine = await ccm([
      ...init,
      '--kubeconfig',
      world.kubeconfig,
      '--cloud-config',
      inventory,
      '--dry-run',
      '-q',
    ]);
    expect({ exitCode: fine.exitCode, stdout: fine.stdout }).toEqual({ exitCode: 0, stdout: '' });
  });

  it('an unreachable API server: one line too, but exit 1, as a cloud that cannot be reached (a CronJob retries: docs/output.md)', async () => {
    const { kubeconfig, port } = await unreachableKubeconfig('unreachable');
    const run = await ccm([...init, '--kubeconfig', kubeconfig, '--cloud-config', inventory]);
    expectOneLine(
      run,
      new RegExp(`cannot reach the Kubernetes API server at https://127.0.0.1:${port} \\(ECONNREFUSED\\)`),
      1,
    );
  });
});

describe('`ccm run`: bad input gets one line, exit 2, nothing written', () => {
  const run = ['run', '--provider', 'cloudlycke', '--secure-port=-1'];
  const kc = () => ['--kubeconfig', world.kubeconfig];

  it.each([
    [
      'a missing kubeconfig',
      () => [...run, '--kubeconfig', join(dir, 'nope'), '--cloud-config', inventory],
      /does not exist; pass an existing file to --kubeconfig/,
    ],
    [
      'an unknown context',
      () => [...run, ...kc(), '--context', 'prod', '--cloud-config', inventory],
      /context "prod" is not in the kubeconfig; use one of: ccm, fixtures/,
    ],
    [
      'an unknown controller',
      () => [...run, ...kc(), '--cloud-config', inventory, '--controllers', '*,-routes'],
      /^ccm: --controllers: expected a list of .*, got "routes"; did you mean route\?$/,
    ],
    [
      'a bad period',
      () => [...run, ...kc(), '--cloud-config', inventory, '--node-monitor-period', 'often'],
      /^ccm: --node-monitor-period: expected a duration above 0 such as 500ms, 5s or 1m, got "often"$/,
    ],
    [
      'lease timings that cannot work',
      () => [...run, ...kc(), '--cloud-config', inventory, '--leader-elect-renew-deadline', '20s'],
      /--leader-elect-lease-duration must be longer than --leader-elect-renew-deadline/,
    ],
    [
      'a --cluster-cidr that is not a CIDR',
      () => [...run, ...kc(), '--cloud-config', inventory, '--cluster-cidr', '10.244.0.0/16,10.300.0.0/16'],
      /^ccm: --cluster-cidr: expected CIDRs such as 10\.244\.0\.0\/16, got "10\.300\.0\.0\/16"$/,
    ],
    [
      'a --cluster-cidr of two IPv4 ranges (two are for dual stack only, as upstream)',
      () => [...run, ...kc(), '--cloud-config', inventory, '--cluster-cidr', '10.244.0.0/16,10.245.0.0/16'],
      /--cluster-cidr: two IPv4 CIDRs given; two are for dual stack only/,
    ],
    [
      'a --cluster-cidr of 0.0.0.0/0 (every address: no Pod range)',
      () => [...run, ...kc(), '--cloud-config', inventory, '--cluster-cidr', '0.0.0.0/0'],
      /^ccm: --cluster-cidr: "0\.0\.0\.0\/0" is every IPv4 address, not a Pod range/,
    ],
    [
      'a malformed credentials Secret reference',
      () => [...run, ...kc(), '--credentials-secret', 'just-a-name'],
      /^ccm: --credentials-secret: expected namespace\/name \(e\.g\. kube-system\/digitalocean\), got "just-a-name"$/,
    ],
    [
      'a credentials Secret that does not exist',
      () => [...run, ...kc(), '--credentials-secret', 'kube-system/none'],
      /Secret kube-system\/none does not exist/,
    ],
    [
      'a missing inventory',
      () => [...run, ...kc(), '--cloud-config', join(dir, 'none.yaml')],
      /file not found/,
    ],
    // `--flag=false`, as Kubernetes components are configured, reaches the next check instead of
    // "Unexpected argument: false".
    [
      '--leader-elect=false and --plain-http=false are taken, then the missing inventory is said',
      () => [
        ...run,
        ...kc(),
        '--leader-elect=false',
        '--plain-http=false',
        '--cloud-config',
        join(dir, 'none.yaml'),
      ],
      /file not found/,
    ],
    // /metrics without authentication is for this machine alone (docs/security.md).
    ...['0.0.0.0', '::', '203.0.113.7', '::ffff:10.0.0.1', 'example.com'].map(
      (address): [string, () => string[], RegExp] => [
        `--plain-http with --bind-address ${address}`,
        () => [...run, ...kc(), '--cloud-config', inventory, '--plain-http', '--bind-address', address],
        new RegExp(
          `^ccm: --plain-http serves /metrics without authentication, so only on this machine: --bind-address ${address.replaceAll('.', '\\.')} is not a loopback address; use 127\\.0\\.0\\.1 or ::1`,
        ),
      ],
    ),
    ...['::1', '127.0.0.2'].map((address): [string, () => string[], RegExp] => [
      `--plain-http with --bind-address ${address} (loopback) is taken, then the missing inventory is said`,
      () => [
        ...run,
        ...kc(),
        '--plain-http',
        '--bind-address',
        address,
        '--cloud-config',
        join(dir, 'none.yaml'),
      ],
      /file not found/,
    ]),
    // ccm run logs until stopped: it has no result to print, so no output flags and no --json contract.
    [
      '--json',
      () => [...run, ...kc(), '--cloud-config', inventory, '--json'],
      /^ccm: unknown flag --json; `ccm run --help` lists the flags$/,
    ],
    [
      '-o',
      () => [...run, ...kc(), '--cloud-config', inventory, '-o', 'json'],
      /^ccm: unknown flag -o; `ccm run --help` lists the flags$/,
    ],
  ])('%s', async (_what, args, pattern) => {
    await expectRefusedWritingNothing(args(), pattern);
  });

  it('a port already in use', async () => {
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const port = (srv.address() as { port: number }).port;
    const result = await ccm([
      'run',
      '--provider',
      'cloudlycke',
      ...kc(),
      '--cloud-config',
      inventory,
      '--bind-address',
      '127.0.0.1',
      `--secure-port=${port}`,
      '--leader-elect=false',
    ]);
    srv.close();
    expectOneLine(
      result,
      new RegExp(`cannot serve on 127.0.0.1:${port} \\(EADDRINUSE\\); pick another --secure-port`),
    );
  });
});

describe('one wording across commands', () => {
  it.each([
    [['nodes', 'init', '--concurrency', '0'], 'concurrency', 'a whole number from 1 to 256', '0'],
    [
      ['nodes', 'init', '--deletion-grace-period', 'soon'],
      'deletion-grace-period',
      'a duration such as 90s, 5m or 1h',
      'soon',
    ],
    [['run', '--cloud-qps', '0'], 'cloud-qps', 'a number of at least 0.001 such as 0.5 or 2', '0'],
    [['run', '--cloud-qps', '1e-9'], 'cloud-qps', 'a number of at least 0.001 such as 0.5 or 2', '1e-9'],
    [
      ['run', '--node-monitor-period', 'often'],
      'node-monitor-period',
      'a duration above 0 such as 500ms, 5s or 1m',
      'often',
    ],
    [
      ['cluster', 'prepare', '--ready-timeout', 'later'],
      'ready-timeout',
      'a duration such as 90s or 3m',
      'later',
    ],
    [
      ['nodes', 'list', '--request-timeout', 'abc'],
      'request-timeout',
      'a duration such as 30s or 2m, or 0 for no limit',
      'abc',
    ],
  ])('%s: "--flag: expected …, got …", exit 2', async (args, flag, expected, value) => {
    const run = await ccm([...args, '--provider', 'cloudlycke', '--kubeconfig', world.kubeconfig]);
    expect({ exitCode: run.exitCode, stderr: run.stderr.trim() }).toEqual({
      exitCode: 2,
      stderr: `ccm: --${flag}: expected ${expected}, got "${value}"`,
    });
  });

  // Review 44, finding 10: each in the one style, and said before a kubeconfig is looked for (HOME has none).
  it.each([
    [['nodes', 'list', '-o'], '--output: expected a value, got nothing'],
    [['nodes', 'init', '--provider'], '--provider: expected a value, got nothing'],
    [['run', '--log-level'], '--log-level: expected one of error, warn, info, debug, got nothing'],
    [['run', '--leader-elect=flase'], '--leader-elect: expected true or false, got "flase"'],
    [['nodes', 'init', '--dry-run=maybe'], '--dry-run: expected true or false, got "maybe"'],
    [
      ['nodes', 'init', '--provider', 'digitalocean', '--credentials-secret', 'nope'],
      '--credentials-secret: expected namespace/name (e.g. kube-system/digitalocean), got "nope"',
    ],
    [
      ['nodes', 'list', '--provider', 'digitalocean', '--cloud-api-url', 'ftp://x'],
      '--cloud-api-url: expected an http(s) URL (e.g. https://api.example.com), got "ftp://x"',
    ],
    [
      ['manifests', '--provider', 'digitalocean', '--image', 'r.example/ccm:1', '--node-selector', 'foo'],
      '--node-selector: expected label=value pairs separated by commas (e.g. node-role.kubernetes.io/system=true), got "foo"',
    ],
    [
      ['nodes', 'init', '--provider', 'cloudlyke'],
      '--provider: expected one of brightbox, cloudlycke, digitalocean, openstack, triton, got "cloudlyke"; did you mean cloudlycke?',
    ],
    [
      ['run', '--provider', 'cloudlycke', '--controllers', 'cloud-node,servce'],
      '--controllers: expected a list of cloud-node, cloud-node-lifecycle, service, route (* for all, -name for all but one), got "servce"; did you mean service?',
    ],
    [
      [
        'manifests',
        '--provider',
        'digitalocean',
        '--image',
        'r.example/ccm:1',
        '--any-node',
        '--node-selector',
        'a=b',
      ],
      '--any-node and --node-selector exclude each other; give one of them',
    ],
    [['run', '--tls-cert-file', 'x.crt'], '--tls-cert-file needs --tls-private-key-file as well'],
    [['version', 'extra'], 'unexpected argument "extra"; ccm version takes no arguments, only flags'],
    [
      ['nodes', 'init', 'extra'],
      'unexpected argument "extra"; ccm nodes init takes no arguments, only flags',
    ],
  ])('%j: one line in the flag style, exit 2', async (args, line) => {
    const run = await ccm(args, { HOME: dir });
    expect({ exitCode: run.exitCode, stderr: run.stderr.trim() }).toEqual({
      exitCode: 2,
      stderr: `ccm: ${line}`,
    });
  });

  it("--leader-elect=0 is false, as the reference controllers' Go flags read it", async () => {
    const run = await ccm([
      'run',
      '--provider',
      'cloudlycke',
      '--leader-elect=0',
      '--secure-port=-1',
      '--kubeconfig',
      join(dir, 'nope'),
    ]);
    expect(run.stderr).toMatch(/does not exist; pass an existing file to --kubeconfig/);
  });

  it.each([
    ['nodes lsit', 'did you mean "ccm nodes list"? '],
    ['secret craete', 'did you mean "ccm secret create"? '],
    ['fly', ''],
  ])('a mistyped command (%s): one line with the closest command, exit 2', async (typed, hint) => {
    const run = await ccm(typed.split(' '));
    expect({ exitCode: run.exitCode, stderr: run.stderr.trim() }).toEqual({
      exitCode: 2,
      stderr: `ccm: "${typed}" is not a ccm command; ${hint}\`ccm --help\` lists them`,
    });
  });
});

describe('start-up', () => {
  it('`ccm run` does not load @kubernetes/client-node (80 MB of memory) for a token kubeconfig', async () => {
    const trace = join(dir, 'trace-run.txt');
    writeFileSync(trace, '');
    const tracer = fileURLToPath(new URL('../fixtures/trace-imports.mjs', import.meta.url));
    const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));
    const child = execa(
      process.execPath,
      [
        '--import',
        tracer,
        bin,
        ...world.args(['run', '--leader-elect=false', '--secure-port=-1'], ['--cloud-config', inventory]),
      ],
      { env: { TRACE_IMPORTS_FILE: trace }, reject: false, buffer: false },
    );
    await new Promise<void>((resolve) => {
      child.stderr?.on('data', (c: Buffer) => {
        if (c.toString().includes('"controller":"cloud-node-lifecycle","msg":"started"')) resolve();
      });
      void child.then(() => resolve());
    });
    child.kill('SIGTERM');
    expect((await child).exitCode).toBe(0);
    const { urls, sources } = loadedModules(trace);
    // The trace saw ccm's own transport, so its silence about client-node means something.
    expect(sources).toContain('src/kube/transport.ts');
    expect([...urls, ...sources].filter((m) => m.includes('@kubernetes/client-node'))).toEqual([]);
  });

  it('`ccm run --help` shows no output flags; the commands with a result do', async () => {
    const help = async (...cmd: string[]) => (await ccm([...cmd, '--help'])).stdout;
    const runHelp = await help('run');
    expect(runHelp).toContain('--leader-elect');
    expect(runHelp).not.toMatch(/OUTPUT FLAGS|--json|--quiet|--output/);
    for (const cmd of [['nodes', 'init'], ['cluster', 'prepare'], ['manifests']])
      expect(await help(...cmd)).toMatch(
        /OUTPUT FLAGS\n +-o, --output=<value>[\s\S]*--json +Same as -o json/,
      );
  });

  it('`ccm help <command>` prints what `<command> --help` does', async () => {
    const viaHelp = await ccm(['help', 'nodes', 'init']);
    expect(viaHelp.exitCode).toBe(0);
    expect(viaHelp.stdout).toContain('$ ccm nodes init');
    expect(viaHelp.stdout).toBe((await ccm(['nodes', 'init', '--help'])).stdout);
    // The column is as wide as the longest command's name (completion).
    expect((await ccm(['help'])).stdout).toMatch(/^ {2}help +Display help for ccm$/m);
  });

  it('a start loads none of the Node modules it does not use (docs/benchmarks.md, Start-up)', async () => {
    const trace = join(dir, 'trace-builtins.txt');
    const tracer = fileURLToPath(new URL('../fixtures/trace-imports.mjs', import.meta.url));
    const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));
    const missing = ['--kubeconfig', join(dir, 'no-such-kubeconfig')];
    // child_process, net-less timers and workers, perf_hooks, crypto, http(s): each loaded only when
    // a command uses it (a credential plugin, a transport, a hash, a request), never to start.
    const unused = [
      'child_process',
      'worker_threads',
      'perf_hooks',
      'crypto',
      'http',
      'https',
      'tls',
      'dgram',
    ];
    for (const args of [
      ['--help'],
      ['run', '--help'],
      ['nodes', 'init', '--provider', 'cloudlycke', ...missing],
      ['run', '--provider', 'cloudlycke', ...missing],
      ['cluster', 'prepare', '--provider', 'cloudlycke', ...missing],
      ['secret', 'create', '--provider', 'digitalocean', '--dry-run', ...missing],
      ['manifests', '--provider', 'digitalocean', '--image', 'registry.example.com/ccm:0.1.0'],
    ]) {
      writeFileSync(trace, '');
      const run = await execa(process.execPath, ['--import', tracer, bin, ...args], {
        env: { TRACE_IMPORTS_FILE: trace },
        reject: false,
        stdin: 'ignore',
      });
      expect(run.stderr, args.join(' ')).not.toMatch(/at .*\.js:\d+/);
      const { builtins } = loadedModules(trace);
      // The trace saw Node's modules, so an absent one means something.
      expect(builtins, args.join(' ')).toContain('fs');
      expect(
        builtins.filter((b) => unused.includes(b)),
        args.join(' '),
      ).toEqual([]);
    }
  });

  it('`ccm --help` loads neither @kubernetes/client-node nor the renderers (chalk, listr2, yaml)', async () => {
    const trace = join(dir, 'trace.txt');
    const tracer = fileURLToPath(new URL('../fixtures/trace-imports.mjs', import.meta.url));
    const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));
    for (const args of [['--help'], ['nodes', 'init', '--help']]) {
      writeFileSync(trace, '');
      const run = await execa(process.execPath, ['--import', tracer, bin, ...args], {
        env: { TRACE_IMPORTS_FILE: trace },
      });
      expect(run.stdout).toContain('USAGE');
      const { urls, sources } = loadedModules(trace);
      const loaded = [...urls, ...sources];
      expect(sources.some((s) => s.startsWith('node_modules/@oclif/core/'))).toBe(true);
      for (const heavy of [
        '@kubernetes/client-node',
        'node_modules/listr2/',
        'node_modules/yaml/',
        'node_modules/chalk/',
        'src/cli/output/render.ts',
      ])
        expect(loaded.filter((m) => m.includes(heavy))).toEqual([]);
    }
  });
});
