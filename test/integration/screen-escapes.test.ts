/**
 * Text that a tenant, a Node or the cloud wrote (a Service's annotations, a Node's provider ID, an
 * instance's name, a cloud API's error message) reaches the operator's screen in `ccm migrate`,
 * `ccm nodes list`, `ccm nodes init` and `ccm doctor`. With escape sequences in it, it could set the
 * terminal's title, clear the screen, move the cursor up and write over the plan the operator reads
 * before `--yes`. The human views show it without any control character; -o json keeps it exact.
 *
 * Real CLI, real kube-apiserver, the DigitalOcean simulator as the cloud; stdout is a pipe, so the
 * views print no colour of their own and any ESC in them came from the data.
 */
import { AppsV1Api } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { createNodes, fixtureClient } from '../controlplane/fixtures.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { officialDigitalOceanDeployment, recordServedByOfficial } from '../helpers/official-controllers.js';
import { lbService } from '../helpers/services.js';

/** Set the window title, clear the screen, cursor one line up: the sequence. */
const HOSTILE = '\u001b]0;x\u0007\u001b[2J\u001b[1A';
/**
 * Other C0 and C1 controls, a CSI by its 8-bit code, a bidirectional override, and a newline that
 * would start a line of the tenant's own under the plan.
 */
