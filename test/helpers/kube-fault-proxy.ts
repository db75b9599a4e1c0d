/**
 * A plain-http proxy on 127.0.0.1 in front of the test control plane, for the API server's own
 * failures that a real one shows only under load or mid-upgrade (a 503 on one request, a request
 * never answered, one answered late): `fail` decides per request, a status, 'hold' (no answer until
 * the proxy closes) or `{ delayMs }` (the API server's answer, as it was when asked, sent that much
 * later); everything else, watches included, is passed through as it streams.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { request } from 'node:https';
import { join } from 'node:path';
import type { ControlPlane } from '../controlplane/harness.js';
import { tempDir } from './tmp.js';

export interface FaultProxy {
  /** The harness's kubeconfig, pointed at the proxy. */
  kubeconfigPath: string;
  close(): Promise<void>;
}

export async function faultProxy(
  cp: ControlPlane,
  fail: (req: IncomingMessage) => number | 'hold' | { delayMs: number } | undefined,
): Promise<FaultProxy> {
  const target = new URL(cp.server);
  const ca = Buffer.from(cp.caData, 'base64');
  const held = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    const status = fail(req);
    if (status === 'hold') {
      held.add(res);
      res.on('close', () => held.delete(res));
      return;
    }
    const delayMs = typeof status === 'object' ? status.delayMs : undefined;
    if (typeof status === 'number') {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          code: status,
          message: 'injected',
        }),
      );
      return;
    }
    const upstream = request(
      {
        hostname: target.hostname,
        port: target.port,
        path: req.url,
        method: req.method,
        headers: req.headers,
        ca,
      },
      (answer) => {
        if (delayMs !== undefined) {
          const chunks: Buffer[] = [];
          answer.on('data', (c: Buffer) => chunks.push(c));
          answer.on('end', () =>
            setTimeout(() => {
              res.writeHead(answer.statusCode ?? 502, answer.headers);
              res.end(Buffer.concat(chunks));
            }, delayMs),
          );
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        // The API server gone mid-answer (a watch when it is killed): the client's connection ends
        // too, as through a real proxy, instead of staying open with nothing behind it.
        answer.on('close', () => {
          if (!answer.complete) res.destroy();
        });
      },
    );
    upstream.on('error', () => res.destroy());
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const kubeconfigPath = join(tempDir('ccm-fault-proxy-'), 'kubeconfig');
  // The harness's kubeconfig (its users and contexts), with the cluster's server at the proxy.
  const config = readFileSync(cp.kubeconfigPath, 'utf8')
    .replace(`server: ${cp.server}`, `server: http://127.0.0.1:${port}`)
    .replace(/^\s*certificate-authority-data: .*\n/m, '');
  writeFileSync(kubeconfigPath, config, { mode: 0o600 });
  return {
    kubeconfigPath,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of held) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A fault proxy that, once the test arms it, applies `fault` to the next GET of Secret `name` only
 * (a reload's read of its credentials); `state.hits` counts the reads it caught.
 */
export async function secretReadFaultProxy(
  cp: ControlPlane,
  name: string,
  fault: 'hold' | { delayMs: number },
): Promise<FaultProxy & { state: { armed: boolean; hits: number } }> {
  const state = { armed: false, hits: 0 };
  const proxy = await faultProxy(cp, (req) => {
    if (!state.armed || req.method !== 'GET' || !req.url?.split('?')[0]?.endsWith(`/secrets/${name}`)) {
      return undefined;
    }
    state.armed = false;
    state.hits++;
    return fault;
  });
  return { ...proxy, state };
}
