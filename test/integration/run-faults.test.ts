/**
 * `ccm run` when things go wrong: a failing cloud, an API server (and etcd) that goes away, rotated
 * credentials, a stolen Lease; and cloud calls that do not grow with the number of NotReady Nodes.
 * In this process, so the cloud can be wrapped to fail on demand. Periods are compressed with flags.
 */

import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import type { V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { RunInput } from '../../src/cli/run.js';
import { cloudlycke } from '../../src/providers/cloudlycke/index.js';
import { RetryableError, UnauthorizedError } from '../../src/providers/errors.js';
import type { Instance, Provider, ProviderDefinition } from '../../src/providers/types.js';
import { createNodes } from '../controlplane/fixtures.js';
import { CCM_USER } from '../controlplane/harness.js';
import { CLOUDLYCKE_DEFAULTS as DEFAULTS, useCloudWorld } from '../helpers/cloud-world.js';
import { writeInventory } from '../helpers/inventory.js';
import { adminRequest } from '../helpers/kube-admin.js';
import { faultProxy } from '../helpers/kube-fault-proxy.js';
import { putSecret } from '../helpers/kube-secrets.js';
import {
  exitWatch,
  type InProcess,
  runInput,
  setReady,
  shortLease,
  startInProcess,
  until,
} from '../helpers/run.js';

// Each test writes its own inventory; a `ccm run` it starts with world.run is stopped after it.
const world = useCloudWorld('cloudlycke');
let ccm: InProcess | undefined;
const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const node = (name: string): Promise<V1Node> => world.api.readNode({ name });
const tainted = async (name: string) => (await node(name)).spec?.taints?.some((t) => t.key === UNINITIALIZED);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function cloudRequests(url: string): Promise<{ list: number; get: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const sum = (op: string) =>
    [
      ...text.matchAll(new RegExp(`^ccm_cloud_requests_total\\{[^}]*operation="${op}"[^}]*\\} (\\d+)`, 'gm')),
    ].reduce((n, m) => n + Number(m[1]), 0);
  return { list: sum('list'), get: sum('get') };
}

describe('a failing cloud', () => {
  it('deletes nothing while it answers 401, 403, 500, timeouts or an empty listing; deletes once it positively says gone', async () => {
    // gone-1's machine is missing from the inventory: only the cloud's failures keep its Node.
    const inventory = writeInventory([{ id: 'w1' }], DEFAULTS);
    await createNodes(world.api, [
      { name: 'w1', providerID: 'cloudlycke://w1', tainted: false },
      { name: 'gone-1', providerID: 'cloudlycke://gone-1', tainted: false, ready: false },
    ]);
    type Mode =
      | 'list-401'
      | 'list-403'
      | 'list-500'
      | 'list-timeout'
      | 'list-empty'
      | 'get-401'
      | 'get-403'
      | 'get-500'
      | 'get-timeout'
      | 'honest';
    // A credentials error at start-up is a configuration error (exit 2): start on a transient one.
    let mode: Mode = 'list-500';
    const fail = (what: string): never => {
      if (what.endsWith('401')) throw new UnauthorizedError('401 Unauthorized: check the token');
      if (what.endsWith('403')) throw new UnauthorizedError('403 Forbidden: the token lacks read scope');
      if (what.endsWith('500')) throw new RetryableError('500 Internal Server Error');
      throw new RetryableError('timed out after 300 ms');
    };
    const failing = (p: Provider): Provider => ({
      ...p,
      instances: {
        async list(): Promise<Instance[]> {
          if (mode === 'list-timeout') await sleep(300);
          if (mode === 'list-empty') return [];
          if (mode.startsWith('list-')) fail(mode);
          return p.instances.list();
        },
        async get(id) {
          if (mode === 'get-timeout') await sleep(300);
          if (mode.startsWith('get-')) fail(mode);
          return p.instances.get(id);
        },
      },
    });
    ccm = await world.run(
      {
        'cloud-config': inventory,
        controllerOptions: {
          concurrency: 4,
          deletionGracePeriodMs: 0,
          nodeMonitorPeriodMs: 100,
          nodeStatusUpdateFrequencyMs: 60_000,
          cloudListPeriodMs: 200,
        },
      },
      { wrapProvider: failing },
    );
    const modes: Mode[] = [
      'list-500',
      'list-401',
      'list-403',
      'list-timeout',
      'list-empty',
      'get-401',
      'get-403',
      'get-500',
      'get-timeout',
    ];
    const before = await cloudRequests(ccm.url);
    for (const m of modes) {
      mode = m;
      // 12 monitor periods and 6 listing periods in each mode.
      await sleep(1200);
      expect((await world.api.listNode()).items.map((n) => n.metadata?.name).sort()).toEqual([
        'gone-1',
        'w1',
      ]);
    }
    const during = await cloudRequests(ccm.url);
    // The failing lookups were asked (so they were the only thing between gone-1 and deletion).
    expect(during.get - before.get).toBeGreaterThan(4);
    const deletes = (await world.cp.writes(CCM_USER)).filter((e) => e.verb === 'delete');
    expect(deletes).toEqual([]);

    mode = 'honest';
    await until('gone-1 deleted', async () => (await world.api.listNode()).items.length === 1, 10_000);
    expect((await node('w1')).metadata?.name).toBe('w1');
  });
});

describe('cloud calls do not grow with the cluster', () => {
  it('makes the same number of cloud requests per monitor period with 0, 1 and 100 NotReady Nodes', async () => {
    const names = Array.from({ length: 100 }, (_, i) => `n-${i}`);
    const inventory = writeInventory(
      names.map((id) => ({ id })),
      DEFAULTS,
    );
    await createNodes(
      world.api,
      names.map((name) => ({ name, providerID: `cloudlycke://${name}`, tainted: false })),
    );
    ccm = await world.run({
      'cloud-config': inventory,
      controllerOptions: {
        concurrency: 4,
        deletionGracePeriodMs: 0,
        nodeMonitorPeriodMs: 200,
        nodeStatusUpdateFrequencyMs: 60_000,
        cloudListPeriodMs: 1000,
      },
    });
    const url = ccm.url;
    const counts: Record<string, { list: number; get: number }> = {};
    let down = 0;
    for (const notReady of [0, 1, 100]) {
      await Promise.all(names.slice(down, notReady).map((name) => setReady(world.api, name, false)));
      down = notReady;
      await sleep(1100);
      // The window opens right after a listing and closes half a period before the fourth is due, so a
      // loaded machine's timer jitter (up to half a period) moves no listing in or out of it.
      const before = await cloudRequests(url);
      const start = await until('a listing', async () => {
        const now = await cloudRequests(url);
        return now.list > before.list && now;
      });
      await sleep(3500); // 17 monitor periods, 3 list periods
      const end = await cloudRequests(url);
      counts[notReady] = { list: end.list - start.list, get: end.get - start.get };
    }
    for (const c of Object.values(counts)) {
      expect(c.get).toBe(0);
      expect(c.list).toBeGreaterThanOrEqual(3);
      expect(c.list).toBeLessThanOrEqual(5);
    }
    const lists = Object.values(counts).map((c) => c.list);
    expect(Math.max(...lists) - Math.min(...lists)).toBeLessThanOrEqual(1);
  }, 90_000);
});

describe('the API server goes away', () => {
  it('recovers by itself after kube-apiserver and etcd were down for 20 s, and initialises Nodes created afterwards', async () => {
    const inventory = writeInventory([{ id: 'before' }, { id: 'after' }], DEFAULTS);
    ccm = await world.run({ 'cloud-config': inventory });
    await createNodes(world.api, [{ name: 'before' }]);
    await until('before initialised', async () => !(await tainted('before')));
    await world.cp.pause();
    await sleep(20_000);
    await world.cp.resume();
    await createNodes(world.api, [{ name: 'after' }]);
    await until('after initialised', async () => !(await tainted('after')), 20_000);
    const messages = ccm.logs.map((l) => (JSON.parse(l) as { msg: string }).msg);
    // logged once per change of state, not per retry
    expect(messages.filter((m) => m.startsWith('cannot reach the Kubernetes API server'))).toHaveLength(1);
    expect(messages.filter((m) => m === 'the Kubernetes API server answers again')).toHaveLength(1);
    expect(messages.filter((m) => m.startsWith('watching nodes failed'))).toHaveLength(1);
  }, 90_000);
});

describe('a cloud config that breaks while running', () => {
  it('is warned about once while its reason stays the same, and once more when the listing works again', async () => {
    const inventory = writeInventory([{ id: 'a' }], DEFAULTS);
    ccm = await world.run({ 'cloud-config': inventory });
    await createNodes(world.api, [{ name: 'a' }]);
    await until('a initialised', async () => !(await tainted('a')));
    const warnings = () =>
      ccm?.logs
        .map((l) => JSON.parse(l))
        .filter((l) => l.level === 40 && /cloud listing failed/.test(l.msg)) ?? [];

    writeFileSync(inventory, 'instances: [ {id: a\n');
    // The listing is retried many times over (every 500 ms here, with backoff), each time failing the same way.
    await until('the listing retried', async () => {
      const failures = ccm?.logs.filter((l) => l.includes('cloud listing failed')).length ?? 0;
      return failures >= 4;
    });
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0].msg).toContain('YAML syntax error');

    writeFileSync(inventory, 'instances: [ {id: a} ]\nbogus: 1\n');
    await until('the new reason warned about', async () => warnings().length === 2);

    writeFileSync(inventory, stringify({ defaults: DEFAULTS, instances: [{ id: 'a' }] }));
    await until('the listing works again', async () =>
      ccm?.logs.some((l) => l.includes('the cloud listing works again')),
    );
    expect(warnings()).toHaveLength(2);
  });
});

