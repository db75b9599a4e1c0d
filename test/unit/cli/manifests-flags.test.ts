/**
 * What `ccm manifests` is told reaches both pods, `ccm run` and `ccm nodes init`, or is refused:
 * --cloud-api-url, --log-level and --request-timeout were once accepted and left out of the YAML,
 * so a deployed controller talked to another API than the one the operator named.
 */
import { describe, expect, it } from 'vitest';
import { type ManifestOptions, renderManifests } from '../../../src/cli/manifests.js';
import { resolveProviderValues } from '../../../src/cli/provider-config.js';
import { loadProvider } from '../../../src/providers/registry.js';

async function args(provider: string, extra: Partial<ManifestOptions>) {
  const objects = renderManifests(await loadProvider(provider), {
    image: 'registry.example.com/ccm:0.1.0',
    namespace: 'kube-system',
    controllers: '*',
    cronjob: true,
    leaseName: 'cloud-controller-manager',
    ...extra,
  }) as unknown as { kind: string; spec: unknown }[];
  const container = (spec: { containers: { args: string[] }[] }) => spec.containers[0]?.args ?? [];
  const workload = objects.find((o) => o.kind === 'DaemonSet')?.spec as {
    template: { spec: { containers: { args: string[] }[] } };
  };
  const cronjob = objects.find((o) => o.kind === 'CronJob')?.spec as {
    jobTemplate: { spec: { template: { spec: { containers: { args: string[] }[] } } } };
  };
  return {
    run: container(workload.template.spec),
    nodesInit: container(cronjob.jobTemplate.spec.template.spec),
  };
}

describe('ccm manifests: every flag reaches the pods', () => {
  it.each(['digitalocean', 'brightbox', 'triton'])(
    '%s: --cloud-api-url, --log-level and --request-timeout in `ccm run` and `ccm nodes init`',
    async (provider) => {
      const { run, nodesInit } = await args(provider, {
        cloudApiUrl: 'https://cloud.example.com:8443/api',
        logLevel: 'debug',
        requestTimeoutMs: 45_000,
      });
      for (const list of [run, nodesInit]) {
        expect(list).toContain('--cloud-api-url=https://cloud.example.com:8443/api');
        expect(list).toContain('--log-level=debug');
        expect(list).toContain('--request-timeout=45s');
      }
      expect(run[0]).toBe('run');
      expect(nodesInit.slice(0, 2)).toEqual(['nodes', 'init']);
    },
  );

  it('the defaults add nothing: info is what the pods log at anyway, and no timeout is each request its own', async () => {
    const { run } = await args('digitalocean', { logLevel: 'info' });
    expect(run.filter((a) => /^--(cloud-api-url|log-level|request-timeout)/.test(a))).toEqual([]);
  });

  it('a timeout below a second, or none (0), as `ccm run` reads it back', async () => {
    expect((await args('digitalocean', { requestTimeoutMs: 1500 })).run).toContain(
      '--request-timeout=1500ms',
    );
    expect((await args('digitalocean', { requestTimeoutMs: 0 })).run).toContain('--request-timeout=0s');
  });

  it('refuses --cloud-api-url in one line where it means nothing, or is no http(s) URL', async () => {
    for (const provider of ['cloudlycke', 'openstack']) {
      await expect(args(provider, { cloudApiUrl: 'https://x.example.com' })).rejects.toThrow(
        new RegExp(`^--cloud-api-url: the ${provider} provider has no API URL to set`),
      );
    }
    for (const bad of ['api.example.com', 'ftp://api.example.com', '']) {
      await expect(args('digitalocean', { cloudApiUrl: bad })).rejects.toThrow(
        /^--cloud-api-url: expected an http\(s\) URL \(e\.g\. https:\/\/api\.example\.com\), got ".*"$/,
      );
    }
  });
});

describe('ccm manifests: a plain-http --cloud-api-url', () => {
  it("is refused: the pods, on their Node's network, would send the token unencrypted", async () => {
    await expect(args('digitalocean', { cloudApiUrl: 'http://127.0.0.1:36173' })).rejects.toThrow(
      /^--cloud-api-url http:\/\/127\.0\.0\.1:36173 is plain http: the pods use their Node's network, so each would send the token unencrypted to whatever listens on port 36173 of its Node; give the cloud's https URL \(or add --insecure-cloud-api for a proxy you run on every Node\)$/,
    );
    await expect(args('digitalocean', { cloudApiUrl: 'http://localhost/v2' })).rejects.toThrow(
      /on port 80 of its Node/,
    );
    // To another machine not even with --insecure-cloud-api: `ccm run` in the pods refuses it.
    await expect(
      args('digitalocean', { cloudApiUrl: 'http://10.0.0.5:8080', insecureCloudApi: true }),
    ).rejects.toThrow(
      /^--cloud-api-url http:\/\/10\.0\.0\.5:8080 is plain http to another machine: the token would cross the network unencrypted/,
    );
  });

  it('is taken on the loopback with --insecure-cloud-api, for a proxy on every Node', async () => {
    const { run, nodesInit } = await args('digitalocean', {
      cloudApiUrl: 'http://127.0.0.1:36173',
      insecureCloudApi: true,
    });
    for (const list of [run, nodesInit]) expect(list).toContain('--cloud-api-url=http://127.0.0.1:36173');
  });
});

describe('--cloud-api-url on every command', () => {
  it('an empty value (an unset shell variable) or one that is no http(s) URL is a usage error, never the real API', async () => {
    const digitalocean = await loadProvider('digitalocean');
    for (const url of ['', 'not a url', 'ftp://x']) {
      expect(() => resolveProviderValues(digitalocean, { 'cloud-api-url': url }, {})).toThrow(
        /^--cloud-api-url: expected an http\(s\) URL \(e\.g\. https:\/\/api\.example\.com\), got ".*"$/,
      );
    }
    expect(() =>
      resolveProviderValues(digitalocean, { 'cloud-api-url': 'http://127.0.0.1:1' }, {}),
    ).not.toThrow();
  });
});

describe('ccm manifests: the CronJob retries only what a retry can help (docs/output.md, exit codes)', () => {
  it('fails the Job at once on 2 (usage, configuration) and 3 (deletions held), retries 1 (unreachable, failed)', async () => {
    const objects = renderManifests(await loadProvider('digitalocean'), {
      image: 'registry.example.com/ccm:0.1.0',
      namespace: 'kube-system',
      controllers: '*',
      cronjob: true,
      leaseName: 'cloud-controller-manager',
    }) as unknown as { kind: string; spec: Record<string, never> }[];
    const cronjob = objects.find((o) => o.kind === 'CronJob');
    if (!cronjob) throw new Error('no CronJob rendered');
    const job = (
      cronjob.spec as unknown as {
        jobTemplate: {
          spec: {
            backoffLimit: number;
            podFailurePolicy: { rules: { action: string; onExitCodes?: { values: number[] } }[] };
          };
        };
      }
    ).jobTemplate.spec;
    const failJob = job.podFailurePolicy.rules.filter((r) => r.action === 'FailJob');
    expect(failJob.flatMap((r) => r.onExitCodes?.values ?? []).sort()).toEqual([2, 3]);
    expect(job.backoffLimit).toBeGreaterThanOrEqual(1);
  });
});
