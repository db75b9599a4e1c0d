/**
 * Raw requests to the test control plane as `fixture-admin`, for what the typed fixtures do not
 * cover: rewriting or deleting a Lease under a running `ccm run`, as kubectl or another replica would.
 */
import type { ControlPlane } from '../controlplane/harness.js';

/**
 * Sends one request; with `body`, reads the object first and sends `body(current)`, again on a 409
 * (a replica renewed the Lease in between). Throws on any other status of 300 or more.
 */
export async function adminRequest(
  cp: ControlPlane,
  method: string,
  path: string,
  body?: (current: Record<string, unknown>) => unknown,
): Promise<Record<string, unknown>> {
  const { Agent, fetch } = await import('undici');
  const dispatcher = new Agent({ connect: { ca: Buffer.from(cp.caData, 'base64').toString() } });
  const headers = { authorization: `Bearer ${cp.adminToken}`, 'content-type': 'application/json' };
  try {
    for (let attempt = 0; ; attempt++) {
      let payload: string | undefined;
      if (body) {
        const current = (await (
          await fetch(`${cp.server}${path}`, { headers, dispatcher })
        ).json()) as Record<string, unknown>;
        payload = JSON.stringify(await body(current));
      }
      const res = await fetch(`${cp.server}${path}`, { method, headers, body: payload, dispatcher });
      if (res.status === 409 && body && attempt < 20) continue;
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
      return (await res.json()) as Record<string, unknown>;
    }
  } finally {
    await dispatcher.close();
  }
}

export function leasePath(name: string, namespace = 'kube-system'): string {
  return `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${name}`;
}

/**
 * Rewrites the Lease's holder, as kubectl (or a replica that re-created a deleted Lease) would: a
 * `thief` for an hour to take it away, '' for 1 s to give it back.
 */
export function setLeaseHolder(
  cp: ControlPlane,
  name: string,
  holderIdentity: string,
  leaseDurationSeconds: number,
): Promise<Record<string, unknown>> {
  return adminRequest(cp, 'PUT', leasePath(name), (lease) => ({
    ...lease,
    spec: { ...(lease.spec as object), holderIdentity, leaseDurationSeconds },
  }));
}