describe('credentials from a Secret', () => {
  it('are read by name, picked up again when rotated, and never logged', async () => {
    const first = `tok-${randomBytes(12).toString('hex')}`;
    const second = `tok-${randomBytes(12).toString('hex')}`;
    let accepted = first;
    // A cloud with a token: cloudlycke's instances, behind a check of the token the Secret holds.
    const definition: ProviderDefinition = {
      ...cloudlycke,
      credentials: {
        fields: [
          ...cloudlycke.credentials.fields,
          {
            key: 'token',
            description: 'API token',
            secret: true,
            required: true,
            prompt: 'password',
            env: ['TEST_TOKEN'],
            secretKey: 'access-token',
          },
        ],
      },
      create(values, deps) {
        const inner = cloudlycke.create(values, deps);
        const check = () => {
          if (values.token !== accepted)
            throw new UnauthorizedError('401 Unauthorized: the token was refused');
        };
        return {
          ...inner,
          instances: {
            list: async () => {
              check();
              return inner.instances.list();
            },
            get: async (id) => {
              check();
              return inner.instances.get(id);
            },
          },
        };
      },
    };
    await putToken('ccm-creds', first);
    const inventory = writeInventory([{ id: 'a' }], DEFAULTS);
    ccm = await world.run(
      {
        'cloud-config': inventory,
        credentialsSecret: 'kube-system/ccm-creds',
        env: { TEST_TOKEN: 'from-env-never-used' },
      },
      { definition },
    );
    await createNodes(world.api, [{ name: 'a' }]);
    await until('a initialised', async () => !(await tainted('a')));

    accepted = second; // the cloud rotates the token, and b's machine appears
    writeFileSync(inventory, stringify({ defaults: DEFAULTS, instances: [{ id: 'a' }, { id: 'b' }] }));
    await createNodes(world.api, [{ name: 'b' }]);
    await sleep(1000);
    expect(await tainted('b')).toBe(true);
    await putToken('ccm-creds', second);
    await until('b initialised with the rotated token', async () => !(await tainted('b')), 15_000);
    const all = ccm.logs.join('\n');
    expect(all).toContain('credentials from Secret kube-system/ccm-creds changed');
    expect(all).not.toContain(first);
    expect(all).not.toContain(second);
  });
});

