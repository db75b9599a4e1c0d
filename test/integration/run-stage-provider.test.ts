/**
 * `ccm run`'s provider stage (resolveProvider) against the real kube-apiserver: the credentials'
 * source is resolved once, the provider built from it, and the same build serves the reloads.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveProvider } from '../../src/cli/run/provider.js';
import type { RunInput } from '../../src/cli/run/types.js';
import { loadKubeConfig } from '../../src/kube/config.js';
import { KubeUnreachableError } from '../../src/kube/errors.js';
import { KubeTransport } from '../../src/kube/transport.js';
import { filesReadBy } from '../../src/providers/config-files.js';
import { InvalidConfigError } from '../../src/providers/errors.js';
import { loadProvider } from '../../src/providers/registry.js';
import type { Provider } from '../../src/providers/types.js';
import { fixtureApi } from '../controlplane/fixtures.js';
import { type ControlPlane, freePort, startControlPlane } from '../controlplane/harness.js';
import { putSecret } from '../helpers/kube-secrets.js';
import { runInput } from '../helpers/run.js';
import { tempDir } from '../helpers/tmp.js';

let cp: ControlPlane;
let transport: KubeTransport;
beforeAll(async () => {
  cp = await startControlPlane();
  transport = new KubeTransport(loadKubeConfig({ kubeconfig: cp.kubeconfigPath, env: {} }));
  await putSecret(fixtureApi(cp.kubeconfigPath), 'do-stage', { 'access-token': 'from-the-secret' });
});
afterAll(async () => {
  await transport?.close();
  await cp?.stop();
});

const providerDeps = { mayWrite: () => true, takeToken: async () => undefined };

async function resolve(input: RunInput, wrapProvider?: (p: Provider) => Provider, on = transport) {
  const definition = await loadProvider(input.provider as string);
  return resolveProvider(input, wrapProvider ? { wrapProvider } : {}, {
    definition,
    transport: on,
    providerDeps,
  });
}

describe('resolveProvider', () => {
  it('builds the provider from the flags, says so, and records the files it read', async () => {
    // OpenStack reads its cloud.conf when it is built (Cloudlycke reads its inventory at each listing).
    const conf = (region: string) =>
      `[Global]\nauth-url=http://127.0.0.1:1/v3\nusername=admin\npassword=passw0rd\nregion=${region}\n`;
    const cloudConf = join(tempDir('ccm-provider-stage-'), 'cloud.conf');
    writeFileSync(cloudConf, conf('RegionOne'));
    const wrapped: Provider[] = [];
    const input = runInput(cp.kubeconfigPath, cloudConf, { provider: 'openstack' });
    const config = await resolve(input, (p) => {
      wrapped.push(p);
      return p;
    });
    expect(config.credentials.description).toBe('flags and environment');
    expect(config.secretRef).toBeUndefined();
    expect(config.first.value.name).toBe('openstack');
    expect([...config.first.files]).toEqual([[cloudConf, conf('RegionOne')]]);
    // The build the reloads use reads the files again, and is wrapped as the first was.
    writeFileSync(cloudConf, conf('RegionTwo'));
    const rebuilt = filesReadBy(() => config.build(undefined));
    expect([...rebuilt.files]).toEqual([[cloudConf, conf('RegionTwo')]]);
    expect(wrapped).toEqual([config.first.value, rebuilt.value]);
  });

  it('reads the credentials from the Secret named, and builds later providers with that Secret in their errors', async () => {
    const input = runInput(cp.kubeconfigPath, '', {
      provider: 'digitalocean',
      'cloud-config': undefined,
      credentialsSecret: 'kube-system/do-stage',
    });
    const config = await resolve(input);
    expect(config.credentials.description).toBe('Secret kube-system/do-stage');
    expect(config.credentials.secret?.data).toEqual({ 'access-token': 'from-the-secret' });
    expect(config.secretRef).toEqual({ namespace: 'kube-system', name: 'do-stage' });
    expect(config.first.value.name).toBe('digitalocean');
    expect(() => config.build({})).toThrow(
      new InvalidConfigError(
        'Secret kube-system/do-stage has no key access-token; add it, or name the Secret `ccm secret create` wrote with --credentials-secret',
      ),
    );
  });

  it('refuses a Secret that does not exist, and a configuration the provider refuses', async () => {
    const missing = runInput(cp.kubeconfigPath, '', {
      provider: 'digitalocean',
      'cloud-config': undefined,
      credentialsSecret: 'kube-system/not-there',
    });
    await expect(resolve(missing)).rejects.toBeInstanceOf(InvalidConfigError);
    const missingConf = join(tempDir('ccm-provider-stage-'), 'cloud.conf');
    const noCloudConf = runInput(cp.kubeconfigPath, missingConf, { provider: 'openstack' });
    await expect(resolve(noCloudConf)).rejects.toThrow(
      new InvalidConfigError(
        `cannot read the cloud config ${missingConf} (ENOENT); pass the path of the official controller's cloud.conf with --cloud-config`,
      ),
    );
  });

  it('leaves an API server that does not answer while the Secret is read what it is: no configuration error (exit 1, docs/output.md)', async () => {
    const kubeconfig = join(tempDir('ccm-provider-stage-'), 'kubeconfig');
    writeFileSync(
      kubeconfig,
      readFileSync(cp.kubeconfigPath, 'utf8').replace(cp.server, `https://127.0.0.1:${await freePort()}`),
    );
    const nowhere = new KubeTransport(loadKubeConfig({ kubeconfig, env: {} }));
    const input = runInput(kubeconfig, '', {
      provider: 'digitalocean',
      'cloud-config': undefined,
      credentialsSecret: 'kube-system/do-stage',
    });
    try {
      await expect(resolve(input, undefined, nowhere)).rejects.toBeInstanceOf(KubeUnreachableError);
    } finally {
      await nowhere.close();
    }
  });
});