const OTHERS = '\u0008\r\u009b2J\u0085\u202e\nFORGED: all clear';
/** Any C0 control but the newline, DEL, or any C1 control. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

const LB_ID = 'kubernetes.digitalocean.com/load-balancer-id';
const ADOPTED = 'ccm.io/adopted-load-balancer';

const world = useCloudWorld('digitalocean', { keep: true });

function expectClean(run: { stdout: string; stderr: string }, what: string): void {
  expect(`${run.stdout}\n${run.stderr}`, what).not.toMatch(/^FORGED/m);
  for (const [stream, text] of [
    ['stdout', run.stdout],
    ['stderr', run.stderr],
  ] as const) {
    const at = text.search(CONTROL);
    if (at >= 0) {
      const code = text.codePointAt(at)?.toString(16).padStart(4, '0');
      throw new Error(
        `${what}: ${stream} holds U+${code} at ${at}: ${JSON.stringify(text.slice(Math.max(0, at - 40), at + 20))}`,
      );
    }
  }
}

const HUMAN_VIEWS = [[], ['-o', 'table'], ['-o', 'wide'], ['-o', 'name']];

beforeAll(async () => {
  const { api, sim } = world;
  const apps = fixtureClient(world.cp.kubeconfigPath, AppsV1Api);
  await apps.createNamespacedDeployment({
    namespace: 'kube-system',
    body: officialDigitalOceanDeployment(0),
  });
  const [worker] = sim.addDroplets(
    { name: `worker-1${HOSTILE}`, region: 'fra1', privateIP: '10.114.0.2' },
    { name: `spare${OTHERS}${HOSTILE}`, region: 'fra1', privateIP: '10.114.0.3' },
  );
  await createNodes(api, [
    { name: 'worker-1', providerID: `digitalocean://${worker?.id}`, tainted: false },
    // A Node's kubelet sets its provider ID: a hostile Node chooses it.
    { name: 'elsewhere-1', providerID: `aws:///eu-west-1a/i-1${HOSTILE}${OTHERS}`, tainted: false },
  ]);
  // A tenant's Service: an id annotation and a hand-over annotation of its own making, each hostile.
  await api.createNamespacedService({
    namespace: 'default',
    body: lbService('evil', 'default', { [LB_ID]: `lb${HOSTILE}`, [ADOPTED]: `${HOSTILE}${OTHERS}` }),
  });
  await recordServedByOfficial(api, 'evil', { ingress: { ip: '203.0.113.9' } });
});

describe('text from Kubernetes and the cloud on the operator screen', () => {
  it('ccm migrate: the plan, its notes, "Not touched" and OFFICIAL ANNOTATIONS carry no control character; -o json keeps the values', async () => {
    for (const view of HUMAN_VIEWS) {
      const run = await world.ccm(['migrate', ...view]);
      expect(run.exitCode, run.stderr).toBe(0);
      expectClean(run, `migrate ${view.join(' ')}`);
      if (view[1] !== 'name') expect(run.stdout).toContain('carries ccm.io/adopted-load-balancer');
    }
    const wide = await world.ccm(['migrate', '-o', 'wide']);
    expect(wide.stdout).toContain(`${LB_ID}=lb`);
    // The Service's note, under its row, once (not again under "Not touched").
    expect(wide.stdout).toMatch(/^default\/evil .*\n(?: {4}.*\n)*? {4}note: carries/m);
    expect(wide.stdout.split('carries ccm.io/adopted-load-balancer').length - 1).toBe(1);

    const json = await world.ccm(['migrate', '-o', 'json']);
    const evil = JSON.parse(json.stdout).services.find((s: { name: string }) => s.name === 'evil');
    expect(evil.officialAnnotations[LB_ID]).toBe(`lb${HOSTILE}`);
    expect(evil.note).toContain(`${HOSTILE}${OTHERS}`);
  });

  it('ccm nodes list: instance names, provider IDs and orphans carry no control character; -o json keeps them', async () => {
    for (const view of HUMAN_VIEWS) {
      const run = await world.ccm(['nodes', 'list', '--show-orphans', ...view]);
      expect(run.exitCode, run.stderr).toBe(0);
      expectClean(run, `nodes list ${view.join(' ')}`);
    }
    const wide = await world.ccm(['nodes', 'list', '--show-orphans', '-o', 'wide']);
    expect(wide.stdout).toContain('worker-1');
    expect(wide.stdout).toContain('aws:///eu-west-1a/i-1');
    expect(wide.stdout).toMatch(/Cloud instances no Node claims: 1:\n {2}spare/);

    const json = JSON.parse((await world.ccm(['nodes', 'list', '--show-orphans', '-o', 'json'])).stdout);
    expect(json.orphans[0].name).toBe(`spare${OTHERS}${HOSTILE}`);
  });

  it('ccm nodes init --dry-run: its rows and notes carry no control character', async () => {
    for (const view of HUMAN_VIEWS) {
      const run = await world.ccm(['nodes', 'init', '--dry-run', ...view]);
      expectClean(run, `nodes init ${view.join(' ')}`);
    }
  });

  it('ccm doctor: a Node of another cloud, named by its hostile provider ID, carries no control character', async () => {
    for (const view of HUMAN_VIEWS) {
      const run = await world.ccm(['doctor', ...view]);
      expectClean(run, `doctor ${view.join(' ')}`);
      if (view[1] !== 'name') expect(run.stdout).toContain('elsewhere-1=aws:///eu-west-1a/i-1');
    }
  });

  it("an error line with the cloud's message carries no control character", async () => {
    // A cloud (or whatever answers in its place) that fails with a hostile message.
    const body = JSON.stringify({ id: 'server_error', message: `the cloud says${HOSTILE}${OTHERS} no` });
    // With --log-level=debug the stack follows the line: the message in it is one line too, so it
    // cannot forge a line (a `ccm: …` of its own) under it.
    for (const args of [['migrate'], ['nodes', 'list'], ['nodes', 'list', '--log-level=debug']]) {
      world.sim.fault({
        path: /^\/v2\/(droplets|load_balancers)$/,
        status: 403,
        raw: { body, contentType: 'application/json' },
      });
      const run = await world.ccm(args);
      expect(run.exitCode).not.toBe(0);
      expect(`${run.stdout}${run.stderr}`).toContain('the cloud says');
      expectClean(run, args.join(' '));
      expect(
        run.stderr.split('\n').filter((l) => l.startsWith('ccm: ')),
        args.join(' '),
      ).toHaveLength(1);
    }
  });
});