/** ccm run with leader election on `lease`, over an inventory of the one instance `id`. */
const runLeading = (id: string, lease: RunInput['lease']) =>
  world.run({ 'cloud-config': writeInventory([{ id }], DEFAULTS), leaderElect: true, lease });

describe('losing the Lease', () => {
  it('stops writing and the controllers at once, not the process; the replica stays a candidate and leads again when it can', async () => {
    ccm = await runLeading('x', shortLease('ccm-steal-test', 2000, 1500, 300));
    const exited = exitWatch(ccm);
    const verbose = async () => await (await fetch(`${ccm?.url}/readyz?verbose`)).text();
    await until('leading', async () => (await verbose()).includes('leading'));
    const path = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/ccm-steal-test';
    await kube('PUT', path, async (lease) => ({
      ...lease,
      spec: { ...(lease.spec as object), holderIdentity: 'thief', leaseDurationSeconds: 3600 },
    }));
    await until('standing by', async () => (await verbose()).includes('standby (leader: thief)'), 5000);
    const before = (await world.cp.writes(CCM_USER)).length;
    await createNodes(world.api, [{ name: 'x' }]);
    await sleep(1500);
    expect(await tainted('x')).toBe(true);
    expect((await world.cp.writes(CCM_USER)).slice(before)).toEqual([]);
    expect(exited()).toBe(false);
    expect(ccm.logs.join('\n')).toContain('lost the leader Lease: stopped writing and the controllers');
    // Ready as a standby (a rolling update goes on); then the thief lets go and this replica leads again.
    expect((await fetch(`${ccm.url}/readyz`)).status).toBe(200);
    await kube('PUT', path, async (lease) => ({
      ...lease,
      spec: { ...(lease.spec as object), holderIdentity: '', leaseDurationSeconds: 1 },
    }));
    await until('x initialised', async () => !(await tainted('x')), 15_000);
    expect(exited()).toBe(false);
  });
});

