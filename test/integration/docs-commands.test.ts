/**
 * Every command line that README.md and docs/ show a reader is run here, and what the page says of it
 * is checked. test/helpers/doc-commands.ts finds the lines: each line of a ```sh block, each `$ …`
 * line of another block, the command reference's EXAMPLES, and each inline code span that is a
 * command line. A line this file does not run is in one of the short lists below with the reason; the
 * last test fails for a line in none of them that no test ran, so a new line of the docs cannot go
 * untried.
 *
 * How a line runs (`shell`): `bash -c`, with `set -o pipefail`, copied as it is but for its
 * placeholders (`fill`), stdin not a terminal, in a folder of the reader's files (`work`: inventory.yaml,
 * cloud.conf …; the README's lines in the repository, as its quick start says), against one real
 * kube-apiserver and the simulators of test/clouds, all on loopback. The environment is the reader's:
 * `ccm` on PATH (bin/), kubectl and kubeadm of the control plane's version, KUBECONFIG naming the
 * control plane, and the credentials of the cloud the line names, given as that cloud's page says
 * (`cloudEnv`). A line that needs a provider and names none takes it from CCM_PROVIDER, the flag's own
 * variable (`PAGE_CLOUD`: DigitalOcean, but OpenStack on the routes page). The README's, deploy.md's,
 * secrets.md's and the provider pages' lines run with the machine's own Node 20 first on PATH, as those
 * pages say they work that way (bin/run.js re-runs itself with Node 24); the others with Node 24.
 *
 * A `ccm` line fails when it exits 2 (usage or configuration, docs/output.md) where the page does not
 * say so: it ran for real, so a flag, a value or a command the CLI does not take cannot pass.
 */
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { homedir, hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AppsV1Api, type CoreV1Api, type V1DaemonSet } from '@kubernetes/client-node';
import { execa, type ResultPromise } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { stringify } from 'yaml';
import { BrightboxSimulator, SIM_CLIENT } from '../clouds/brightbox/simulator.js';
import { DigitalOceanSimulator } from '../clouds/digitalocean/server.js';
import type { SimRouter } from '../clouds/openstack/neutron-routes.js';
import { OpenStackSimulator } from '../clouds/openstack/simulator.js';
import { CmonSim } from '../clouds/triton/cmon.js';
import { KeyFolder, type TestKey } from '../clouds/triton/keys.js';
import { TritonSim } from '../clouds/triton/server.js';
import { createNodes, fixtureApi, fixtureClient, forgetNodeDeletions } from '../controlplane/fixtures.js';
import { binDir, CCM_USER, type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { QUICKSTART_NODES, QUICKSTART_PRIVATE_IPS } from '../controlplane/quickstart-nodes.js';
import { type Sshd, startSshd } from '../controlplane/sshd.js';
import { type DocCommand, docCommands } from '../helpers/doc-commands.js';
import { type Doc, helmBin, objectsOf } from '../helpers/helm.js';
import {
  officialDigitalOceanDeployment,
  officialDigitalOceanLoadBalancer,
  officialOpenStackDaemonSet,
  recordServedByOfficial,
} from '../helpers/official-controllers.js';
import { conformsToDigitalOceanOpenApi } from '../helpers/openapi.js';
import { holdPort } from '../helpers/port-lock.js';
import { until } from '../helpers/run.js';
import { eventReasons, lbService, removeServices } from '../helpers/services.js';
import { tempDir } from '../helpers/tmp.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const NODE20_DIR = '/usr/bin';
const NODE24_DIR = dirname(process.execPath);
const REGISTRY = 'registry.example.com';
const CLUSTER_CIDR = '10.244.0.0/16';
const TRITON_PASSPHRASE = 'a passphrase nobody may see';
const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
/** deploy.md's proxy, as its lines run here (`fill`). */
const NO_ONE_LISTENING = 'http://127.0.0.1:9';

/**
 * How long a `ccm run` line waits for port 10258 while something outside this file holds it (see
 * `start`). The lines name that port, as a reader runs them.
 */
const PORT_PATIENCE_MS = 480_000;
// Lines run one after another on a loaded machine, and may wait for port 10258: a test's lines take
// longer than the default minute.
vi.setConfig({ testTimeout: PORT_PATIENCE_MS + 240_000 });

const found = docCommands(root);
const pagesOf = (line: string) => [...new Set(found.filter((c) => c.line === line).map((c) => c.page))];

// --- What is not run, and why -----------------------------------------------------------------------

/** Code spans that read like command lines and are none. */
const NOT_COMMAND_LINES: Record<string, string> = {
  'ccm (<identity>)': 'the User-Agent ccm sends (docs/run.md)',
  'ccm 0.1.0 starting: provider digitalocean, controllers cloud-node, cloud-node-lifecycle, service, route, leader election kube-system/cloud-controller-manager, identity cp-1_5f2a91c3':
    "a log line of `ccm run` (docs/run.md); the run.md test compares ccm's own first line with it",
  'ccm help [COMMAND]': "oclif's synopsis, in the command reference's index",
  'ccm completion [SHELL]': "oclif's synopsis, in the command reference's index",
  'sudo -E': "sudo's option, named in docs/security.md's prose",
};

/**
 * Named in prose: a command, or a command and some of its flags, without the values a run needs
 * (`ccm manifests` always needs --provider and --image; `ccm cluster prepare` off a terminal needs
 * --yes). Each is checked against its program's own help: the command exists, and so does every flag
 * the span names (`checkNamed`).
 */
const NAMED = [
  'ccm completion',
  'ccm manifests',
  'ccm cluster prepare',
  'ccm manifests --cluster-cidr',
  'ccm manifests --controllers route',
  'ccm manifests --cronjob',
  'ccm manifests --env',
  'ccm manifests --namespace',
  'ccm manifests --provider X',
  'ccm manifests --provider cloudlycke --cronjob',
  'ccm manifests --provider triton --cmon',
  'ccm manifests --cmon',
  'ccm manifests --cmon --cmon-insecure-skip-verify',
  'ccm manifests | kubectl apply',
  'ccm manifests | kubectl apply --server-side -f -',
  'ccm manifests | kubectl apply --server-side',
  'ccm manifests --provider … | kubectl apply --server-side -f -',
  'ccm nodes init --credentials-secret',
  'ccm run --cmon-groups',
  'ccm run --cmon-groups cluster=prod',
  'ccm doctor --provider triton',
  'helm install',
  'helm lint',
  'helm template',
  'helm upgrade',
  'kubectl apply',
  'kubectl apply --server-side',
  'kubectl create secret',
  'kubectl drain',
  'kubectl rollout status',
  'kubectl rollout undo',
  'kubectl set image',
  'kubectl set env',
  'kubeadm upgrade',
  'ip -json',
  'ip route get',
];

const BENCHMARKS = [
  'npm run bench',
  'npm run bench:run',
  'npm run bench:screen',
  'npm run bench:services',
  'npm run bench:startup',
  'npm run bench:soak',
  'npm run bench:migrate',
  'npm run bench:routes',
  'bash .ci/node tsx test/bench/nodes-list.bench.ts',
  'bash .ci/node tsx test/bench/startup.bench.ts [rounds]',
  'bash .ci/node tsx test/bench/digitalocean-nodes-init.bench.ts [N]',
  'bash .ci/node tsx test/bench/triton-nodes-init.bench.ts [sizes]',
  'bash .ci/node tsx test/bench/brightbox-nodes-init.bench.ts [N]',
  'bash .ci/node tsx test/bench/<cloud>-nodes-init.bench.ts 5000',
  'BENCH_ONLY=peak bash .ci/node tsx test/bench/run.bench.ts',
  'BENCH_ONLY=burst bash .ci/node tsx test/bench/run.bench.ts',
  'BENCH_ONLY=big BENCH_RSS_ONLY=1 [BENCH_CCM_AS_DEPLOYED=1] npm run bench:run',
];

/** Lines this file does not run, by reason. Keep it short: a line that can run here, runs. */
const NOT_RUN: [reason: string, lines: string[]][] = [
  [
    'the whole suite: 13 minutes, with the machine-wide real cluster; CI runs it',
    ['npm test', 'DO_OPENAPI_SPEC=<path of the file> npm test', 'npm run test:stress'],
  ],
  [
    'installs: `npm ci` replaces node_modules under the running tests (.ci/run runs it on a fresh clone), `npm install -g .` writes outside the repository',
    ['npm ci', 'npm install -g .'],
  ],
  [
    'rewrites the repository under the running tests (dist/, the sources, docs/reference: reference.test.ts compares that page with the CLI, charts/ccm/templates: helm-templates.test.ts compares them with the code); lint is minutes of tsc on two cores; CI runs all five',
    ['npm run build', 'npm run format', 'npm run readme', 'npm run lint', 'npm run chart'],
  ],
  [
    'benchmarks: minutes of full load on two cores (docs/benchmarks.md); their scripts and files exist (checked)',
    BENCHMARKS,
  ],
  ['the official Go SDKs against the simulators: minutes, Go modules fetched', ['npm run test:sdk']],
  [
    'chaos runs: minutes to an hour of three ccm replicas under faults, on two cores; npm test runs the short one of each cloud (test/chaos/ci-*.test.ts)',
    [
      'npm run test:chaos',
      'CHAOS_CLOUD=openstack CHAOS_MINUTES=60 npm run test:chaos',
      'CHAOS_CLOUD=digitalocean CHAOS_SEED=45 CHAOS_MINUTES=3 npm run test:chaos',
      // Scenario B fails by design (docs/chaos.md, "What a Lease cannot promise").
      "bash .ci/node node_modules/.bin/vitest run --config test/chaos/review.vitest.config.ts -t 'B: a create'",
    ],
  ],
  [
    "starts its own control plane and simulator as a reader does: quickstart.test.ts runs it, and the README's blocks with it",
    ['npm run quickstart', 'npm run quickstart -- --cloud digitalocean'],
  ],
  [
    'the image: buildah as root (image.test.ts builds it, reads its index with the skopeo inspect line and imports it with the ctr line into a containerd of its own; the npm sbom spans are what .ci/image runs in the staged image, and image.test.ts checks the SBOM); pushing needs a registry',
    [
      'npm run image',
      'npm run image          # dist/image/ccm-0.1.0.oci.tar',
      'skopeo inspect --raw oci-archive:dist/image/ccm-0.1.0.oci.tar',
      'ctr -n k8s.io images import ccm-0.1.0.oci.tar',
      'ctr -n k8s.io images ls',
      'skopeo copy --all oci-archive:dist/image/ccm-0.1.0.oci.tar docker://<your registry>/ccm:0.1.0',
      'npm sbom --sbom-format cyclonedx',
      'npm sbom --omit=dev',
    ],
  ],
  ['the real kubeadm cluster of test/cluster (the `cluster` project)', ['bash test/cluster/cluster.sh up']],
  ["DigitalOcean's OpenAPI repository's own script, not ours", ['npm run bundle']],
  [
    'what `cluster prepare` runs on a node under systemd: this machine runs no systemd (below, a stand-in answers for a node)',
    ['systemctl daemon-reload', 'systemctl show -p MainPID', 'systemctl restart kubelet'],
  ],
  [
    'what ccm runs on the Vagrant path: no Vagrant here (unit tests answer with test/fixtures/cloudlycke/vagrant-standin)',
    ['vagrant status --machine-readable', 'vagrant ssh-config', 'vagrant ssh NAME --no-tty -c …'],
  ],
  [
    "what CMON's own bootstrap runs (triton-cmon boot/setup.sh), quoted to say which certificate it makes",
    ['openssl req -x509 -subj "/CN=<its name>" … -days 365'],
  ],
  [
    "a real cloud account's own CLI",
    [
      'triton vlan list',
      'triton network list',
      'triton services',
      'triton profile cmon-certgen',
      'openstack router remove route',
    ],
  ],
];

// --- The world ----------------------------------------------------------------------------------------

let cp: ControlPlane;
let api: CoreV1Api;
let apps: AppsV1Api;
let doSim: DigitalOceanSimulator;
let osSim: OpenStackSimulator;
let bbSim: BrightboxSimulator;
let triton: TritonSim;
let router: SimRouter;
let sshd: Sshd | undefined;
let tritonKey: TestKey;
const keys = new KeyFolder();
/** The reader's folder (cwd of every line but the README's), home, and programs of theirs. */
let work: string;
let home: string;
let fakeBin: string;
let kubeCache: string;
/** `node -e 'setTimeout(()=>{},3e4)'` runs its 30 s beside the other tests. */
let idleNode: ResultPromise | undefined;

const ran = new Set<string>();
/** The `ccm run` lines started and not stopped yet, each with the release of port 10258. */
const running = new Map<ResultPromise, () => void>();

/** Each cloud's credentials, as its page says a reader gives them (the simulators stand for the clouds). */
function cloudEnv(cloud: string): Record<string, string | undefined> {
  switch (cloud) {
    case 'digitalocean':
      // docs/providers/digitalocean.md: the token, and the API base URL (here the simulator's)
      return { DO_ACCESS_TOKEN: doSim.token, DO_OVERRIDE_URL: doSim.url };
    case 'brightbox':
      // docs/providers/brightbox.md: the API client, and BRIGHTBOX_API_URL for another "region"
      return {
        BRIGHTBOX_CLIENT: SIM_CLIENT.id,
        BRIGHTBOX_CLIENT_SECRET: SIM_CLIENT.secret,
        BRIGHTBOX_API_URL: bbSim.url,
      };
    case 'cloudlycke':
      // docs/providers/cloudlycke.md: the inventory by --cloud-config or CLOUDLYCKE_INVENTORY
      return { CLOUDLYCKE_INVENTORY: join(work, 'inventory.yaml') };
    case 'triton':
      // docs/secrets.md: the key's passphrase from TRITON_KEY_PASSPHRASE; no ssh-agent of this machine
      return { TRITON_KEY_PASSPHRASE: TRITON_PASSPHRASE, SSH_AUTH_SOCK: undefined };
    default:
      // OpenStack: its cloud.conf by --cloud-config, or the Secret kube-system/cloud-config
      return {};
  }
}

/** The cloud of a page's lines that name no --provider. */
const PAGE_CLOUD: Record<string, string> = { 'docs/routes.md': 'openstack' };
const NODE20_PAGES = /^(README\.md|docs\/deploy\.md|docs\/secrets\.md|docs\/providers\/)/;
/** ccm's commands that need a provider (and so read CCM_PROVIDER when the line names none). */
const NEEDS_PROVIDER = /^ccm (run|nodes|doctor|migrate|secret)\b/;

/**
 * The docs' placeholders, filled in the line (as quickstart.test.ts fills what the quick start
 * printed). A line is run only once none is left (`<…>`, `…`, `X`, `ns/name`, `DIR`, and the hold id
 * `6-3f9a2c1b` of the deletion brake's pages, filled with the hold ccm printed, or run as shown where
 * the test means a stale id). What the lines name but leave in place is made for them:
 * - `inventory.yaml`: a Cloudlycke inventory in the reader's folder, written by each test for its Nodes
 *   (`writeInventory`); `templates/…` is the repository's, for the README's lines run there;
 * - `cloud.conf`: cloud-provider-openstack's example cloud.conf, its auth-url the OpenStack simulator's,
 *   with `[Route] router-id` naming the simulator's router (beforeAll);
 * - `$HOME/.ssh/id_rsa`: an RSA key with a passphrase (TRITON_KEY_PASSPHRASE) that the Triton
 *   simulator's account `me` knows, in this test's home;
 * - `pass show do-token`: a `pass` on PATH whose store holds the DigitalOcean simulator's token;
 * - `root@10.0.0.11`, `root@10.0.0.12`: an `ssh` on PATH that reaches them as the test sshd on
 *   127.0.0.1 and 127.0.0.2 (the `--ssh` test), as a reader's ssh config would;
 * - a kubeadm node for `ccm cluster prepare`: this machine is none; the lines are pointed at a copy of
 *   test/fixtures/cluster/kubeadm-v1.36.3 by the hidden `--root`/`--remote-root` flags;
 * - Nodes older than `--deletion-grace-period` (5m) for the deletion brake's lines: these are seconds
 *   old, so those lines run with `--deletion-grace-period 0s` added, which makes them as old.
 */
function fill(line: string, provider?: { name: string; secret: string }, hold?: string): string {
  let out = line
    // What `npm run quickstart` printed: this file's control plane and DigitalOcean simulator.
    .replaceAll('<the path it printed>', cp.kubeconfigPath)
    .replaceAll('<the URL it printed>', doSim.url)
    .replaceAll('<the token it printed>', doSim.token)
    // The registry the Nodes pull from: an example name, never asked (nothing here pulls).
    .replaceAll('<your registry>', REGISTRY)
    .replaceAll('<registry>/ccm:<version>', `${REGISTRY}/ccm:0.1.0`)
    // The cloud being switched from: DigitalOcean, whose official controller the migrate test seeds.
    .replaceAll('<cloud>', 'digitalocean')
    .replaceAll('<Pod CIDR>', CLUSTER_CIDR)
    // An example CloudAPI host: the Triton simulator (whose account is `me`, as the line says).
    .replaceAll('https://us-east-1.api.example.com', triton.url)
    // brightbox.md's API client, elided: the simulator's.
    .replaceAll('cli-xxxxx', SIM_CLIENT.id)
    .replaceAll('BRIGHTBOX_CLIENT_SECRET=...', `BRIGHTBOX_CLIENT_SECRET=${SIM_CLIENT.secret}`)
    // migrate.md: the Service whose ingress is only its hostname, and its load balancer's IP.
    .replaceAll('service <name>', `service ${HOSTNAME_SERVICE}`)
    .replaceAll('<its IP>', hostnameLbIp)
    // routes.md's ip lines (in a network namespace of their own): a Node at 192.168.56.11 with
    // 10.244.1.0/24, table 100, realm 7; a table by name: main.
    .replaceAll('<podCIDR>', '10.244.1.0/24')
    .replaceAll('<Node InternalIP>', '192.168.56.11')
    .replaceAll('<cluster CIDR>', CLUSTER_CIDR)
    .replaceAll('table <table>', 'table 100')
    .replaceAll('lookup <table>', 'lookup 100')
    .replaceAll('realm <realm>', 'realm 7')
    .replaceAll('table <name>', 'table main')
    // deploy.md's and output.md's folder of `ccm manifests --out`: the one the reference's line names.
    .replaceAll('kubectl apply -f DIR', 'kubectl apply -f ./ccm-manifests')
    // deploy.md's proxy: a port nothing listens on. No line sends anything through it (its servers are
    // on loopback, which is never proxied), and one that did would fail rather than look a name up.
    .replaceAll('http://proxy.corp.example:3128', NO_ONE_LISTENING);
  // secrets.md: `--provider X` and `ns/name` are the provider chosen and its Secret.
  if (provider)
    out = out
      .replaceAll('--provider X', `--provider ${provider.name}`)
      .replaceAll('ns/name', provider.secret);
  // nodes.md's and troubleshooting.md's hold id (`6-3f9a2c1b`, `18-3f9a2c1b`): the hold ccm printed,
  // of as many Nodes as the page's; 'shown' runs the page's own id, which names no hold here (stale).
  if (hold !== undefined && hold !== 'shown') {
    out = out.replace(HOLD_EXAMPLE, (example, count: string) => {
      if (!hold.startsWith(`${count}-`))
        throw new Error(`${line}: ${example} is a hold of ${count} Nodes, not ${hold}`);
      return hold;
    });
  }
  const left =
    /<[A-Za-z][^>]*>|…|--provider X\b|\bns\/name\b|\bDIR\b/.exec(out) ??
    (hold === undefined ? HOLD_EXAMPLE.exec(out) : null);
  if (left) throw new Error(`${line}: the placeholder ${left[0]} has no filling in this test`);
  return out;
}

/** The hold id of the docs' examples, with its count of held Nodes. */
const HOLD_EXAMPLE = /\b(\d+)-3f9a2c1b\b/;

/** The line, as the page shows it: a line no page shows is no docs line (fails with the page named). */
function docLine(page: string, line: string): string {
  if (!found.some((c) => c.page === page && c.line === line)) {
    throw new Error(`${page} no longer shows \`${line}\`: bring this test up to date with the page`);
  }
  return line;
}

interface ShellOptions {
  /** The page the line is on: its Node and its folder (default: its first page). */
  page?: string;
  env?: Record<string, string | undefined>;
  /** No `ccm` on PATH, no KUBECONFIG, no cloud: the README's quick start, whose `export`s give them. */
  bare?: boolean;
  /** Lines run first in the same shell (a block's `export`s). */
  before?: string[];
  /** secrets.md's `--provider X` / `ns/name`. */
  provider?: { name: string; secret: string };
  /** The hold id ccm printed, for the page's example id; 'shown': the page's id as it stands. */
  hold?: string;
  /** Text after the line (a hidden flag that points `cluster prepare` at a node's root). */
  append?: string;
  cwd?: string;
}

interface Shell {
  code: number;
  stdout: string;
  stderr: string;
  /** The line as it ran. */
  ran: string;
}

function command(
  line: string,
  options: ShellOptions,
): { script: string; cwd: string; env: Record<string, string>; filled: string } {
  const page = options.page ?? pagesOf(line)[0] ?? '';
  const filled = `${fill(line, options.provider, options.hold)}${options.append ?? ''}`;
  // Cloudlycke's routes are this machine's own routing table: never from a test outside a namespace.
  if (/--provider cloudlycke/.test(filled) && /--cluster-cidr/.test(filled)) {
    throw new Error(`${line}: would route Pod CIDRs in this machine's table; run it in a network namespace`);
  }
  const named = /--provider (\S+)/.exec(filled)?.[1];
  const cloud = named ?? PAGE_CLOUD[page] ?? 'digitalocean';
  const node = NODE20_PAGES.test(page) ? NODE20_DIR : NODE24_DIR;
  const base: Record<string, string | undefined> = options.bare
    ? { PATH: [fakeBin, binDir(), node, process.env.PATH].join(':') }
    : {
        PATH: [fakeBin, join(root, 'bin'), binDir(), node, process.env.PATH].join(':'),
        KUBECONFIG: cp.kubeconfigPath,
        ...(named || !NEEDS_PROVIDER.test(filled) ? {} : { CCM_PROVIDER: cloud }),
        ...cloudEnv(cloud),
      };
  const env = Object.fromEntries(
    Object.entries({
      HOME: home,
      // The reader's cache, where `npm test` or `npm run quickstart` put the Node 24 that bin/run.js
      // re-runs itself with under Node 20 (the home above is this test's, for ~/.ssh/id_rsa).
      XDG_CACHE_HOME: process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'),
      KUBECACHEDIR: kubeCache,
      LANG: 'C.UTF-8',
      ...base,
      ...options.env,
    }).filter((e): e is [string, string] => e[1] !== undefined),
  );
  const before = (options.before ?? []).map((l) => fill(l));
  return {
    script: ['set -o pipefail', ...before, filled].join('\n'),
    cwd: options.cwd ?? (page === 'README.md' ? root : work),
    env,
    filled,
  };
}

/** Runs one line of the docs to its end (`notDocs`: a line of this test's own, to arrange or check). */
async function shell(line: string, options: ShellOptions & { notDocs?: boolean } = {}): Promise<Shell> {
  if (!options.notDocs) {
    ran.add(line);
    for (const b of options.before ?? []) ran.add(b);
  }
  const { script, cwd, env, filled } = command(line, options);
  const r = await execa('bash', ['-c', script], {
    cwd,
    env,
    extendEnv: false,
    reject: false,
    stdin: 'ignore',
    timeout: 120_000,
  });
  return { code: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr), ran: filled };
}

