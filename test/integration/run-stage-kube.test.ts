/**
 * `ccm run`'s Kubernetes stage (connectKube) against the real kube-apiserver: the transport it hands
 * on writes as ccm's identity through the leadership gate, a refused kubeconfig user is a
 * configuration error, and the API server coming back wakes the Lease and the informers.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/cli/log.js';
import { connectKube } from '../../src/cli/run/kube.js';
import { Leadership } from '../../src/cli/run/leadership.js';
import { KubeConfigError, NotLeaderError } from '../../src/kube/errors.js';
import type { Informer } from '../../src/kube/informer.js';
import { LeaderElector } from '../../src/kube/lease.js';
import { CCM_USER, type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { logSink, until } from '../helpers/run.js';
import { tempDir } from '../helpers/tmp.js';

let cp: ControlPlane;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => {
  await cp?.stop();
});

function connect(
  kubeconfig: string,
  leadership = new Leadership(false),
  /** null: none given, the stage makes one. */
  identity: string | null = 'stage-test_1',
) {
  const sink = logSink();
  const log = createLogger('debug', { destination: sink.stream, pretty: false });
  return {
    lines: sink.lines,
    connecting: connectKube({ kubeconfig, env: {} }, { identity: identity ?? undefined, log, leadership }),
  };
}

const configMap = (name: string) => ({
  method: 'POST' as const,
  path: '/api/v1/namespaces/default/configmaps',
  body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } },
});

describe('connectKube', () => {
  it('hands on a transport that writes as ccm (identity), and no informer yet', async () => {
    const { connecting, lines } = connect(cp.kubeconfigPath);
    const { identity, transport, informers } = await connecting;
    try {
      expect(identity).toBe('stage-test_1');
      expect(informers).toEqual({});
      await transport.request(configMap('kube-stage-written'));
      const written = (await cp.writes(CCM_USER)).filter((e) => e.objectRef?.name === 'kube-stage-written');
      expect(written.map((e) => e.userAgent)).toEqual(['ccm (stage-test_1)']);
      expect(lines).toEqual([]); // an API server that answers at once is not worth a line
    } finally {
      await transport.close();
    }
  });

  it('makes an identity when none is given: the host name and a random suffix', async () => {
    const { identity, transport } = await connect(cp.kubeconfigPath, new Leadership(false), null).connecting;
    try {
      expect(identity).toMatch(new RegExp(`^${hostname()}_[0-9a-f]{8}$`));
      await transport.request(configMap('kube-stage-made-up'));
      const written = (await cp.writes(CCM_USER)).filter((e) => e.objectRef?.name === 'kube-stage-made-up');
      expect(written.map((e) => e.userAgent)).toEqual([`ccm (${identity})`]);
    } finally {
      await transport.close();
    }
  });

  it('writes only while the leadership gate lets it', async () => {
    const leadership = new Leadership(true);
    const { transport } = await connect(cp.kubeconfigPath, leadership).connecting;
    try {
      // An elector that has not taken the Lease: not the leader.
      leadership.elector = new LeaderElector({
        transport,
        namespace: 'kube-system',
        name: 'kube-stage',
        identity: 'stage-test_1',
        leaseDurationMs: 15_000,
        renewDeadlineMs: 10_000,
        retryPeriodMs: 2000,
      });
      await expect(transport.request(configMap('kube-stage-refused'))).rejects.toBeInstanceOf(NotLeaderError);
      leadership.elector = undefined;
      await transport.request(configMap('kube-stage-allowed'));
    } finally {
      await transport.close();
    }
  });

  it('refuses a kubeconfig user the API server does not accept, as a configuration error', async () => {
    const kubeconfig = join(tempDir('ccm-kube-stage-'), 'kubeconfig');
    writeFileSync(
      kubeconfig,
      readFileSync(cp.kubeconfigPath, 'utf8').replace(/token: \w+/, 'token: not-a-token'),
    );
    const refused = await connect(kubeconfig).connecting.then(
      () => undefined,
      (err: unknown) => err as Error,
    );
    expect(refused).toBeInstanceOf(KubeConfigError);
    expect(refused?.message).toMatch(
      /^the API server refused ccm's credentials \(.*\); check the kubeconfig user or ccm's RBAC$/,
    );
  });

  it('says when the API server goes and comes back, and then wakes the Lease and the informers', async () => {
    const leadership = new Leadership(true);
    const { connecting, lines } = connect(cp.kubeconfigPath, leadership);
    const { transport, informers } = await connecting;
    const woken: string[] = [];
    // Which ones were woken is all this test looks at: the elector and informers are only asked to wake.
    leadership.elector = {
      wake: () => woken.push('lease'),
      isLeader: () => false,
    } as unknown as LeaderElector;
    informers.nodes = { wake: () => woken.push('nodes') } as unknown as Informer<never>;
    informers.services = { wake: () => woken.push('services') } as unknown as Informer<unknown>;
    try {
      await cp.pause();
      try {
        await expect(transport.request({ method: 'GET', path: '/api/v1/nodes' })).rejects.toThrow();
        const said = lines.map((l) => JSON.parse(l) as { level: number; msg: string });
        expect(said).toHaveLength(1);
        expect(said[0]?.level).toBe(40); // pino's warn
        expect(said[0]?.msg.startsWith(`cannot reach the Kubernetes API server at ${cp.server} (`)).toBe(
          true,
        );
        expect(said[0]?.msg.endsWith('); retrying until it answers')).toBe(true);
        expect(woken).toEqual([]);
      } finally {
        await cp.resume();
      }
      await until(
        'an answer',
        async () => await transport.request({ method: 'GET', path: '/api/v1/nodes' }).then(() => true),
      );
      expect(lines.map((l) => JSON.parse(l).msg).at(-1)).toBe('the Kubernetes API server answers again');
      expect(woken).toEqual(['lease', 'nodes', 'services']);
    } finally {
      await transport.close();
    }
  }, 120_000);
});