describe('the API server goes away with leader election on', () => {
  it('two replicas: neither exits, one leads right after, new Nodes are initialised within 5 s, and no replica writes without the Lease', async () => {
    const inventory = writeInventory([{ id: 'before' }, { id: 'after-1' }, { id: 'after-2' }], DEFAULTS);
    const lease = {
      durationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2000,
      name: 'ccm-outage',
      namespace: 'kube-system',
    };
    const input = runInput(world.kubeconfig, inventory, { leaderElect: true, lease });
    const a = await startInProcess(input, { identity: 'replica-a' });
    const b = await startInProcess(input, { identity: 'replica-b' });
    const replicas = [a, b];
    let exits = 0;
    for (const r of replicas) void r.handle.done.then(() => exits++);
    try {
      const verbose = async (r: InProcess) => (await fetch(`${r.url}/readyz?verbose`)).text();
      const leader = async () => {
        for (const r of replicas) if ((await verbose(r)).includes('[+]leader-election ok: leading')) return r;
        return undefined;
      };
      await until('a leader', leader, 30_000);
      await createNodes(world.api, [{ name: 'before' }]);
      await until('before initialised', async () => !(await tainted('before')));

      await world.cp.pause();
      await sleep(20_000);
      await world.cp.resume();
      const back = Date.now();
      await until('a leader again', leader, 10_000);
      const leadsAfter = Date.now() - back;
      await createNodes(world.api, [{ name: 'after-1' }, { name: 'after-2' }]);
      const created = Date.now();
      await until(
        'after-* initialised',
        async () => !(await tainted('after-1')) && !(await tainted('after-2')),
        10_000,
      );
      const initialisedAfter = Date.now() - created;
      console.log(
        `after the outage: a leader ${leadsAfter} ms after the API server was ready, new Nodes initialised in ${initialisedAfter} ms`,
      );
      expect(leadsAfter).toBeLessThan(3000);
      expect(initialisedAfter).toBeLessThan(5000);
      expect(exits).toBe(0);

      // From the audit log, in order: who holds the Lease after each successful Lease write; every other
      // write must come from that holder.
      let holder: string | undefined;
      const strays: string[] = [];
      for (const e of await world.cp.writes(CCM_USER)) {
        const who = ['replica-a', 'replica-b'].find((id) => e.userAgent?.includes(`(${id})`));
        if (!who) continue;
        const ok = (e.responseStatus?.code ?? 0) < 300;
        if (e.objectRef?.resource === 'leases' && e.objectRef.name === 'ccm-outage') {
          if (ok) holder = who;
        } else if (who !== holder)
          strays.push(`${who} ${e.verb} ${e.requestURI} while ${holder} held the Lease`);
      }
      expect(strays).toEqual([]);
    } finally {
      await Promise.all(replicas.map((r) => r.stop()));
    }
  }, 150_000);
});