/** Runs the line and expects exit 0 and no JavaScript error. */
async function ok(line: string, options: ShellOptions & { notDocs?: boolean } = {}): Promise<Shell> {
  const r = await shell(line, options);
  expect(r.code, `${r.ran}\n${r.stdout}\n${r.stderr}`).toBe(0);
  expect(r.stderr, r.ran).not.toMatch(/TypeError|Cannot read properties|\n\s+at \S+ \(/);
  return r;
}

interface Started {
  output(): string;
  /** Ctrl-C, as a terminal sends it to the whole group; the line's end. */
  stop(): Promise<Shell>;
}

/**
 * A long-running line (`ccm run`), until `ready` shows in its output. It serves on 10258 as the docs
 * say, so it waits for that port's turn (quickstart.test.ts starts `ccm run` on it too), and a start
 * refused because something outside this suite holds the port is tried again.
 */
async function start(line: string, ready: RegExp, options: ShellOptions = {}): Promise<Started> {
  ran.add(line);
  for (const b of options.before ?? []) ran.add(b);
  const { script, cwd, env, filled } = command(line, options);
  const release = await holdPort(10258);
  const patience = Date.now() + PORT_PATIENCE_MS;
  for (let attempt = 1; ; attempt++) {
    const proc = execa('bash', ['-c', script], {
      cwd,
      env,
      extendEnv: false,
      reject: false,
      stdin: 'ignore',
      detached: true,
      all: true,
    });
    running.set(proc, release);
    let out = '';
    proc.all?.on('data', (d) => {
      out += String(d);
    });
    let ended = false;
    void proc.then(() => {
      ended = true;
    });
    try {
      await until(`\`${filled}\` ready (${ready})`, async () => ready.test(out) || ended, 90_000);
    } catch (err) {
      throw new Error(`${(err as Error).message}; its output:\n${out}`);
    }
    if (ended) {
      // The port held by something that does not take turns (a test of another checkout, the real
      // cluster's ccm Pods on the host network): the same line again, a little later.
      if (/EADDRINUSE/.test(out) && Date.now() < patience) {
        if (attempt === 1) console.warn(`port 10258 is held outside this file; \`${filled}\` waits for it`);
        running.delete(proc);
        await new Promise((r) => setTimeout(r, 3000));
        continue;
      }
      throw new Error(`\`${filled}\` ended before it was ready:\n${out}`);
    }
    const stop = async (): Promise<Shell> => {
      try {
        if (proc.pid) process.kill(-proc.pid, 'SIGINT');
      } catch {
        // ended already
      }
      const r = await proc;
      running.delete(proc);
      release();
      return { code: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr), ran: filled };
    };
    return { output: () => out, stop };
  }
}

/** Starts a `ccm run` line, waits for `ready`, then Ctrl-C: exit 0. */
async function runUntil(line: string, ready: RegExp, options: ShellOptions = {}): Promise<string> {
  const started = await start(line, ready, options);
  const ended = await started.stop();
  expect(ended.code, `${ended.ran}\n${started.output()}`).toBe(0);
  expect(started.output()).not.toMatch(/TypeError|Cannot read properties/);
  return started.output();
}

/** ccm's JSON log lines (off a terminal). */
const logLines = (out: string) =>
  out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown> & { msg: string });

/**
 * A NAMED span: its program's help knows the command (the words before the first flag) and every long
 * flag the span names. `ip`'s help is `ip [OBJECT] help` (exit 255), which names its options and commands.
 */
async function checkNamed(span: string): Promise<void> {
  for (const part of span.split(' | ')) {
    const [program = '', ...words] = part.split(' ');
    const first = words.findIndex((w) => w.startsWith('-'));
    const command = first < 0 ? words : words.slice(0, first);
    const flags = words.filter((w) => w.startsWith('--'));
    if (program === 'ip') {
      const r = await execa('ip', [...command.slice(0, 1), 'help'], { reject: false });
      const help = `${r.stdout}${r.stderr}`;
      if (command.length > 0) expect(help, span).toContain(`ip ${command.join(' ')} `);
      for (const w of words.filter((x) => x.startsWith('-')))
        expect(help, span).toContain(`${w.slice(0, 2)}[${w.slice(2)}]`);
      continue;
    }
    const bin =
      program === 'ccm' ? join(root, 'bin/ccm') : program === 'helm' ? helmBin() : join(binDir(), program);
    const r = await execa(bin, [...command, '--help'], {
      reject: false,
      env: { PATH: `${NODE24_DIR}:${process.env.PATH}`, HOME: home, KUBECACHEDIR: kubeCache },
      extendEnv: false,
    });
    expect(r.exitCode, `${span}: ${program} ${command.join(' ')} --help\n${r.stderr}`).toBe(0);
    // The help of that very command: ccm's and kubectl's usage lines name it.
    expect(r.stdout, span).toContain(`${program} ${command.join(' ')}`);
    for (const flag of flags) expect(r.stdout, `${span}: ${flag}`).toContain(flag);
  }
}

// --- Seeds ------------------------------------------------------------------------------------------

const HOSTNAME_SERVICE = 'named';
let hostnameLbIp = '';

async function resetCluster(): Promise<void> {
  await api.deleteCollectionNode({});
  await removeServices(api, 'default');
}

function writeInventory(instances: Record<string, unknown>[], defaults: Record<string, string>): void {
  writeFileSync(join(work, 'inventory.yaml'), stringify({ defaults, instances }));
}

const CLOUDLYCKE = { type: 'vbox.vm.1g.2cpu', region: 'virtualbox', zone: 'virtualbox' };

const taints = async (name: string) => ((await api.readNode({ name })).spec?.taints ?? []).map((t) => t.key);
const initialised = (name: string) =>
  until(`${name} initialised`, async () => !(await taints(name)).includes(UNINITIALIZED), 30_000);

beforeAll(async () => {
  work = tempDir('ccm-docs-work-');
  home = tempDir('ccm-docs-home-');
  fakeBin = tempDir('ccm-docs-bin-');
  kubeCache = tempDir('ccm-docs-kube-cache-');
  idleNode = execa('bash', ['-c', "node -e 'setTimeout(()=>{},3e4)'"], {
    reject: false,
    env: { PATH: `${NODE24_DIR}:${process.env.PATH}` },
    extendEnv: false,
  });
  ran.add("node -e 'setTimeout(()=>{},3e4)'");
  tritonKey = keys.make({ type: 'rsa', bits: 2048, passphrase: TRITON_PASSPHRASE });
  [cp, doSim, osSim, bbSim, triton] = await Promise.all([
    startControlPlane(),
    DigitalOceanSimulator.start(),
    new OpenStackSimulator().start(),
    new BrightboxSimulator().start(),
    new TritonSim({ login: 'me' }).start(),
  ]);
  api = fixtureApi(cp.kubeconfigPath);
  apps = fixtureClient(cp.kubeconfigPath, AppsV1Api);
  triton.addKey(tritonKey.publicKey);
  // The reader's key, as secrets.md names it.
  mkdirSync(join(home, '.ssh'), { mode: 0o700 });
  writeFileSync(join(home, '.ssh/id_rsa'), tritonKey.privateKey, { mode: 0o600 });
  // OpenStack: the official example cloud.conf on the simulator, with the router of routes.md.
  osSim.routing.extensions.add('extraroute-atomic');
  router = osSim.routing.addRouter({ subnets: ['10.0.0.0/24'], ips: ['10.0.0.1'] });
  writeFileSync(join(work, 'cloud.conf'), `${osSim.cloudConf()}\n[Route]\nrouter-id=${router.id}\n`, {
    mode: 0o600,
  });
  // `pass show do-token`: the reader's password store holds the DigitalOcean token.
  writeFileSync(
    join(fakeBin, 'pass'),
    `#!/bin/sh\n[ "$*" = "show do-token" ] || { echo "pass: no such entry: $*" >&2; exit 1; }\nprintf '%s\\n' '${doSim.token}'\n`,
    { mode: 0o755 },
  );
}, 180_000);

