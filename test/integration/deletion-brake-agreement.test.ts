/**
 * The deletion brake, as every process that deletes Nodes agrees on it (review 45, findings 2-6), on
 * DigitalOcean (one world): the window is judged on the API server's clock, whatever a process's own
 * says; two deleters at once (the CronJob and an operator, `ccm run` and a pass) share one burst; a
 * held Node is told once, whoever tells it and however often `ccm run` restarts; `ccm run`, `nodes
 * init` and `doctor` say the same of Nodes whose kubelets are still Ready; absurd rates are refused;
 * an unreadable record holds nothing; a release survives a restart.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { brakeKit, type ClusterNode, MERGE_PATCH, sleep } from '../helpers/brake-kit.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { until } from '../helpers/run.js';

const world = useCloudWorld('digitalocean', {
  afterEachTest: async (w) => {
    const secret = (await w.runProvider()).credentialsSecret;
    if (!secret) return;
    const [namespace = '', name = ''] = secret.split('/');
    await w.api.deleteNamespacedSecret({ namespace, name }).catch(() => undefined);
  },
});
const skew = fileURLToPath(new URL('../fixtures/clock-skew.mjs', import.meta.url));
const skewed = (ms: number) => ({ env: { NODE_OPTIONS: `--import=${skew}`, SKEW_MS: String(ms) } });

describe('the window is on the API server clock', () => {
  it('a pass whose clock is 11 minutes ahead (a CronJob pod on a Node whose clock jumped) still counts the last minute’s deletions', async () => {
    const kit = brakeKit(world);
    const nodes = await kit.cluster(10);
    await kit.lose(nodes.slice(0, 5));
    // 5 of 10 lost: allowed, deleted by passes with right clocks.
    for (let i = 0; i < 10 && (await kit.names()).length > 5; i++) {
      await kit.nodesInit(['--node-deletion-rate', '2']);
      if ((await kit.names()).length > 5) await sleep(600);
    }
    expect(await kit.names()).toEqual(nodes.slice(5).map((n) => n.name));
    // One more lost within the same minute: 6 of 10 in the window, held, though the pass's clock
    // reads those deletions as 11 minutes old.
    await kit.lose([nodes[5] as ClusterNode]);
    const ahead = await kit.nodesInit([], skewed(11 * 60_000));
    expect(ahead.exitCode, ahead.stderr).toBe(3);
    expect(await kit.names()).toEqual(nodes.slice(5).map((n) => n.name));
  });

  it('deletions made by a pass whose clock is 11 minutes behind are counted by every later pass', async () => {
    const kit = brakeKit(world);
    const nodes = await kit.cluster(10);
    await kit.lose(nodes.slice(0, 5));
    for (let i = 0; i < 10 && (await kit.names()).length > 5; i++) {
      await kit.nodesInit(['--node-deletion-rate', '2'], skewed(-11 * 60_000));
      if ((await kit.names()).length > 5) await sleep(600);
    }
    expect(await kit.names()).toEqual(nodes.slice(5).map((n) => n.name));
    await kit.lose([nodes[5] as ClusterNode]);
    const right = await kit.nodesInit();
    expect(right.exitCode, right.stderr).toBe(3);
    expect(await kit.names()).toEqual(nodes.slice(5).map((n) => n.name));
  });
});

describe('two deleters at once share one burst (each deletion recorded first, on one record)', () => {
  it('two nodes init passes at once (the CronJob and an operator): at most 3 DELETEs, none refused', async () => {
    const kit = brakeKit(world);
    const nodes = await kit.cluster(30);
    await kit.lose(nodes.slice(0, 10));
    const [a, b] = await Promise.all([kit.nodesInit(), kit.nodesInit()]);
    const deletes = await kit.nodeDeletes();
    expect(deletes.length).toBeLessThanOrEqual(3);
    expect((a.report?.summary.deleted ?? 0) + (b.report?.summary.deleted ?? 0)).toBe(deletes.length);
    expect(await kit.record()).toHaveLength(deletes.length);
  });
});

describe('a held Node is told once', () => {
  it('ccm run restarted (or a new leader) while holding: each held Node keeps one Event, not one per process', async () => {
    const kit = brakeKit(world);
    const nodes = await kit.cluster(10);
    const first = await world.run();
    await kit.lose(nodes.slice(0, 6));
    await until(
      'an Event on each held Node',
      async () => (await kit.events('NodeDeletionHeld')).length === 6,
    );
    await first.stop();
    const second = await world.run();
    await until('the hold', async () => second.logs.some((l) => l.includes('holding every Node deletion')));
    await sleep(2500);
    const held = await kit.events('NodeDeletionHeld');
    expect(held.map((e) => e.involvedObject.name).sort()).toEqual(nodes.slice(0, 6).map((n) => n.name));
  });

  it('a nodes init pass while ccm run holds tells no Node again, nor does ccm run after the pass', async () => {
    const kit = brakeKit(world);
    const nodes = await kit.cluster(10);
    await kit.lose(nodes.slice(0, 6));
    const pass = await kit.nodesInit();
    expect(pass.exitCode).toBe(3);
    expect((await kit.events('NodeDeletionHeld')).length).toBe(6);
    const ccm = await world.run();
    await until('the hold', async () => ccm.logs.some((l) => l.includes('holding every Node deletion')));
    await sleep(2500);
    expect((await kit.nodesInit()).exitCode).toBe(3);
    expect((await kit.events('NodeDeletionHeld')).length).toBe(6);
  });
});

describe('Nodes whose instances are gone but whose kubelets are still Ready', () => {
  it('6 of 10: ccm run and nodes init both hold all 6 (counted, never candidates), each told once; none deleted once NotReady', async () => {
    const kit = brakeKit(world);
    const nodes = await kit.cluster(10);
    for (const node of nodes.slice(0, 6)) world.vanish(node.providerID);
    const ccm = await world.run();
    const heldMetric = async () =>
      Number(
        (await (await fetch(`${ccm.url}/metrics`)).text())
          .split('\n')
          .find((l) => l.startsWith('ccm_node_deletions_held '))
          ?.split(' ')[1],
      );
    await until('ccm run holds', async () => (await heldMetric()) === 6);
    await until('each held Node told', async () => (await kit.events('NodeDeletionHeld')).length === 6);
    const pass = await kit.nodesInit();
    expect(pass.exitCode).toBe(3);
    expect(pass.report?.hold?.count).toBe(6);
    expect(pass.report?.hold?.nodes).toEqual(nodes.slice(0, 6).map((n) => n.name));
    expect(pass.report?.summary.held).toBe(6);
    // The kubelets stop: the same six are now candidates, still held, told no second time.
    for (const node of nodes.slice(0, 6)) await kit.notReady(node.name);
    await sleep(2500);
    expect((await kit.nodesInit()).exitCode).toBe(3);
    expect(await heldMetric()).toBe(6);
    const held = await kit.events('NodeDeletionHeld');
    expect(held.map((e) => e.involvedObject.name).sort()).toEqual(nodes.slice(0, 6).map((n) => n.name));
    expect(await kit.names()).toHaveLength(10);
  });
});

describe('the brake flags refuse what is no rate or share', () => {
  it.each([
    ['nodes', 'init', '--node-deletion-rate', '9'.repeat(400)],
    ['nodes', 'init', '--node-deletion-rate', '1001'],
    ['nodes', 'init', '--node-deletion-rate', '0.001'],
    ['nodes', 'init', '--node-deletion-rate', '1e3'],
    ['nodes', 'init', '--max-deletion-ratio', '9'.repeat(400)],
    ['run', '--node-deletion-rate', '9'.repeat(400)],
  ])('case %#: exit 2, one line with the allowed range, nothing written', async (...args) => {
    const run = await world.ccm(args);
    expect(run.exitCode).toBe(2);
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      args.includes('--max-deletion-ratio')
        ? /^ccm: --max-deletion-ratio: expected a number between 0 and 1 such as 0\.55, got "9{400}"$/
        : /^ccm: --node-deletion-rate: expected a number from 0\.005 to 1000 \(Nodes a second\) such as 0\.1, got "[^"]+"$/,
    );
    expect(run.writes).toEqual([]);
  });
});

describe('a release outlives a restart of ccm run', () => {
  it('8 of 10 held and released by the annotation; ccm run restarted after 2 deletions: the other 6 are still released', async () => {
    const kit = brakeKit(world);
    const nodes = await kit.cluster(10);
    const lost = nodes.slice(0, 8);
    await kit.lose(lost);
    // The cloud cannot confirm 6 of them yet (their lookups fail): the release stops half way.
    const sim = world.sim as unknown as {
      fault(f: { method: string; path: string; status: number; times: number }): void;
      faults: { clear(): void };
    };
    for (const node of lost.slice(2))
      sim.fault({
        method: 'GET',
        path: `/v2/droplets/${node.providerID.split('://')[1]}`,
        status: 500,
        times: 1000,
      });
    const first = await world.run();
    await until('the hold', async () => (await kit.events('NodeDeletionHeld')).length === 8);
    const id =
      (await kit.events('NodeDeletionHeld'))[0]?.metadata?.annotations?.['ccm.io/deletion-hold'] ?? '';
    expect(id).toMatch(/^8-/);
    const secret = ((await world.runProvider()).credentialsSecret ?? '').split('/');
    await world.api.patchNamespacedSecret(
      {
        namespace: secret[0] ?? '',
        name: secret[1] ?? '',
        body: { metadata: { annotations: { 'ccm.io/allow-mass-deletion': id } } },
      },
      MERGE_PATCH,
    );
    await until('2 deleted', async () => (await kit.names()).length === 8);
    await first.stop();
    sim.faults.clear();
    // A new process: the 6 left are a hold of another id, but the same set with the 2 deleted under it.
    const second = await world.run();
    await until('the other 6 deleted', async () => (await kit.names()).length === 2, 15_000).catch(
      () => undefined,
    );
    expect(await kit.names()).toEqual(nodes.slice(8).map((n) => n.name));
    expect(second.logs.some((l) => l.includes(`hold ${id} released by ccm.io/allow-mass-deletion`))).toBe(
      true,
    );
  });
});

describe('a record of deletions that cannot be read', () => {
  it('one lost Node: neither deleted nor held, no Event; each command says why', async () => {
    const kit = brakeKit(world);
    const nodes = await kit.cluster(10);
    await world.api.createNamespacedConfigMap({
      namespace: 'kube-system',
      body: { metadata: { name: 'ccm-node-deletions' }, data: { deletions: 'edited by hand\n' } },
    });
    await kit.lose([nodes[0] as ClusterNode]);
    const pass = await kit.nodesInit();
    expect(pass.report?.hold).toBeUndefined();
    expect(pass.exitCode).not.toBe(3);
    const node = pass.report?.nodes.find((n) => n.name === nodes[0]?.name);
    expect(node?.result).toBe('failed');
    expect(node?.reason).toMatch(
      /^not deleted this pass: the record of the last 10m's Node deletions could not be read \(ConfigMap kube-system\/ccm-node-deletions: line 1 of deletions is not a deletion/,
    );
    const ccm = await world.run();
    await until('said', async () => ccm.logs.some((l) => l.includes('no Node is deleted until the record')));
    await sleep(1500);
    expect(ccm.logs.filter((l) => l.includes('holding every Node deletion'))).toEqual([]);
    expect(await kit.events('NodeDeletionHeld')).toEqual([]);
    expect(await kit.names()).toHaveLength(10);
  });
});
