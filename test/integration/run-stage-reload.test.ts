/**
 * `ccm run`'s reload stage (watchProviderConfig) against the real kube-apiserver: a changed credentials
 * Secret or cloud config replaces the provider and lists the cloud again; an unchanged one, or one
 * that cannot be used, keeps the current provider.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/cli/log.js';
import { CloudBudget, startCloud } from '../../src/cli/run/cloud.js';
import { resolveProvider } from '../../src/cli/run/provider.js';
import { watchProviderConfig } from '../../src/cli/run/reload.js';
import { createMetrics } from '../../src/controllers/metrics.js';
import { loadKubeConfig } from '../../src/kube/config.js';
import { KubeTransport } from '../../src/kube/transport.js';
import { loadProvider } from '../../src/providers/registry.js';
import { fixtureApi } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { putSecret } from '../helpers/kube-secrets.js';
import { logSink, runInput, until } from '../helpers/run.js';
import { tempDir } from '../helpers/tmp.js';

let cp: ControlPlane;
let api: CoreV1Api;
let transport: KubeTransport;
beforeAll(async () => {
  cp = await startControlPlane();
  api = fixtureApi(cp.kubeconfigPath);
  transport = new KubeTransport(loadKubeConfig({ kubeconfig: cp.kubeconfigPath, env: {} }));
});
afterAll(async () => {
  await transport?.close();
  await cp?.stop();
});

async function stage(overrides: Parameters<typeof runInput>[2], periodMs = 60_000) {
  const input = runInput(cp.kubeconfigPath, '', overrides);
  const sink = logSink();
  const log = createLogger('debug', { destination: sink.stream, pretty: false });
  const config = await resolveProvider(
    input,
    {},
    {
      definition: await loadProvider(input.provider as string),
      transport,
      providerDeps: {},
    },
  );
  const cloud = startCloud({
    first: config.first.value,
    budget: new CloudBudget({ qps: 100, burst: 100 }),
    metrics: createMetrics(),
    mayWrite: () => true,
    informers: {},
    phase: { current: 'running' },
    log,
  });
  const reloads = watchProviderConfig({ config, cloud, transport, log, periodMs });
  const said = () => sink.lines.map((l) => JSON.parse(l) as { level: number; msg: string });
  return { config, cloud, reloads, said };
}

const conf = (region: string) =>
  `[Global]\nauth-url=http://127.0.0.1:1/v3\nusername=admin\npassword=passw0rd\nregion=${region}\n`;

describe('watchProviderConfig', () => {
  it('replaces the provider when the Secret data changes, and not for a label', async () => {
    await putSecret(api, 'reload-stage', { 'access-token': 'one' });
    const { config, cloud, reloads, said } = await stage({
      provider: 'digitalocean',
      'cloud-config': undefined,
      credentialsSecret: 'kube-system/reload-stage',
    });
    try {
      await reloads.reloadNow();
      expect(cloud.holder.current).toBe(config.first.value);
      await api.patchNamespacedSecret({
        name: 'reload-stage',
        namespace: 'kube-system',
        body: [{ op: 'add', path: '/metadata/labels', value: { touched: 'yes' } }],
      });
      await reloads.reloadNow();
      expect(cloud.holder.current).toBe(config.first.value);
      expect(said()).toEqual([]);

      const generation = cloud.cache.view();
      await putSecret(api, 'reload-stage', { 'access-token': 'two' });
      await reloads.reloadNow();
      expect(cloud.holder.current).not.toBe(config.first.value);
      expect(cloud.holder.current.name).toBe('digitalocean');
      expect(said()).toEqual([
        expect.objectContaining({
          level: 30,
          msg: 'credentials from Secret kube-system/reload-stage changed; using them from now on',
        }),
      ]);
      // What was listed with the old credentials is dropped.
      expect(cloud.cache.view()).not.toBe(generation);
      expect(cloud.cache.view().listingError).toMatch(/changed; listing the cloud again with them/);
    } finally {
      reloads.stop();
    }
  });

  it('replaces the provider when a file it read changes, keeps it while the file cannot be used, and says each once', async () => {
    const cloudConf = join(tempDir('ccm-reload-stage-'), 'cloud.conf');
    writeFileSync(cloudConf, conf('RegionOne'));
    const { config, cloud, reloads, said } = await stage({
      provider: 'openstack',
      'cloud-config': cloudConf,
    });
    try {
      writeFileSync(cloudConf, '[Nowhere]\n');
      await reloads.reloadNow();
      await reloads.reloadNow();
      expect(cloud.holder.current).toBe(config.first.value);
      expect(said()).toEqual([
        expect.objectContaining({
          level: 40,
          msg: expect.stringMatching(
            /^re-reading credentials or cloud config failed: .*unknown section \[Nowhere\].*; keeping the current ones$/,
          ),
        }),
      ]);

      writeFileSync(cloudConf, conf('RegionTwo'));
      await reloads.reloadNow();
      expect(cloud.holder.current).not.toBe(config.first.value);
      expect(
        said()
          .slice(1)
          .map((l) => l.msg),
      ).toEqual([
        `${cloudConf} changed; using them from now on`,
        'credentials and cloud config readable again',
      ]);
    } finally {
      reloads.stop();
    }
  });

  it('re-reads every period until stopped', async () => {
    const cloudConf = join(tempDir('ccm-reload-stage-'), 'cloud.conf');
    writeFileSync(cloudConf, conf('RegionOne'));
    const { config, cloud, reloads } = await stage({ provider: 'openstack', 'cloud-config': cloudConf }, 100);
    try {
      writeFileSync(cloudConf, conf('RegionTwo'));
      await until('reloaded', async () => cloud.holder.current !== config.first.value);
      reloads.stop();
      const current = cloud.holder.current;
      writeFileSync(cloudConf, conf('RegionThree'));
      await new Promise((r) => setTimeout(r, 500));
      expect(cloud.holder.current).toBe(current);
    } finally {
      reloads.stop();
    }
  });
});