/** What a failed test left running is killed, and the port it held given back. */
async function killRunning(): Promise<void> {
  for (const [p, release] of running) {
    try {
      if (p.pid) process.kill(-p.pid, 'SIGKILL');
    } catch {
      // ended
    }
    await p;
    release();
  }
  running.clear();
}

afterEach(async () => {
  await killRunning();
  expect(doSim.takeViolations()).toEqual([]);
});

afterAll(async () => {
  idleNode?.kill();
  await Promise.all([cp?.stop(), doSim?.stop(), osSim?.stop(), bbSim?.close(), triton?.stop(), sshd?.stop()]);
  keys.remove();
});

// --- README.md --------------------------------------------------------------------------------------

describe("README.md's quick start, with this file's control plane as what `npm run quickstart` started (Node 20)", () => {
  const exports = () => [
    docLine('README.md', 'export KUBECONFIG=<the path it printed>'),
    docLine('README.md', 'export PATH="$PWD/bin:$PATH"'),
  ];
  const readme = (line: string) => docLine('README.md', line);
  const INVENTORY = 'templates/cloudlycke/inventory.example.yaml';

  it('cloudlycke: nodes init three ways and nodes list; ccm run initialises worker-3, curl reads its metrics, Ctrl-C ends it', async () => {
    await resetCluster();
    await createNodes(api, QUICKSTART_NODES);
    const run = (line: string) => ok(readme(line), { bare: true, before: exports() });
    const dry = await run(
      `ccm nodes init --provider cloudlycke --cloud-config ${INVENTORY} --dry-run -o wide`,
    );
    expect(dry.stdout).toContain('Dry run, nothing written. 3 Nodes: 3 would initialize;');
    expect((await run(`ccm nodes init --provider cloudlycke --cloud-config ${INVENTORY}`)).stdout).toContain(
      '3 Nodes: 3 initialized;',
    );
    const again = await run(`ccm nodes init --provider cloudlycke --cloud-config ${INVENTORY} -o json`);
    expect(JSON.parse(again.stdout)).toMatchObject({ kubeWrites: 0, summary: { total: 3, unchanged: 3 } });
    expect((await run(`ccm nodes list --provider cloudlycke --cloud-config ${INVENTORY}`)).stdout).toContain(
      'node=worker-2 instance=worker-2 state=running initialised=yes status=ok',
    );

    const controller = await start(
      readme(
        `ccm run --provider cloudlycke --cloud-config ${INVENTORY} --leader-elect=false --plain-http --secure-port 10258`,
      ),
      /"controller":"cloud-node","msg":"started"/,
      { bare: true, before: exports() },
    );
    await run('npm run quickstart:add -- node worker-3');
    await initialised('worker-3');
    // "`curl -s localhost:10258/metrics` shows its figures"
    const metrics = await ok(readme('curl -s localhost:10258/metrics'), { bare: true });
    expect(metrics.stdout).toMatch(/^ccm_reconcile_total\{controller="cloud-node",result="success"\} [1-9]/m);
    // "Ctrl-C stops it (exit 0)"
    const ended = await controller.stop();
    expect(ended.code, controller.output()).toBe(0);
    expect(
      logLines(controller.output()).some(
        (l) => l.node === 'worker-3' && /set providerID cloudlycke:\/\/worker-3/.test(l.msg),
      ),
    ).toBe(true);
  });

  it('digitalocean: secret create from the token it printed, doctor, ccm run with a Node and a Service', async () => {
    await resetCluster();
    doSim.reset();
    await createNodes(api, QUICKSTART_NODES);
    doSim.addDroplets(
      ...Object.entries(QUICKSTART_PRIVATE_IPS).map(([name, privateIP]) => ({
        name,
        region: 'fra1',
        privateIP,
      })),
    );
    const run = (line: string) => shell(readme(line), { bare: true, before: exports() });
    const secret = await run(
      "printf '%s' '<the token it printed>' | ccm secret create --provider digitalocean --cloud-api-url <the URL it printed> --from-stdin",
    );
    expect(secret.code, secret.stderr).toBe(0);
    expect(`${secret.stdout}${secret.stderr}`).not.toContain(doSim.token);
    // "doctor finds the cloud happy with it and names what a real cluster would still need (… exit 1)"
    const doctor = await run('ccm doctor --provider digitalocean --cloud-api-url <the URL it printed>');
    expect(doctor.stdout).toContain('the cloud accepts the credentials');
    expect(doctor.stdout).toMatch(/^status=(warn|fail) check=kube-controller-manager /m);
    expect(doctor.stdout).toMatch(/^status=fail check=rbac /m);
    expect(doctor.code).toBe(1);

    const controller = await start(
      readme(
        'ccm run --provider digitalocean --cloud-api-url <the URL it printed> --leader-elect=false --plain-http --secure-port 10258',
      ),
      /"controller":"service","msg":"started"/,
      { bare: true, before: exports() },
    );
    // "ccm run reads that Secret by itself"
    expect(controller.output()).toContain('cloud credentials from Secret kube-system/digitalocean');
    expect((await run('npm run quickstart:add -- node worker-3')).code).toBe(0);
    await initialised('worker-3');
    const service = await run('npm run quickstart:add -- service web');
    expect(service.stdout).toMatch(/Service default\/web: external address \d+\.\d+\.\d+\.\d+/);
    expect((await controller.stop()).code, controller.output()).toBe(0);
  });
});

// --- docs/deploy.md (and the README's three commands) -------------------------------------------------

