import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A local HTTP server that answers with an SDK's own test fixtures (test/integration/sdk-*-fixtures.test.ts). */
export interface FixtureServer {
  /** Its base URL, http://127.0.0.1:<port>. */
  url: string;
  /** Each request it had, as `METHOD /path?query`, in order; a test may empty it. */
  seen: string[];
  close(): Promise<void>;
}

/** Starts `handle` on 127.0.0.1 and a free port. */
export async function serveFixtures(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<FixtureServer> {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
