/**
 * `ccm run`'s server stage (serveHealth) against the real kube-apiserver: what /readyz says as the
 * informers sync, the cloud accepts the credentials, the Lease is held elsewhere and the run stops;
 * /metrics behind the API server's token checks over HTTPS; a port in use as a usage error.
 */
import { createServer } from 'node:net';
import { Agent, fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageError } from '../../src/cli/errors.js';
import { createLogger } from '../../src/cli/log.js';
import type { Informers } from '../../src/cli/run/kube.js';
import { Leadership } from '../../src/cli/run/leadership.js';
import { serveHealth } from '../../src/cli/run/server.js';
import type { RunPhase } from '../../src/cli/run/types.js';
import type { HoldStatus } from '../../src/controllers/deletion-guard.js';
import { createMetrics } from '../../src/controllers/metrics.js';
import type { Serving } from '../../src/controllers/server.js';
import { loadKubeConfig } from '../../src/kube/config.js';
import { createInformer } from '../../src/kube/informer.js';
import { LeaderElector } from '../../src/kube/lease.js';
import { slimNode } from '../../src/kube/slim-node.js';
import { KubeTransport } from '../../src/kube/transport.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { logSink, until } from '../helpers/run.js';

let cp: ControlPlane;
let transport: KubeTransport;
beforeAll(async () => {
  cp = await startControlPlane();
  transport = new KubeTransport(loadKubeConfig({ kubeconfig: cp.kubeconfigPath, env: {} }));
});
afterAll(async () => {
  await transport?.close();
  await cp?.stop();
});

const PLAIN = {
  securePort: 0,
  bindAddress: '127.0.0.1',
  plainHttp: true,
  alwaysAllowPaths: ['/healthz', '/readyz', '/livez'],
};

function sources(elect = false) {
  let accepted = false;
  const sink = logSink();
  return {
    informers: {} as Informers,
    cloud: { credentialsAccepted: () => accepted },
    accept: () => {
      accepted = true;
    },
    leadership: new Leadership(elect),
    phase: { current: 'running' } as RunPhase,
    deletionHold: {} as HoldStatus,
    metrics: createMetrics(),
    transport,
    lines: sink.lines,
    log: createLogger('debug', { destination: sink.stream, pretty: false }),
  };
}

async function readyz(serving: Serving) {
  const res = await fetch(`${serving.url}/readyz?verbose`);
  return { status: res.status, lines: (await res.text()).trim().split('\n') };
}

describe('serveHealth', () => {
  it('serves /readyz that waits for the Nodes informer and the cloud, and fails once the run stops', async () => {
    const s = sources();
    const serving = (await serveHealth(PLAIN, s)) as Serving;
    const nodes = createInformer({
      transport,
      log: s.log,
      path: '/api/v1/nodes',
      resource: 'nodes',
      slim: slimNode,
    });
    try {
      expect(serving.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      // Where it serves is said by the start line's stage, after what runs (announceStart).
      expect(s.lines).toEqual([]);
      expect((await fetch(`${serving.url}/healthz`)).status).toBe(200);
      expect(await readyz(serving)).toEqual({
        status: 503,
        lines: [
          '[-]informer-sync failed: waiting for nodes',
          '[-]cloud failed: waiting for the cloud to accept the credentials',
          '[+]leader-election ok: disabled',
          '[+]deletion-brake ok',
          '[+]shutdown ok',
          'not ok',
        ],
      });
      s.informers.nodes = nodes;
      nodes.start();
      s.accept();
      await until('ready', async () => (await readyz(serving)).status === 200);
      expect((await readyz(serving)).lines).toEqual([
        '[+]informer-sync ok',
        '[+]cloud ok',
        '[+]leader-election ok: disabled',
        '[+]deletion-brake ok',
        '[+]shutdown ok',
        'ok',
      ]);
      // A held deletion is a note, never a failure: a restart would not release it.
      s.deletionHold.current = {
        id: '6-0123abcd',
        count: 6,
        reason: 'the listing lost 6 of 10 Nodes',
        release: 'R',
      };
      expect(await readyz(serving)).toMatchObject({
        status: 200,
        lines: expect.arrayContaining([
          '[+]deletion-brake ok: holding the deletion of 6 Nodes (hold 6-0123abcd): the listing lost 6 of 10 Nodes; release: R',
        ]),
      });
      s.deletionHold.current = undefined;
      expect(await (await fetch(`${serving.url}/metrics`)).text()).toContain('ccm_leader 1');
      s.phase.current = 'stopping';
      expect(await readyz(serving)).toMatchObject({
        status: 503,
        lines: expect.arrayContaining(['[-]shutdown failed: shutting down']),
      });
    } finally {
      await nodes.stop();
      await serving.close();
    }
  });

  it("says a standby's role and the Lease's holder, and leading once it leads", async () => {
    const s = sources(true);
    s.accept();
    s.informers.nodes = createInformer({
      transport,
      log: s.log,
      path: '/api/v1/nodes',
      resource: 'nodes',
      slim: slimNode,
    });
    const serving = (await serveHealth(PLAIN, s)) as Serving;
    const lease = {
      transport,
      namespace: 'kube-system',
      name: 'server-stage',
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 200,
    };
    const holder = new LeaderElector({ ...lease, identity: 'the-other-replica' });
    const candidate = new LeaderElector({ ...lease, identity: 'this-replica' });
    try {
      expect(await (await fetch(`${serving.url}/metrics`)).text()).toContain('ccm_leader 0');
      const leaderLine = async () => (await readyz(serving)).lines.find((l) => l.includes('leader-election'));
      expect(await leaderLine()).toBe('[+]leader-election ok: standby');
      void holder.run();
      await until('the other replica leads', async () => holder.isLeader());
      s.leadership.elector = candidate;
      void candidate.run();
      await until(
        'standby named',
        async () => (await leaderLine()) === '[+]leader-election ok: standby (leader: the-other-replica)',
      );
      s.leadership.leading = true;
      expect(await leaderLine()).toBe('[+]leader-election ok: leading');
    } finally {
      candidate.stop();
      holder.stop();
      await serving.close();
    }
  });

  it('over HTTPS, serves /metrics only for a token the API server accepts; the probes without one', async () => {
    const s = sources();
    const serving = (await serveHealth({ ...PLAIN, plainHttp: false }, s)) as Serving;
    const insecure = new Agent({ connect: { rejectUnauthorized: false } });
    const get = async (path: string, token?: string) =>
      (
        await fetch(`${serving.url}${path}`, {
          dispatcher: insecure,
          ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}),
        })
      ).status;
    try {
      expect(serving.url).toMatch(/^https:\/\//);
      expect(await get('/healthz')).toBe(200);
      expect(await get('/metrics')).toBe(401);
      expect(await get('/metrics', 'not-a-token')).toBe(401);
      expect(await get('/metrics', cp.adminToken)).toBe(200);
    } finally {
      await serving.close();
      await insecure.close();
    }
  });

  it('serves nothing with --secure-port -1, and refuses a port in use as a usage error', async () => {
    const s = sources();
    expect(await serveHealth({ ...PLAIN, securePort: -1 }, s)).toBeUndefined();
    expect(await s.metrics.leader.get()).toMatchObject({ values: [{ value: 1 }] });
    expect(s.lines).toEqual([]);

    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const refused = await serveHealth({ ...PLAIN, securePort: port }, s).catch(
        (err: unknown) => err as Error,
      );
      expect(refused).toBeInstanceOf(UsageError);
      expect((refused as Error).message).toBe(
        `cannot serve on 127.0.0.1:${port} (EADDRINUSE); pick another --secure-port or --bind-address`,
      );
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});