describe('docs/deploy.md (Node 20)', () => {
  const deploy = (line: string) => docLine('docs/deploy.md', line);

  it('secret create, manifests | kubectl apply, doctor; the logs line; a rollout; the earlier Deployment removed', async () => {
    await resetCluster();
    const secret = await ok(
      deploy(
        'ccm secret create --provider digitalocean                      # the credentials Secret, as the official controller names it',
      ),
    );
    expect(`${secret.stdout}${secret.stderr}`).not.toContain(doSim.token);
    const applied = await ok(
      deploy(
        'ccm manifests --provider digitalocean --image <your registry>/ccm:0.1.0 | kubectl apply --server-side -f -',
      ),
    );
    expect(applied.stdout).toContain('daemonset.apps/ccm serverside-applied');
    const doctor = await shell(
      deploy(
        "ccm doctor --provider digitalocean                             # the Secret, RBAC, Lease, ccm's Pods and the cloud, checked",
      ),
    );
    // No Node here, so the DaemonSet runs no Pod: that check fails (exit 1), the others say what is set up.
    expect(doctor.code, doctor.stdout).toBe(1);
    expect(doctor.stdout).toMatch(
      /^status=pass check=credentials-secret result="Secret kube-system\/digitalocean has access-token"/m,
    );
    expect(doctor.stdout).toMatch(/^status=fail check=controller-pods /m);

    // "`kubectl -n kube-system logs -f -l app.kubernetes.io/name=ccm --prefix` then shows ccm …": no Pod here.
    const logs = await shell(deploy('kubectl -n kube-system logs -f -l app.kubernetes.io/name=ccm --prefix'));
    expect(logs.code, logs.stderr).toBe(0);
    expect(`${logs.stdout}${logs.stderr}`).toContain('No resources found in kube-system namespace.');

    // Rolling out a new version. No DaemonSet controller runs here: once applied, the test writes the
    // status it would write when the one Pod is updated and available.
    await ok(
      deploy(
        'ccm manifests --provider digitalocean --image <your registry>/ccm:0.2.0 | kubectl apply --server-side -f -',
      ),
    );
    const ds = await apps.readNamespacedDaemonSet({ name: 'ccm', namespace: 'kube-system' });
    expect(ds.spec?.template.spec?.containers[0]?.image).toBe(`${REGISTRY}/ccm:0.2.0`);
    await apps.replaceNamespacedDaemonSetStatus({
      name: 'ccm',
      namespace: 'kube-system',
      body: {
        ...ds,
        status: {
          observedGeneration: ds.metadata?.generation,
          currentNumberScheduled: 1,
          desiredNumberScheduled: 1,
          updatedNumberScheduled: 1,
          numberAvailable: 1,
          numberReady: 1,
          numberMisscheduled: 0,
        },
      } as V1DaemonSet,
    });
    const rollout = await ok(deploy('kubectl -n kube-system rollout status daemonset/ccm'));
    expect(rollout.stdout).toContain('daemon set "ccm" successfully rolled out');

    // Manifests of an earlier ccm made a Deployment and a PodDisruptionBudget named ccm (as --any-node does).
    await ok(
      `ccm manifests --provider digitalocean --image ${REGISTRY}/ccm:0.1.0 --any-node | kubectl apply --server-side -f -`,
      {
        notDocs: true,
        page: 'docs/deploy.md',
      },
    );
    const removed = await ok(deploy('kubectl -n kube-system delete deployment/ccm poddisruptionbudget/ccm'));
    expect(removed.stdout).toContain('deployment.apps "ccm" deleted');
    expect(removed.stdout).toContain('poddisruptionbudget.policy "ccm" deleted');
  });

  it('without a registry, and the CronJob with its inventory ConfigMap', async () => {
    await ok(
      deploy(
        'ccm manifests --provider digitalocean --image localhost/ccm:0.1.0 --image-pull-policy Never | kubectl apply --server-side -f -',
      ),
    );
    const ds = await apps.readNamespacedDaemonSet({ name: 'ccm', namespace: 'kube-system' });
    expect(ds.spec?.template.spec?.containers[0]).toMatchObject({
      image: 'localhost/ccm:0.1.0',
      imagePullPolicy: 'Never',
    });

    copyFileSync(join(root, 'templates/cloudlycke/inventory.example.yaml'), join(work, 'inventory.yaml'));
    await api
      .deleteNamespacedConfigMap({ name: 'ccm-cloudlycke-config', namespace: 'kube-system' })
      .catch(() => {});
    await ok(
      deploy(
        'kubectl -n kube-system create configmap ccm-cloudlycke-config --from-file=config=inventory.yaml',
      ),
    );
    await ok(
      deploy(
        'ccm manifests --provider cloudlycke --cronjob --image <your registry>/ccm:0.1.0 | kubectl apply --server-side -f -',
      ),
    );
    const cronjob = await execa(
      join(binDir(), 'kubectl'),
      ['-n', 'kube-system', 'get', 'cronjob', 'ccm-nodes-init', '-o', 'jsonpath={.spec.schedule}'],
      {
        env: { KUBECONFIG: cp.kubeconfigPath, KUBECACHEDIR: kubeCache },
      },
    );
    expect(cronjob.stdout).toBe('*/5 * * * *');

    // Proxies: the variables set in the pods of both, kept by a later apply of the manifests.
    await ok(
      deploy(
        'kubectl -n kube-system set env daemonset/ccm cronjob/ccm-nodes-init HTTPS_PROXY=http://proxy.corp.example:3128 NO_PROXY=.corp.example',
      ),
    );
    await ok(
      deploy(
        'ccm manifests --provider cloudlycke --cronjob --image <your registry>/ccm:0.1.0 | kubectl apply --server-side -f -',
      ),
    );
    const proxyEnv = [
      { name: 'HTTPS_PROXY', value: NO_ONE_LISTENING },
      { name: 'NO_PROXY', value: '.corp.example' },
    ];
    const daemonSet = await apps.readNamespacedDaemonSet({ name: 'ccm', namespace: 'kube-system' });
    expect(daemonSet.spec?.template.spec?.containers[0]?.env).toEqual(expect.arrayContaining(proxyEnv));
    const jobEnv = await execa(
      join(binDir(), 'kubectl'),
      [
        '-n',
        'kube-system',
        'get',
        'cronjob',
        'ccm-nodes-init',
        '-o',
        'jsonpath={.spec.jobTemplate.spec.template.spec.containers[0].env}',
      ],
      { env: { KUBECONFIG: cp.kubeconfigPath, KUBECACHEDIR: kubeCache } },
    );
    expect(JSON.parse(jobEnv.stdout)).toEqual(expect.arrayContaining(proxyEnv));
  });

  it("proxies: a workstation's line, the API server and the cloud here both on loopback, so never through it", async () => {
    const listed = await ok(
      deploy(
        'HTTPS_PROXY=http://proxy.corp.example:3128 NO_PROXY=10.0.0.0/8 ccm nodes list --provider digitalocean',
      ),
    );
    expect(listed.stderr).toBe('');
  });

  it('the Helm chart: the objects kubectl applied removed; lint, install, upgrade, uninstall, template; --helm', async () => {
    // helm on PATH, as the reader's; the chart in the reader's folder, as in their clone.
    if (!existsSync(join(fakeBin, 'helm'))) symlinkSync(helmBin(), join(fakeBin, 'helm'));
    cpSync(join(root, 'charts'), join(work, 'charts'), { recursive: true });
    const image = async () =>
      (
        await shell(
          'kubectl -n kube-system get daemonset ccm -o jsonpath={.spec.template.spec.containers[0].image}',
          {
            notDocs: true,
            page: 'docs/deploy.md',
          },
        )
      ).stdout;
    expect(await image()).toBe(`${REGISTRY}/ccm:0.1.0`);
    await ok(
      deploy(
        'kubectl -n kube-system delete daemonset,deployment,poddisruptionbudget,cronjob,serviceaccount,role,rolebinding -l app.kubernetes.io/name=ccm',
      ),
    );
    await ok(deploy('kubectl delete clusterrole,clusterrolebinding -l app.kubernetes.io/name=ccm'));
    expect(await image()).toBe('');
    const lint = await ok(
      deploy('helm lint charts/ccm --set provider=digitalocean --set image.repository=<your registry>/ccm'),
    );
    expect(lint.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
    await ok(
      deploy(
        'helm install ccm charts/ccm --namespace kube-system --set provider=digitalocean --set image.repository=<your registry>/ccm',
      ),
    );
    expect(await image()).toBe(`${REGISTRY}/ccm:0.1.0`);
    await ok(
      deploy(
        'helm upgrade ccm charts/ccm --namespace kube-system --reset-then-reuse-values --set image.tag=0.2.0 --set cronjob.enabled=true',
      ),
    );
    expect(await image()).toBe(`${REGISTRY}/ccm:0.2.0`);
    expect(
      (await apps.readNamespacedDaemonSet({ name: 'ccm', namespace: 'kube-system' })).spec?.template.spec
        ?.serviceAccountName,
    ).toBe('ccm');
    // Proxies, the chart's way: the env value, in both pods; the earlier values kept.
    // (The docs' proxy is this test's NO_ONE_LISTENING, as in the lines above.)
    const proxyEnv = [
      { name: 'HTTPS_PROXY', value: NO_ONE_LISTENING },
      { name: 'NO_PROXY', value: '.corp.example' },
    ];
    await ok(
      deploy(
        'helm upgrade ccm charts/ccm --namespace kube-system --reset-then-reuse-values --set env.HTTPS_PROXY=http://proxy.corp.example:3128 --set env.NO_PROXY=.corp.example',
      ),
    );
    expect(await image()).toBe(`${REGISTRY}/ccm:0.2.0`);
    const withEnv = await apps.readNamespacedDaemonSet({ name: 'ccm', namespace: 'kube-system' });
    expect(withEnv.spec?.template.spec?.containers[0]?.env?.slice(-2)).toEqual(proxyEnv);
    const cronEnv = await shell(
      'kubectl -n kube-system get cronjob ccm-nodes-init -o jsonpath={.spec.jobTemplate.spec.template.spec.containers[0].env}',
      { notDocs: true, page: 'docs/deploy.md' },
    );
    expect(JSON.parse(cronEnv.stdout).slice(-2)).toEqual(proxyEnv);
    await ok(deploy('helm uninstall ccm --namespace kube-system'));
    expect(await image()).toBe('');
    // Proxies, the manifests' way: --env, in both pods; then removed again, as before the chart.
    await ok(
      deploy(
        'ccm manifests --provider digitalocean --image <your registry>/ccm:0.1.0 --cronjob --env HTTPS_PROXY=http://proxy.corp.example:3128 --env NO_PROXY=.corp.example | kubectl apply --server-side -f -',
      ),
    );
    const applied = await apps.readNamespacedDaemonSet({ name: 'ccm', namespace: 'kube-system' });
    expect(applied.spec?.template.spec?.containers[0]?.env?.slice(-2)).toEqual(proxyEnv);
    const appliedCron = await shell(
      'kubectl -n kube-system get cronjob ccm-nodes-init -o jsonpath={.spec.jobTemplate.spec.template.spec.containers[0].env}',
      { notDocs: true, page: 'docs/deploy.md' },
    );
    expect(JSON.parse(appliedCron.stdout).slice(-2)).toEqual(proxyEnv);
    for (const line of [
      'kubectl -n kube-system delete daemonset,deployment,poddisruptionbudget,cronjob,serviceaccount,role,rolebinding -l app.kubernetes.io/name=ccm',
      'kubectl delete clusterrole,clusterrolebinding -l app.kubernetes.io/name=ccm',
    ])
      await ok(line, { notDocs: true, page: 'docs/deploy.md' });
    expect(await image()).toBe('');

    // "prints, object by object, what `ccm manifests --provider digitalocean --image …` prints"
    const key = (o: Doc) => `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`;
    const byKey = (yaml: string) => new Map(objectsOf(yaml).map((o) => [key(o), o]));
    const chart = byKey(
      (
        await ok(
          deploy(
            'helm template ccm charts/ccm --namespace kube-system --set provider=digitalocean --set image.repository=<your registry>/ccm',
          ),
        )
      ).stdout,
    );
    const printed = byKey(
      (await ok(deploy('ccm manifests --provider digitalocean --image <your registry>/ccm:0.1.0'))).stdout,
    );
    expect([...chart.keys()].sort()).toEqual([...printed.keys()].sort());
    for (const [name, object] of chart) expect(object, name).toEqual(printed.get(name));
    // The reader's copy of the chart holds the templates the code writes.
    const before = readFileSync(join(work, 'charts/ccm/templates/06-daemonset-ccm.yaml'), 'utf8');
    const written = await ok(deploy('ccm manifests --helm charts/ccm'));
    expect(written.stdout).toMatch(/^wrote \d+ templates of the chart in charts\/ccm$/m);
    expect(readFileSync(join(work, 'charts/ccm/templates/06-daemonset-ccm.yaml'), 'utf8')).toBe(before);
  });
});

// --- docs/secrets.md --------------------------------------------------------------------------------

describe('docs/secrets.md, the scripted lines (Node 20)', () => {
  const secrets = (line: string) => docLine('docs/secrets.md', line);
  const secretData = async (name: string) => {
    const s = await api.readNamespacedSecret({ name, namespace: 'kube-system' });
    return Object.fromEntries(
      Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
    );
  };

  it("writes each provider's Secret from stdin, flags and files, or prints it redacted", async () => {
    await api.deleteNamespacedSecret({ name: 'digitalocean', namespace: 'kube-system' }).catch(() => {});
    // The token only from `pass`: no DO_ACCESS_TOKEN in the environment.
    const fromPass = await ok(
      secrets('pass show do-token | ccm secret create --provider digitalocean --from-stdin'),
      {
        env: { DO_ACCESS_TOKEN: undefined },
      },
    );
    expect(`${fromPass.stdout}${fromPass.stderr}`).not.toContain(doSim.token);
    expect(await secretData('digitalocean')).toMatchObject({ 'access-token': doSim.token });
    // "The Secret is labelled app.kubernetes.io/managed-by: ccm"
    const written = await api.readNamespacedSecret({ name: 'digitalocean', namespace: 'kube-system' });
    expect(written.metadata?.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'ccm' });
    // "Then a summary and the next commands, whole: with --cloud-api-url when the Secret does not hold
    // the URL (not in ccm manifests when it is plain http://, which that command refuses: a line above
    // says so)". The simulator's URL is plain http on loopback.
    const [above = '', next = ''] = fromPass.stdout.replace(/ \\\n\s+/g, ' ').split('\nNext:\n');
    expect(above.split('\n').at(-1)).toMatch(
      new RegExp(`^ccm manifests below leaves out --cloud-api-url ${doSim.url}: .*plain http`),
    );
    expect(next.split('\n').map((l) => l.trim())).toEqual([
      'ccm manifests --provider digitalocean --image <registry>/ccm:0.1.0 --credentials-secret kube-system/digitalocean | kubectl apply --server-side -f -',
      `ccm run --provider digitalocean --credentials-secret kube-system/digitalocean --cloud-api-url ${doSim.url}`,
    ]);
    // deploy.md: "a plain http:// URL is refused too (exit 2) … --insecure-cloud-api takes a loopback
    // http:// URL all the same" (and only a loopback one).
    const manifests = `ccm manifests --provider digitalocean --image ${REGISTRY}/ccm:0.1.0 --cloud-api-url`;
    for (const [args, code] of [
      [doSim.url, 2],
      [`${doSim.url} --insecure-cloud-api`, 0],
      ['http://203.0.113.10 --insecure-cloud-api', 2],
    ] as const) {
      const r = await shell(`${manifests} ${args}`, { notDocs: true, page: 'docs/deploy.md' });
      expect(r.code, `${r.ran}\n${r.stderr}`).toBe(code);
      if (code === 2)
        expect(r.stderr.trimEnd().split('\n'), r.ran).toEqual([expect.stringMatching(/^ccm: /)]);
      else expect(r.stdout, r.ran).toContain(`- --cloud-api-url=${doSim.url}`);
    }

    await ok(
      secrets(
        'ccm secret create --provider triton --set url=https://us-east-1.api.example.com --set account=me --from-file key-material=$HOME/.ssh/id_rsa         # passphrase from TRITON_KEY_PASSPHRASE',
      ),
    );
    const tritonSecret = await secretData('triton');
    expect(Object.values(tritonSecret)).toEqual(
      expect.arrayContaining([triton.url, 'me', tritonKey.privateKey, TRITON_PASSPHRASE]),
    );

    // --cmon: CMON's client certificate, checked with CMON (the simulator on the Triton simulator,
    // reached by address as docs/providers/triton.md says --cmon-url may be, its CA by --cmon-ca).
    const cmon = await new CmonSim(triton).start();
    try {
      const ca = join(work, 'cmon-ca.pem');
      writeFileSync(ca, cmon.ca);
      const cmonEnv = { TRITON_CMON_URL: `https://127.0.0.1:${cmon.port}`, TRITON_CMON_CA: ca };
      const made = await ok(
        secrets(
          "ccm secret create --provider triton --set url=https://us-east-1.api.example.com --set account=me --from-file key-material=$HOME/.ssh/id_rsa --cmon  # CMON's client certificate, kube-system/triton-cmon",
        ),
        { env: cmonEnv },
      );
      expect(made.stdout).toContain('Secret kube-system/triton-cmon created');
      // "ca.crt with --cmon-ca" (secrets.md): the CA this reader gives (TRITON_CMON_CA), for the job's ca_file.
      expect(Object.keys(await secretData('triton-cmon')).sort()).toEqual(['ca.crt', 'tls.crt', 'tls.key']);
      // The reference's example and triton.md's span: the credentials from the environment.
      const again = await ok(
        docLine('docs/providers/triton.md', 'ccm secret create --provider triton --cmon'),
        {
          env: {
            ...cmonEnv,
            TRITON_URL: triton.url,
            TRITON_ACCOUNT: 'me',
            TRITON_KEY_MATERIAL: join(home, '.ssh/id_rsa'),
          },
        },
      );
      expect(again.stdout).toContain('Secret kube-system/triton-cmon updated');
      expect(cmon.requests.filter((r) => r.path === '/v1/discover' && r.status === 200)).toHaveLength(2);
    } finally {
      await cmon.stop();
    }

    await ok(
      secrets(
        "ccm secret create --provider openstack --cloud-config cloud.conf   # checked by the provider's own parser",
      ),
    );
    expect(await secretData('cloud-config')).toEqual({
      'cloud.conf': readFileSync(join(work, 'cloud.conf'), 'utf8'),
    });

    // `--dry-run` prints the Secret and calls nothing (neither the cluster nor the cloud); secret
    // values are <redacted>, the others shown as they are, under stringData.
    const writes = (await cp.writes(CCM_USER)).length;
    const brightboxCalls = bbSim.requests.length;
    const dry = await ok(
      secrets(
        'ccm secret create --provider brightbox --dry-run -o yaml            # secrets redacted; --show-secrets shows them',
      ),
    );
    expect(dry.stdout).toContain('name: brightbox-credentials');
    expect(dry.stdout).toContain('controller-client-secret: <redacted>');
    expect(dry.stdout).toContain(`controller-client: ${SIM_CLIENT.id}`);
    expect(dry.stdout).not.toContain(SIM_CLIENT.secret);
    expect((await cp.writes(CCM_USER)).length).toBe(writes);
    expect(bbSim.requests.length).toBe(brightboxCalls);
  });

  it('the next commands it names, for each provider whose Secret the lines above wrote', async () => {
    await resetCluster();
    const manifests = secrets(
      'ccm manifests --provider X --image <registry>/ccm:<version> --credentials-secret ns/name | kubectl apply --server-side -f -',
    );
    const run = secrets('ccm run --provider X --credentials-secret ns/name');
    for (const [name, secret] of [
      ['digitalocean', 'kube-system/digitalocean'],
      ['triton', 'kube-system/triton'],
      ['openstack', 'kube-system/cloud-config'],
    ] as const) {
      const provider = { name, secret };
      const applied = await ok(manifests, { provider });
      expect(applied.stdout).toContain('daemonset.apps/ccm serverside-applied');
      const logs = await runUntil(run, /became leader/, { provider, env: { DO_ACCESS_TOKEN: undefined } });
      expect(logs).toContain(`cloud credentials from Secret ${secret}`);
    }
  });
});

// --- docs/run.md --------------------------------------------------------------------------------------

describe('docs/run.md', () => {
  it('the flags line: its first log line, health, readiness, every metric of the table, JSON logs, Ctrl-C', async () => {
    await resetCluster();
    writeInventory(
      [{ id: 'worker-1', addresses: [{ type: 'InternalIP', address: '192.168.56.11' }] }],
      CLOUDLYCKE,
    );
    await createNodes(api, [{ name: 'worker-1' }]);
    const line = docLine(
      'docs/run.md',
      'ccm run --provider cloudlycke --cloud-config inventory.yaml --leader-elect=false --plain-http --bind-address 127.0.0.1 --secure-port 10258',
    );
    const ccm = await start(line, /"controller":"route","msg":"started"/);
    await initialised('worker-1');
    const logs = logLines(ccm.output());
    // "The first line says what runs": version, provider, controllers, election, identity (host name + suffix)
    expect(logs[0]?.msg).toMatch(
      new RegExp(
        `^ccm 0\\.1\\.0 starting: provider cloudlycke, controllers cloud-node, cloud-node-lifecycle, service, route, leader election off, identity ${hostname()}_[0-9a-f]{8}$`,
      ),
    );
    expect(logs[0]).toMatchObject({ version: '0.1.0', provider: 'cloudlycke', leaderElection: 'off' });
    // "otherwise JSON lines (pino) with controller and node fields"
    await until('the log line of worker-1', async () =>
      logLines(ccm.output()).some((l) => l.controller === 'cloud-node' && l.node === 'worker-1'),
    );

    const get = (path: string) =>
      fetch(`http://127.0.0.1:10258${path}`).then(async (r) => ({ status: r.status, body: await r.text() }));
    expect((await get('/healthz')).status).toBe(200);
    expect((await get('/livez')).status).toBe(200);
    expect((await get('/readyz')).status).toBe(200);
    expect((await get('/readyz?verbose')).body).toMatch(/^\[\+\]leader-election ok/m);
    const metrics = (await get('/metrics')).body;
    const table =
      readFileSync(join(root, 'docs/run.md'), 'utf8').split('\n## Metrics')[1]?.split('\n## ')[0] ?? '';
    const names = [...table.matchAll(/^\| `(ccm_[a-z_]+)`(?:, `(ccm_[a-z_]+)`)? \|/gm)].flatMap((m) =>
      m.slice(1).filter(Boolean),
    );
    expect(names.length).toBeGreaterThanOrEqual(11);
    for (const name of names) expect(metrics, name).toMatch(new RegExp(`^# TYPE ${name} `, 'm'));
    expect(metrics).toMatch(/^# TYPE ccm_process_resident_memory_bytes /m);
    expect(metrics).toMatch(/^# TYPE ccm_nodejs_eventloop_lag_seconds /m);
    // "ccm_leader: 1 while leading (or without leader election)"
    expect(metrics).toMatch(/^ccm_leader 1$/m);

    const ended = await ccm.stop();
    expect(ended.code, ccm.output()).toBe(0);

    // "any other --bind-address with it (0.0.0.0, ::, an interface's address) is refused in one line, exit 2"
    const everywhere = await shell(`${line.replace('127.0.0.1', '0.0.0.0')}`, {
      notDocs: true,
      page: 'docs/run.md',
    });
    expect(everywhere.code).toBe(2);
    expect(everywhere.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/^ccm: .*--plain-http/)]);
  });

  it("with leader election (performance.md's line): the page's start line, the leader named, the Lease released at Ctrl-C", async () => {
    await resetCluster();
    doSim.reset();
    doSim.addDroplets({ name: 'worker-1', region: 'fra1', privateIP: '10.114.0.2' });
    await createNodes(api, [{ name: 'worker-1' }]);
    const ccm = await start(
      docLine('docs/performance.md', 'ccm run --provider digitalocean'),
      /became leader/,
    );
    const [first] = logLines(ccm.output());
    const identity = String(first?.identity);
    expect(identity).toMatch(new RegExp(`^${hostname()}_[0-9a-f]{8}$`));
    // The sample of "Logs", but for the identity, which names this machine.
    const sample = Object.keys(NOT_COMMAND_LINES).find((l) => l.startsWith('ccm 0.1.0 starting:')) as string;
    expect(first?.msg).toBe(sample.replace('cp-1_5f2a91c3', identity));
    expect(ccm.output()).toContain(`became leader of kube-system/cloud-controller-manager as ${identity}`);
    await initialised('worker-1');
    const ended = await ccm.stop();
    expect(ended.code, ccm.output()).toBe(0);
    expect(ccm.output()).toContain('released the leader Lease');
  });
});

// --- docs/routes.md ---------------------------------------------------------------------------------