const kube = (method: string, path: string, body?: (current: Record<string, unknown>) => unknown) =>
  adminRequest(world.cp, method, path, body);

const putToken = (name: string, token: string) => putSecret(world.api, name, { 'access-token': token });

describe('an API error while becoming leader', () => {
  it('a 503 on the service controller start is retried with backoff: no exit, and the controller starts once the API server answers', async () => {
    let refused = 0;
    const proxy = await faultProxy(world.cp, (req) => {
      if (
        req.method === 'GET' &&
        req.url?.split('?')[0] === '/api/v1/namespaces/kube-system' &&
        refused < 2
      ) {
        refused++;
        return 503;
      }
      return undefined;
    });
    try {
      const inventory = writeInventory([{ id: 'y' }], DEFAULTS);
      ccm = await world.run({
        kubeconfig: proxy.kubeconfigPath,
        'cloud-config': inventory,
        leaderElect: true,
        lease: shortLease('ccm-start-503', 4000, 3000, 500),
      });
      const exited = exitWatch(ccm);
      const logged = (msg: string) =>
        ccm?.logs.some((l) => (JSON.parse(l) as { msg: string }).msg.includes(msg));
      await until('service started after all', async () => logged('started after all'), 20_000);
      expect(refused).toBe(2);
      expect(exited()).toBe(false);
      const warnings = ccm.logs.filter((l) => l.includes('could not start') && l.includes('"level":40'));
      expect(warnings).toHaveLength(1); // the same failure again is not warned about again
      await createNodes(world.api, [{ name: 'y' }]);
      await until('y initialised', async () => !(await tainted('y')));
    } finally {
      await ccm?.stop();
      ccm = undefined;
      await proxy.close();
    }
  }, 60_000);

  it('an error nothing else handled is one logged line and an orderly exit 1 with the Lease released', async () => {
    ccm = await runLeading('z', shortLease('ccm-fail', 4000, 3000, 500));
    await until('leading', async () =>
      (await (await fetch(`${ccm?.url}/readyz?verbose`)).text()).includes('leading'),
    );
    expect(await ccm.handle.fail(new Error('something nobody expected\n    at a stack frame'))).toBe(1);
    const errors = ccm.logs.filter((l) => l.includes('"level":50'));
    expect(errors.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual([
      'unexpected error: something nobody expected; shutting down',
    ]);
    const lease = (await kube(
      'GET',
      '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/ccm-fail',
    )) as {
      spec: { holderIdentity?: string };
    };
    expect(lease.spec.holderIdentity ?? '').toBe('');
  });
});
