/**
 * A TCP proxy in front of the test control plane for a network partition, not an outage: `partition()`
 * stops passing bytes on every open connection without closing any (as a middlebox that lost its
 * state, or an API server host gone behind a load balancer), and leaves new connections unanswered.
 * After `heal()` new connections work again; the ones opened before stay dead.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { ControlPlane } from '../controlplane/harness.js';
import { tempDir } from './tmp.js';

export interface PartitionProxy {
  /** The harness's kubeconfig (TLS to the API server as before), with the server's port at the proxy. */
  kubeconfigPath: string;
  partition(): void;
  heal(): void;
  close(): Promise<void>;
}

export async function partitionProxy(cp: ControlPlane): Promise<PartitionProxy> {
  let blackhole = false;
  const open: { client: Socket; upstream: Socket; dead: boolean }[] = [];
  const held: Socket[] = [];
  const server: Server = createServer((client) => {
    client.on('error', () => {});
    if (blackhole) {
      held.push(client);
      client.pause();
      return;
    }
    const upstream = connect(cp.port, '127.0.0.1');
    upstream.on('error', () => {});
    const conn = { client, upstream, dead: false };
    open.push(conn);
    client.on('data', (data) => {
      if (!conn.dead) upstream.write(data);
    });
    upstream.on('data', (data) => {
      if (!conn.dead) client.write(data);
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => {
      if (!conn.dead) client.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const kubeconfigPath = join(tempDir('ccm-partition-proxy-'), 'kubeconfig');
  writeFileSync(kubeconfigPath, readFileSync(cp.kubeconfigPath, 'utf8').replace(`:${cp.port}`, `:${port}`), {
    mode: 0o600,
  });
  return {
    kubeconfigPath,
    partition() {
      blackhole = true;
      for (const conn of open) conn.dead = true;
    },
    heal() {
      blackhole = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const conn of open) {
          conn.client.destroy();
          conn.upstream.destroy();
        }
        for (const socket of held) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