describe('docs/routes.md', () => {
  it("ccm run --cluster-cidr on OpenStack routes a Node's Pod CIDR on the router and says RouteCreated", async () => {
    await resetCluster();
    const port = osSim.routing.addPort({ ip: '10.0.0.11' });
    osSim.addServer({ id: port.device_id, name: 'w1', addresses: { private: [{ addr: '10.0.0.11' }] } });
    await createNodes(api, [
      {
        name: 'w1',
        tainted: false,
        providerID: `openstack:///${port.device_id}`,
        addresses: [
          { type: 'InternalIP', address: '10.0.0.11' },
          { type: 'Hostname', address: 'w1' },
        ],
        podCIDR: '10.244.1.0/24',
      },
    ]);
    const ccm = await start(
      docLine(
        'docs/routes.md',
        'ccm run --provider openstack --cloud-config cloud.conf --cluster-cidr 10.244.0.0/16',
      ),
      /created route 10\.244\.1\.0\/24 for node w1/,
    );
    expect(router.routes).toContainEqual({ destination: '10.244.1.0/24', nexthop: '10.0.0.11' });
    await until('w1 RouteCreated', async () => {
      const c = (await api.readNode({ name: 'w1' })).status?.conditions?.find(
        (x) => x.type === 'NetworkUnavailable',
      );
      return c?.status === 'False' && c.reason === 'RouteCreated';
    });
    expect((await ccm.stop()).code, ccm.output()).toBe(0);

    // "A /0 (0.0.0.0/0, ::/0) is refused at start in one line, exit 2 (by ccm run and ccm manifests …)"
    for (const line of [
      'ccm run --provider openstack --cloud-config cloud.conf --cluster-cidr 0.0.0.0/0',
      `ccm manifests --provider openstack --image ${REGISTRY}/ccm:0.1.0 --cluster-cidr ::/0`,
    ]) {
      const r = await shell(line, { notDocs: true, page: 'docs/routes.md' });
      expect(r.code, `${line}\n${r.stderr}`).toBe(2);
      expect(r.stderr.trimEnd().split('\n'), line).toEqual([expect.stringMatching(/^ccm: .*\/0/)]);
    }
  });

  it('`ccm run --controllers route` without --cluster-cidr says so in one line and does nothing', async () => {
    // CCM_PROVIDER=openstack and its official Secret kube-system/cloud-config (written by secrets.md's line).
    const logs = await runUntil(
      docLine('docs/routes.md', 'ccm run --controllers route'),
      /no --cluster-cidr/,
    );
    expect(logs.split('\n').filter((l) => l.includes('--cluster-cidr'))).toHaveLength(1);
  });

  it('the ip lines in a network namespace of their own: the rules of table 100, a realm (none kept on IPv6, hence a metric), `to 0.0.0.0/0` stored as `from all`', async () => {
    // In the order an upgrade meets them: the old rule of an earlier ccm added and removed, ccm's own
    // rule and route, then what the page shows them with.
    const v4 = [
      'ip rule add lookup <table> priority 32765',
      'ip rule del from all lookup <table> priority 32765',
      'ip rule add to <cluster CIDR> lookup <table> priority 32765',
      'ip route replace <podCIDR> via <Node InternalIP> table <table> proto static realm <realm>',
      'ip rule show table <table>',
      'ip -N rule show table <name>',
      'ip -json route',
      'ip rule',
      'ip rule add to 0.0.0.0/0',
    ].map((l) => docLine(pagesOf(l)[0] as string, l));
    // The IPv6 forms the page elides with `…`, filled in from the IPv4 line before each (the Pod range
    // fd00:244::/56, a Node at fd00:56::11 with fd00:244:1::/64).
    const v6: Record<string, string> = {
      'ip -6 rule del …': 'ip -6 rule del from all lookup 100 priority 32765',
      'ip -6 rule …': 'ip -6 rule add to fd00:244::/56 lookup 100 priority 32765',
      'ip -6 route replace … realm N':
        'ip -6 route replace fd00:244:1::/64 via fd00:56::11 table 100 proto static realm 7',
      'ip -6 route replace <podCIDR> via <InternalIP> … proto static metric <realm>':
        'ip -6 route replace fd00:244:1::/64 via fd00:56::11 table 100 proto static metric 7',
    };
    for (const l of Object.keys(v6)) ran.add(docLine('docs/routes.md', l));
    for (const l of v4) ran.add(l);
    const steps: [name: string, script: string][] = [
      ...v4.map((l): [string, string] => [l, fill(l)]),
      // the old IPv6 rule an earlier ccm added, for `ip -6 rule del …` to remove
      ['(the old IPv6 rule)', 'ip -6 rule add lookup 100 priority 32765'],
      ...Object.entries(v6).flatMap(([l, filled]): [string, string][] => [
        [l, filled],
        [`${l}: the route`, 'ip -6 route show table 100'],
      ]),
    ];
    const script = [
      'ip link set lo up',
      'ip link add v0 type veth peer name v1',
      'ip link set v0 up',
      'ip link set v1 up',
      'ip addr add 192.168.56.1/24 dev v0',
      'ip -6 addr add fd00:56::1/64 dev v0 nodad',
      ...steps.flatMap(([, command], i) => [`echo "@@ ${i}"`, command, `echo "@@ ${i} exit $?"`]),
    ].join('\n');
    const r = await execa('unshare', ['-n', 'bash', '-c', script], { reject: false, all: true });
    const out = String(r.all);
    const output = (name: string) => {
      const i = steps.findIndex(([n]) => n === name);
      return out.split(`@@ ${i}\n`)[1]?.split(`@@ ${i} exit`)[0] ?? '';
    };
    for (const [i, [name]] of steps.entries()) expect(out, `${name}\n${out}`).toContain(`@@ ${i} exit 0`);
    expect(output('ip rule show table <table>')).toMatch(
      /^32765:\s+from all to 10\.244\.0\.0\/16 lookup 100\s*$/m,
    );
    expect(output('ip -N rule show table <name>')).toMatch(/from all lookup 254/); // main, by number
    expect(JSON.parse(output('ip -json route'))).toEqual([
      expect.objectContaining({ dst: '192.168.56.0/24' }),
    ]);
    // "Cloudlycke's `ip rule add to 0.0.0.0/0` is stored as `from all`": a second `from all lookup main`.
    const after = await execa(
      'unshare',
      ['-n', 'bash', '-c', `${fill('ip rule add to 0.0.0.0/0')}; ip rule`],
      { reject: false },
    );
    expect(after.stdout.match(/^\d+:\s+from all lookup main\s*$/gm), after.stdout).toHaveLength(2);
    expect(after.stdout).not.toContain('0.0.0.0/0');
    // "Linux keeps no realm on an IPv6 route (… stores none), so an IPv6 route of ccm's carries the realm as its metric"
    expect(output('ip -6 route replace … realm N: the route')).toMatch(
      /^fd00:244:1::\/64 via fd00:56::11 dev v0 proto static metric 1024/m,
    );
    expect(output('ip -6 route replace … realm N: the route')).not.toContain('realm');
    expect(
      output('ip -6 route replace <podCIDR> via <InternalIP> … proto static metric <realm>: the route'),
    ).toMatch(/^fd00:244:1::\/64 via fd00:56::11 dev v0 proto static metric 7 /m);
  });
});

// --- docs/troubleshooting.md, docs/nodes.md, docs/output.md -----------------------------------------

describe("docs/troubleshooting.md and docs/nodes.md on a Cloudlycke cluster like the page's", () => {
  it("nodes list -o wide --show-orphans prints the page's table; nodes init exits 1 while a Node fails", async () => {
    await resetCluster();
    writeInventory(
      [
        { id: 'ok-1', addresses: [{ type: 'InternalIP', address: '192.168.56.11' }] },
        { id: 'new-1', addresses: [{ type: 'InternalIP', address: '192.168.56.12' }] },
        { id: 'spare-1', state: 'stopped', addresses: [{ type: 'InternalIP', address: '192.168.56.13' }] },
      ],
      { type: 'vbox.vm.1g.2cpu', region: 'virtualbox', zone: 'zone-a' },
    );
    // ok-1 initialised by the reference's own line, before the others came.
    await createNodes(api, [{ name: 'ok-1' }]);
    const init = await ok(
      docLine(
        'docs/reference/commands.md',
        'ccm nodes init --provider cloudlycke --cloud-config inventory.yaml',
      ),
    );
    expect(init.stdout).toMatch(/^1 Node: 1 initialized;/m);
    await createNodes(api, [
      { name: 'aws-1', tainted: false, providerID: 'aws:///eu-west-1a/i-0123' },
      { name: 'new-1' },
      { name: 'lost-1' },
    ]);
    const line = docLine(
      'docs/troubleshooting.md',
      'ccm nodes list --provider cloudlycke --cloud-config inventory.yaml -o wide --show-orphans',
    );
    const listed = await ok(line);
    const page = readFileSync(join(root, 'docs/troubleshooting.md'), 'utf8');
    const shown = (/```\n\$ ccm nodes list[^\n]*\n([\s\S]*?)```/.exec(page)?.[1] ?? '').trimEnd();
    // The same lines but for durations (0.1s, 41s) and the spaces that align them.
    const normal = (text: string) =>
      text
        .trimEnd()
        .split('\n')
        .map((l) =>
          l
            .replace(/\b\d+(\.\d+)?s\b/g, 'T')
            .replace(/ +/g, ' ')
            .trimEnd(),
        );
    expect(normal(listed.stdout)).toEqual(normal(shown));

    // output.md: kubectl's templates over the report -o json prints
    const failed = await ok(
      `ccm nodes list --provider cloudlycke --cloud-config inventory.yaml -o jsonpath='{range .nodes[?(@.status=="failed")]}{.name}{"\\t"}{.reason}{"\\n"}{end}'`,
      { notDocs: true, page: 'docs/output.md' },
    );
    expect(failed.stdout).toBe('lost-1\tno cloud instance is named lost-1');

    // nodes.md: "--dry-run shows the plan and writes nothing (-o wide shows each change); exit status …
    // 1 when some failed"
    const writes = (await cp.writes(CCM_USER)).length;
    const dry = await shell(
      docLine('docs/reference/commands.md', 'ccm nodes init --provider cloudlycke --dry-run -o wide'),
    );
    expect(dry.code, dry.stdout).toBe(1);
    expect(dry.stdout).toMatch(
      /^Dry run, nothing written\. 4 Nodes: 1 would initialize, 1 failed, 1 unchanged, 1 skipped;/m,
    );
    expect((await cp.writes(CCM_USER)).length).toBe(writes);
    // output.md: "-o name: node/<name> for each changed or failed object"
    const changed = await shell('ccm nodes init --provider cloudlycke --dry-run -o name', {
      notDocs: true,
      page: 'docs/output.md',
    });
    expect(changed.stdout.split('\n').sort()).toEqual(['node/lost-1', 'node/new-1']);
    const json = await shell(
      docLine('docs/reference/commands.md', 'ccm nodes init --provider cloudlycke -o json'),
    );
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout).nodes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'new-1', result: 'initialized' }),
        expect.objectContaining({ name: 'lost-1', result: 'failed' }),
        expect.objectContaining({ name: 'aws-1', result: 'skipped' }),
      ]),
    );
    const doctor = await shell(
      docLine(
        'docs/reference/commands.md',
        'ccm doctor --provider cloudlycke --cloud-config inventory.yaml -o wide',
      ),
    );
    expect(doctor.code, doctor.stdout).toBe(1);
    expect(doctor.stdout).toMatch(/^ {4}CHECK +RESULT$/m);
    expect(doctor.stdout).toMatch(
      /^✓ {3}kubeconfig +the API server at https:\/\/127\.0\.0\.1:\d+ answers: Kubernetes v1\.36\.\d+$/m,
    );
    expect(doctor.stdout).toMatch(/^✗ {3}provider-id +/m);
    // "The rows come in the order of this table (failures last)"
    const table = [
      ...readFileSync(join(root, 'docs/troubleshooting.md'), 'utf8').matchAll(/^\| `([a-z-]+)` \|/gm),
    ].map((m) => m[1]);
    const rows = [...doctor.stdout.matchAll(/^([✓!✗]) {3}([a-z-]+) /gm)].map((m) => ({
      mark: m[1],
      check: m[2] as string,
    }));
    const inTableOrder = (list: string[]) => [...list].sort((a, b) => table.indexOf(a) - table.indexOf(b));
    const others = rows.filter((r) => r.mark !== '✗').map((r) => r.check);
    const failures = rows.filter((r) => r.mark === '✗').map((r) => r.check);
    expect(rows.map((r) => r.check)).toEqual([...inTableOrder(others), ...inTableOrder(failures)]);
    expect(rows.every((r) => table.includes(r.check))).toBe(true);
    // "-o name names only the checks that failed or warned (check/controller-lease)"
    const names = await shell('ccm doctor --provider cloudlycke --cloud-config inventory.yaml -o name', {
      notDocs: true,
      page: 'docs/troubleshooting.md',
    });
    expect(names.stdout.split('\n').sort()).toEqual(
      rows
        .filter((r) => r.mark !== '✓')
        .map((r) => `check/${r.check}`)
        .sort(),
    );
  });
});

// --- The deletion brake: docs/nodes.md, docs/troubleshooting.md -------------------------------------

