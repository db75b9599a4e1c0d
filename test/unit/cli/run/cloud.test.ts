/**
 * `ccm run`'s cloud stage (startCloud): the provider behind the shared budget and the leadership gate,
 * the credentials checked at start, the one cached listing, and what it says when listings fail.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../../src/cli/log.js';
import { CloudBudget, startCloud } from '../../../../src/cli/run/cloud.js';
import type { Informers } from '../../../../src/cli/run/kube.js';
import type { RunPhase } from '../../../../src/cli/run/types.js';
import { createMetrics } from '../../../../src/controllers/metrics.js';
import type { Informer } from '../../../../src/kube/informer.js';
import type { SlimNode } from '../../../../src/kube/slim-node.js';
import { InvalidConfigError, RetryableError, UnauthorizedError } from '../../../../src/providers/errors.js';
import type { LoadBalancerRequest, LoadBalancers, Provider } from '../../../../src/providers/types.js';
import { logSink } from '../../../helpers/run.js';
import { makeInstance, makeNode, makeProvider } from '../../controllers/fixtures.js';

function stage(first: Provider, options: { mayWrite?: () => boolean; informers?: Informers } = {}) {
  const sink = logSink();
  const metrics = createMetrics();
  const phase: RunPhase = { current: 'starting' };
  const budget = new CloudBudget({ qps: 1000, burst: 100 });
  const cloud = startCloud({
    first,
    budget,
    metrics,
    mayWrite: options.mayWrite ?? (() => true),
    informers: options.informers ?? {},
    phase,
    log: createLogger('debug', { destination: sink.stream, pretty: false }),
  });
  const said = () => sink.lines.map((l) => JSON.parse(l) as { level: number; msg: string });
  return { cloud, metrics, phase, budget, said };
}

const failingOnce = (provider: Provider, error: Error): Provider => {
  let failed = false;
  return {
    ...provider,
    instances: {
      ...provider.instances,
      list: async (signal) => {
        if (failed) return provider.instances.list(signal);
        failed = true;
        throw error;
      },
    },
  };
};

describe('startCloud', () => {
  it('checks credentials at start with the first listing where the provider has no cheaper check', async () => {
    const provider = makeProvider([makeInstance()]);
    const { cloud, said } = stage(provider);
    expect(cloud.credentialsAccepted()).toBe(false);
    await cloud.checkCredentials();
    expect(provider.listCalls).toBe(1);
    expect(cloud.credentialsAccepted()).toBe(true);
    expect(cloud.cache.view().index.size).toBe(1);
    cloud.reportStartListing();
    expect(said()).toEqual([]);
  });

  it('credentials from a watched Secret that the cloud refuses: the start goes on, not ready, the refusal said once', async () => {
    const refused = stage(
      failingOnce(makeProvider([makeInstance()]), new UnauthorizedError('401 from the cloud')),
    );
    await refused.cloud.checkCredentials(undefined, 'kube-system/digitalocean');
    expect(refused.cloud.credentialsAccepted()).toBe(false);
    expect(refused.cloud.credentialsRefusal()).toBe(
      'the cloud refuses the credentials from Secret kube-system/digitalocean: 401 from the cloud',
    );
    expect(refused.said()).toHaveLength(1);
    // A listing the cloud accepts (the Secret changed): ready, the refusal gone.
    await refused.cloud.cache.refreshIfOlderThan(0);
    expect(refused.cloud.credentialsAccepted()).toBe(true);
    expect(refused.cloud.credentialsRefusal()).toBeUndefined();
    // An InvalidConfigError stays fatal, watched Secret or not.
    const invalid = stage(failingOnce(makeProvider(), new InvalidConfigError('no such region')));
    await expect(invalid.cloud.checkCredentials(undefined, 'kube-system/digitalocean')).rejects.toThrow(
      'no such region',
    );
  });

  it('refuses credentials the cloud refuses, and only says a listing failure once the start is accepted', async () => {
    const refused = stage(failingOnce(makeProvider(), new UnauthorizedError('401 from the cloud')));
    await expect(refused.cloud.checkCredentials()).rejects.toThrow('401 from the cloud');

    const flaky = stage(
      failingOnce(makeProvider([makeInstance()]), new RetryableError('503 from the cloud')),
    );
    await flaky.cloud.checkCredentials();
    expect(flaky.said()).toEqual([]); // refused starts say only their error; this one is said below
    flaky.cloud.reportStartListing();
    flaky.phase.current = 'running';
    expect(flaky.said()).toEqual(
      [
        {
          level: 40,
          msg: 'cloud listing failed: 503 from the cloud; Nodes needing the cloud wait, none is deleted',
        },
      ].map((l) => expect.objectContaining(l)),
    );
    await flaky.cloud.cache.refreshIfOlderThan(0);
    expect(flaky.said().at(-1)).toMatchObject({ level: 30, msg: 'the cloud listing works again' });
  });

  it('uses verifyCredentials where the provider has it: a cloud that does not answer is a warning, asked again for readiness', async () => {
    let answers = false;
    const verifying: Provider = {
      ...makeProvider(),
      verifyCredentials: async () => {
        if (!answers) throw new RetryableError('timed out');
        return 'ok';
      },
    };
    const { cloud, said } = stage(verifying);
    await cloud.checkCredentials();
    expect(said()).toEqual([
      expect.objectContaining({
        level: 40,
        msg: 'the cloud did not answer at start-up (timed out); continuing, it is asked again',
      }),
    ]);
    answers = true;
    expect(cloud.credentialsAccepted()).toBe(false); // asks again, in the background
    await new Promise((r) => setTimeout(r, 10));
    expect(cloud.credentialsAccepted()).toBe(true);
    expect(cloud.cache.hasListed).toBe(false);
  });

  it('sends every call through the budget, counts the waits, and refuses cloud writes while the gate is shut', async () => {
    let leading = false;
    const ensured: string[] = [];
    const withBalancers: Provider = {
      ...makeProvider(),
      loadBalancers: {
        ensure: async (req: LoadBalancerRequest) => {
          ensured.push(req.service.name);
          return { ingress: [] };
        },
      } as unknown as LoadBalancers,
    };
    const { cloud, metrics, budget } = stage(withBalancers, { mayWrite: () => leading });
    const request = { service: { name: 'web' } } as never;
    await expect(cloud.provider.loadBalancers?.ensure(request)).rejects.toThrow(
      new RetryableError('lb_ensure refused: this replica is not the leader'),
    );
    leading = true;
    await cloud.provider.loadBalancers?.ensure(request);
    expect(ensured).toEqual(['web']);
    await budget.takeToken();
    const waits = (await metrics.cloudBudgetWaitSeconds.get()).values[0]?.value;
    expect(waits).toBeGreaterThanOrEqual(0);
    expect((await metrics.cloudRequests.get()).values.map((v) => v.labels.operation).sort()).toEqual([
      'lb_ensure',
    ]);
  });

  it('checks the listing against the Nodes informer once there is one, and stops a listing in flight', {
    timeout: 10_000,
  }, async () => {
    const informers: Informers = {};
    let hang = false;
    let listed = () => {};
    const inFlight = new Promise<void>((resolve) => {
      listed = resolve;
    });
    const base = makeProvider([makeInstance({ providerID: 'cloudlycke://i-1' })]);
    const provider: Provider = {
      ...base,
      instances: {
        ...base.instances,
        list: (signal) =>
          hang
            ? new Promise((_, reject) => {
                signal?.addEventListener('abort', () => reject(signal.reason));
                listed();
              })
            : base.instances.list(signal),
      },
    };
    const { cloud } = stage(provider, { informers });
    await cloud.cache.refreshIfOlderThan(0);
    expect(cloud.cache.view().listingKnowsCluster).toBe(false);
    const nodes = [makeNode({ providerID: 'cloudlycke://i-1' })];
    informers.nodes = { list: () => nodes } as unknown as Informer<SlimNode>;
    await cloud.cache.refreshIfOlderThan(0);
    expect(cloud.cache.view().listingKnowsCluster).toBe(true);

    hang = true;
    const refresh = cloud.cache.refreshIfOlderThan(0);
    await inFlight;
    cloud.stopListing();
    const view = await refresh;
    expect(view.listingError).toMatch(/^cloud listing failed: /);
  });
});
