/**
 * A plain-http server on 127.0.0.1 standing in for an API server that answers badly (endless, cut
 * off, not a list), and a KubeTransport to it with no credentials.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ClusterAccess } from '../../src/kube/config.js';
import { KubeTransport } from '../../src/kube/transport.js';

export async function plainKubeServer(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ transport: KubeTransport; close(): Promise<void> }> {
  const server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const access: ClusterAccess = {
    server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    context: 'fake',
    user: 'anonymous',
    tls: { rejectUnauthorized: true },
    credentials: { current: async () => ({ headers: {} }), rejected: async () => false },
  };
  const transport = new KubeTransport(access);
  return {
    transport,
    async close() {
      await transport.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