describe('the deletion brake (docs/nodes.md, docs/troubleshooting.md) on DigitalOcean', () => {
  /**
   * A Node younger than --deletion-grace-period (5m) is never counted missing: the pages' Nodes are
   * older, these are seconds old, so each ccm line here runs with the grace period that makes them so.
   */
  const GRACE = ' --deletion-grace-period 0s';
  const nodeNames = async () => (await api.listNode()).items.map((n) => n.metadata?.name ?? '').sort();
  const holdOf = (text: string) => /\(hold (\d+-[0-9a-f]{8})[,)]/.exec(text)?.[1] ?? '';

  /**
   * A DigitalOcean cluster of `total` initialised Nodes whose first `lost` instances vanished from the
   * cloud at once, their kubelets silent since (NotReady), as the brake's own tests make one
   * (test/helpers/deletion-brake.ts); no DeletingNode Event of an earlier test left in the window.
   */
  async function outage(total: number, lost: number): Promise<{ lost: string[]; kept: string[] }> {
    await resetCluster();
    doSim.reset();
    await forgetNodeDeletions(api);
    const names = Array.from({ length: total }, (_, i) => `node-${String(i + 1).padStart(2, '0')}`);
    const ip = (i: number) => `10.114.0.${i + 2}`;
    const droplets = doSim.addDroplets(
      ...names.map((name, i) => ({ name, region: 'fra1', privateIP: ip(i) })),
    );
    await createNodes(
      api,
      droplets.map((d, i) => ({
        name: names[i] as string,
        providerID: `digitalocean://${d.id}`,
        tainted: false,
        ready: i >= lost,
        addresses: [
          { type: 'InternalIP', address: ip(i) },
          { type: 'Hostname', address: names[i] as string },
        ],
      })),
    );
    for (const d of droplets.slice(0, lost)) doSim.removeDroplet(d.id as number);
    return { lost: names.slice(0, lost), kept: names.slice(lost) };
  }

  it('ccm nodes init: held (exit 3, `held` rows, the hold and its release named); a stale id refused (exit 2, the current id named, nothing written); the current id deletes the held Nodes and nothing else', async () => {
    const trouble = (line: string) => docLine('docs/troubleshooting.md', line);
    // Each page's release line, on a cluster like its example: 6 of 10 lost (nodes.md), 18 of 30
    // (troubleshooting.md and the reference's example).
    const releases: [total: number, lost: number, line: string][] = [
      [10, 6, docLine('docs/nodes.md', 'ccm nodes init --allow-mass-deletion 6-3f9a2c1b')],
      [30, 18, trouble('ccm nodes init --allow-mass-deletion 18-3f9a2c1b')],
      [
        30,
        18,
        docLine(
          'docs/reference/commands.md',
          'ccm nodes init --provider digitalocean --allow-mass-deletion 18-3f9a2c1b',
        ),
      ],
    ];
    for (const [total, count, line] of releases) {
      const { lost, kept } = await outage(total, count);
      // "1. `ccm nodes list` (and `kubectl get nodes`): are those instances really gone?"
      const nodes = await ok(trouble('kubectl get nodes'));
      for (const name of lost) expect(nodes.stdout).toMatch(new RegExp(`^${name} +NotReady `, 'm'));
      for (const name of kept) expect(nodes.stdout).toMatch(new RegExp(`^${name} +Ready `, 'm'));
      const listed = await shell(trouble('ccm nodes list'));
      for (const name of lost)
        expect(listed.stdout).toMatch(
          new RegExp(
            `^node=${name} initialised=yes status=stale reason="instance digitalocean://\\d+ is not in the cloud listing"`,
            'm',
          ),
        );
      for (const name of kept) expect(listed.stdout).toMatch(new RegExp(`^node=${name} .* status=ok$`, 'm'));

      // "`ccm nodes init` exits 3 and reports `held` Nodes"; "names the hold and its release under the table"
      const held = await shell(trouble('ccm nodes init'), { append: GRACE });
      const told = `${held.stdout}\n${held.stderr}`;
      expect(held.code, told).toBe(3);
      for (const name of lost) expect(held.stdout).toMatch(new RegExp(`^node=${name} result=held `, 'm'));
      const id = holdOf(held.stdout);
      expect(id, told).toMatch(new RegExp(`^${count}-[0-9a-f]{8}$`));
      // output.md: "the hold with the command that releases it is the line under the table"
      expect(held.stdout.trimEnd().split('\n').at(-1)).toMatch(
        new RegExp(
          `^deletion held \\(hold ${id}, ${count} Nodes\\): the instances of ${count} of ${total} Nodes \\(60%\\) are missing from the cloud listing, above --max-deletion-ratio 0\\.55; .*release it: ccm nodes init --allow-mass-deletion ${id}$`,
        ),
      );
      expect(await nodeNames()).toEqual([...lost, ...kept].sort());

      // "Any other id is refused in one line, exit 2, nothing written, naming the current one": the
      // page's own id names no hold of this cluster.
      const writes = (await cp.writes(CCM_USER)).length;
      const stale = await shell(line, { append: GRACE, hold: 'shown' });
      expect(stale.code, stale.stderr).toBe(2);
      expect(stale.stderr.trimEnd().split('\n')).toEqual([
        expect.stringMatching(
          new RegExp(
            `^ccm: --allow-mass-deletion ${count}-3f9a2c1b: the current hold is ${id} \\(${count} Nodes\\);.*nothing was written$`,
          ),
        ),
      ]);
      expect((await cp.writes(CCM_USER)).length).toBe(writes);

      // "deletes, in that pass, the held Nodes the cloud confirms gone, without the rate"
      const released = await ok(line, { append: GRACE, hold: id });
      expect(released.stdout).toMatch(new RegExp(`^${total} Nodes: .*\\b${count} deleted\\b`, 'm'));
      expect(await nodeNames()).toEqual(kept);
      const after = await ok(trouble('kubectl get nodes'));
      for (const name of lost) expect(after.stdout).not.toMatch(new RegExp(`^${name} `, 'm'));
    }
  });

  it('ccm run: one log line for the hold; the Secret annotated with a stale id is logged and ignored, with the hold id its Nodes are deleted and the hold ends', async () => {
    const annotation = 'ccm.io/allow-mass-deletion';
    // The credentials Secret `ccm run` reads (--credentials-secret): secrets.md's line wrote it; this
    // writes it only if a test above did not.
    await ok('ccm secret create --provider digitalocean', { notDocs: true, page: 'docs/nodes.md' });
    const runLine = docLine(
      'docs/reference/commands.md',
      'ccm run --provider digitalocean --credentials-secret kube-system/digitalocean',
    );
    const releases: [total: number, lost: number, page: string][] = [
      [10, 6, 'docs/nodes.md'],
      [30, 18, 'docs/troubleshooting.md'],
    ];
    let previous: string | undefined;
    for (const [total, count, page] of releases) {
      const line = docLine(
        page,
        `kubectl -n kube-system annotate secret digitalocean ${annotation}=${count}-3f9a2c1b --overwrite`,
      );
      const { lost, kept } = await outage(total, count);
      const ccm = await start(runLine, /holding every Node deletion/, {
        append: GRACE,
        env: { DO_ACCESS_TOKEN: undefined },
      });
      const id = holdOf(ccm.output());
      expect(id, ccm.output()).toMatch(new RegExp(`^${count}-[0-9a-f]{8}$`));
      // "`ccm run` logs one line (`holding every Node deletion (hold 6-3f9a2c1b): the instances of 6 of
      // 10 Nodes (60%) are missing from the cloud listing, above --max-deletion-ratio 0.55 …`)"
      const holding = logLines(ccm.output()).filter((l) => l.msg.startsWith('holding every Node deletion'));
      expect(holding.map((l) => l.msg)).toEqual([
        expect.stringMatching(
          new RegExp(
            `^holding every Node deletion \\(hold ${id}\\): the instances of ${count} of ${total} Nodes \\(60%\\) are missing from the cloud listing, above --max-deletion-ratio 0\\.55\\b.*kubectl -n kube-system annotate secret digitalocean ${annotation}=${id} --overwrite`,
          ),
        ),
      ]);

      // "one that names a stale id is logged and ignored": first the page's own id; then the release of
      // the outage before, left on the Secret ("a later, different outage has another id and is held
      // again, so the annotation may stay").
      let stale = previous;
      if (stale === undefined) {
        await ok(line, { hold: 'shown' });
        stale = `${count}-3f9a2c1b`;
      }
      await until(`the stale id ${stale} logged`, async () =>
        ccm.output().includes(`${annotation}=${stale}, but the current hold is ${id}: nothing released`),
      );
      expect(await nodeNames()).toEqual([...lost, ...kept].sort());

      // "`ccm run` reads it while it holds, and deletes that hold's Nodes" and logs "one when the hold ends"
      await ok(line, { hold: id });
      await until(
        `the ${count} held Nodes deleted`,
        async () => (await nodeNames()).length === kept.length,
        60_000,
      );
      expect(await nodeNames()).toEqual(kept);
      await until('the hold ended', async () => ccm.output().includes(`hold ${id} ended (released)`));
      const ended = await ccm.stop();
      expect(ended.code, ccm.output()).toBe(0);
      previous = id;
    }
    // "remove it when done"
    await ok(`kubectl -n kube-system annotate secret digitalocean ${annotation}-`, {
      notDocs: true,
      page: 'docs/troubleshooting.md',
    });
  });
});

describe('docs/output.md', () => {
  it('ccm version (-o json) names the versions; ccm run --json is a usage error, exit 2', async () => {
    const version = await ok(docLine('docs/output.md', 'ccm version'));
    expect(version.stdout).toMatch(
      /^ccm 0\.1\.0 \(commit ([0-9a-f]{12}(-dirty)?|unknown), Node\.js v24\.\d+\.\d+, linux\/(x64|arm64)\)$/m,
    );
    const json = await ok(docLine('docs/reference/commands.md', 'ccm version -o json'));
    expect(JSON.parse(json.stdout)).toMatchObject({
      version: '0.1.0',
      commit: expect.stringMatching(/^([0-9a-f]{40}(-dirty)?|unknown)$/),
      node: expect.stringMatching(/^v24\./),
      platform: expect.stringMatching(/^linux\//),
    });
    const runJson = await shell(docLine('docs/output.md', 'ccm run --json'));
    expect(runJson.code).toBe(2);
    expect(runJson.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^ccm: unknown flag --json/)]);
  });

  it('ccm manifests: -o name in apply order; --out one file per object, each listed, a folder for kubectl apply -f that the next run keeps to its objects', async () => {
    const reference = (line: string) => docLine('docs/reference/commands.md', line);
    // "-o name kubectl's kind/name lines in apply order (daemonset.apps/ccm)"
    expect(readFileSync(join(root, 'docs/output.md'), 'utf8')).toContain('(`daemonset.apps/ccm`)');
    const named = await ok(
      reference('ccm manifests --provider digitalocean --image registry.example.com/ccm:0.1.0 -o name'),
    );
    const kinds = named.stdout.split('\n');
    expect(kinds[0]).toBe('serviceaccount/ccm');
    expect(kinds.at(-1)).toBe('daemonset.apps/ccm');
    expect(kinds.every((l) => /^[a-z0-9.]+\/[a-z0-9:.-]+$/.test(l))).toBe(true);

    // "With --out DIR it writes one file per object … and lists KIND, NAME, NAMESPACE and FILE of each";
    // "a file is named after its object alone (06-daemonset-ccm.yaml, the number its kind's place in
    // the apply order)", and the files ccm wrote are "listed in its .ccm-manifests".
    const dir = join(work, 'ccm-manifests');
    const out = await ok(
      reference(
        'ccm manifests --provider cloudlycke --image registry.example.com/ccm:0.1.0 --cronjob --out ./ccm-manifests',
      ),
    );
    const listed = (stdout: string) =>
      stdout
        .split('\n')
        .filter((l) => l.startsWith('kind='))
        .map((l) => /^kind=\S+ name=\S+ (?:namespace=\S+ )?file=ccm-manifests\/(\S+)$/.exec(l)?.[1] ?? l);
    const objects = (folder: string) =>
      readdirSync(folder)
        .filter((f) => /\.(yaml|json)$/.test(f))
        .sort();
    const index = () =>
      readFileSync(join(dir, '.ccm-manifests'), 'utf8')
        .split('\n')
        .filter((l) => l !== '' && !l.startsWith('#'))
        .sort();
    const files = objects(dir);
    expect([...listed(out.stdout)].sort()).toEqual(files);
    expect(files).toContain('06-daemonset-ccm.yaml');
    expect(files).toContain('09-cronjob-ccm-nodes-init.yaml');
    expect(index()).toEqual(files);

    // "The folder is meant for `kubectl apply -f DIR`, which applies every YAML and JSON file in it"
    const applied = await ok(docLine('docs/output.md', 'kubectl apply -f DIR'));
    expect(applied.stdout.trim().split('\n')).toHaveLength(files.length);
    expect(applied.stdout).toMatch(/^daemonset\.apps\/ccm (created|configured|unchanged)$/m);
    expect(applied.stdout).toMatch(/^cronjob\.batch\/ccm-nodes-init (created|configured|unchanged)$/m);

    // "the next run replaces the files ccm wrote there … and removes those it no longer writes (the
    // CronJob once --cronjob is dropped, the YAML after -o json), saying so"
    const again = (extra = '') =>
      shell(
        `ccm manifests --provider cloudlycke --image ${REGISTRY}/ccm:0.1.0${extra} --out ./ccm-manifests`,
        { notDocs: true, page: 'docs/output.md' },
      );
    const noCronJob = await again();
    expect(noCronJob.code, noCronJob.stderr).toBe(0);
    expect(objects(dir)).not.toContain('09-cronjob-ccm-nodes-init.yaml');
    expect(objects(dir)).toEqual([...listed(noCronJob.stdout)].sort());
    expect(noCronJob.stdout).toMatch(
      /^Removed \(no longer part of the manifests\): .*09-cronjob-ccm-nodes-init\.yaml/m,
    );
    const json = await again(' -o json');
    expect(json.code, json.stderr).toBe(0);
    expect(objects(dir).every((f) => f.endsWith('.json'))).toBe(true);
    expect(JSON.parse(json.stdout).removed).toContain('06-daemonset-ccm.yaml');
    expect(index()).toEqual(objects(dir));

    // "A folder holding a YAML or JSON file ccm did not write is refused … (one line, exit 2); other
    // files (a README, .gitkeep, subfolders) are left alone."
    writeFileSync(join(dir, 'README'), 'kept\n');
    writeFileSync(join(dir, 'mine.yaml'), 'kind: ConfigMap\n');
    const refused = await again();
    expect(refused.code).toBe(2);
    expect(refused.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/^ccm: --out .*mine\.yaml/)]);
    expect(objects(dir).filter((f) => f.endsWith('.yaml'))).toEqual(['mine.yaml']);
    rmSync(join(dir, 'mine.yaml'));
    expect((await again()).code).toBe(0);
    expect(readFileSync(join(dir, 'README'), 'utf8')).toBe('kept\n');
  });

  it('the usage errors it quotes are the ones ccm prints: one line, exit 2', async () => {
    const page = readFileSync(join(root, 'docs/output.md'), 'utf8').replace(/\s+/g, ' ');
    // What a reader types to meet each (the page quotes the answer, not the line), and the answer.
    const quoted: [args: string, answer: string | RegExp][] = [
      ['nodes init --provider cloudlycke --dryrun', 'ccm: unknown flag --dryrun; did you mean --dry-run?'],
      ['version extra', 'ccm: unexpected argument "extra"; ccm version takes no arguments, only flags'],
      [
        'nodes lsit',
        'ccm: "nodes lsit" is not a ccm command; did you mean "ccm nodes list"? `ccm --help` lists them',
      ],
      // "A flag's bad value is always `ccm: --flag: expected …, got "…"`"
      ['nodes init --provider cloudlycke --concurrency 0', /^ccm: --concurrency: expected .+, got "0"$/],
      // "`--quiet` does not combine with `-o` or `--json`, nor `--json` with another `-o`: one line"
      ['nodes list --provider cloudlycke -q -o wide', /^ccm: .*--quiet/],
      ['nodes list --provider cloudlycke --json -o yaml', /^ccm: .*--json/],
    ];
    for (const [args, answer] of quoted) {
      if (typeof answer === 'string') expect(page, answer).toContain(answer);
      const r = await shell(`ccm ${args}`, { notDocs: true, page: 'docs/output.md' });
      expect(r.code, `ccm ${args}\n${r.stderr}`).toBe(2);
      expect(r.stderr.trimEnd().split('\n'), `ccm ${args}`).toEqual([
        typeof answer === 'string' ? answer : expect.stringMatching(answer),
      ]);
    }
  });
});

// --- docs/deploy.md, "Shell completion and version" ----------------------------------------------------

