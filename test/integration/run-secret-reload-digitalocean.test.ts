/**
 * A write to the credentials Secret that changes nothing of its data (a label, an annotation:
 * kubectl annotate, a GitOps tool's tracking label, a backup tool) is not new credentials: the
 * provider and the cached listing stay. Before, the resourceVersion alone counted, and such writes
 * faster than a listing took kept a tainted Node whose droplet exists from ever being initialised.
 * Both cases are an outside review's reproductions (they failed on 4a6b18f). And a Secret whose new
 * data cannot build a provider is warned about until it can (RV-6, failed on 3644dc2). Real
 * kube-apiserver, DigitalOcean simulator, `ccm run` in process. R4-6 (failed on b7eebaf): a
 * --cloud-config the provider never reads, missing, stopped every Secret rotation.
 */
import { describe, expect, it } from 'vitest';
import type { Provider } from '../../src/providers/types.js';
import { createNodes } from '../controlplane/fixtures.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { type InProcess, until } from '../helpers/run.js';
import { MERGE_PATCH } from '../helpers/services.js';

const world = useCloudWorld('digitalocean');
let ccm: InProcess | undefined;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function touchSecret(i: number) {
  await world.api.patchNamespacedSecret(
    {
      name: 'digitalocean',
      namespace: 'kube-system',
      body: { metadata: { annotations: { touched: String(i) } } },
    },
    MERGE_PATCH,
  );
}

describe('the credentials Secret touched, not changed', () => {
  it('R9-I1: an annotation on the Secret reloads nothing', async () => {
    world.sim.addDroplets({ name: 'worker-1', privateIP: '10.114.0.21' });
    ccm = await world.run({
      controllerOptions: {
        concurrency: 4,
        deletionGracePeriodMs: 0,
        nodeMonitorPeriodMs: 200,
        nodeStatusUpdateFrequencyMs: 600_000,
        cloudListPeriodMs: 600_000,
      },
    });
    await sleep(1500);
    const before = ccm.logs.length;
    await touchSecret(1);
    await until(
      'the reload notices',
      async () => ccm?.logs.slice(before).some((l) => l.includes('changed; using them from now on')) ?? false,
      5_000,
    ).catch(() => {});
    const lines = ccm.logs.slice(before).filter((l) => l.includes('changed'));
    expect(lines, 'data unchanged: nothing should be reloaded or invalidated').toEqual([]);
  }, 30_000);

  it('R9-I2: Secret touched every 250 ms, a listing that takes 1 s: a tainted Node with a droplet is initialised', async () => {
    const [droplet] = world.sim.addDroplets({ name: 'worker-1', privateIP: '10.114.0.21' });
    let listings = 0;
    let landed = 0;
    ccm = await world.run(
      {
        controllerOptions: {
          concurrency: 4,
          deletionGracePeriodMs: 0,
          nodeMonitorPeriodMs: 200,
          nodeStatusUpdateFrequencyMs: 600_000,
          cloudListPeriodMs: 600_000,
        },
      },
      {
        wrapProvider: (p: Provider): Provider => ({
          ...p,
          instances: {
            ...p.instances,
            list: async (signal) => {
              listings++;
              const all = await p.instances.list(signal);
              await sleep(1000); // a large account: many pages under --cloud-qps
              landed++;
              return all;
            },
          },
        }),
      },
    );
    await sleep(1500);
    let touching = true;
    const toucher = (async () => {
      for (let i = 0; touching; i++) {
        await touchSecret(i).catch(() => {});
        await sleep(250);
      }
    })();
    await createNodes(world.api, [{ name: 'worker-1' }]);
    const deadline = Date.now() + 10_000;
    let providerID: string | undefined;
    while (Date.now() < deadline && !providerID) {
      providerID = (await world.api.readNode({ name: 'worker-1' })).spec?.providerID;
      await sleep(200);
    }
    touching = false;
    await toucher;
    expect(providerID, `${listings} listings started, ${landed} answered, none used`).toBe(
      `digitalocean://${droplet?.id}`,
    );
  }, 60_000);
});

describe('the credentials Secret loses its token key', () => {
  it('RV-6: ccm keeps saying so while it runs on a token the Secret no longer has', async () => {
    ccm = await world.run();
    await sleep(1000);
    const before = (await world.api.readNamespacedSecret({ name: 'digitalocean', namespace: 'kube-system' }))
      .data;
    try {
      await world.api.patchNamespacedSecret(
        { name: 'digitalocean', namespace: 'kube-system', body: { data: { 'access-token': null } } },
        MERGE_PATCH,
      );
      await until(
        'the failed reload is logged',
        async () => ccm?.logs.some((l) => l.includes('keeping the current ones')) ?? false,
        5000,
      );
      await sleep(1500); // five more reload ticks
      const after = ccm.logs.slice(ccm.logs.findIndex((l) => l.includes('keeping the current ones')));
      const allClear = after.some((l) => l.includes('credentials and cloud config readable again'));
      expect(
        allClear,
        `the Secret still lacks its token, yet the next tick says all is well and nothing is retried:\n${after.filter((l) => l.includes('re-reading') || l.includes('readable again')).join('\n')}`,
      ).toBe(false);
    } finally {
      await world.api.patchNamespacedSecret(
        { name: 'digitalocean', namespace: 'kube-system', body: { data: before } },
        MERGE_PATCH,
      );
    }
  }, 60_000);
});

describe('R4-6: --cloud-config the provider does not read, and does not exist', () => {
  const scenario = (cloudConfig: string | undefined) => async () => {
    ccm = await world.run(cloudConfig ? { 'cloud-config': cloudConfig } : {});
    await sleep(1000);
    const before = (await world.api.readNamespacedSecret({ name: 'digitalocean', namespace: 'kube-system' }))
      .data;
    try {
      await world.api.patchNamespacedSecret(
        {
          name: 'digitalocean',
          namespace: 'kube-system',
          body: { data: { 'access-token': Buffer.from('dop_v1_rotated0123456789').toString('base64') } },
        },
        MERGE_PATCH,
      );
      await sleep(3000); // ten reload periods
      const applied = ccm.logs.some((l) => l.includes('changed; using them from now on'));
      const warned = ccm.logs.filter((l) => l.includes('keeping the current ones'));
      expect({ applied, warned }, 'the rotated token was never looked at').toEqual({
        applied: true,
        warned: [],
      });
    } finally {
      await world.api.patchNamespacedSecret(
        { name: 'digitalocean', namespace: 'kube-system', body: { data: before } },
        MERGE_PATCH,
      );
      await ccm.stop();
      ccm = undefined;
    }
  };
  it('control: no --cloud-config, the rotated token is applied', scenario(undefined), 60_000);
  it(
    '--cloud-config /nonexistent: the rotated token is applied all the same',
    scenario('/nonexistent/cloud.conf'),
    60_000,
  );
});
