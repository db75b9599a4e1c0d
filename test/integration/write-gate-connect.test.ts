/**
 * The write gate is asked again once a new connection is up, not only before it is made. The chaos
 * run (docs/chaos.md, OpenStack seed 6002) saw a leader frozen mid-connect send a Service status
 * patch 4 s after it woke, after another replica had taken the Lease: the gate had said yes before
 * the freeze. Here a TCP proxy holds the connection before its TLS handshake while the gate closes;
 * nothing of the write may reach the API server or the cloud.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../../src/kube/config.js';
import { NotLeaderError } from '../../src/kube/errors.js';
import { KubeTransport } from '../../src/kube/transport.js';
import { HttpClient } from '../../src/providers/http.js';
import { nodeTransport } from '../../src/providers/http-transport.js';
import { DigitalOceanSimulator } from '../clouds/digitalocean/server.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { selfSigned } from '../unit/helpers/self-signed.js';

/** A TCP proxy that accepts a connection and passes nothing, either way, until `release()`. */
async function holdingProxy(targetPort: number) {
  const held: Socket[] = [];
  const open: Socket[] = [];
  let holding = true;
  const pass = (client: Socket) => {
    const upstream = connect(targetPort, '127.0.0.1');
    upstream.on('error', () => client.destroy());
    open.push(client, upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.resume();
  };
  const server: Server = createServer((client) => {
    client.on('error', () => {});
    if (!holding) return pass(client);
    client.pause();
    held.push(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    held: () => held.length,
    release() {
      holding = false;
      for (const client of held.splice(0)) pass(client);
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of [...held, ...open]) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

async function until(what: string, check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('the write gate closes while a new connection is being made', () => {
  let cp: ControlPlane;
  const dir = mkdtempSync(join(tmpdir(), 'ccm-write-gate-'));
  beforeAll(async () => {
    cp = await startControlPlane();
  });
  afterAll(async () => {
    await cp?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('Kubernetes: the write is refused unsent, as NotLeaderError (not "unreachable")', async () => {
    const proxy = await holdingProxy(cp.port);
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      readFileSync(cp.kubeconfigPath, 'utf8').replace(`:${cp.port}`, `:${proxy.port}`),
    );
    let leading = true;
    const transport = new KubeTransport(loadKubeConfig({ kubeconfig, env: {} }), { mayWrite: () => leading });
    try {
      const write = transport.request({
        method: 'POST',
        path: '/api/v1/namespaces/default/configmaps',
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'sent-by-a-former-leader' } },
      });
      const outcome = write.then(
        () => 'sent',
        (err: unknown) => err,
      );
      await until('the connection at the proxy', () => proxy.held() === 1);
      leading = false;
      proxy.release();
      const err = await outcome;
      expect(err).toBeInstanceOf(NotLeaderError);
      expect(String((err as Error).message)).toMatch(
        /^POST \/api\/v1\/namespaces\/default\/configmaps refused/,
      );
      // A later write of the same replica, leading again, goes through: the refusal broke nothing.
      leading = true;
      await transport.request({
        method: 'POST',
        path: '/api/v1/namespaces/default/configmaps',
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'sent-by-the-leader' } },
      });
      const names = (await cp.writes())
        .filter((w) => w.objectRef?.resource === 'configmaps' && w.objectRef.namespace === 'default')
        .map((w) => w.objectRef?.name);
      expect(names).toEqual(['sent-by-the-leader']);
    } finally {
      await transport.close();
      await proxy.close();
    }
  });

  it('the cloud: the write is refused unsent and not counted as a cloud call', async () => {
    selfSigned(dir, 'cloud', '127.0.0.1', 'IP:127.0.0.1');
    const tls = {
      key: readFileSync(join(dir, 'cloud.key'), 'utf8'),
      cert: readFileSync(join(dir, 'cloud.pem'), 'utf8'),
    };
    const sim = await DigitalOceanSimulator.start({ tls });
    const proxy = await holdingProxy(Number(new URL(sim.url).port));
    let leading = true;
    const calls: string[] = [];
    const http = new HttpClient({
      baseUrl: `https://127.0.0.1:${proxy.port}/v2`,
      authorize: ({ headers }) => headers.set('authorization', `Bearer ${sim.token}`),
      mayWrite: () => leading,
      onRequest: (info) => calls.push(`${info.method} ${info.path}`),
      transport: nodeTransport({ ca: tls.cert }),
      retries: 0,
    });
    const former = 'load_balancers/00000000-0000-4000-8000-00000000f0a1';
    const leader = 'load_balancers/00000000-0000-4000-8000-00000000f0a2';
    try {
      const outcome = http.request('DELETE', former, { okStatuses: [404] }).then(
        () => 'sent',
        (err: unknown) => err,
      );
      await until('the connection at the proxy', () => proxy.held() === 1);
      leading = false;
      proxy.release();
      const err = await outcome;
      expect(String((err as Error).message)).toMatch(
        /^DELETE \/v2\/load_balancers\/\S+ refused: this replica is not the leader$/,
      );
      leading = true;
      await http.request('DELETE', leader, { okStatuses: [404] });
      const deletes = sim.requests.filter((r) => r.method === 'DELETE').map((r) => r.url);
      expect(deletes).toEqual([`/v2/${leader}`]);
      expect(calls).toEqual([`DELETE /v2/${leader}`]);
    } finally {
      await proxy.close();
      await sim.stop();
    }
  });
});