describe('docs/deploy.md: shell completion and version (Node 20)', () => {
  const page = 'docs/deploy.md';
  const deploy = (line: string) => docLine(page, line);

  /** A zsh or fish block's lines, run in that shell as the page says, then `check` (this test's own). */
  async function inShell(program: 'zsh' | 'fish', lines: string[], check: string): Promise<Shell> {
    for (const line of lines) ran.add(line);
    // The reader's environment for a line of the page (ccm on PATH, Node 20 first).
    const { cwd, env } = command('ccm version', { page });
    const script = [...lines, check].join('\n');
    const r = await execa(program, program === 'zsh' ? ['-f', '-c', script] : ['--no-config', '-c', script], {
      cwd,
      env,
      extendEnv: false,
      reject: false,
      stdin: 'ignore',
      timeout: 120_000,
    });
    return { code: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr), ran: script };
  }

  it('bash: the script in this shell, and from ~/.bashrc in every new one; its function completes', async () => {
    const load = deploy('source <(ccm completion bash)');
    expect(pagesOf(load)).toContain('docs/reference/commands.md');
    await ok(load);
    const here = await ok('complete -p ccm', { before: [load], notDocs: true, page });
    expect(here.stdout).toBe('complete -F _ccm ccm');
    const bashrc = join(home, '.bashrc');
    rmSync(bashrc, { force: true });
    try {
      await ok(deploy("echo 'source <(ccm completion bash)' >> ~/.bashrc"));
      expect(readFileSync(bashrc, 'utf8')).toBe('source <(ccm completion bash)\n');
      // A new interactive bash (-i reads ~/.bashrc): ccm's completion is there, and answers.
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a JS template
      const check = 'complete -p ccm; COMP_WORDS=(ccm nodes i); COMP_CWORD=2; _ccm; echo "${COMPREPLY[*]}"';
      const next = await ok(`bash -i -c '${check}'`, { notDocs: true, page });
      expect(next.stdout.split('\n')).toEqual(['complete -F _ccm ccm', 'init']);
    } finally {
      rmSync(bashrc, { force: true });
    }
  });

  it('zsh: compinit, then the script; compsys completes ccm with it', async () => {
    const r = await inShell(
      'zsh',
      [deploy('autoload -Uz compinit && compinit'), deploy('source <(ccm completion zsh)')],
      'print -r -- $_comps[ccm]',
    );
    expect(r.code, `${r.ran}\n${r.stderr}`).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('_ccm');
  });

  it('fish: the script piped into source; fish completes ccm with it', async () => {
    const r = await inShell('fish', [deploy('ccm completion fish | source')], 'complete -C"ccm nodes i"');
    expect(r.code, `${r.ran}\n${r.stderr}`).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^init\tInitialise and reconcile every Node/);
  });

  it('another shell is refused in the one line the page quotes, exit 2', async () => {
    const answer = 'ccm: no completion for "tcsh"; completion takes bash, zsh or fish';
    expect(readFileSync(join(root, page), 'utf8').replace(/\s+/g, ' ')).toContain(answer);
    const r = await shell(deploy('ccm completion tcsh'));
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(answer);
  });

  it("ccm version names the commit as the page's example does; -o json its fields; ccm --version agrees", async () => {
    const line =
      /^ccm 0\.1\.0 \(commit ([0-9a-f]{12}(-dirty)?|unknown), Node\.js v24\.\d+\.\d+, linux\/(x64|arm64)\)$/;
    const text = readFileSync(join(root, page), 'utf8');
    expect(text.split('\n').filter((l) => line.test(l))).toHaveLength(1);
    const version = await ok(deploy('ccm version'));
    expect(version.stdout).toMatch(line);
    const json = JSON.parse((await ok(deploy('ccm version -o json'))).stdout) as Record<string, string>;
    expect(Object.keys(json)).toEqual(['version', 'commit', 'node', 'platform']);
    expect(version.stdout).toContain(`(commit ${json.commit?.replace(/^([0-9a-f]{12})[0-9a-f]+/, '$1')},`);
    const flag = await ok(docLine('docs/deploy.md', 'ccm --version'));
    expect(flag.stdout).toBe(`ccm/${json.version} ${json.platform?.replace('/', '-')} node-${json.node}`);
    expect(text).toContain('`ccm/0.1.0 linux-x64 node-v24.21.0`');
  });
});

// --- docs/providers/ -----------------------------------------------------------------------------------

describe('docs/providers (Node 20)', () => {
  it('brightbox.md: the API client exported, then nodes init names the servers brightbox://srv-…', async () => {
    await resetCluster();
    bbSim.reset();
    bbSim.addServer({ id: 'srv-docs1', name: 'worker-1', zone: 'gb1-a', ipv4: '10.240.0.11' });
    await createNodes(api, [{ name: 'srv-docs1', providedNodeIP: '10.240.0.11' }]);
    const page = 'docs/providers/brightbox.md';
    const exported = docLine(
      page,
      'export BRIGHTBOX_CLIENT=cli-xxxxx BRIGHTBOX_CLIENT_SECRET=...   # an API client of the account',
    );
    const init = await ok(
      docLine(
        page,
        'ccm nodes init --provider brightbox                             # --cloud-api-url for another region',
      ),
      // The client only from the export above; the simulator is "another region", by BRIGHTBOX_API_URL.
      { before: [exported], env: { BRIGHTBOX_CLIENT: undefined, BRIGHTBOX_CLIENT_SECRET: undefined } },
    );
    expect(init.stdout).toMatch(/^1 Node: 1 initialized;/m);
    const node = await api.readNode({ name: 'srv-docs1' });
    expect(node.spec?.providerID).toBe('brightbox://srv-docs1');
    // "zone is the zone handle (gb1-a), region the zone without its last -x (gb1), instance type the
    // server type handle"
    expect(node.metadata?.labels).toMatchObject({
      'topology.kubernetes.io/zone': 'gb1-a',
      'topology.kubernetes.io/region': 'gb1',
      'node.kubernetes.io/instance-type': '2gb.ssd',
    });
  });

  it("triton.md's whole path of CMON metrics: the certificate in Prometheus' namespace, the group on the machines, the job applied, doctor's rows", async () => {
    await resetCluster();
    const page = 'docs/providers/triton.md';
    const line = (l: string) => docLine(page, l);
    // The reader's cluster: two Nodes on the account's machines, Prometheus' namespace, ccm deployed
    // with its credentials Secret (docs/deploy.md); CMON on this data centre (CloudAPI lists it).
    triton.machines.clear();
    const machines = ['worker-1', 'worker-2'].map((name) => triton.addMachine({ name }));
    await createNodes(
      api,
      machines.map((m) => ({ name: m.name, providerID: `triton://${m.id}`, tainted: false })),
    );
    await api.createNamespace({ body: { metadata: { name: 'monitoring' } } }).catch(() => undefined);
    await api.deleteNamespacedSecret({ name: 'triton-cmon', namespace: 'monitoring' }).catch(() => undefined);
    await ok(
      `ccm secret create --provider triton --set url=${triton.url} --set account=me --from-file key-material=$HOME/.ssh/id_rsa`,
      { notDocs: true, page },
    );
    await ok(
      `ccm manifests --provider triton --image ${REGISTRY}/ccm:0.1.0 --cloud-api-url ${triton.url} --insecure-cloud-api | kubectl apply --server-side -f -`,
      { notDocs: true, page },
    );
    const cmon = await new CmonSim(triton).start();
    try {
      const ca = join(work, 'cmon-ca.pem');
      writeFileSync(ca, cmon.ca);
      // CMON as CloudAPI names it, reached on this machine by address (the certificate section's --cmon-url).
      const env = { TRITON_CMON_URL: `https://127.0.0.1:${cmon.port}`, TRITON_CMON_CA: ca };
      const before = [
        line(
          'export TRITON_URL=https://us-east-1.api.example.com TRITON_ACCOUNT=me TRITON_KEY_MATERIAL=$HOME/.ssh/id_rsa',
        ),
      ];

      // 1. The certificate, in Prometheus' namespace.
      const made = await ok(line('ccm secret create --provider triton --cmon --namespace monitoring'), {
        before,
        env,
      });
      expect(made.stdout).toContain('Secret monitoring/triton-cmon created');
      const secret = await api.readNamespacedSecret({ name: 'triton-cmon', namespace: 'monitoring' });
      expect(secret.type).toBe('kubernetes.io/tls');

      // 2. The group: in ccm's credentials Secret for ccm run, restarted; and on the machines now.
      await ok(
        line(
          `kubectl -n kube-system patch secret triton --type merge -p '{"stringData":{"cmon-groups":"cluster=prod"}}'`,
        ),
      );
      const credentials = await api.readNamespacedSecret({ name: 'triton', namespace: 'kube-system' });
      expect(Buffer.from(credentials.data?.['cmon-groups'] ?? '', 'base64').toString()).toBe('cluster=prod');
      await ok(line('kubectl -n kube-system rollout restart daemonset/ccm'));
      const daemonSet = await apps.readNamespacedDaemonSet({ name: 'ccm', namespace: 'kube-system' });
      expect(daemonSet.spec?.template.metadata?.annotations).toHaveProperty(
        'kubectl.kubernetes.io/restartedAt',
      );
      await ok(line('ccm nodes init --provider triton --cmon-groups cluster=prod'), { before });
      for (const m of machines) expect(m.tags['triton.cmon.groups']).toBe('prod');

      // 3. The job, in the Prometheus Operator's Secret, applied.
      const applied = await ok(
        line(
          'ccm manifests --provider triton --cmon --cmon-group prod --cmon-url https://cmon.us-east-1.triton.zone:9163 --cmon-secret monitoring/triton-cmon --cmon-format additional-scrape-configs | kubectl apply -f -',
        ),
        { before },
      );
      expect(applied.stdout).toContain('secret/triton-cmon-scrape created');
      const scrape = await api.readNamespacedSecret({ name: 'triton-cmon-scrape', namespace: 'monitoring' });
      const job = Buffer.from(scrape.data?.['triton-cmon.yaml'] ?? '', 'base64').toString();
      expect(job).toContain('job_name: triton-cmon-prod');
      expect(job).toContain('account: me');
      // 4. is Prometheus' (cmon-manifests-prometheus.test.ts runs this job in its discovery).

      // 5. doctor: the four CMON rows pass (other rows fail on this bare cluster: exit 1).
      const doctor = await shell(line('ccm doctor --provider triton'), { before, env });
      expect(doctor.code, doctor.stderr).toBe(1);
      for (const row of ['cmon-certificate', 'cmon-access', 'cmon-targets', 'cmon-node-names'])
        expect(doctor.stdout, doctor.stdout).toContain(`status=pass check=${row} `);
      expect(doctor.stdout).not.toMatch(/status=(fail|warn) check=cmon-/);
      expect(doctor.stdout).toContain("CMON lists all 2 Node(s)' machines in group prod");
      expect(doctor.stdout).toContain('Secret monitoring/triton-cmon');
    } finally {
      await cmon.stop();
      await api
        .deleteNamespacedSecret({ name: 'triton-cmon-scrape', namespace: 'monitoring' })
        .catch(() => undefined);
    }
  });

  it('digitalocean.md: secret create from DO_ACCESS_TOKEN, unchanged', async () => {
    // The token of the Secret that secrets.md's line wrote: "identical values print unchanged and write nothing"
    const writes = (await cp.writes(CCM_USER)).length;
    const r = await ok(
      docLine('docs/providers/digitalocean.md', 'ccm secret create --provider digitalocean'),
    );
    expect(r.stdout).toMatch(
      /^Secret kube-system\/digitalocean unchanged \(keys: access-token\); nothing written$/m,
    );
    expect((await cp.writes(CCM_USER)).length).toBe(writes);
  });
});

// --- docs/migrate.md ----------------------------------------------------------------------------------

describe("docs/migrate.md, from DigitalOcean's controller", () => {
  const migrate = (line: string) => docLine('docs/migrate.md', line);
  const readme = (line: string) => docLine('README.md', line);
  const ADOPTED = 'ccm.io/adopted-load-balancer';
  const adopted = async (name: string) =>
    (await api.readNamespacedService({ name, namespace: 'default' })).metadata?.annotations?.[ADOPTED];
  const backup = () =>
    api.readNamespacedConfigMap({ name: 'ccm-migrate-backup', namespace: 'kube-system' }).then(
      () => true,
      () => false,
    );
  let lbId = '';

  it('stop the official controller, patch a hostname-only ingress, plan, apply, roll back', async () => {
    await resetCluster();
    doSim.reset();
    const droplets = doSim.addDroplets(
      { name: 'worker-1', region: 'fra1', privateIP: '10.114.0.2' },
      { name: 'worker-2', region: 'fra1', privateIP: '10.114.0.3' },
    );
    const ids = droplets.map((d) => d.id as number);
    await createNodes(
      api,
      ids.map((id, i) => ({ name: `worker-${i + 1}`, providerID: `digitalocean://${id}`, tainted: false })),
    );
    await apps
      .deleteNamespacedDeployment({ name: 'digitalocean-cloud-controller-manager', namespace: 'kube-system' })
      .catch(() => {});
    await apps
      .deleteNamespacedDaemonSet({ name: 'openstack-cloud-controller-manager', namespace: 'kube-system' })
      .catch(() => {});
    await apps.createNamespacedDeployment({
      namespace: 'kube-system',
      body: officialDigitalOceanDeployment(1),
    });
    await apps.createNamespacedDaemonSet({ namespace: 'kube-system', body: officialOpenStackDaemonSet() });
    // A Service the official controller serves, by its own name for it (a + the UID).
    const web = await api.createNamespacedService({ namespace: 'default', body: lbService('web') });
    const lb = doSim.addLoadBalancer(
      officialDigitalOceanLoadBalancer(
        `a${(web.metadata?.uid ?? '').replace(/-/g, '')}`.slice(0, 32),
        ids,
        web.spec?.ports?.[0]?.nodePort as number,
      ),
    );
    lbId = lb.id as string;
    await recordServedByOfficial(api, 'web', {
      annotations: { 'kubernetes.digitalocean.com/load-balancer-id': lbId },
      ingress: { ip: lb.ip as string },
    });
    // One with a do-loadbalancer-name and a do-loadbalancer-hostname: its ingress shows the hostname only.
    const named = await api.createNamespacedService({
      namespace: 'default',
      body: lbService(HOSTNAME_SERVICE, 'default', {
        'service.beta.kubernetes.io/do-loadbalancer-name': 'named-lb',
        'service.beta.kubernetes.io/do-loadbalancer-hostname': 'named.example.com',
      }),
    });
    const namedLb = doSim.addLoadBalancer(
      officialDigitalOceanLoadBalancer('named-lb', ids, named.spec?.ports?.[0]?.nodePort as number),
    );
    hostnameLbIp = namedLb.ip as string;
    await recordServedByOfficial(api, HOSTNAME_SERVICE, { ingress: { hostname: 'named.example.com' } });

    // 1. Stop the official controller.
    const scaled = await ok(
      migrate(
        'kubectl -n kube-system scale deployment/digitalocean-cloud-controller-manager --replicas=0   # a Deployment',
      ),
    );
    expect(scaled.stdout).toContain('deployment.apps/digitalocean-cloud-controller-manager scaled');
    const patched = await ok(
      migrate(
        'kubectl -n kube-system patch daemonset/openstack-cloud-controller-manager -p \'{"spec":{"template":{"spec":{"nodeSelector":{"ccm.io/paused":"true"}}}}}\'             # a DaemonSet',
      ),
    );
    expect(patched.stdout).toContain('daemonset.apps/openstack-cloud-controller-manager patched');
    expect(
      (
        await apps.readNamespacedDaemonSet({
          name: 'openstack-cloud-controller-manager',
          namespace: 'kube-system',
        })
      ).spec?.template.spec?.nodeSelector,
    ).toEqual({ 'ccm.io/paused': 'true' });

    // The hostname-only Service is not found until its IP is in its ingress ("add its IP … yourself").
    const dryOf = async (line: string) => {
      const writes = (await cp.writes(CCM_USER)).length;
      const r = await ok(line);
      expect((await cp.writes(CCM_USER)).length, `${line} wrote`).toBe(writes);
      return r.stdout;
    };
    const before = await dryOf(migrate('ccm migrate --provider digitalocean'));
    expect(before).toMatch(/^service=default\/web action="will adopt"/m);
    // "the plan finds no load balancer for it (`nothing found`, and its note says what to do)"
    expect(before).toMatch(
      new RegExp(
        `^service=default/${HOSTNAME_SERVICE} action="nothing found" .*add its IP to the Service's ingress`,
        'm',
      ),
    );
    const ingress = await ok(
      migrate(
        'kubectl patch service <name> --subresource=status --type=json -p \'[{"op":"add","path":"/status/loadBalancer/ingress/-","value":{"ip":"<its IP>"}}]\'',
      ),
    );
    expect(ingress.stdout).toContain(`service/${HOSTNAME_SERVICE} patched`);
    // "the next `ccm migrate` adopts it"
    for (const line of [readme('ccm migrate --provider <cloud>'), 'ccm migrate']) {
      expect(await dryOf(line)).toMatch(
        new RegExp(`^service=default/${HOSTNAME_SERVICE} action="will adopt"`, 'm'),
      );
    }

    // 3. Apply, and 2. of "Going back": the plan of the rollback writes nothing, --yes gives back.
    const pairs: [yes: string, show: string, rollback: string][] = [
      [
        migrate('ccm migrate --provider digitalocean --yes'),
        migrate('ccm migrate --provider <cloud> --rollback'),
        migrate('ccm migrate --provider <cloud> --rollback --yes'),
      ],
      [
        readme('ccm migrate --provider <cloud> --yes'),
        readme('ccm migrate --rollback'),
        readme('ccm migrate --rollback --yes'),
      ],
      [
        migrate('ccm migrate --yes'),
        'ccm migrate --provider digitalocean --rollback',
        'ccm migrate --provider digitalocean --rollback --yes',
      ],
    ];
    for (const [yes, show, rollback] of pairs) {
      await ok(yes);
      expect(await backup(), yes).toBe(true);
      expect(await adopted('web'), yes).toBe(lbId);
      expect(await adopted(HOSTNAME_SERVICE), yes).toBe(namedLb.id);
      expect(await dryOf(show)).toMatch(/default\/web\b/);
      await ok(rollback);
      expect(await backup(), rollback).toBe(false);
      expect(await adopted('web'), rollback).toBeUndefined();
    }
  });

  it('Triton has nothing to migrate: exit 2; ccm run --adopt-official uses the official load balancer', async () => {
    const tritonLine = await shell(migrate('ccm migrate --provider triton'));
    expect(tritonLine.code).toBe(2);
    expect(tritonLine.stderr).toMatch(/triton/i);

    // The official load balancer of default/web (rolled back above: no hand-over recorded) is used in
    // place: the Service is synced, and no load balancer is made.
    const lbs = doSim.loadBalancers.size;
    const ccm = await start(
      docLine('README.md', 'ccm run --adopt-official'),
      /"controller":"service","msg":"started"/,
    );
    await until(
      'default/web synced',
      async () => (await eventReasons(api, 'default', 'web')).includes('EnsuredLoadBalancer'),
      30_000,
    );
    expect((await ccm.stop()).code, ccm.output()).toBe(0);
    expect(doSim.loadBalancers.size).toBe(lbs);
  });

  it("going back: ccm's DaemonSet and Deployment deleted by their labels", async () => {
    await ok(
      `ccm manifests --provider digitalocean --image ${REGISTRY}/ccm:0.1.0 | kubectl apply --server-side -f -`,
      {
        notDocs: true,
        page: 'docs/migrate.md',
      },
    );
    const deleted = await ok(
      migrate(
        'kubectl -n kube-system delete daemonset,deployment -l app.kubernetes.io/name=ccm,app.kubernetes.io/component=controller',
      ),
    );
    expect(deleted.stdout).toContain('daemonset.apps "ccm" deleted');
  });
});

// --- ccm cluster prepare ------------------------------------------------------------------------------

describe("ccm cluster prepare, on a kubeadm node's root", () => {
  const FIXTURE = join(root, 'test/fixtures/cluster/kubeadm-v1.36.3');
  const STANDIN = join(root, 'test/fixtures/cluster/systemctl-standin');
  const FILES = [
    'etc/kubernetes/manifests/kube-controller-manager.yaml',
    'var/lib/kubelet/kubeadm-flags.env',
  ];
  const snapshot = (node: string) => FILES.map((f) => readFileSync(join(node, f), 'utf8'));

  function nodeRoot(): string {
    const dir = tempDir('ccm-docs-node-');
    cpSync(FIXTURE, dir, { recursive: true });
    return dir;
  }

  it('dry run, --yes (the kubelet restarted by a systemctl stand-in), --rollback --yes back byte for byte', async () => {
    // kubeadm's record of the cluster, uploaded by the real kubeadm.
    const kubeconfig = join(cp.dir, 'kubeconfig-fixtures');
    writeFileSync(
      kubeconfig,
      readFileSync(cp.kubeconfigPath, 'utf8').replace('current-context: ccm', 'current-context: fixtures'),
    );
    await api.deleteNamespacedConfigMap({ name: 'kubeadm-config', namespace: 'kube-system' }).catch(() => {});
    await execa(join(binDir(), 'kubeadm'), [
      'init',
      'phase',
      'upload-config',
      'kubeadm',
      '--config',
      join(FIXTURE, 'kubeadm-config.yaml'),
      '--kubeconfig',
      kubeconfig,
    ]);
    writeInventory([{ id: 'cp-1', addresses: [{ type: 'InternalIP', address: '10.0.0.10' }] }], CLOUDLYCKE);

    // This machine is no kubeadm node: each line is pointed at one's root by the hidden --root flag, and
    // systemctl there is test/fixtures/cluster/systemctl-standin.
    const node = nodeRoot();
    const original = snapshot(node);
    const on = (extra: Record<string, string> = {}): ShellOptions => ({
      append: ` --root ${node}`,
      env: {
        PATH: `${STANDIN}:${command('ccm version', {}).env.PATH}`,
        STANDIN_ROOT: node,
        STANDIN_LOG: join(node, 'systemctl.log'),
        ...extra,
      },
    });
    const dry = await ok(docLine('docs/troubleshooting.md', 'ccm cluster prepare --dry-run'), on());
    expect(dry.stdout).toContain('Dry run: nothing written. 1 host: 1 would prepare');
    expect(snapshot(node)).toEqual(original);

    const yes = await ok(
      docLine('docs/reference/commands.md', 'ccm cluster prepare --provider cloudlycke --yes'),
      on(),
    );
    expect(yes.stdout).toMatch(/API server ready \(\/readyz\) after \d+\.\ds/);
    const flags = readFileSync(join(node, 'var/lib/kubelet/kubeadm-flags.env'), 'utf8');
    expect(flags).toContain('--cloud-provider=external');
    expect(flags).toContain('--provider-id=cloudlycke://cp-1');
    expect(readFileSync(join(node, 'proc/103/cmdline'), 'utf8')).toContain('\0--cloud-provider=external\0');

    await ok(docLine('docs/migrate.md', 'ccm cluster prepare --rollback --yes'), on());
    expect(snapshot(node)).toEqual(original);
  });

  it('--ssh to two nodes: ssh reaches 10.0.0.11 and 10.0.0.12 as the test sshd on 127.0.0.1 and 127.0.0.2', async () => {
    sshd ??= await startSshd(['127.0.0.1', '127.0.0.2']);
    const nodes = { '10.0.0.11': nodeRoot(), '10.0.0.12': nodeRoot() };
    const originals = Object.values(nodes).map(snapshot);
    // The reader's ssh reaches their nodes; here an ssh on PATH maps each to the sshd on loopback (its
    // HostName), with the sshd's key, and runs the node's commands with the systemctl stand-in of that
    // node's root. Nothing is sent to 10.0.0.x.
    writeFileSync(
      join(fakeBin, 'ssh'),
      `#!/bin/bash
args=("$@"); command=\${args[-1]}; unset 'args[-1]'
case " $* " in
  *"@10.0.0.11 "*) host=127.0.0.1; node=${nodes['10.0.0.11']} ;;
  *"@10.0.0.12 "*) host=127.0.0.2; node=${nodes['10.0.0.12']} ;;
  *) echo "ssh stand-in: no such node: $*" >&2; exit 255 ;;
esac
exec /usr/bin/ssh ${sshd.sshArgs.join(' ')} -o ControlMaster=auto -o ControlPath=${fakeBin}/ssh-$host -o ControlPersist=60 \\
  -o HostName=$host "\${args[@]}" "PATH=${STANDIN}:\\$PATH STANDIN_ROOT=$node STANDIN_LOG=$node/systemctl.log $command"
`,
      { mode: 0o755 },
    );
    const line = docLine(
      'docs/reference/commands.md',
      'ccm cluster prepare --ssh root@10.0.0.11 --ssh root@10.0.0.12 --yes',
    );
    const r = await ok(line, {
      append: Object.entries(nodes)
        .map(([ip, dir]) => ` --remote-root root@${ip}=${dir}`)
        .join(''),
    });
    // The connections the reader's ssh config shares (ControlMaster), closed.
    for (const host of ['127.0.0.1', '127.0.0.2']) {
      await execa('/usr/bin/ssh', ['-o', `ControlPath=${join(fakeBin, `ssh-${host}`)}`, '-O', 'exit', host], {
        reject: false,
      });
    }
    expect(r.stdout).toMatch(/2 hosts: 2 prepared/);
    for (const [i, dir] of Object.values(nodes).entries()) {
      expect(snapshot(dir)).not.toEqual(originals[i]);
      expect(readFileSync(join(dir, 'var/lib/kubelet/kubeadm-flags.env'), 'utf8')).toContain(
        '--cloud-provider=external',
      );
    }
  });
});

// --- Every other line --------------------------------------------------------------------------------

describe('every other command line of the docs', () => {
  it('each `ccm` line no test above ran runs here: exit 0 (doctor: 1, a check fails on this bare cluster)', async () => {
    await resetCluster();
    doSim.reset();
    doSim.addDroplets({ name: 'worker-1', region: 'fra1', privateIP: '10.114.0.2' });
    await createNodes(api, [{ name: 'worker-1' }]);
    writeInventory(
      [{ id: 'worker-1', addresses: [{ type: 'InternalIP', address: '10.114.0.2' }] }],
      CLOUDLYCKE,
    );
    const listed = new Set([...Object.keys(NOT_COMMAND_LINES), ...NAMED, ...NOT_RUN.flatMap(([, l]) => l)]);
    const rest = [...new Set(found.map((c) => c.line))].filter(
      (l) => l.startsWith('ccm ') && !ran.has(l) && !listed.has(l),
    );
    for (const line of rest) {
      if (/^ccm run\b/.test(line) && !/--help/.test(line)) {
        await runUntil(line, /"msg":"started"/);
      } else {
        const r = await shell(line);
        const expected = /^ccm doctor\b/.test(line) && !/--help/.test(line) ? 1 : 0;
        expect(r.code, `${r.ran}\n${r.stdout}\n${r.stderr}`).toBe(expected);
      }
    }
  });

  it("named commands and flags exist: their programs' help knows them", async () => {
    await Promise.all(NAMED.map(checkNamed));
  });

  it('node -e 0, and the idle node of docs/performance.md for its 30 s', async () => {
    const zero = await ok(docLine('docs/benchmarks.md', 'node -e 0'));
    expect(zero.stdout).toBe('');
    const idle = await idleNode;
    expect(idle?.exitCode).toBe(0);
  }, 60_000);

  it('the scripts and files the lines not run name exist (npm run <script>, test/…, .ci/…)', () => {
    const scripts = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts as Record<
      string,
      string
    >;
    for (const line of NOT_RUN.flatMap(([, lines]) => lines)) {
      const script = /\bnpm run ([^ ]+)/.exec(line)?.[1];
      // `npm run bundle` is DigitalOcean's OpenAPI repository's
      if (script && script !== 'bundle') expect(scripts, line).toHaveProperty([script]);
      for (const [file] of line.matchAll(/(?:^|\s)\.?(?:test|\.ci)\/[^\s]+/g)) {
        const path = file.trim();
        if (!path.includes('<')) expect(existsSync(join(root, path)), line).toBe(true);
      }
    }
  });
});

describe("the docs' command lines", () => {
  it('finds them: README.md and docs/**/*.md, blocks, prompts, examples and code spans', () => {
    const pages = new Set(found.map((c) => c.page));
    expect(pages).toContain('docs/reference/commands.md');
    expect(found.filter((c) => c.where === 'example').length).toBeGreaterThanOrEqual(20);
    expect(found.filter((c) => c.where === 'sh').length).toBeGreaterThanOrEqual(25);
    expect(found.some((c) => c.where === 'prompt')).toBe(true);
    expect(found.filter((c) => c.where === 'inline').length).toBeGreaterThan(200);
    // No fragment of a command continued with `\`: neither its head nor a flag line of its own.
    expect(found.filter((c) => /\\$/.test(c.line) || /^-/.test(c.line))).toEqual([]);
  });

  it('joins a command continued with `\\` into one line in every kind of block, and only a command', () => {
    const dir = tempDir('ccm-docs-extract-');
    mkdirSync(join(dir, 'docs'));
    writeFileSync(
      join(dir, 'README.md'),
      [
        '```sh',
        'ccm a --provider p \\',
        '    --b c \\',
        '  --d',
        '# a comment \\',
        'ccm e',
        'ccm f --g\\',
        'h',
        '```',
        '',
        '```',
        '$ ccm i \\',
        '    --j',
        'output ending in a backslash \\',
        '$ ccm k',
        '```',
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(dir, 'docs/reference.md'),
      [
        '```',
        'USAGE',
        '  $ ccm x [--y <value>] \\',
        '    [--z]',
        '',
        'EXAMPLES',
        '  $ ccm x --provider p \\',
        '      --y z | kubectl apply -f -',
        '',
        '  pass show t | ccm x \\',
        '      --from-stdin',
        '```',
        '',
      ].join('\n'),
    );
    expect(docCommands(dir).map((c) => `${c.page}:${c.at} ${c.where} ${c.line}`)).toEqual([
      'README.md:2 sh ccm a --provider p --b c --d',
      'README.md:6 sh ccm e',
      'README.md:7 sh ccm f --gh',
      'README.md:12 prompt ccm i --j',
      'README.md:15 prompt ccm k',
      'docs/reference.md:7 example ccm x --provider p --y z | kubectl apply -f -',
      'docs/reference.md:10 example pass show t | ccm x --from-stdin',
    ]);
  });

  it('every line was run above, or is listed with its reason; every listed line is still in the docs', () => {
    const listed = new Set([...Object.keys(NOT_COMMAND_LINES), ...NAMED, ...NOT_RUN.flatMap(([, l]) => l)]);
    const lines = new Set(found.map((c) => c.line));
    const where = (line: string) =>
      found
        .filter((c: DocCommand) => c.line === line)
        .map((c) => `${c.page}:${c.at}`)
        .join(', ');
    const untried = [...lines].filter((l) => !ran.has(l) && !listed.has(l)).map((l) => `${l}  (${where(l)})`);
    expect(untried, 'lines of the docs neither run nor listed').toEqual([]);
    expect(
      [...listed].filter((l) => !lines.has(l)),
      'listed lines no page shows any more',
    ).toEqual([]);
    expect(
      [...ran].filter((l) => !lines.has(l)),
      'lines run that no page shows',
    ).toEqual([]);
    // Most lines run. Every line of ccm runs, or is a span that names a command (checked by its help):
    // none is in NOT_RUN, which holds other programs' lines only.
    const notRun = NOT_RUN.flatMap(([, l]) => l);
    expect(notRun.filter((l) => /(^|\|\s*)ccm\s/.test(l))).toEqual([]);
    expect([...lines].filter((l) => ran.has(l)).length).toBeGreaterThan(lines.size / 2);
  });
});

conformsToDigitalOceanOpenApi();
